//! `hxb-net-bench`: PM/Ethernet-HXB over real links between network namespaces on this host,
//! beside TCP, MPTCP and Open MPI over the same links. Prints one JSON object per measured point on
//! stdout; `tca hxb bench ... --fabric net` (python/tca/hxb/net_bench.py) runs it.
//!
//! ```text
//! hxb-net-bench bandwidth [--links 1,2,4,6] [--sizes 4096,65536,1048576] [--rate 1000000000]
//!                         [--loss 0.001,0.01] [--baselines tcp,mptcp,openmpi] [--seconds 0.3]
//!                         [--mpi-program target/c/mpi_bw.openmpi]
//! hxb-net-bench latency   [--relays 0,1,2] [--sizes 8,1024,8192] [--links 1] [--rate R]
//!                         [--baselines tcp,mptcp] [--iters 200]
//! ```
//!
//! Bandwidth: two namespaces joined by k veth pairs (MTU 9,000, tbf at `--rate` bit/s on each
//! sending side); one stream of messages of each size from A to B for about `--seconds`, with
//! at most 4 MiB outstanding; rate = bytes / (first send to last message received), and its
//! share of k x the link rate. Latency: a chain of four namespaces (0,0,0) -X- (1,0,0) -Y-
//! (1,1,0) -Z- (1,1,1) of a 2 x 2 x 2 hyper-crossbar, k pairs per hop; ping-pong from (0,0,0)
//! to the node 1, 2 or 3 hops away (0, 1, 2 relays); half the mean round trip.
//!
//! `hxb-net-bench netns-exec NS CMD...` is mpirun's launch agent for the Open MPI baseline
//! (openmpi.rs): it runs CMD inside the testbed namespace NS.

mod hxb;
mod openmpi;
mod stream;

use std::process::ExitCode;

/// Parsed options; every list is checked here so that errors are one line.
#[derive(Debug, Clone)]
pub struct Options {
    pub links: Vec<u8>,
    pub sizes: Vec<usize>,
    pub rate: u64,
    pub loss: Vec<f64>,
    pub baselines: Vec<String>,
    pub seconds: f64,
    pub relays: Vec<usize>,
    pub iters: usize,
    pub mpi_program: std::path::PathBuf,
}

fn list<T: std::str::FromStr>(name: &str, v: &str) -> Result<Vec<T>, String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().parse().map_err(|_| format!("--{name}: {s:?} is not a valid value")))
        .collect()
}

fn parse(args: &[String]) -> Result<(String, Options), String> {
    let cmd = args.first().cloned().ok_or("usage: hxb-net-bench bandwidth|latency [options]")?;
    let latency = cmd == "latency";
    if !latency && cmd != "bandwidth" {
        return Err(format!("unknown benchmark {cmd:?}: bandwidth or latency"));
    }
    let mut o = Options {
        links: if latency { vec![1] } else { vec![1, 2, 4, 6] },
        sizes: if latency { vec![8, 1024, 8192] } else { vec![4096, 65536, 1 << 20] },
        rate: 1_000_000_000,
        loss: vec![],
        baselines: vec!["tcp".into(), "mptcp".into()],
        seconds: 0.3,
        relays: vec![0, 1, 2],
        iters: 200,
        mpi_program: "target/c/mpi_bw.openmpi".into(),
    };
    let mut it = args[1..].iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--links" => o.links = list("links", value)?,
            "--sizes" => o.sizes = list("sizes", value)?,
            "--rate" => o.rate = value.parse().map_err(|_| format!("--rate: {value:?} is not bit/s"))?,
            "--loss" => o.loss = list("loss", value)?,
            "--baselines" => o.baselines = list("baselines", value)?,
            "--seconds" => o.seconds = value.parse().map_err(|_| format!("--seconds: {value:?}"))?,
            "--relays" => o.relays = list("relays", value)?,
            "--iters" => o.iters = value.parse().map_err(|_| format!("--iters: {value:?}"))?,
            "--mpi-program" => o.mpi_program = value.into(),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if o.links.is_empty() || o.links.iter().any(|&k| k == 0 || k > 9) {
        return Err("--links: 1 to 9 links".into());
    }
    if o.sizes.is_empty() || o.sizes.iter().any(|&s| s == 0 || s > 1 << 26) {
        return Err("--sizes: 1 B to 64 MiB".into());
    }
    if o.rate < 1_000_000 || o.rate > 100_000_000_000 {
        return Err("--rate: 1 Mb/s to 100 Gb/s".into());
    }
    if o.loss.iter().any(|l| !(0.0..0.5).contains(l)) {
        return Err("--loss: fractions in 0..0.5".into());
    }
    if let Some(b) = o.baselines.iter().find(|b| !["tcp", "mptcp", "openmpi"].contains(&b.as_str())) {
        return Err(format!("--baselines: unknown {b:?} (tcp, mptcp, openmpi)"));
    }
    if o.baselines.iter().any(|b| b == "openmpi") {
        if latency {
            return Err("--baselines openmpi: bandwidth only".into());
        }
        if let Some(why) = openmpi::unavailable(&o.mpi_program) {
            return Err(why);
        }
    }
    if !(0.01..=10.0).contains(&o.seconds) || o.iters == 0 || o.iters > 100_000 {
        return Err("--seconds: 0.01 to 10; --iters: 1 to 100000".into());
    }
    if o.relays.iter().any(|&r| r > 2) {
        return Err("--relays: 0, 1 or 2".into());
    }
    Ok((cmd, o))
}

/// One measured point as a JSON line.
pub fn emit(fields: &[(&str, Value)]) {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| match v {
            Value::S(s) => format!("\"{k}\":\"{s}\""),
            Value::F(f) => format!("\"{k}\":{}", if f.is_finite() { format!("{f}") } else { "null".into() }),
            Value::U(u) => format!("\"{k}\":{u}"),
        })
        .collect();
    println!("{{{}}}", body.join(","));
}

/// A JSON value of [`emit`].
pub enum Value {
    S(String),
    F(f64),
    U(u64),
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("netns-exec") {
        eprintln!("hxb-net-bench: {}", openmpi::netns_exec(&args[1..]));
        return ExitCode::FAILURE;
    }
    let run = || -> Result<(), String> {
        let (cmd, o) = parse(&args)?;
        if let Some(why) = ether_net::unavailable() {
            return Err(why);
        }
        if cmd == "bandwidth" {
            for &k in &o.links {
                hxb::bandwidth(&o, k)?;
            }
        } else {
            for &k in &o.links {
                hxb::latency(&o, k)?;
            }
        }
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hxb-net-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
