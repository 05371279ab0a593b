//! One device of an I/O pool (seed 002 §3.3.1): the emulated devices of [`crate::device`]
//! behind a device-side bridge whose VLAN the system manager sets, on a thread of their own.
//!
//! In the pool (no VLAN) no bridge runs and nothing on the device's interface is read. Given a
//! VLAN and the MAC of the host bridge on it, the thread opens a fresh bridge on that VLAN: a
//! device moved to another host starts with new go-back-N state and a reset device (queues
//! empty), as after a PCIe hot-plug; its backing file keeps its data. Frames of other VLANs
//! reach the bridge and are refused by its VLAN check (counted in [`PooledStats::other_vlan`]).
//! A failed path (the host stopped answering) resets the bridge and is remembered in
//! [`PooledStats::resets`].

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use expether_proto::{Config, Mac};

use crate::device::Devices;
use crate::port::{Port, PortConfig};
use crate::store::Store;
use crate::ExpNetError;

/// How long the manager's thread waits for the device thread to take a change.
const REPLY_WAIT: Duration = Duration::from_secs(5);

/// Counters of one pooled device, over all its bridges so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PooledStats {
    /// Frames its bridges refused because they carried another VLAN.
    pub other_vlan: u64,
    /// Block commands completed.
    pub commands: u64,
    /// Bridges opened (one per assignment, plus one per reset).
    pub bridges: u64,
    /// Bridges reset after a failure (a failed path or socket).
    pub resets: u64,
}

/// Where the device's bridge is: its namespace and interface.
#[derive(Debug, Clone)]
pub struct Attachment {
    /// The device namespace.
    pub netns: String,
    /// The device's own interface there.
    pub ifname: String,
}

enum Order {
    /// Open a fresh bridge on this VLAN, serving the host bridge with this MAC.
    Attach(u16, Mac, Sender<Result<(), String>>),
    /// Close the bridge: back in the pool.
    Detach(Sender<Result<(), String>>),
}

/// The handle the system keeps: orders go to the thread, counters come back.
#[derive(Debug)]
pub struct PooledDevice {
    mac: Mac,
    orders: Option<Sender<Order>>,
    shared: Arc<Mutex<PooledStats>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Order {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Order::Attach(v, m, _) => write!(f, "Attach({v}, {m})"),
            Order::Detach(_) => write!(f, "Detach"),
        }
    }
}

impl PooledDevice {
    /// Starts the device thread, in the pool.
    pub fn start(mac: Mac, at: Attachment, store: Arc<Store>, bridge: Config) -> Result<PooledDevice, ExpNetError> {
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Mutex::new(PooledStats::default()));
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("device {mac}"))
            .spawn(move || serve(mac, at, store, bridge, rx, s))
            .map_err(|e| ExpNetError::io("device thread", e))?;
        Ok(PooledDevice { mac, orders: Some(tx), shared, thread: Some(thread) })
    }

    /// The device bridge's MAC.
    pub fn mac(&self) -> Mac {
        self.mac
    }

    /// Its counters.
    pub fn stats(&self) -> PooledStats {
        *self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets the bridge's VLAN (`Some((vlan, host bridge))`) or returns it to the pool (`None`);
    /// returns once the thread has done it.
    pub fn set(&self, to: Option<(u16, Mac)>) -> Result<(), ExpNetError> {
        let (tx, rx) = mpsc::channel();
        let order = match to {
            Some((vlan, host)) => Order::Attach(vlan, host, tx),
            None => Order::Detach(tx),
        };
        let gone = || ExpNetError::Config(format!("device {}: its thread has ended", self.mac));
        self.orders.as_ref().ok_or_else(gone)?.send(order).map_err(|_| gone())?;
        match rx.recv_timeout(REPLY_WAIT) {
            Ok(r) => r.map_err(ExpNetError::Config),
            Err(_) => Err(ExpNetError::Timeout(format!("device {}: no answer within {REPLY_WAIT:?}", self.mac))),
        }
    }
}

impl Drop for PooledDevice {
    fn drop(&mut self) {
        self.orders.take(); // the thread ends when its channel closes
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: serves the current bridge, if any, and takes orders between turns.
fn serve(
    mac: Mac,
    at: Attachment,
    store: Arc<Store>,
    bridge: Config,
    orders: Receiver<Order>,
    shared: Arc<Mutex<PooledStats>>,
) {
    let open = |vlan: u16, host: Mac| -> Result<Devices, ExpNetError> {
        let port = Port::open(PortConfig {
            bridge: Config { mac, vlan, ..bridge.clone() },
            peer: host,
            netns: at.netns.clone(),
            ifnames: vec![at.ifname.clone()],
            faults: None,
            peer_only: false,
        })?;
        Ok(Devices::new(port, store.clone()))
    };
    let mut current: Option<(Devices, u16, Mac)> = None;
    let mut base = PooledStats::default();
    loop {
        let order = if current.is_some() {
            match orders.try_recv() {
                Ok(o) => Some(o),
                Err(mpsc::TryRecvError::Empty) => None,
                Err(mpsc::TryRecvError::Disconnected) => return,
            }
        } else {
            match orders.recv_timeout(Duration::from_millis(100)) {
                Ok(o) => Some(o),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        if let Some(order) = order {
            retire(&mut current, &mut base);
            let (reply, result) = match order {
                Order::Attach(vlan, host, reply) => match open(vlan, host) {
                    Ok(d) => {
                        current = Some((d, vlan, host));
                        base.bridges += 1;
                        (reply, Ok(()))
                    }
                    Err(e) => (reply, Err(format!("device {mac}: bridge on VLAN {vlan}: {e}"))),
                },
                Order::Detach(reply) => (reply, Ok(())),
            };
            publish(&shared, &base, &current);
            let _ = reply.send(result);
            continue;
        }
        let Some((d, vlan, host)) = current.as_mut() else { continue };
        if let Err(e) = d.turn(Duration::from_millis(2)) {
            eprintln!("expether-system: device {mac}: {e}; its bridge is reset");
            let (vlan, host) = (*vlan, *host);
            retire(&mut current, &mut base);
            base.resets += 1;
            match open(vlan, host) {
                Ok(d) => {
                    current = Some((d, vlan, host));
                    base.bridges += 1;
                }
                Err(e) => eprintln!("expether-system: device {mac}: reopening its bridge: {e}; it is idle"),
            }
        }
        publish(&shared, &base, &current);
    }
}

/// Closes the current bridge, adding its counters to `base`.
fn retire(current: &mut Option<(Devices, u16, Mac)>, base: &mut PooledStats) {
    if let Some((d, _, _)) = current.take() {
        *base = total(base, &d);
    }
}

fn total(base: &PooledStats, d: &Devices) -> PooledStats {
    PooledStats {
        other_vlan: base.other_vlan + d.port().counters().frames_other_vlan,
        commands: base.commands + d.stats().commands,
        ..*base
    }
}

fn publish(shared: &Mutex<PooledStats>, base: &PooledStats, current: &Option<(Devices, u16, Mac)>) {
    let now = current.as_ref().map_or(*base, |(d, _, _)| total(base, d));
    *shared.lock().unwrap_or_else(|e| e.into_inner()) = now;
}
