//! The application's side: start an endpoint in a namespace, send messages, receive them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ether_net::{run_in, FaultInjector, FrameSocket, MacAddr, SlotSpec};
use hxb_proto::{Config, Coord, Node, Stats};

use crate::driver::{Driver, Shared, Status};
use crate::wake::Wake;
use crate::{HxbNetError, RxFaults};

/// One link of this node: hxb-proto port `port` (`dim * k + link`) is interface `ifname`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// The protocol's port number.
    pub port: u16,
    /// The interface in the endpoint's namespace.
    pub ifname: String,
    /// MAC address of each neighbour reachable through this interface.
    pub neighbours: Vec<(Coord, MacAddr)>,
}

/// Everything an endpoint needs.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The protocol node (grid, coordinates, k, MTU, retransmission timeout). Its MTU plus the
    /// HXB header (36 B) must fit the interfaces' MTU.
    pub node: Config,
    /// The network namespace the interfaces are in (as `ip netns list` shows it).
    pub netns: String,
    /// The node's links; a dimension of size 1 needs none.
    pub ports: Vec<PortSpec>,
    /// The shape of each socket's receive ring: its slots are the receive buffers. A slot the
    /// node holds for a whole turn of the ring (a packet waiting for a lost predecessor's
    /// retransmission) stops reception on that link until it is released.
    pub ring: SlotSpec,
    /// Spare buffers for frames handed over twice by fault injection.
    pub spares: u32,
    /// Faults injected on receipt (tests); `None` in normal use.
    pub faults: Option<RxFaults>,
}

impl EndpointConfig {
    /// A configuration with rings of 1,024 slots of 12 KiB per link (the seed's 12 KB skbufs,
    /// §4) and 64 spare buffers.
    pub fn new(node: Config, netns: &str, ports: Vec<PortSpec>) -> Self {
        Self { node, netns: netns.to_string(), ports, ring: SlotSpec::default(), spares: 64, faults: None }
    }
}

/// A running HXB node: a thread that owns the protocol core and the sockets.
#[derive(Debug)]
pub struct Endpoint {
    me: Coord,
    grid: hxb_proto::Grid,
    commands: Option<Sender<(Coord, Vec<u8>)>>,
    messages: Receiver<(Coord, Vec<u8>)>,
    shared: Arc<Shared>,
    submitted: u64,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Opens one socket per port inside `cfg.netns` and starts the endpoint's thread.
    ///
    /// # Errors
    /// An unusable configuration, or a socket that cannot be opened (not root, no interface).
    pub fn start(cfg: EndpointConfig) -> Result<Endpoint, HxbNetError> {
        let node = Node::new(cfg.node.clone())?;
        let k = u16::from(cfg.node.links_per_dim);
        let mut seen = HashSet::new();
        for p in &cfg.ports {
            if p.port >= 3 * k || !seen.insert(p.port) {
                return Err(HxbNetError::Config(format!("port {} is repeated or not below 3 x {k}", p.port)));
            }
        }
        if cfg.ports.len() >= 1 << 15 {
            return Err(HxbNetError::Config("too many ports".into()));
        }
        let faults =
            cfg.faults.clone().map(FaultInjector::new).transpose().map_err(|e| HxbNetError::Config(e.to_string()))?;
        let ring = cfg.ring;
        let names: Vec<String> = cfg.ports.iter().map(|p| p.ifname.clone()).collect();
        let sockets = run_in(&cfg.netns, move || {
            names.iter().map(|n| FrameSocket::open(n, ring)).collect::<Result<Vec<_>, _>>()
        })??;
        let wake = Wake::new().map_err(HxbNetError::Config)?;
        let status = Mutex::new(Status::default());
        let shared = Arc::new(Shared { stop: AtomicBool::new(false), status, wake });
        let (commands, command_rx) = mpsc::channel();
        let (message_tx, messages) = mpsc::channel();
        let (me, grid) = (cfg.node.coord, cfg.node.grid);
        let channels = (command_rx, message_tx);
        let driver = Driver::new(
            (node, cfg.node.links_per_dim),
            cfg.ports,
            sockets,
            cfg.spares,
            faults,
            channels,
            shared.clone(),
        );
        let thread = std::thread::Builder::new()
            .name(format!("hxb {me}"))
            .spawn(move || driver.run())
            .map_err(|e| HxbNetError::Config(format!("cannot start the endpoint thread: {e}")))?;
        Ok(Endpoint { me, grid, commands: Some(commands), messages, shared, submitted: 0, thread: Some(thread) })
    }

    /// This node.
    pub fn coord(&self) -> Coord {
        self.me
    }

    /// Queues message `data` for node `to` (copied; returns at once).
    ///
    /// # Errors
    /// A destination outside the grid or this node itself, or a stopped endpoint.
    pub fn send(&mut self, to: Coord, data: &[u8]) -> Result<(), HxbNetError> {
        if !self.grid.contains(to) {
            return Err(HxbNetError::Destination(to, "outside the grid"));
        }
        if to == self.me {
            return Err(HxbNetError::Destination(to, "this node itself"));
        }
        let tx = self.commands.as_ref().expect("present until drop");
        tx.send((to, data.to_vec())).map_err(|_| self.stopped())?;
        self.shared.wake.signal();
        self.submitted += 1;
        Ok(())
    }

    /// The next whole message and its sender, waiting up to `timeout`; `None` if none came.
    ///
    /// # Errors
    /// The endpoint has stopped and nothing is left to receive.
    pub fn recv(&self, timeout: Duration) -> Result<Option<(Coord, Vec<u8>)>, HxbNetError> {
        match self.messages.recv_timeout(timeout) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(self.stopped()),
        }
    }

    /// Waits until every message sent so far is acknowledged and nothing is owed or queued;
    /// returns whether that happened within `timeout`.
    ///
    /// # Errors
    /// The endpoint has stopped.
    pub fn flush(&self, timeout: Duration) -> Result<bool, HxbNetError> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.status();
            if let Some(e) = s.error {
                return Err(HxbNetError::Stopped(e));
            }
            if s.idle && s.taken == self.submitted {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The protocol core's counters as the endpoint's thread last published them: it does so
    /// when it is about to sleep and 10 ms have passed since the last time.
    pub fn stats(&self) -> Stats {
        self.status().stats
    }

    /// Frames the kernel dropped because the slot at the head of a receive ring was still held
    /// (the protocol retransmits them), counted up to the thread's last sleep.
    pub fn ring_drops(&self) -> u64 {
        self.status().ring_drops
    }

    /// Duplicated frames (fault injection) dropped because every spare buffer was held.
    pub fn pool_drops(&self) -> u64 {
        self.status().pool_drops
    }

    fn status(&self) -> Status {
        self.shared.status.lock().expect("driver does not panic holding the lock").clone()
    }

    fn stopped(&self) -> HxbNetError {
        HxbNetError::Stopped(self.status().error.unwrap_or_else(|| "closed".into()))
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.wake.force();
        self.commands.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
