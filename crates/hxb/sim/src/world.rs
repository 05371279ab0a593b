//! The simulation: one `hxb_proto::Node` per node, driven in virtual time over the ether model.
//!
//! The protocol core decides everything (striping, ordering, ACKs, relays, retransmission);
//! this file only times it. A frame is the bytes `Node::poll_transmit` wrote; it is injected at
//! the node's NIC port when the host CPU has finished sending it, crosses the ether network
//! (bus DMA, links, switches), waits the interrupt latency, then queues for the receiving
//! host's CPU, which hands it to `Node::handle_frame` in a receive buffer named by id (the
//! skbuf ID of seed 004 §3.2). Packets the core delivers are joined into messages (END flag)
//! and given to the [`App`] after the host's wakeup delay.

use crate::fabric::{self, Fabric, Shape};
use crate::host::HostCosts;
use crate::platform::Platform;
use base::{EventQueue, SimTime, Trace, TrackId};
use ether::Frame;
use hxb_proto::{BufferId, Config, Coord, Disposition, Event, Grid, Header, Node, Stats, HEADER_LEN};
use std::collections::{BTreeMap, VecDeque};

/// What the application above the nodes may do while it handles a callback.
pub struct Api<'a> {
    now: SimTime,
    grid: Grid,
    sends: &'a mut Vec<(usize, usize, Vec<u8>)>,
    stop: &'a mut bool,
}

impl Api<'_> {
    /// The current time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The hyper-crossbar.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// Queues message `data` from node `from` to node `to` (linear indices) now.
    pub fn send(&mut self, from: usize, to: usize, data: Vec<u8>) {
        self.sends.push((from, to, data));
    }

    /// Ends the run after this callback (traffic still in flight is abandoned).
    pub fn stop(&mut self) {
        *self.stop = true;
    }
}

/// The traffic above the nodes: a benchmark or an MPI layer.
pub trait App {
    /// Called once at time zero.
    fn start(&mut self, api: &mut Api<'_>);
    /// A whole message from node `from` reached node `node`.
    fn message(&mut self, api: &mut Api<'_>, node: usize, from: usize, data: Vec<u8>);
}

/// A frame between injection and delivery: its bytes, sender and receiver.
struct InFlight {
    bytes: Vec<u8>,
    port: u16,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// A frame is in the receiving host's memory and its interrupt has fired.
    Rx { node: u32, frame: u32 },
    /// The CPU of `node` finished its current item; `inject` is a frame to hand to the NIC.
    CpuDone { node: u32, inject: Option<(u32, u32)> },
    /// A retransmission deadline of `node`.
    Timer { node: u32 },
    /// A message reaches the application.
    Message { node: u32, msg: u32 },
}

/// One node: the protocol core, its CPU, its receive buffers.
struct Host {
    node: Node,
    rxq: VecDeque<u32>,
    busy: bool,
    timer_at: Option<u64>,
    buffers: BTreeMap<u32, Vec<u8>>,
    free_ids: Vec<u32>,
    next_id: u32,
    partial: BTreeMap<usize, Vec<u8>>,
    cpu_busy: SimTime,
    track: Option<TrackId>,
}

impl Host {
    fn buffer(&mut self, bytes: Vec<u8>) -> BufferId {
        let id = self.free_ids.pop().unwrap_or_else(|| {
            self.next_id += 1;
            self.next_id
        });
        self.buffers.insert(id, bytes);
        BufferId::new(id).expect("ids start at 1")
    }

    fn release(&mut self, id: BufferId) -> Vec<u8> {
        self.free_ids.push(id.get());
        self.buffers.remove(&id.get()).expect("the core names only buffers it holds")
    }
}

/// Totals of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Protocol counters summed over the nodes.
    pub stats: Stats,
    /// Frames the network lost (full switch queues).
    pub lost: u64,
    /// Messages handed to the application.
    pub messages: u64,
    /// Events handled by the host loop and the network.
    pub events: u64,
    /// The time of the last event.
    pub end: SimTime,
}

/// A run of an [`App`] on a platform.
pub struct World {
    shape: Shape,
    grid: Grid,
    ports: u16,
    costs: HostCosts,
    interrupt: SimTime,
    fabric: Fabric,
    hosts: Vec<Host>,
    queue: EventQueue<Ev>,
    frames: Vec<Option<InFlight>>,
    free_frames: Vec<u32>,
    messages: Vec<Option<(usize, Vec<u8>)>>,
    txbuf: Vec<u8>,
    lost: u64,
    delivered_messages: u64,
    events: u64,
    trace: Option<Trace>,
}

/// A span name for a frame handled at `me`.
fn kind_name(frame: &[u8], me: Coord, dir: &'static str) -> &'static str {
    match Header::parse(frame) {
        Ok(h) if h.dst != me && h.src != me => "relay in",
        Ok(h) if h.kind == hxb_proto::Kind::Ack => {
            if dir == "send" {
                "send ACK"
            } else {
                "recv ACK"
            }
        }
        Ok(_) if dir == "send" => "send DATA",
        Ok(_) => "recv DATA",
        Err(_) => "refused",
    }
}

/// Upper bound on simulated time: a run past it is a model error, not a result.
const LIMIT: SimTime = SimTime::from_ps(100_000_000_000_000);

impl World {
    /// A world of `shape` on `p` with host costs `costs`; with `tracing`, a CPU track per node
    /// records a span per item (small shapes only).
    pub fn new(p: &Platform, shape: Shape, costs: HostCosts, tracing: bool) -> Result<World, String> {
        shape.check(p)?;
        let grid = Grid(shape.grid);
        let fabric = fabric::build(p, shape);
        let mut trace = tracing.then(Trace::new);
        if let Some(t) = trace.as_mut() {
            t.process(&format!("{} {}x{} links", p.name, shape.grid, shape.links));
        }
        let hosts = (0..grid.nodes())
            .map(|i| {
                let coord = grid.coord(i).expect("in grid");
                let cfg =
                    Config { grid, coord, links_per_dim: shape.links, mtu: p.packet_payload, rto_ps: p.rto.as_ps() };
                let node = Node::new(cfg).map_err(|e| e.to_string())?;
                let track = trace.as_mut().map(|t| t.track(&format!("node {coord} CPU")));
                Ok(Host {
                    node,
                    rxq: VecDeque::new(),
                    busy: false,
                    timer_at: None,
                    buffers: BTreeMap::new(),
                    free_ids: Vec::new(),
                    next_id: 0,
                    partial: BTreeMap::new(),
                    cpu_busy: SimTime::ZERO,
                    track,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(World {
            shape,
            grid,
            ports: shape.ports(),
            costs,
            interrupt: p.interrupt_latency,
            fabric,
            hosts,
            queue: EventQueue::new(),
            frames: Vec::new(),
            free_frames: Vec::new(),
            messages: Vec::new(),
            txbuf: vec![0; HEADER_LEN + usize::from(p.packet_payload)],
            lost: 0,
            delivered_messages: 0,
            events: 0,
            trace,
        })
    }

    /// The trace recorded so far, if tracing.
    pub fn take_trace(&mut self) -> Option<Trace> {
        self.trace.take()
    }

    /// The grid.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// CPU time node `i` has spent so far.
    pub fn cpu_busy(&self, i: usize) -> SimTime {
        self.hosts[i].cpu_busy
    }

    /// Switches in the network.
    pub fn switches(&self) -> usize {
        self.fabric.switches
    }

    fn apply(&mut self, now: SimTime, sends: Vec<(usize, usize, Vec<u8>)>) -> Result<(), String> {
        for (from, to, data) in sends {
            let dst = self.grid.coord(to).ok_or_else(|| format!("node {to} outside grid {}", self.grid.0))?;
            let host = self.hosts.get_mut(from).ok_or_else(|| format!("node {from} outside grid {}", self.grid.0))?;
            host.node.send(dst, &data).map_err(|e| e.to_string())?;
            self.kick(from, now);
        }
        Ok(())
    }

    /// Runs `app` until nothing is left to do or it stops.
    pub fn run(&mut self, app: &mut dyn App) -> Result<Totals, String> {
        let mut sends = Vec::new();
        let mut stop = false;
        app.start(&mut Api { now: SimTime::ZERO, grid: self.grid, sends: &mut sends, stop: &mut stop });
        self.apply(SimTime::ZERO, std::mem::take(&mut sends))?;
        let mut now = SimTime::ZERO;
        while !stop {
            let host_t = self.queue.peek_time();
            let net_t = self.fabric.net.next_time();
            let t = match (host_t, net_t) {
                (None, None) => break,
                (Some(h), Some(n)) => h.min(n),
                (Some(h), None) => h,
                (None, Some(n)) => n,
            };
            if t > LIMIT {
                return Err(format!("the run had not finished after {LIMIT} of simulated time"));
            }
            now = t;
            if net_t == Some(t) {
                self.fabric.net.run_until(t);
                self.events += 1;
                for d in self.fabric.net.take_deliveries() {
                    let node = self.fabric.owner[d.frame.dst.0 as usize];
                    self.queue.push(d.at + self.interrupt, Ev::Rx { node, frame: d.frame.id as u32 });
                }
                for l in self.fabric.net.take_drops() {
                    self.lost += 1;
                    self.free_frame(l.frame.id as u32);
                }
                continue;
            }
            let (_, ev) = self.queue.pop().expect("peeked");
            self.events += 1;
            match ev {
                Ev::Rx { node, frame } => {
                    self.hosts[node as usize].rxq.push_back(frame);
                    self.kick(node as usize, t);
                }
                Ev::CpuDone { node, inject } => {
                    let i = node as usize;
                    if let Some((frame, to)) = inject {
                        let port = self.frames[frame as usize].as_ref().expect("live frame").port;
                        let len = self.frames[frame as usize].as_ref().expect("live frame").bytes.len() as u32;
                        let src = self.fabric.nics[i][usize::from(port)];
                        let dst = self.fabric.nics[to as usize][usize::from(port)];
                        self.fabric
                            .net
                            .inject(t, Frame { id: u64::from(frame), payload: len, src, dst })
                            .map_err(|e| format!("node {}: {e}", self.hosts[i].node.coord()))?;
                    }
                    self.deliver(i, t);
                    self.hosts[i].busy = false;
                    self.kick(i, t);
                }
                Ev::Timer { node } => {
                    let h = &mut self.hosts[node as usize];
                    if h.timer_at == Some(t.as_ps()) {
                        h.timer_at = None;
                        h.node.handle_timeout(t.as_ps());
                        self.kick(node as usize, t);
                    }
                }
                Ev::Message { node, msg } => {
                    let (from, data) = self.messages[msg as usize].take().expect("message once");
                    self.delivered_messages += 1;
                    let mut api = Api { now: t, grid: self.grid, sends: &mut sends, stop: &mut stop };
                    app.message(&mut api, node as usize, from, data);
                    self.apply(t, std::mem::take(&mut sends))?;
                }
            }
        }
        let mut stats = Stats::default();
        for h in &self.hosts {
            let s = h.node.stats();
            stats.sent += s.sent;
            stats.retransmitted += s.retransmitted;
            stats.acks += s.acks;
            stats.relayed += s.relayed;
            stats.delivered += s.delivered;
            stats.duplicates += s.duplicates;
        }
        Ok(Totals { stats, lost: self.lost, messages: self.delivered_messages, events: self.events, end: now })
    }

    fn free_frame(&mut self, id: u32) -> InFlight {
        self.free_frames.push(id);
        self.frames[id as usize].take().expect("live frame")
    }

    fn new_frame(&mut self, f: InFlight) -> u32 {
        match self.free_frames.pop() {
            Some(id) => {
                self.frames[id as usize] = Some(f);
                id
            }
            None => {
                self.frames.push(Some(f));
                self.frames.len() as u32 - 1
            }
        }
    }

    /// Hands the core's delivered packets to message assembly.
    fn deliver(&mut self, i: usize, now: SimTime) {
        while let Some(Event::Deliver { from, buffer }) = self.hosts[i].node.poll_event() {
            let host = &mut self.hosts[i];
            let bytes = host.release(buffer);
            let h = Header::parse(&bytes).expect("the core delivers only frames it parsed");
            let from = self.grid.index(from).expect("in grid");
            let part = host.partial.entry(from).or_default();
            part.extend_from_slice(&bytes[HEADER_LEN..HEADER_LEN + usize::from(h.len)]);
            if h.end {
                let data = host.partial.remove(&from).unwrap_or_default();
                self.messages.push(Some((from, data)));
                let msg = self.messages.len() as u32 - 1;
                self.queue.push(now + self.costs.wakeup, Ev::Message { node: i as u32, msg });
            }
        }
    }

    /// Starts the CPU of node `i` on its next item if it is idle.
    fn kick(&mut self, i: usize, now: SimTime) {
        if self.hosts[i].busy {
            return;
        }
        let me = self.hosts[i].node.coord();
        // The documented call order: after every input, transmit until the core has nothing
        // more; only then the next received frame.
        let host = &mut self.hosts[i];
        let (cost, inject, what) = if let Some(t) = host.node.poll_transmit(now.as_ps(), &mut self.txbuf) {
            let mut bytes = self.txbuf[..t.len].to_vec();
            if let Some(b) = t.relay {
                let held = host.release(b);
                bytes.extend_from_slice(&held[HEADER_LEN..]);
            }
            let cost = self.costs.transmit(&bytes, t.relay.is_some(), self.ports);
            let what = if self.trace.is_none() {
                ""
            } else if t.relay.is_some() {
                "relay out"
            } else {
                kind_name(&bytes, me, "send")
            };
            let to = self.grid.index(t.to).expect("next hop in grid") as u32;
            let port = fabric::port_index(self.shape, t.port);
            let frame = self.new_frame(InFlight { bytes, port });
            (cost, Some((frame, to)), what)
        } else if let Some(frame) = host.rxq.pop_front() {
            let f = self.free_frame(frame);
            let cost = self.costs.receive(&f.bytes, me, self.ports);
            let what = if self.trace.is_some() { kind_name(&f.bytes, me, "recv") } else { "" };
            let proto_port = self.proto_port(f.port);
            let host = &mut self.hosts[i];
            let id = host.buffer(f.bytes);
            let bytes = host.buffers.get(&id.get()).expect("just stored");
            match host.node.handle_frame(now.as_ps(), proto_port, id, bytes) {
                Ok(Disposition::Held) => {}
                Ok(Disposition::Free) | Err(_) => {
                    host.release(id);
                }
            }
            (cost, None, what)
        } else {
            self.arm_timer(i, now);
            return;
        };
        let host = &mut self.hosts[i];
        host.busy = true;
        host.cpu_busy += cost;
        if let (Some(tr), Some(track)) = (self.trace.as_mut(), host.track) {
            tr.span(track, what, now, now + cost);
        }
        self.queue.push(now + cost, Ev::CpuDone { node: i as u32, inject });
        self.arm_timer(i, now);
    }

    /// The protocol port (`dim * k + link`) of fabric port `port`.
    fn proto_port(&self, port: u16) -> u16 {
        let k = u16::from(self.shape.links);
        let mut active = (0..hxb_proto::DIMS).filter(|&d| self.shape.grid.0[d] > 1);
        let dim = active.nth(usize::from(port / k)).unwrap_or(0) as u16;
        dim * k + port % k
    }

    /// Schedules the core's next retransmission deadline (a deadline already passed fires now).
    fn arm_timer(&mut self, i: usize, now: SimTime) {
        let h = &mut self.hosts[i];
        if let Some(at) = h.node.poll_timeout() {
            let at = at.max(now.as_ps());
            if h.timer_at.is_none_or(|t| at < t) {
                h.timer_at = Some(at);
                self.queue.push(SimTime::from_ps(at), Ev::Timer { node: i as u32 });
            }
        }
    }

    /// The coordinates of node `i`.
    pub fn coord(&self, i: usize) -> Coord {
        self.hosts[i].node.coord()
    }
}
