//! A whole measurement on this host: namespaces `host` and `dev`, k veth pairs between them for
//! ExpEther and one more for the TCP baseline, the devices on their own thread, the benchmark
//! on the caller's thread; everything removed at the end, also on failure.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ether_net::{run_in, LinkSpec, RateLimit, RxFaults, Testbed};
use expether_proto::{Config, Mac, Stats};

use crate::bench::{self, Outcome, Plan};
use crate::device::{DeviceStats, Devices};
use crate::host::Host;
use crate::port::{Port, PortConfig, PortStats};
use crate::store::Store;
use crate::tcp::{self, TcpClient};
use crate::{nvme, ExpNetError};

/// The host bridge's MAC address.
pub const HOST_MAC: Mac = Mac([0x02, 0xee, 0, 0, 0, 0x01]);
/// The device bridge's MAC address.
pub const DEV_MAC: Mac = Mac([0x02, 0xee, 0, 0, 0, 0x02]);
/// The VLAN of the virtual computer both bridges belong to.
pub const VLAN: u16 = 7;
const TCP_PORT: u16 = 9000;

/// Everything a measurement needs.
#[derive(Debug, Clone)]
pub struct NetPlan {
    /// ExpEther path counts to measure, one testbed each.
    pub paths: Vec<u8>,
    /// Loss injected on receipt at both bridges (0..=0.5).
    pub loss: f64,
    /// tbf rate of every link [bit/s]; `None`: veth speed.
    pub rate: Option<u64>,
    /// The benchmark.
    pub plan: Plan,
    /// Seed of the loss injectors.
    pub seed: u64,
    /// Also measure the TCP baseline.
    pub tcp: bool,
    /// Retransmission timeout of the bridges.
    pub rto: Duration,
    /// Retransmission rounds in a row without progress that fail the path; 0 never. The seed's
    /// prototype used 3 and its SSD stopped at 0.4 % loss (§4.2.1); 8 carries 1 % loss here.
    pub failure_losses: u32,
    /// Go-back-N window [frames].
    pub window: u32,
    /// The backing file (a temporary file if `None`).
    pub file: Option<PathBuf>,
}

impl Default for NetPlan {
    fn default() -> Self {
        NetPlan {
            paths: vec![1],
            loss: 0.0,
            rate: Some(1_000_000_000),
            plan: Plan::default(),
            seed: 2016,
            tcp: true,
            rto: Duration::from_millis(5),
            failure_losses: 8,
            window: 128,
            file: None,
        }
    }
}

/// One fabric's result.
#[derive(Debug, Clone)]
pub struct FabricResult {
    /// "ExpEther" or "TCP".
    pub fabric: &'static str,
    /// ExpEther paths (1 for TCP: one connection).
    pub paths: u8,
    /// The benchmark's results.
    pub outcome: Outcome,
    /// ExpEther: the host bridge's and port's counters, and the devices' counters.
    pub counters: Option<(Stats, PortStats, DeviceStats)>,
}

/// Removes the backing file when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs every fabric of `np`.
pub fn measure(np: &NetPlan) -> Result<Vec<FabricResult>, ExpNetError> {
    if !(0.0..=0.5).contains(&np.loss) {
        return Err(ExpNetError::Config(format!("loss {} must lie in 0..=0.5", np.loss)));
    }
    if np.paths.is_empty() || np.paths.iter().any(|&k| !(1..=8).contains(&k)) {
        return Err(ExpNetError::Config("paths must be 1..=8".into()));
    }
    if let Some(why) = ether_net::unavailable() {
        return Err(ExpNetError::Config(why));
    }
    let path = np
        .file
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("tca-expether-{}.img", std::process::id())));
    let _temp = np.file.is_none().then(|| TempFile(path.clone()));
    let store = Arc::new(Store::create(&path, np.plan.blocks)?);
    let mut results = Vec::new();
    for (i, &k) in np.paths.iter().enumerate() {
        let tcp = np.tcp && i == 0;
        results.extend(one_testbed(np, k, tcp, &store)?);
    }
    Ok(results)
}

/// A device thread and the flag that stops it.
struct Running<T> {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<T, ExpNetError>>>,
}

impl<T> Running<T> {
    fn start(f: impl FnOnce(Arc<AtomicBool>) -> Result<T, ExpNetError> + Send + 'static) -> Result<Self, ExpNetError>
    where
        T: Send + 'static,
    {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("expether device".into())
            .spawn(move || f(s))
            .map_err(|e| ExpNetError::io("device thread", e))?;
        Ok(Running { stop, thread: Some(thread) })
    }

    fn finish(mut self) -> Result<T, ExpNetError> {
        self.stop.store(true, Ordering::Relaxed);
        let t = self.thread.take().expect("joined once");
        t.join().map_err(|_| ExpNetError::Config("the device thread panicked".into()))?
    }
}

impl<T> Drop for Running<T> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn one_testbed(np: &NetPlan, k: u8, tcp: bool, store: &Arc<Store>) -> Result<Vec<FabricResult>, ExpNetError> {
    let mut tb = Testbed::new()?;
    let host_ns = tb.add_namespace("host")?;
    let dev_ns = tb.add_namespace("dev")?;
    let spec = |pairs| {
        let s = LinkSpec::new(pairs);
        match np.rate {
            Some(r) => s.rate(RateLimit::new(r)),
            None => s,
        }
    };
    let link = tb.add_link(&host_ns, &dev_ns, &spec(k))?;
    let bridge = |mac| Config {
        paths: k,
        rto_ps: np.rto.as_nanos() as u64 * 1000,
        failure_losses: np.failure_losses,
        queue_bytes: 64 * 1024,
        window: np.window,
        ..Config::new(mac, VLAN)
    };
    let port = |mac, peer, ns: &str, side_a: bool, seed| PortConfig {
        bridge: bridge(mac),
        peer,
        netns: ns.to_string(),
        ifnames: link.pairs.iter().map(|p| if side_a { p.a.ifname.clone() } else { p.b.ifname.clone() }).collect(),
        faults: (np.loss > 0.0).then(|| RxFaults::loss(np.loss, seed)),
        peer_only: false,
    };
    let dev_port = Port::open(port(DEV_MAC, HOST_MAC, &dev_ns, false, np.seed + 1))?;
    let mut host = Host::new(Port::open(port(HOST_MAC, DEV_MAC, &host_ns, true, np.seed))?);
    let s = store.clone();
    let device = Running::start(move |stop| Devices::new(dev_port, s).run(stop))?;
    let mut outcome = region_check(&mut host)?;
    let o = bench::run(&mut host, &np.plan, 1)?;
    outcome.phases = o.phases;
    outcome.lost += o.lost;
    outcome.corrupt += o.corrupt;
    outcome.stopped = o.stopped;
    if !host.flush(Duration::from_secs(2))? {
        outcome.stopped.get_or_insert_with(|| "the host bridge did not drain".into());
    }
    let dstats = device.finish()?;
    let hp = host.port();
    let counters = Some((hp.bridge_stats(), hp.stats()?, dstats));
    let mut results = vec![FabricResult { fabric: "ExpEther", paths: k, outcome, counters }];
    if tcp {
        let tl = tb.add_link(&host_ns, &dev_ns, &spec(1).ipv4())?;
        let (_, [a, b, c, d]) = tl.pairs[0].ipv4.map(|x| (x.0, x.1)).expect("ipv4 asked for");
        let addr = SocketAddr::from((Ipv4Addr::new(a, b, c, d), TCP_PORT));
        let listener = run_in(&dev_ns, move || TcpListener::bind(addr))?.map_err(|e| ExpNetError::io("TCP bind", e))?;
        let s = store.clone();
        let server = Running::start(move |stop| tcp::serve(listener, s, stop))?;
        let depth = np.plan.deep.max(np.plan.seq_depth);
        let mut client = run_in(&host_ns, move || TcpClient::connect(addr, depth))??;
        let outcome = bench::run(&mut client, &np.plan, 2)?;
        drop(client);
        server.finish()?;
        results.push(FabricResult { fabric: "TCP", paths: 1, outcome, counters: None });
    }
    tb.remove()?;
    Ok(results)
}

/// Writes the whole memory region through ExpEther and reads it back: 4 KB pieces that do not
/// come back are lost, those that come back changed are corrupt.
fn region_check(host: &mut Host) -> Result<Outcome, ExpNetError> {
    let len = nvme::MEM_SIZE as usize;
    let mut data = vec![0u8; len];
    for (i, blk) in data.chunks_exact_mut(nvme::LBA_SIZE).enumerate() {
        bench::fill(3, i as u64, 1, blk);
    }
    const PIECE: usize = 64 * 1024;
    let mut out = Outcome::default();
    for off in (0..len).step_by(PIECE) {
        host.mem_write(off as u64, &data[off..off + PIECE])?;
    }
    for off in (0..len).step_by(PIECE) {
        match host.mem_read(off as u64, PIECE, Duration::from_secs(3)) {
            Ok(got) => {
                let bad = got.chunks(nvme::LBA_SIZE).zip(data[off..off + PIECE].chunks(nvme::LBA_SIZE));
                out.corrupt += bad.filter(|(g, w)| g != w).count() as u64;
            }
            Err(ExpNetError::Timeout(_)) => out.lost += (PIECE / nvme::LBA_SIZE) as u64,
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
