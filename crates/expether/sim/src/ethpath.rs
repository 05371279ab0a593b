//! An ExpEther path in virtual time: host PCIe link -> upstream bridge -> Ethernet (one or
//! more paths, optionally through a store-and-forward switch, with seeded frame loss) ->
//! downstream bridge -> device PCIe link, and back.
//!
//! The bridges are `expether_proto::Bridge`s, driven in the order their crate documents: a TLP
//! that has crossed the PCIe link and the bridge's ingress latency is offered with
//! `send_tlp` (a full queue is back-pressure: the TLP waits at the link); whenever one of the
//! bridge's Ethernet ports is idle the simulator asks `poll_transmit` for a frame and injects it
//! into the `ether` network; a delivered frame goes to `handle_frame`, and the TLPs `poll_tlp`
//! then gives leave through the egress latency and the PCIe link; `poll_timeout` and
//! `handle_timeout` run the retransmission timer.
//!
//! The bridges run with `line_rate` 0, so the ports are paced here, by the Ethernet model:
//! each frame occupies its port for the wire time of its Ethernet payload (802.1Q framing,
//! preamble, FCS, gap) plus the prototype's header bytes beyond the core's (`extra_header`, a
//! calibrated parameter: the seed gives no header size). A bridge is asked for a frame only
//! when a port is idle, so TLPs queue in the bridge, where aggregation takes them, and not
//! behind the port (seed 002 §3.4.2: the frame takes what is queued when the link can send).

use crate::fabric::{Arrival, Side, Span};
use crate::tlp::Tlp;
use base::{EventQueue, SimTime};
use ether::{Endpoint as Port, Frame, LinkSpec, Network, NetworkBuilder, NicId, NicSpec, RandomFaults, SwitchSpec};
use expether_model::BridgeTiming;
use expether_proto::{Bridge, Config, Event as BridgeEvent, ExpError, Header, Kind, Mac};
use pcie::Server;
use std::collections::{HashMap, VecDeque};

/// Bytes of the Ethernet header with its 802.1Q tag, counted by `ether`'s framing, not in its
/// payload.
const ETH_HEADER: usize = 18;

/// How an ExpEther path is built.
#[derive(Debug, Clone)]
pub struct PathSpec {
    /// Each PCIe link between a side and its bridge.
    pub pcie: pcie::LinkSpec,
    /// One traversal of a bridge.
    pub bridge: BridgeTiming,
    /// The bridges' protocol configuration (MACs, VLAN and `line_rate` are set here).
    pub proto: Config,
    /// Header bytes of the prototype's frames beyond the core's header.
    pub extra_header: u32,
    /// Each Ethernet link.
    pub link: LinkSpec,
    /// A switch between the bridges, or direct cables.
    pub switch: Option<SwitchSpec>,
    /// Probability that a frame is lost on each link it crosses.
    pub loss: f64,
    /// Seed of the loss generator.
    pub seed: u64,
    /// Collect trace spans.
    pub trace: bool,
}

#[derive(Debug)]
enum Ev {
    /// A TLP reaches a bridge's transmission queue.
    Ingress(Side, Vec<u8>),
    /// A TLP leaves a bridge towards its side's PCIe link.
    Egress(Side, Vec<u8>),
    /// A TLP reaches a side.
    Deliver(Side, Vec<u8>),
    /// A port of a bridge is idle again.
    Wake(Side),
    /// A bridge's retransmission deadline.
    Timer(Side),
}

/// Counters of a path.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathStats {
    /// DATA frames each bridge sent (first transmissions), [host, device].
    pub data_frames: [u64; 2],
    /// TLPs in them.
    pub tlps: [u64; 2],
    /// Sum of the squares of TLPs per DATA frame (for the standard deviation).
    pub tlps_sq: [u64; 2],
    /// Frames the network lost.
    pub frames_lost: u64,
    /// Frames a bridge refused (malformed, misaddressed).
    pub refused: u64,
    /// When a bridge first declared the path failed.
    pub failed_at: Option<SimTime>,
    /// TLPs dropped because the path failed.
    pub tlps_dropped: u64,
    /// The protocol counters of the bridges, [host, device].
    pub bridges: [expether_proto::Stats; 2],
}

impl PathStats {
    /// Mean and standard deviation of TLPs per DATA frame sent by `side`'s bridge.
    pub fn tlps_per_frame(&self, side: Side) -> (f64, f64) {
        let (n, s, q) = (self.data_frames[side.index()], self.tlps[side.index()], self.tlps_sq[side.index()]);
        if n == 0 {
            return (0.0, 0.0);
        }
        let mean = s as f64 / n as f64;
        (mean, (q as f64 / n as f64 - mean * mean).max(0.0).sqrt())
    }
}

/// The path's state.
pub struct EtherPath {
    bridges: [Bridge; 2],
    macs: [Mac; 2],
    net: Network,
    nics: [Vec<NicId>; 2],
    link: LinkSpec,
    port_free: [Vec<SimTime>; 2],
    to_bridge: [Server; 2],
    from_bridge: [Server; 2],
    pcie: pcie::LinkSpec,
    traversal: SimTime,
    extra_header: u32,
    events: EventQueue<Ev>,
    /// TLPs at each bridge's PCIe input that its queue has not taken yet.
    waiting: [VecDeque<Vec<u8>>; 2],
    /// TLPs each side has put on its link and its bridge has not yet queued.
    entering: [usize; 2],
    frames: HashMap<u64, Vec<u8>>,
    next_id: u64,
    delivered: usize,
    dropped: usize,
    timer_at: [Option<SimTime>; 2],
    wake_at: [Option<SimTime>; 2],
    tx: Vec<u8>,
    rx: Vec<u8>,
    stats: PathStats,
    spans: Option<Vec<Span>>,
}

impl EtherPath {
    /// Builds the path.
    ///
    /// # Errors
    /// A one-line description of a configuration the bridge or the network refuses.
    pub fn new(spec: &PathSpec) -> Result<EtherPath, String> {
        let macs = [Mac([2, 0xE0, 0, 0, 0, 1]), Mac([2, 0xE0, 0, 0, 0, 2])];
        let paths = usize::from(spec.proto.paths);
        let make = |mac| {
            let cfg = Config { mac, line_rate: 0, rate_control: None, ..spec.proto.clone() };
            Bridge::new(cfg).map_err(|e| e.to_string())
        };
        let bridges = [make(macs[0])?, make(macs[1])?];
        let mut b = NetworkBuilder::new();
        let mut nics: [Vec<NicId>; 2] = [Vec::new(), Vec::new()];
        for side in &mut nics {
            for _ in 0..paths {
                side.push(b.nic(NicSpec::default(), None).map_err(|e| e.to_string())?);
            }
        }
        match spec.switch {
            None => {
                for (&h, &d) in nics[0].iter().zip(&nics[1]) {
                    b.connect(Port::Nic(h), Port::Nic(d), spec.link).map_err(|e| e.to_string())?;
                }
            }
            Some(sw) => {
                let sw = b.switch(SwitchSpec { ports: 2 * paths as u16, ..sw });
                for (port, &nic) in nics.iter().flatten().enumerate() {
                    b.connect(Port::Nic(nic), Port::Switch(sw, port as u16), spec.link).map_err(|e| e.to_string())?;
                    b.route(sw, nic, port as u16).map_err(|e| e.to_string())?;
                }
            }
        }
        if spec.loss > 0.0 {
            let mut f = RandomFaults::new(spec.seed);
            f.loss = spec.loss;
            b.faults(f.into_hook());
        }
        let max_frame = spec.proto.max_frame;
        Ok(EtherPath {
            bridges,
            macs,
            net: b.build(),
            nics,
            link: spec.link,
            port_free: [vec![SimTime::ZERO; paths], vec![SimTime::ZERO; paths]],
            to_bridge: [Server::for_link(&spec.pcie), Server::for_link(&spec.pcie)],
            from_bridge: [Server::for_link(&spec.pcie), Server::for_link(&spec.pcie)],
            pcie: spec.pcie.clone(),
            traversal: spec.bridge.traversal(),
            extra_header: spec.extra_header,
            events: EventQueue::new(),
            waiting: [VecDeque::new(), VecDeque::new()],
            entering: [0, 0],
            frames: HashMap::new(),
            next_id: 0,
            delivered: 0,
            dropped: 0,
            timer_at: [None, None],
            wake_at: [None, None],
            tx: vec![0; max_frame],
            rx: vec![0; max_frame],
            stats: PathStats::default(),
            spans: spec.trace.then(Vec::new),
        })
    }

    /// The counters so far.
    pub fn stats(&self) -> PathStats {
        PathStats { bridges: [self.bridges[0].stats(), self.bridges[1].stats()], ..self.stats }
    }

    /// TLPs `side` has on their way into its bridge.
    pub fn entering(&self, side: Side) -> usize {
        self.entering[side.index()]
    }

    /// `from` puts `tlp` on its PCIe link to its bridge at `now`.
    pub fn push(&mut self, now: SimTime, from: Side, tlp: &Tlp, bytes: Vec<u8>) {
        let (kind, addr, payload) = tlp.pcie();
        let out = self.to_bridge[from.index()].transmit(now, self.pcie.wire_bytes(kind, addr, payload)).out;
        self.entering[from.index()] += 1;
        self.events.push(out + self.traversal, Ev::Ingress(from, bytes));
    }

    /// When the path next has something to do.
    pub fn next_time(&self) -> Option<SimTime> {
        match (self.events.peek_time(), self.net.next_time()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Does everything due at `now`.
    pub fn step(&mut self, now: SimTime, out: &mut Vec<Arrival>) {
        if self.net.next_time() == Some(now) {
            self.net.run_until(now);
            self.take_deliveries();
        }
        while self.events.peek_time() == Some(now) {
            let (_, ev) = self.events.pop().expect("peeked");
            match ev {
                Ev::Ingress(s, bytes) => {
                    self.waiting[s.index()].push_back(bytes);
                    self.poll(s, now);
                }
                Ev::Egress(s, bytes) => {
                    let tlp = Tlp::decode(&bytes).expect("the simulator's own TLP");
                    let (kind, addr, payload) = tlp.pcie();
                    let t = self.from_bridge[s.index()].transmit(now, self.pcie.wire_bytes(kind, addr, payload));
                    self.events.push(t.out, Ev::Deliver(s, bytes));
                }
                Ev::Deliver(s, bytes) => out.push(Arrival { at: now, to: s, bytes }),
                Ev::Wake(s) => {
                    if self.wake_at[s.index()] == Some(now) {
                        self.wake_at[s.index()] = None;
                        self.poll(s, now);
                    }
                }
                Ev::Timer(s) => {
                    if self.timer_at[s.index()] == Some(now) {
                        self.timer_at[s.index()] = None;
                        self.bridges[s.index()].handle_timeout(now.as_ps());
                        self.after_input(s, now);
                    }
                }
            }
        }
    }

    /// Frames the network delivered or lost since the last look.
    fn take_deliveries(&mut self) {
        while self.dropped < self.net.drops().len() {
            let lost = self.net.drops()[self.dropped];
            self.dropped += 1;
            self.frames.remove(&lost.frame.id);
            self.stats.frames_lost += 1;
        }
        while self.delivered < self.net.deliveries().len() {
            let d = self.net.deliveries()[self.delivered];
            self.delivered += 1;
            let Some(frame) = self.frames.remove(&d.frame.id) else { continue };
            let s = if self.nics[0].contains(&d.frame.dst) { Side::Host } else { Side::Device };
            if self.bridges[s.index()].handle_frame(d.at.as_ps(), &frame).is_err() {
                self.stats.refused += 1;
            }
            self.after_input(s, d.at);
        }
    }

    /// After a frame or a timeout: TLPs out, events, frames owed, the next deadline.
    fn after_input(&mut self, s: Side, now: SimTime) {
        let i = s.index();
        loop {
            match self.bridges[i].poll_tlp(&mut self.rx) {
                Ok(Some(d)) => {
                    let bytes = self.rx[..d.len].to_vec();
                    self.events.push(now + self.traversal, Ev::Egress(s, bytes));
                }
                Ok(None) => break,
                Err(e) => unreachable!("receive buffer holds a whole frame: {e}"),
            }
        }
        while let Some(BridgeEvent::PathFailed { .. }) = self.bridges[i].poll_event() {
            self.stats.failed_at.get_or_insert(now);
            self.stats.tlps_dropped = self.bridges[0].stats().tlps_dropped + self.bridges[1].stats().tlps_dropped;
        }
        self.poll(s, now);
    }

    /// Offers waiting TLPs to the bridge and sends frames while a port is idle.
    fn poll(&mut self, s: Side, now: SimTime) {
        let i = s.index();
        loop {
            self.offer(s);
            let free = self.port_free[i].iter().copied().min().expect("at least one port");
            if free > now {
                if self.wake_at[i].is_none_or(|w| w > free) {
                    self.wake_at[i] = Some(free);
                    self.events.push(free, Ev::Wake(s));
                }
                break;
            }
            let Some(t) = self.bridges[i].poll_transmit(now.as_ps(), &mut self.tx) else { break };
            self.inject(s, now, t.len, t.path);
        }
        self.offer(s);
        self.arm_timer(s, now);
    }

    /// Moves waiting TLPs into the bridge's queue until it pushes back.
    fn offer(&mut self, s: Side) {
        let i = s.index();
        let peer = self.macs[s.peer().index()];
        while let Some(t) = self.waiting[i].front() {
            match self.bridges[i].send_tlp(peer, t) {
                Ok(()) => {}
                Err(ExpError::QueueFull(_)) => break,
                Err(_) => self.stats.tlps_dropped += 1, // the path has failed: the TLP is lost
            }
            self.waiting[i].pop_front();
            self.entering[i] -= 1;
        }
    }

    fn inject(&mut self, s: Side, now: SimTime, len: usize, path: usize) {
        let i = s.index();
        let frame = self.tx[..len].to_vec();
        if let Ok(h) = Header::parse(&frame) {
            if h.kind == Kind::Data {
                self.stats.data_frames[i] += 1;
                self.stats.tlps[i] += u64::from(h.count);
                self.stats.tlps_sq[i] += u64::from(h.count) * u64::from(h.count);
            }
        }
        let payload = (len - ETH_HEADER) as u32 + self.extra_header;
        let start = self.port_free[i][path].max(now);
        let end = start + self.link.wire_time(payload);
        self.port_free[i][path] = end;
        if let Some(spans) = self.spans.as_mut() {
            let name = match Header::parse(&frame) {
                Ok(h) if h.kind == Kind::Data => format!("frame {} TLPs", h.count),
                _ => "ACK".to_owned(),
            };
            spans.push(Span { track: 2 + i * 16 + path, name, start, end });
        }
        let id = self.next_id;
        self.next_id += 1;
        self.frames.insert(id, frame);
        let (src, dst) = (self.nics[i][path], self.nics[s.peer().index()][path]);
        self.net.inject(now, Frame { id, payload, src, dst }).expect("a frame within the MTU, injected now");
    }

    fn arm_timer(&mut self, s: Side, now: SimTime) {
        let i = s.index();
        let Some(t) = self.bridges[i].poll_timeout() else { return };
        let t = SimTime::from_ps(t).max(now);
        if self.timer_at[i] != Some(t) {
            self.timer_at[i] = Some(t);
            self.events.push(t, Ev::Timer(s));
        }
    }

    /// Spans collected since the last call.
    pub fn take_spans(&mut self) -> Vec<Span> {
        self.spans.as_mut().map(std::mem::take).unwrap_or_default()
    }
}
