//! A whole software ExpEther system on this host, kept running for a pool manager: N host
//! namespaces, each with a host-side bridge, and one device namespace holding M pooled devices
//! ([`crate::pooled`]), each with its own device-side bridge, interface and backing file; every
//! interface is a port of one Linux bridge (an Ethernet switch in a namespace of its own).
//!
//! ```text
//!  tca-<pid>-<n>-h0  host bridge 02:ee:01:00:00:01 --+
//!  tca-<pid>-<n>-h1  host bridge 02:ee:01:00:00:02 --+-- tca-<pid>-<n>-sw (Linux bridge)
//!  tca-<pid>-<n>-dev device bridges 02:ee:02:00:00:01.. (one interface each) --+
//! ```
//!
//! The system manager's act of §3.3.1, setting a device bridge's VLAN, is [`System::set_device`]
//! (in hardware a management frame to the device-side bridge; here a call into the device-side
//! thread, which reopens its bridge on the new VLAN). Each host keeps its view: the devices at
//! the slots of its virtual switch. The slots come from the caller (the pool manager computes
//! them with the protocol core's virtual switch); the system checks them and reports the
//! hot-plug and hot-remove events it enacted.
//!
//! A host reaches a device through one host-side bridge port per device ([`PortConfig::peer_only`]),
//! opened at the first I/O after the hot-plug and dropped at the hot-remove. A host's I/O is a
//! short verified block I/O ([`System::io`]); every wait is bounded.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ether_net::{LinkSpec, RateLimit, Testbed};
use expether_proto::{Config, Mac};

use crate::bench::fill;
use crate::blockio::{BlockIo, Request};
use crate::host::Host;
use crate::nvme::{LBA_SIZE, MAX_LBAS};
use crate::pooled::{Attachment, PooledDevice};
use crate::port::{Port, PortConfig};
use crate::store::Store;
use crate::ExpNetError;

/// What to build.
#[derive(Debug, Clone)]
pub struct SystemPlan {
    /// Host namespaces (1..=64).
    pub hosts: u8,
    /// Pooled devices (1..=64).
    pub devices: u8,
    /// Size of each device's backing file [blocks of 4 KiB].
    pub blocks: u64,
    /// Where the backing files go.
    pub dir: PathBuf,
    /// tbf rate of every link [bit/s]; `None`: veth speed.
    pub rate: Option<u64>,
    /// How long one block command of a host's I/O may take.
    pub io_timeout: Duration,
}

impl Default for SystemPlan {
    fn default() -> Self {
        SystemPlan {
            hosts: 2,
            devices: 2,
            blocks: 1024,
            dir: std::env::temp_dir(),
            rate: None,
            io_timeout: Duration::from_secs(1),
        }
    }
}

/// The MAC of host bridge `i` (0-based).
pub fn host_mac(i: u8) -> Mac {
    Mac([0x02, 0xee, 0x01, 0, 0, i + 1])
}

/// The MAC of device bridge `j` (0-based).
pub fn device_mac(j: u8) -> Mac {
    Mac([0x02, 0xee, 0x02, 0, 0, j + 1])
}

/// A hot-plug or hot-remove a host saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysEvent {
    /// "hot-plug" or "hot-remove".
    pub kind: &'static str,
    /// The host's VLAN.
    pub vlan: u16,
    /// The slot.
    pub slot: u8,
    /// The device bridge.
    pub device: Mac,
}

/// What one host's verified block I/O did.
#[derive(Debug, Clone, PartialEq)]
pub struct IoReport {
    /// The device bridge reached.
    pub device: Mac,
    /// Blocks written, then read back and compared.
    pub blocks: u32,
    /// Time of the write command [us].
    pub write_us: f64,
    /// Time of the read command [us].
    pub read_us: f64,
}

/// Which device a host's I/O goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The device at this slot of the host's view.
    Slot(u8),
    /// This device bridge, whether or not the host's view lists it (what a host with a stale
    /// driver would do); its bridge's VLAN check decides.
    Device(Mac),
}

/// One host namespace and its bridge.
#[derive(Debug)]
pub struct HostNode {
    /// The host bridge's MAC.
    pub mac: Mac,
    /// Its namespace.
    pub netns: String,
    ifname: String,
    /// Its VLAN; `None`: not part of the system (the manager has not joined it).
    pub vlan: Option<u16>,
    /// Its view: the device bridge at each slot.
    pub view: BTreeMap<u8, Mac>,
    sessions: HashMap<Mac, Host>,
}

/// One pooled device as the system sees it.
#[derive(Debug)]
pub struct DeviceNode {
    /// The device thread.
    pub dev: PooledDevice,
    /// Its bridge's VLAN and its slot on that host; `None`: in the pool.
    pub at: Option<(u16, u8)>,
    file: PathBuf,
}

/// The running system.
#[derive(Debug)]
pub struct System {
    /// The hosts, in order.
    pub hosts: Vec<HostNode>,
    /// The devices, in order.
    pub devices: Vec<DeviceNode>,
    bridge: Config,
    plan: SystemPlan,
    ios: u64,
    // Last: dropped after the threads that use its interfaces.
    testbed: Testbed,
}

impl System {
    /// Builds the namespaces, links and device threads (every device in the pool, every host
    /// without a VLAN). On failure everything built so far is removed.
    pub fn start(plan: SystemPlan) -> Result<System, ExpNetError> {
        if !(1..=64).contains(&plan.hosts) || !(1..=64).contains(&plan.devices) {
            return Err(ExpNetError::Config("hosts and devices must be 1..=64".into()));
        }
        if let Some(why) = ether_net::unavailable() {
            return Err(ExpNetError::Config(why));
        }
        let mut testbed = Testbed::new()?;
        let mut sw = testbed.add_bridge("sw")?;
        let spec = match plan.rate {
            Some(r) => LinkSpec::new(1).rate(RateLimit::new(r)),
            None => LinkSpec::new(1),
        };
        // tca's bridge settings of the benchmark (docs/expether-net.md), one path each.
        let bridge = Config {
            paths: 1,
            rto_ps: 5_000_000_000,
            failure_losses: 8,
            queue_bytes: 64 * 1024,
            window: 128,
            ..Config::new(Mac([0; 6]), 0)
        };
        let mut hosts = Vec::new();
        for i in 0..plan.hosts {
            let netns = testbed.add_namespace(&format!("h{i}"))?;
            let link = testbed.attach(&netns, &mut sw, &spec)?;
            let ifname = link.pairs[0].a.ifname.clone();
            hosts.push(HostNode {
                mac: host_mac(i),
                netns,
                ifname,
                vlan: None,
                view: BTreeMap::new(),
                sessions: HashMap::new(),
            });
        }
        let dev_ns = testbed.add_namespace("dev")?;
        let mut devices = Vec::new();
        for j in 0..plan.devices {
            let link = testbed.attach(&dev_ns, &mut sw, &spec)?;
            let at = Attachment { netns: dev_ns.clone(), ifname: link.pairs[0].a.ifname.clone() };
            let file = plan.dir.join(format!("{}-dev{j}.img", testbed.prefix()));
            let store = Arc::new(Store::create(&file, plan.blocks)?);
            let dev = PooledDevice::start(device_mac(j), at, store, bridge.clone())?;
            devices.push(DeviceNode { dev, at: None, file });
        }
        Ok(System { hosts, devices, bridge, plan, ios: 0, testbed })
    }

    /// The namespaces, for the record.
    pub fn namespaces(&self) -> &[String] {
        self.testbed.namespaces()
    }

    fn host_index(&self, mac: Mac) -> Result<usize, ExpNetError> {
        self.hosts.iter().position(|h| h.mac == mac).ok_or_else(|| {
            let all: Vec<String> = self.hosts.iter().map(|h| h.mac.to_string()).collect();
            ExpNetError::Config(format!("no host bridge {mac} in this system (host bridges: {})", all.join(", ")))
        })
    }

    fn device_index(&self, mac: Mac) -> Result<usize, ExpNetError> {
        self.devices.iter().position(|d| d.dev.mac() == mac).ok_or_else(|| {
            let all: Vec<String> = self.devices.iter().map(|d| d.dev.mac().to_string()).collect();
            ExpNetError::Config(format!("no device bridge {mac} in this system (device bridges: {})", all.join(", ")))
        })
    }

    /// Sets a host bridge's VLAN (`None`: it leaves). A host leaving keeps its devices on
    /// their VLAN; a host joining a VLAN sees the devices on it at the slots they have.
    pub fn set_host(&mut self, mac: Mac, vlan: Option<u16>) -> Result<(), ExpNetError> {
        let i = self.host_index(mac)?;
        if let Some(v) = vlan {
            if v > 4095 {
                return Err(ExpNetError::Config(format!("VLAN {v} is outside 0..=4095")));
            }
            if self.hosts.iter().any(|h| h.mac != mac && h.vlan == Some(v)) {
                return Err(ExpNetError::Config(format!("VLAN {v} has a host bridge already")));
            }
        }
        let view = self
            .devices
            .iter()
            .filter_map(|d| d.at.filter(|(dv, _)| Some(*dv) == vlan).map(|(_, s)| (s, d.dev.mac())))
            .collect();
        let h = &mut self.hosts[i];
        h.sessions.clear();
        h.vlan = vlan;
        h.view = view;
        Ok(())
    }

    /// The system manager's act (§3.3.1): sets device bridge `mac`'s VLAN to the host's at
    /// `slot` of that host's view (`Some((vlan, slot))`), or returns it to the pool (`None`).
    /// Returns the events the hosts saw: the hot-remove on the old host first. Checked before
    /// anything changes: a VLAN with no host bridge, a slot out of 0..=31 or taken.
    pub fn set_device(&mut self, mac: Mac, to: Option<(u16, u8)>) -> Result<Vec<SysEvent>, ExpNetError> {
        let j = self.device_index(mac)?;
        let from = self.devices[j].at;
        if from == to {
            return Ok(Vec::new());
        }
        let target = match to {
            Some((vlan, slot)) => {
                let Some(h) = self.hosts.iter().position(|h| h.vlan == Some(vlan)) else {
                    return Err(ExpNetError::Config(format!("VLAN {vlan} has no host bridge")));
                };
                if slot > 31 {
                    return Err(ExpNetError::Config(format!("slot {slot} is outside 0..=31")));
                }
                if self.hosts[h].view.get(&slot).is_some_and(|&m| m != mac) {
                    return Err(ExpNetError::Config(format!("slot {slot} of VLAN {vlan} is taken")));
                }
                Some((h, vlan, slot))
            }
            None => None,
        };
        let mut events = Vec::new();
        if let Some((vlan, slot)) = from {
            if let Some(h) = self.hosts.iter_mut().find(|h| h.vlan == Some(vlan)) {
                h.view.remove(&slot);
                h.sessions.remove(&mac);
                events.push(SysEvent { kind: "hot-remove", vlan, slot, device: mac });
            }
        }
        let order = target.map(|(h, vlan, _)| (vlan, self.hosts[h].mac));
        if let Err(e) = self.devices[j].dev.set(order) {
            // The device thread could not open its bridge: the device is in the pool now.
            self.devices[j].at = None;
            return Err(e);
        }
        self.devices[j].at = to;
        if let Some((h, vlan, slot)) = target {
            self.hosts[h].view.insert(slot, mac);
            events.push(SysEvent { kind: "hot-plug", vlan, slot, device: mac });
        }
        Ok(events)
    }

    /// Host `host` writes `blocks` blocks to the device `target` names, reads them back and
    /// compares them. Fails with a one-line reason: the host has no VLAN, nothing at that slot,
    /// the device refused the host's frames (another VLAN) or did not answer in time, or data
    /// came back different. A failed I/O on a device in the host's view resets both ends of
    /// that connection, as a link reset would.
    pub fn io(&mut self, host: Mac, target: Target, blocks: u32) -> Result<IoReport, ExpNetError> {
        let i = self.host_index(host)?;
        if !(1..=MAX_LBAS).contains(&blocks) {
            return Err(ExpNetError::Config(format!("blocks must be 1..={MAX_LBAS}")));
        }
        let Some(vlan) = self.hosts[i].vlan else {
            return Err(ExpNetError::Config(format!("host bridge {host} has no VLAN: it is not in the system")));
        };
        let device = match target {
            Target::Slot(s) => *self.hosts[i].view.get(&s).ok_or_else(|| {
                ExpNetError::Config(format!(
                    "host {host} (VLAN {vlan}) has no device at slot {s}: nothing is plugged there"
                ))
            })?,
            Target::Device(m) => m,
        };
        let j = self.device_index(device)?;
        self.ios += 1;
        let (run, lba) = (self.ios, self.ios * u64::from(MAX_LBAS) % self.plan.blocks.saturating_sub(32).max(1));
        let timeout = self.plan.io_timeout;
        let in_view = self.hosts[i].view.values().any(|&m| m == device);
        if !in_view {
            // A stale driver: a port of its own, dropped afterwards.
            let before = self.devices[j].dev.stats().other_vlan;
            let mut probe = Host::new(self.open_host_port(i, vlan, device)?);
            let r = verified(&mut probe, device, run, lba, blocks, timeout.min(Duration::from_millis(500)));
            let refused = self.devices[j].dev.stats().other_vlan - before;
            let state = match self.devices[j].at {
                Some((v, _)) => format!("its bridge is on VLAN {v} and refused {refused} frames of VLAN {vlan}"),
                None => "it is in the pool: no bridge of it runs".to_string(),
            };
            return match r {
                Ok(rep) => Ok(rep),
                Err(e) => Err(ExpNetError::Config(format!(
                    "host {host} (VLAN {vlan}) cannot reach device {device}: not in its view; {state} ({e})"
                ))),
            };
        }
        if !self.hosts[i].sessions.contains_key(&device) {
            let port = self.open_host_port(i, vlan, device)?;
            self.hosts[i].sessions.insert(device, Host::new(port));
        }
        let session = self.hosts[i].sessions.get_mut(&device).expect("inserted above");
        let r = verified(session, device, run, lba, blocks, timeout);
        if r.is_err() {
            self.hosts[i].sessions.remove(&device);
            let at = self.devices[j].at.map(|(v, _)| (v, host));
            self.devices[j].dev.set(at)?;
        }
        r
    }

    fn open_host_port(&self, i: usize, vlan: u16, peer: Mac) -> Result<Port, ExpNetError> {
        let h = &self.hosts[i];
        Port::open(PortConfig {
            bridge: Config { mac: h.mac, vlan, ..self.bridge.clone() },
            peer,
            netns: h.netns.clone(),
            ifnames: vec![h.ifname.clone()],
            faults: None,
            peer_only: true,
        })
    }

    /// Stops the device threads and removes the namespaces and backing files.
    pub fn stop(self) -> Result<(), ExpNetError> {
        let System { hosts, devices, testbed, .. } = self;
        drop(hosts);
        drop(devices); // joins the device threads, removes the files
        testbed.remove()?;
        Ok(())
    }
}

impl Drop for DeviceNode {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// One write of `blocks` blocks at `lba` and its read-back, each bounded by `timeout`.
fn verified(
    host: &mut Host,
    device: Mac,
    run: u64,
    lba: u64,
    blocks: u32,
    timeout: Duration,
) -> Result<IoReport, ExpNetError> {
    let mut data = vec![0u8; blocks as usize * LBA_SIZE];
    for (k, b) in data.chunks_exact_mut(LBA_SIZE).enumerate() {
        fill(run as u32, lba + k as u64, 1, b);
    }
    let write = Request { write: true, lba, blocks, data: data.clone() };
    let write_us = command(host, &write, timeout)?.1;
    let read = Request { write: false, lba, blocks, data: Vec::new() };
    let (got, read_us) = command(host, &read, timeout)?;
    if let Some(k) = got.chunks(LBA_SIZE).zip(data.chunks(LBA_SIZE)).position(|(g, w)| g != w) {
        return Err(ExpNetError::Config(format!(
            "block {} read back from {device} differs from what was written",
            lba + k as u64
        )));
    }
    Ok(IoReport { device, blocks, write_us, read_us })
}

/// Submits one command and waits for it; returns its data and its time [us].
fn command(host: &mut Host, req: &Request, timeout: Duration) -> Result<(Vec<u8>, f64), ExpNetError> {
    let t0 = Instant::now();
    let id = host.submit(req)?;
    let what = if req.write { "write" } else { "read" };
    let Some(done) = host.wait(timeout)? else {
        return Err(ExpNetError::Timeout(format!("{what} of {} blocks: no completion within {timeout:?}", req.blocks)));
    };
    if done.id != id || !done.ok {
        return Err(ExpNetError::Config(format!("{what} of {} blocks: the device reported an error", req.blocks)));
    }
    Ok((done.data, t0.elapsed().as_secs_f64() * 1e6))
}
