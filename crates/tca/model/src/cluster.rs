//! A TCA sub-cluster in virtual time: nodes, each with a CPU, its root complex, host memory,
//! GPUs behind the CPU's integrated PCIe switch and a PEACH2 board on the N port, and PEACH2
//! chips cabled port to port (seed 000 §3.2-3.5, Fig. 1-2).
//!
//! The model says *when*, never *what*: the TCA protocol core decides what is transferred and
//! in which order, and the simulated fabric hands its actions to the model as inputs, each at a
//! virtual time not earlier than [`Cluster::now`]:
//! - [`Cluster::work`]: work for a DMA channel, in order ([`Work`]: kick, descriptor, write,
//!   status word, done marker), timed by [`crate::peach2`];
//! - [`Cluster::pio`]: a CPU stores bytes into the window (seed 000 §3.5.1);
//! - [`Cluster::timer`]: a caller's timer (a driver's interrupt latency, a computation).
//!
//! Outputs, taken with [`Cluster::drain_outputs`] after [`Cluster::step`], say when bytes
//! became visible, when a write was posted and when a channel's status register reads done.

use crate::departures::Departures;
use crate::peach2::{Channel, Work};
use crate::platform::{HostSpec, Peach2Spec, Platform};
use crate::router::{AddressMap, Router, Target};
use crate::topology::{build_hops, routers, Hop, NodeHops};
use crate::transport::Tlp;
use base::{Context, Model, SimTime, Simulation, Trace};
use pcie::{LinkSpec, Server, TlpKind};

/// What became true at a virtual time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// `len` bytes of write `id` are visible at `dst`; they were read at `src` (global
    /// addresses).
    Landed {
        /// The write.
        id: u64,
        /// Global source address of these bytes.
        src: u64,
        /// Global destination address.
        dst: u64,
        /// Bytes.
        len: u64,
    },
    /// Every byte of write `id` has entered the DMA datapath: later TLPs of its channel cannot
    /// overtake it.
    Posted {
        /// The write.
        id: u64,
    },
    /// Status word `id` is visible (after the data it follows).
    StatusLanded {
        /// The status word.
        id: u64,
    },
    /// Done marker `id` is reached: the channel's status register reads done.
    Done {
        /// The marker.
        id: u64,
    },
    /// `len` bytes of PIO operation `id` are visible at `dst`, `offset` bytes into it.
    PioLanded {
        /// The operation.
        id: u64,
        /// Global address of these bytes.
        dst: u64,
        /// Offset of these bytes in the operation.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// Timer `id` expired.
    Timer {
        /// The timer.
        id: u64,
    },
}

/// What one FIFO resource of the cluster carried: a link direction (an N link, a cable, a GPU
/// link) or a throughput limit inside a node (QPI, the integrated switch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkStats {
    /// The resource, as its trace track is named (`node0 E port -> node1`).
    pub name: String,
    /// TLPs that went through it.
    pub tlps: u64,
    /// TLPs that found it busy with a TLP of another stream (another DMA channel, or another
    /// node's CPU) and queued behind it: the collisions of seed 001's paths on the rings. A
    /// stream queueing behind its own earlier TLPs is a stream at the link's rate, not a
    /// collision.
    pub stalled_tlps: u64,
    /// Time it spent serialising TLPs.
    pub busy: SimTime,
}

/// An input the model cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    /// No such node.
    #[error("node {node} does not exist (the platform has {nodes})")]
    NoSuchNode {
        /// The node asked for.
        node: u32,
        /// Nodes of the platform.
        nodes: u32,
    },
    /// No such channel.
    #[error("channel {channel} does not exist (PEACH2 has {channels})")]
    NoSuchChannel {
        /// The channel asked for.
        channel: u8,
        /// Channels of the chip.
        channels: u32,
    },
    /// An address outside every node's window.
    #[error("address {addr:#x} is not mapped by the window")]
    Unmapped {
        /// The address.
        addr: u64,
    },
    /// A DMA source on another node.
    #[error("DMA source {addr:#x} is not on node {node}: PEACH2 only reads local memory (seed 000 §3.5)")]
    RemoteRead {
        /// The address.
        addr: u64,
        /// The node whose channel would read it.
        node: u32,
    },
    /// An input in the past.
    #[error("input at {at} is earlier than the simulation clock {now}")]
    InThePast {
        /// When the input was given for.
        at: SimTime,
        /// The clock.
        now: SimTime,
    },
}

/// The cluster and its clock.
pub struct Cluster {
    sim: Simulation<Ev>,
    model: ClusterModel,
}

impl Cluster {
    /// Builds the nodes, cables and routing tables of `platform`.
    pub fn new(platform: &Platform) -> Self {
        Cluster { sim: Simulation::new(), model: ClusterModel::new(platform) }
    }

    /// As [`Cluster::new`], but every TLP moves on its own whatever `TCA_SIM_TLPS` says: the
    /// reference the trains ([`crate::train`]) are checked against.
    pub fn tlp_by_tlp(platform: &Platform) -> Self {
        let mut c = Cluster::new(platform);
        c.model.train_bytes = 0;
        c
    }

    /// Current virtual time.
    pub fn now(&self) -> SimTime {
        self.sim.now()
    }

    /// Time of the next internal event, if any.
    pub fn next_time(&self) -> Option<SimTime> {
        self.sim.next_time()
    }

    /// Events delivered so far.
    pub fn events(&self) -> u64 {
        self.sim.delivered()
    }

    /// The global address map of the window.
    pub fn address_map(&self) -> &AddressMap {
        &self.model.map
    }

    /// Processes the next event; returns its time, or `None` when idle.
    pub fn step(&mut self, trace: Option<&mut Trace>) -> Option<SimTime> {
        self.sim.step(&mut self.model, trace)
    }

    /// Moves the outputs produced since the last call, in time order, to the end of `out`.
    pub fn drain_outputs(&mut self, out: &mut Vec<(SimTime, Output)>) {
        out.append(&mut self.model.outputs);
    }

    /// What every link direction and throughput limit carried so far, in the order of their
    /// trace tracks (nodes first, then cables). Counting costs two additions per TLP and hop;
    /// this call builds the list.
    pub fn link_stats(&self) -> Vec<LinkStats> {
        self.model
            .hops
            .iter()
            .map(|h| LinkStats { name: h.name.clone(), tlps: h.tlps, stalled_tlps: h.stalled, busy: h.server.busy() })
            .collect()
    }

    /// Creates trace tracks for every link and channel (call before the first input).
    pub fn register_tracks(&mut self, trace: &mut Trace) {
        for hop in &mut self.model.hops {
            hop.track = Some(trace.track(&hop.name));
        }
        for (n, node) in self.model.nodes.iter_mut().enumerate() {
            for (c, ch) in node.channels.iter_mut().enumerate() {
                ch.track = Some(trace.track(&format!("node{n} PEACH2 DMA channel {c}")));
            }
        }
    }

    fn check(&self, at: SimTime, node: u32) -> Result<(), ClusterError> {
        if at < self.sim.now() {
            return Err(ClusterError::InThePast { at, now: self.sim.now() });
        }
        let nodes = self.model.nodes.len() as u32;
        if node >= nodes {
            return Err(ClusterError::NoSuchNode { node, nodes });
        }
        Ok(())
    }

    /// The node a global address `addr..addr+len` is on, if the window maps all of it.
    fn mapped(&self, addr: u64, len: u64) -> Result<u32, ClusterError> {
        let map = &self.model.map;
        let last = addr.checked_add(len.max(1) - 1).ok_or(ClusterError::Unmapped { addr })?;
        let node = map.node_of(addr).ok_or(ClusterError::Unmapped { addr })?;
        for a in [addr, last] {
            let ok = map.node_of(a) == Some(node)
                && node < self.model.nodes.len() as u32
                && map.target(a - map.node_base(node)).is_some();
            if !ok {
                return Err(ClusterError::Unmapped { addr: a });
            }
        }
        Ok(node)
    }

    /// Gives `work` to `channel` of `node` at time `at`, after the work given to it before.
    ///
    /// # Errors
    /// Unknown node or channel, an input in the past, a source not on `node`, an unmapped
    /// address.
    pub fn work(&mut self, at: SimTime, node: u32, channel: u8, work: Work) -> Result<(), ClusterError> {
        self.check(at, node)?;
        let channels = self.model.peach.dma_channels;
        if u32::from(channel) >= channels {
            return Err(ClusterError::NoSuchChannel { channel, channels });
        }
        match work {
            Work::Write { src, dst, len, .. } => {
                if self.mapped(src, len)? != node {
                    return Err(ClusterError::RemoteRead { addr: src, node });
                }
                self.mapped(dst, len)?;
            }
            Work::Status { dst, .. } => {
                self.mapped(dst, 4)?;
            }
            Work::Descriptor { source: crate::peach2::DescriptorSource::HostMemory, addr } => {
                if self.mapped(addr, self.model.peach.descriptor_bytes)? != node {
                    return Err(ClusterError::RemoteRead { addr, node });
                }
            }
            Work::Kick | Work::Descriptor { .. } | Work::Done { .. } => {}
        }
        let ch = self.model.channel(node, channel);
        let seq = ch.push(work);
        if let Work::Kick = work {
            self.sim.schedule_at(at, Ev::CpuKick { node, channel, seq });
        } else if ch.schedule_pump() {
            self.sim.schedule_at(at, Ev::Pump { node, channel });
        }
        Ok(())
    }

    /// The CPU of `node` stores `len` bytes at global address `dst` at time `at` (PIO), tagged `id`.
    ///
    /// # Errors
    /// Unknown node; `dst` outside the window or the platform's nodes.
    pub fn pio(&mut self, at: SimTime, node: u32, dst: u64, len: u64, id: u64) -> Result<(), ClusterError> {
        self.check(at, node)?;
        self.mapped(dst, len)?;
        self.sim.schedule_at(at, Ev::CpuStore(Box::new(CpuStore { node, dst, len, id })));
        Ok(())
    }

    /// [`Output::Timer`] `id` at time `at`.
    ///
    /// # Errors
    /// An input in the past.
    pub fn timer(&mut self, at: SimTime, id: u64) -> Result<(), ClusterError> {
        self.check(at, 0)?;
        self.sim.schedule_at(at, Ev::Timer { id });
        Ok(())
    }

    /// When a CPU that starts polling the status register of a channel at `start` sees a
    /// completion that happened at `done`: back-to-back register reads, each `mmio_latency` and
    /// the N link down, `register_read_cycles`, and back up.
    pub fn poll_register(&self, start: SimTime, done: SimTime) -> SimTime {
        self.model.poll_register(start, done, 0, 1)
    }

    /// As [`Cluster::poll_register`], but the best over `measurements` poll loops whose phases
    /// differ by `1/measurements` of a round trip (a benchmark keeping its best run).
    pub fn poll_register_best_of(&self, start: SimTime, done: SimTime, measurements: u64) -> SimTime {
        (0..measurements.max(1))
            .map(|k| self.model.poll_register(start, done, k, measurements.max(1)))
            .min()
            .unwrap_or(done)
    }

    /// When each descriptor of `channel` on `node` was decoded, in order, since the channel's last
    /// kick.
    pub fn decoded(&self, node: u32, channel: u8) -> &[SimTime] {
        &self.model.nodes[node as usize].channels[channel as usize].decoded
    }
}

// ---------------------------------------------------------------------------------------------

pub(crate) struct NodeHw {
    pub(crate) hops: NodeHops,
    pub(crate) router: Router,
    pub(crate) host_memory: Server,
    pub(crate) gpu_read: Vec<Server>,
    pub(crate) channels: Vec<Channel>,
    /// Writes of every channel crossing the chip's DMA datapath toward N (`forward_cycles`).
    pub(crate) datapath: Departures<Tlp>,
    /// Completions and writes leaving host memory, each after its latency.
    pub(crate) memory_reads: Departures<Tlp>,
    pub(crate) memory_writes: Departures<Tlp>,
    /// Trains of writes into each GPU, visible as their last TLP arrives ([`crate::train`]).
    pub(crate) gpu_writes: Vec<Departures<Tlp>>,
}

pub(crate) struct CpuStore {
    node: u32,
    dst: u64,
    len: u64,
    id: u64,
}

/// The FIFOs whose TLPs leave by [`Ev::Departure`] ([`crate::departures::Departures`]).
/// A word-sized tag, as [`Ev`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Fifo {
    /// TLPs leaving a hop for the next hop or their destination.
    Leave(usize),
    /// Writes entering the chip at the end of a hop toward a cable port.
    Cross(usize),
    /// Writes that crossed the chip at the end of a hop toward N.
    Relay(usize),
    /// Writes of a node's DMA channels leaving the chip's datapath toward N.
    Emit(u32),
    /// Completions leaving a node's host memory.
    MemoryRead(u32),
    /// Writes reaching a node's host memory, visible as they leave.
    MemoryWrite(u32),
    /// Trains of writes reaching GPU `.1` of node `.0`, visible as they leave.
    GpuWrite(u32, u32),
}

/// A word-sized tag puts every field on a word: the queue moves events as whole words (with a
/// one-byte tag, copies of the fields straddled words and stalled the CPU's store forwarding).
#[repr(u64)]
pub(crate) enum Ev {
    CpuKick {
        node: u32,
        channel: u8,
        seq: u64,
    },
    /// Boxed: PIO stores are rare, and every queued event is as large as the largest.
    CpuStore(Box<CpuStore>),
    /// The first TLP of a FIFO leaves it.
    Departure(Fifo),
    Pump {
        node: u32,
        channel: u8,
    },
    Kicked {
        node: u32,
        channel: u8,
        seq: u64,
    },
    Decoded {
        node: u32,
        channel: u8,
        seq: u64,
    },
    DoneReached {
        node: u32,
        channel: u8,
        id: u64,
    },
    /// The last byte of a train of completions for read request `request` has entered the
    /// datapath ([`crate::train`]).
    TrainPosted {
        node: u32,
        channel: u8,
        last: bool,
        request: u32,
        bytes: u32,
    },
    Timer {
        id: u64,
    },
}

pub(crate) struct ClusterModel {
    pub(crate) peach: Peach2Spec,
    pub(crate) host: HostSpec,
    pub(crate) gpu_sockets: Vec<u32>,
    pub(crate) gpu_read_latency: SimTime,
    pub(crate) host_link: LinkSpec,
    /// `max_payload` of the host, cable and GPU links: a TLP carries at most the smallest of
    /// those of the links it crosses ([`ClusterModel::max_payload_to`]).
    pub(crate) host_mps: u64,
    pub(crate) cable_mps: u64,
    pub(crate) gpu_mps: u64,
    /// The read completion boundary of each completer: the root complex (host memory) and
    /// the GPUs.
    pub(crate) host_rcb: u64,
    pub(crate) gpu_rcb: u64,
    pub(crate) map: AddressMap,
    pub(crate) nodes: Vec<NodeHw>,
    pub(crate) hops: Vec<Hop>,
    pub(crate) outputs: Vec<(SimTime, Output)>,
    pub(crate) pio_chunk: u64,
    /// `forward_cycles` of the chip as time, computed once (a 128-bit division).
    pub(crate) forward: SimTime,
    /// Most payload bytes of one train ([`crate::train`]); no trains below `max_payload`.
    pub(crate) train_bytes: u64,
}

impl ClusterModel {
    fn new(p: &Platform) -> Self {
        let gpus = p.gpu.sockets.len() as u32;
        let map = AddressMap::new(&p.address_map, gpus);
        let (hops, node_hops) = build_hops(p);
        let nodes = node_hops
            .into_iter()
            .zip(routers(p, &map))
            .enumerate()
            .map(|(n, (hops, router))| NodeHw {
                hops,
                router,
                host_memory: Server::with_bandwidth(p.host.inbound_bandwidth, SimTime::ZERO),
                gpu_read: (0..gpus).map(|_| Server::with_bandwidth(p.gpu.read_bandwidth, SimTime::ZERO)).collect(),
                channels: (0..p.peach2.dma_channels).map(|_| Channel::new(p.nodes as usize)).collect(),
                datapath: Departures::new(Fifo::Emit(n as u32)),
                memory_reads: Departures::new(Fifo::MemoryRead(n as u32)),
                memory_writes: Departures::new(Fifo::MemoryWrite(n as u32)),
                gpu_writes: (0..gpus).map(|g| Departures::new(Fifo::GpuWrite(n as u32, g))).collect(),
            })
            .collect();
        ClusterModel {
            peach: p.peach2.clone(),
            host: p.host.clone(),
            gpu_sockets: p.gpu.sockets.clone(),
            gpu_read_latency: p.gpu.read_latency,
            host_link: p.host_link.clone(),
            host_mps: p.host_link.max_payload,
            cable_mps: p.cable_link.max_payload,
            gpu_mps: p.gpu_link.max_payload,
            host_rcb: p.host_link.read_completion_boundary,
            gpu_rcb: p.gpu_link.read_completion_boundary,
            map,
            nodes,
            hops,
            outputs: Vec::new(),
            pio_chunk: p.host.pio_write_combining,
            forward: p.peach2.cycles(p.peach2.forward_cycles),
            train_bytes: crate::train::train_bytes(p),
        }
    }

    /// The largest payload of a TLP between the chip of `node` and global `addr`: the
    /// smallest max payload of the links it crosses (the cables when `addr` is on another node,
    /// the host link of `addr`'s node, and the GPU link when `addr` is GPU memory).
    pub(crate) fn max_payload_to(&self, node: u32, addr: u64) -> u64 {
        let to = self.map.node_of(addr);
        let mut mps = self.host_mps;
        if to != Some(node) {
            mps = mps.min(self.cable_mps);
        }
        if let Some(Target::Gpu(..)) = to.and_then(|n| self.map.target(addr - self.map.node_base(n))) {
            mps = mps.min(self.gpu_mps);
        }
        mps
    }

    fn poll_register(&self, start: SimTime, done: SimTime, k: u64, of: u64) -> SimTime {
        let link = &self.host_link;
        let down = self.host.mmio_latency + link.serialization(link.wire_bytes(TlpKind::MemRead, 0, 0)) + link.latency;
        let sample = self.peach.cycles(self.peach.register_read_cycles);
        let up = link.serialization(link.wire_bytes(TlpKind::Completion, 0, 4)) + link.latency + self.host.mmio_latency;
        let rtt = (down + sample + up).as_ps();
        let first_sample = start.as_ps() + k * rtt / of + (down + sample).as_ps();
        let reads = done.as_ps().saturating_sub(first_sample).div_ceil(rtt);
        SimTime::from_ps(first_sample + reads * rtt) + up
    }

    fn done_reached(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8, id: u64) {
        let now = ctx.now();
        let ch = self.channel(node, channel);
        if let (Some(track), Some(start)) = (ch.track, ch.run_start.take()) {
            ctx.span(track, "run", start.min(now), now);
        }
        self.outputs.push((now, Output::Done { id }));
    }
}

impl Model for ClusterModel {
    type Event = Ev;

    fn handle(&mut self, ctx: &mut Context<'_, Ev>, event: Ev) {
        match event {
            Ev::CpuKick { node, channel, seq } => {
                if let Some(track) = self.channel(node, channel).track {
                    ctx.span(track, "kick", ctx.now(), ctx.now() + SimTime::from_ps(1));
                }
                self.cpu_kick(ctx, node, channel, seq);
            }
            Ev::CpuStore(s) => self.cpu_store(ctx, s.node, s.dst, s.len, s.id),
            Ev::Departure(fifo) => self.depart(ctx, fifo),
            Ev::Pump { node, channel } => self.pump(ctx, node, channel),
            Ev::Kicked { node, channel, seq } => self.kicked(ctx, node, channel, seq),
            Ev::Decoded { node, channel, seq } => self.decoded(ctx, node, channel, seq),
            Ev::DoneReached { node, channel, id } => self.done_reached(ctx, node, channel, id),
            Ev::TrainPosted { node, channel, last, request, bytes } => {
                self.completion_posted(ctx, node, channel, request as usize, u64::from(bytes), last)
            }
            Ev::Timer { id } => self.outputs.push((ctx.now(), Output::Timer { id })),
        }
    }
}
