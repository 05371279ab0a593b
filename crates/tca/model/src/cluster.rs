//! A TCA sub-cluster in virtual time: nodes, each with a CPU, its root complex, host memory,
//! GPUs behind the CPU's integrated PCIe switch and a PEACH2 board on the N port, and PEACH2
//! chips cabled port to port (seed 000 §3.2-3.5, Fig. 1-2).
//!
//! Every TLP moves hop by hop through FIFO [`Server`]s: link directions, cables, and the
//! throughput limits of root complexes and GPUs, so traffic that shares a link queues as in
//! hardware. On entering a chip, a TLP is routed by the address-window router: to N with the node
//! offset subtracted, or out through E, W or S to the next chip (`peach2.forward_cycles` per chip).
//!
//! Inputs, each at a virtual time not earlier than [`Cluster::now`]:
//! - [`Cluster::kick`]: a CPU stores to a DMA channel's kick register; the channel runs a
//!   [`DmaJob`] (chaining mode fetches each 32-byte descriptor from host memory, register mode
//!   does not), reads its sources on the local node, writes to any node, and after each entry
//!   optionally writes a notification word (seed 000 §4.2.2: status written to the remote side);
//! - [`Cluster::pio`]: a CPU stores bytes into the window (seed 000 §3.5.1), in write-combined
//!   TLPs.
//!
//! Outputs, taken with [`Cluster::take_outputs`] after [`Cluster::step`]: when bytes become
//! visible at their destination ([`Output::DmaLanded`], [`Output::NotifyLanded`],
//! [`Output::PioLanded`]) and when a channel has sent its last TLP ([`Output::ChannelDone`]).
//! The caller moves the data and decides what a program sees; this model only says when.

use tca_proto::descriptor::Descriptor;
use pcie::{split_completions, split_requests, LinkSpec, Server, TlpKind};
use crate::platform::{HostSpec, Peach2Spec, Platform};
use crate::router::{AddressMap, Port, Route, Router, Target};
use base::{Context, Model, SimTime, Simulation, Trace, TrackId};

/// How a channel gets its requests (seed 000 §3.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaMode {
    /// Descriptors fetched from host memory over PCIe.
    Chaining,
    /// Up to `register_slots` requests written to controller registers beforehand.
    Register,
}

/// One request of a job: a hardware descriptor with global (window) addresses, and where to
/// write a notification word once its data has been sent.
#[derive(Debug, Clone)]
pub struct JobEntry {
    pub descriptor: Descriptor,
    /// Global addresses of the status words written, in order, once the entry's data is sent.
    pub notify: Vec<u64>,
    /// Chaining mode: the descriptor sits in PEACH2's internal memory, not in host memory
    /// (seed 001: descriptors are prepared "in host memory or PEACH2's internal memory").
    pub internal: bool,
}

/// A descriptor chain as one channel executes it.
#[derive(Debug, Clone)]
pub struct DmaJob {
    pub mode: DmaMode,
    pub entries: Vec<JobEntry>,
    /// Host-memory offset of the descriptor table on the issuing node (chaining mode).
    pub table_offset: u64,
    /// The caller's name for this job, echoed in its outputs.
    pub id: u64,
}

/// What became true at a virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// `len` bytes of entry `entry` of the job on (`node`, `channel`) are visible at `dst`;
    /// they came from `src` (global addresses).
    DmaLanded { job: u64, node: u32, channel: u8, entry: usize, src: u64, dst: u64, len: u64 },
    /// The notification word of an entry is visible at `dst`.
    NotifyLanded {
        job: u64,
        node: u32,
        channel: u8,
        entry: usize,
        /// Which of the entry's status words.
        index: usize,
        dst: u64,
    },
    /// `len` bytes of PIO operation `id` are visible at `dst`, `offset` bytes into the operation.
    PioLanded { id: u64, dst: u64, offset: u64, len: u64 },
    /// The channel's last TLP has left the chip: its status register reads "done".
    ChannelDone { job: u64, node: u32, channel: u8 },
}

/// A cluster the model cannot be built for, or an input it cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClusterError {
    #[error("node {node} does not exist (the platform has {nodes})")]
    NoSuchNode { node: u32, nodes: u32 },
    #[error("channel {channel} does not exist (PEACH2 has {channels})")]
    NoSuchChannel { channel: u8, channels: u32 },
    #[error("channel {channel} of node {node} is still busy")]
    ChannelBusy { node: u32, channel: u8 },
    #[error("register mode holds at most {slots} requests, {count} asked")]
    TooManyForRegisters { slots: u32, count: usize },
    #[error("an empty job")]
    EmptyJob,
    #[error("address {addr:#x} is not mapped by the window")]
    Unmapped { addr: u64 },
    #[error("DMA source {addr:#x} is not on node {node}: PEACH2 only reads local memory (seed 000 §3.5)")]
    RemoteRead { addr: u64, node: u32 },
    #[error("input at {at} is earlier than the simulation clock {now}")]
    InThePast { at: SimTime, now: SimTime },
    #[error("node {node} has no {port:?} port cable to route {addr:#x}")]
    NoRoute { node: u32, port: Port, addr: u64 },
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

    pub fn address_map(&self) -> &AddressMap {
        &self.model.map
    }

    /// Processes the next event; returns its time, or `None` when idle.
    pub fn step(&mut self, trace: Option<&mut Trace>) -> Option<SimTime> {
        self.sim.step(&mut self.model, trace)
    }

    /// Outputs produced since the last call, in time order.
    pub fn take_outputs(&mut self) -> Vec<(SimTime, Output)> {
        std::mem::take(&mut self.model.outputs)
    }

    /// Creates trace tracks for every link and channel (call before the first input).
    pub fn register_tracks(&mut self, trace: &mut Trace) {
        self.model.register_tracks(trace);
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

    /// The CPU of `node` kicks `channel` at `at` to run `job`.
    ///
    /// # Errors
    /// Unknown node or channel, a busy channel, an empty job, too many requests for register
    /// mode, a source not on `node`, an unmapped destination.
    pub fn kick(&mut self, at: SimTime, node: u32, channel: u8, job: DmaJob) -> Result<(), ClusterError> {
        self.check(at, node)?;
        let p = &self.model.peach;
        if channel as u32 >= p.dma_channels {
            return Err(ClusterError::NoSuchChannel { channel, channels: p.dma_channels });
        }
        if job.entries.is_empty() {
            return Err(ClusterError::EmptyJob);
        }
        if job.mode == DmaMode::Register && job.entries.len() > p.register_slots as usize {
            return Err(ClusterError::TooManyForRegisters { slots: p.register_slots, count: job.entries.len() });
        }
        let map = &self.model.map;
        for e in &job.entries {
            let d = &e.descriptor;
            let last_src = d.src + (d.count as u64 - 1) * d.src_pitch as u64 + d.length as u64 - 1;
            for addr in [d.src, last_src] {
                if map.node_of(addr) != Some(node) {
                    return Err(ClusterError::RemoteRead { addr, node });
                }
            }
            let last_dst = d.dst + (d.count as u64 - 1) * d.dst_pitch as u64 + d.length as u64 - 1;
            for addr in [d.dst, last_dst].into_iter().chain(e.notify.iter().copied()) {
                let dst_node = map.node_of(addr).ok_or(ClusterError::Unmapped { addr })?;
                if dst_node >= self.model.nodes.len() as u32 || map.target(addr - map.node_base(dst_node)).is_none() {
                    return Err(ClusterError::Unmapped { addr });
                }
            }
        }
        let ch = &mut self.model.nodes[node as usize].channels[channel as usize];
        if ch.busy {
            return Err(ClusterError::ChannelBusy { node, channel });
        }
        ch.load(job, map.node_base(node));
        self.sim.schedule_at(at, Ev::CpuKick { node, channel });
        Ok(())
    }

    /// The CPU of `node` stores `len` bytes at global address `dst` at time `at` (PIO), tagged `id`.
    ///
    /// # Errors
    /// Unknown node; `dst` outside the window or the platform's nodes.
    pub fn pio(&mut self, at: SimTime, node: u32, dst: u64, len: u64, id: u64) -> Result<(), ClusterError> {
        self.check(at, node)?;
        let map = &self.model.map;
        let end = dst + len.max(1) - 1;
        for addr in [dst, end] {
            match map.node_of(addr) {
                Some(n) if n < self.model.nodes.len() as u32 && map.target(addr - map.node_base(n)).is_some() => {}
                _ => return Err(ClusterError::Unmapped { addr }),
            }
        }
        self.sim.schedule_at(at, Ev::CpuStore { node, dst, len, id });
        Ok(())
    }

    /// When a CPU that starts polling the status register of a channel on `node` at `start`
    /// sees a completion that happened at `done`: back-to-back register reads, each
    /// `mmio_latency` and the N link down, `register_read_cycles`, and back up.
    pub fn poll_register(&self, start: SimTime, done: SimTime) -> SimTime {
        self.model.poll_register(start, done, 0, 1)
    }

    /// As [`Cluster::poll_register`], but the best over `measurements` poll loops whose phases
    /// differ by `1/measurements` of a round trip (a benchmark keeping its best run).
    pub fn poll_register_best_of(&self, start: SimTime, done: SimTime, measurements: u64) -> SimTime {
        (0..measurements)
            .map(|k| self.model.poll_register(start, done, k, measurements))
            .min()
            .expect("at least one measurement")
    }

    /// When the descriptors of the job on (`node`, `channel`) were decoded, by entry.
    pub fn decoded(&self, node: u32, channel: u8) -> &[SimTime] {
        &self.model.nodes[node as usize].channels[channel as usize].decoded
    }
}

// ---------------------------------------------------------------------------------------------

/// A FIFO resource of the cluster.
struct Hop {
    server: Server,
    /// Links count whole TLPs on the wire; limits inside chips count payload bytes only.
    link: Option<LinkSpec>,
    name: String,
    track: Option<TrackId>,
}

/// Hops of one node.
struct NodeHops {
    n_up: usize,
    n_down: usize,
    cpu: usize,
    p2p: usize,
    p2p_read: usize,
    qpi_out: usize,
    qpi_in: usize,
    /// GPU g: `gpu0 + 2g` toward the GPU, `gpu0 + 2g + 1` back.
    gpu0: usize,
    /// Cable leaving each port (E, W, S) and the node at its other end.
    cables: [Option<(usize, u32)>; 4],
}

struct NodeHw {
    hops: NodeHops,
    router: Router,
    host_memory: Server,
    gpu_read: Vec<Server>,
    channels: Vec<Channel>,
    channel_tracks: Vec<Option<TrackId>>,
}

/// Where a TLP is headed once its local hops are done.
#[derive(Debug, Clone, Copy)]
enum Dest {
    HostMemory(u32),
    Gpu(u32, u32),
    /// The PEACH2 chip of a node (from N or a cable): routed again there.
    Chip(u32),
}

#[derive(Debug, Clone, Copy)]
enum Purpose {
    Kick { channel: u8 },
    DescriptorFetch { channel: u8, index: usize },
    DataRead { channel: u8, request: usize },
    Completion { channel: u8, of: Completes, bytes: u64, last: bool },
    DataWrite { job: u64, channel: u8, entry: usize, src: u64, last: bool },
    NotifyWrite { job: u64, channel: u8, entry: usize, index: usize, last: bool },
    Pio { id: u64, offset: u64 },
}

#[derive(Debug, Clone, Copy)]
enum Completes {
    Descriptor(usize),
    Request(usize),
}

struct Tlp {
    kind: TlpKind,
    /// Global (window) address: the router picks the target behind N from it.
    addr: u64,
    payload: u64,
    read_len: u64,
    path: [usize; 5],
    path_len: u8,
    at: u8,
    dest: Dest,
    /// Node whose chip sent it (DMA) or whose CPU stored it (PIO, kick).
    origin: u32,
    purpose: Purpose,
    /// Set once the TLP has passed through a chip after the one that made it (so it cannot end
    /// its job a second time), and for CPU stores.
    forwarded: bool,
}

enum Ev {
    CpuKick {
        node: u32,
        channel: u8,
    },
    CpuStore {
        node: u32,
        dst: u64,
        len: u64,
        id: u64,
    },
    Hop(usize),
    DescriptorReady {
        node: u32,
        channel: u8,
        index: usize,
    },
    /// A write TLP leaves the DMA datapath toward its port.
    Emit(usize),
    /// A write's bytes become visible at its destination.
    Visible(usize),
    /// A kicked channel starts its job.
    JobStart {
        node: u32,
        channel: u8,
    },
    JobSent {
        node: u32,
        channel: u8,
    },
}

struct ReadRequest {
    src: u64,
    len: u64,
    dst: u64,
    received: u64,
    entry: usize,
    last_of_entry: bool,
}

/// One DMA channel of a PEACH2 (seed 000 §3.5.2).
#[derive(Default)]
struct Channel {
    busy: bool,
    chaining: bool,
    table: u64,
    entries: Vec<JobEntry>,
    next_fetch: usize,
    /// A descriptor fetch is due but waits for a free tag.
    fetch_wanted: bool,
    requests: Vec<ReadRequest>,
    next_request: usize,
    outstanding: u32,
    decoded: Vec<SimTime>,
    /// The caller's id of the job.
    job: u64,
}

impl Channel {
    fn load(&mut self, job: DmaJob, node_base: u64) {
        *self = Channel {
            busy: true,
            chaining: job.mode == DmaMode::Chaining,
            table: node_base + job.table_offset,
            decoded: vec![SimTime::MAX; job.entries.len()],
            job: job.id,
            entries: job.entries,
            ..Channel::default()
        };
    }
}

struct ClusterModel {
    peach: Peach2Spec,
    host: HostSpec,
    gpu_sockets: Vec<u32>,
    gpu_read_latency: SimTime,
    host_link: LinkSpec,
    map: AddressMap,
    nodes: Vec<NodeHw>,
    hops: Vec<Hop>,
    /// TLPs in flight; slots are reused.
    tlps: Vec<Option<Tlp>>,
    free: Vec<usize>,
    outputs: Vec<(SimTime, Output)>,
    pio_chunk: u64,
}

impl ClusterModel {
    fn new(p: &Platform) -> Self {
        let gpus = p.gpu.sockets.len() as u32;
        let map = AddressMap::new(&p.address_map, gpus);
        let mut hops: Vec<Hop> = Vec::new();
        let add = |hops: &mut Vec<Hop>, server: Server, link: Option<LinkSpec>, name: String| {
            hops.push(Hop { server, link, name, track: None });
            hops.len() - 1
        };
        let mut nodes = Vec::new();
        for n in 0..p.nodes {
            let pre = |s: &str| format!("node{n} {s}");
            let n_up = add(
                &mut hops,
                Server::for_link(&p.host_link),
                Some(p.host_link.clone()),
                pre("N port -> root complex"),
            );
            let n_down = add(
                &mut hops,
                Server::for_link(&p.host_link),
                Some(p.host_link.clone()),
                pre("root complex -> N port"),
            );
            let cpu = add(&mut hops, Server::latency_only(p.host.mmio_latency), None, pre("CPU core <-> root port"));
            let p2p =
                add(&mut hops, Server::latency_only(p.host.p2p_latency), None, pre("integrated switch (peer-to-peer)"));
            let p2p_read = add(
                &mut hops,
                Server::with_bandwidth(p.host.p2p_read_bandwidth, p.host.p2p_latency),
                None,
                pre("integrated switch (peer-to-peer read completions)"),
            );
            let qpi = |hops: &mut Vec<Hop>, name: &str| {
                add(hops, Server::with_bandwidth(p.host.qpi_bandwidth, p.host.qpi_latency), None, pre(name))
            };
            let qpi_out = qpi(&mut hops, "QPI socket 0 -> 1");
            let qpi_in = qpi(&mut hops, "QPI socket 1 -> 0");
            let gpu0 = hops.len();
            for g in 0..gpus {
                add(
                    &mut hops,
                    Server::for_link(&p.gpu_link),
                    Some(p.gpu_link.clone()),
                    pre(&format!("root port -> GPU{g}")),
                );
                add(
                    &mut hops,
                    Server::for_link(&p.gpu_link),
                    Some(p.gpu_link.clone()),
                    pre(&format!("GPU{g} -> root port")),
                );
            }
            nodes.push(NodeHw {
                hops: NodeHops { n_up, n_down, cpu, p2p, p2p_read, qpi_out, qpi_in, gpu0, cables: [None; 4] },
                router: Router::for_node(&map, n, &[]),
                host_memory: Server::with_bandwidth(p.host.inbound_bandwidth, SimTime::ZERO),
                gpu_read: (0..gpus).map(|_| Server::with_bandwidth(p.gpu.read_bandwidth, SimTime::ZERO)).collect(),
                channels: (0..p.peach2.dma_channels).map(|_| Channel::default()).collect(),
                channel_tracks: vec![None; p.peach2.dma_channels as usize],
            });
        }
        for cable in &p.cables {
            for (from, port, to) in [(cable.a, cable.a_port, cable.b), (cable.b, cable.b_port, cable.a)] {
                let hop = add(
                    &mut hops,
                    Server::for_link(&p.cable_link),
                    Some(p.cable_link.clone()),
                    format!("node{from} {port:?} port -> node{to}"),
                );
                nodes[from as usize].hops.cables[port_index(port)] = Some((hop, to));
            }
        }
        for (n, node) in nodes.iter_mut().enumerate() {
            node.router = Router::for_node(&map, n as u32, &routes_from(n as u32, p));
        }
        ClusterModel {
            peach: p.peach2.clone(),
            host: p.host.clone(),
            gpu_sockets: p.gpu.sockets.clone(),
            gpu_read_latency: p.gpu.read_latency,
            host_link: p.host_link.clone(),
            map,
            nodes,
            hops,
            tlps: Vec::new(),
            free: Vec::new(),
            outputs: Vec::new(),
            pio_chunk: p.host.pio_write_combining,
        }
    }

    fn register_tracks(&mut self, trace: &mut Trace) {
        for hop in &mut self.hops {
            hop.track = Some(trace.track(&hop.name));
        }
        for (n, node) in self.nodes.iter_mut().enumerate() {
            for (c, t) in node.channel_tracks.iter_mut().enumerate() {
                *t = Some(trace.track(&format!("node{n} PEACH2 DMA channel {c}")));
            }
        }
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

    // --- moving TLPs -------------------------------------------------------------------------

    fn alloc(&mut self, tlp: Tlp) -> usize {
        match self.free.pop() {
            Some(id) => {
                self.tlps[id] = Some(tlp);
                id
            }
            None => {
                self.tlps.push(Some(tlp));
                self.tlps.len() - 1
            }
        }
    }

    fn tlp(&self, id: usize) -> &Tlp {
        self.tlps[id].as_ref().expect("live TLP")
    }

    /// Local hops from the chip of `node` to a local target, and the destination.
    fn path_to_target(&self, node: u32, target: Target) -> ([usize; 5], u8, Dest) {
        let h = &self.nodes[node as usize].hops;
        match target {
            Target::Host(_) => ([h.n_up, 0, 0, 0, 0], 1, Dest::HostMemory(node)),
            Target::Gpu(g, _) if self.gpu_sockets[g as usize] != 0 => {
                ([h.n_up, h.p2p, h.qpi_out, h.gpu0 + 2 * g as usize, 0], 4, Dest::Gpu(node, g))
            }
            Target::Gpu(g, _) => ([h.n_up, h.p2p, h.gpu0 + 2 * g as usize, 0, 0], 3, Dest::Gpu(node, g)),
        }
    }

    /// Hops for completions from a target back to the chip of its node.
    fn path_to_chip(&self, from: Dest) -> ([usize; 5], u8) {
        match from {
            Dest::Gpu(n, g) => {
                let h = &self.nodes[n as usize].hops;
                let back = h.gpu0 + 2 * g as usize + 1;
                if self.gpu_sockets[g as usize] != 0 {
                    ([back, h.qpi_in, h.p2p_read, h.n_down, 0], 4)
                } else {
                    ([back, h.p2p_read, h.n_down, 0, 0], 3)
                }
            }
            Dest::HostMemory(n) => ([self.nodes[n as usize].hops.n_down, 0, 0, 0, 0], 1),
            Dest::Chip(_) => unreachable!("chips are not read"),
        }
    }

    /// Starts a TLP that is at the chip of `node` (just out of the DMA engine, or just arrived):
    /// routes it and sends it on its way.
    fn route_from_chip(&mut self, ctx: &mut Context<'_, Ev>, node: u32, id: usize) {
        let addr = self.tlp(id).addr;
        // Addresses stay global in this model: the router's local address (node offset
        // subtracted, seed 000 §3.4) only picks the target behind N.
        let (path, len, dest) = match self.nodes[node as usize].router.route(addr) {
            Ok(Route::Host(local)) => {
                let target = self.map.target(local).expect("checked when the input was taken");
                self.path_to_target(node, target)
            }
            Ok(Route::Forward(port)) => {
                let (hop, next) = self.nodes[node as usize].hops.cables[port_index(port)]
                    .expect("routing tables only use cabled ports");
                ([hop, 0, 0, 0, 0], 1, Dest::Chip(next))
            }
            Err(e) => panic!("routing tables cover every node of the platform: {e}"),
        };
        let t = self.tlps[id].as_mut().expect("live TLP");
        t.path = path;
        t.path_len = len;
        t.at = 0;
        t.dest = dest;
        self.advance(ctx, id);
    }

    /// Moves a TLP through its next hop, or hands it to its destination.
    fn advance(&mut self, ctx: &mut Context<'_, Ev>, id: usize) {
        let now = ctx.now();
        let (at, path_len) = {
            let t = self.tlp(id);
            (t.at, t.path_len)
        };
        if at == path_len {
            self.arrive(ctx, id);
            return;
        }
        let t = self.tlps[id].as_ref().expect("live TLP");
        let hop = &mut self.hops[t.path[at as usize]];
        let bytes = match &hop.link {
            Some(link) => link.wire_bytes(t.kind, t.addr, t.payload),
            None => t.payload,
        };
        let tx = hop.server.transmit(now, bytes);
        if let (Some(track), true) = (hop.track, ctx.tracing()) {
            let label = match t.kind {
                TlpKind::MemWrite => format!("MWr {} B", t.payload),
                TlpKind::MemRead => format!("MRd {} B", t.read_len),
                TlpKind::Completion => format!("CplD {} B", t.payload),
            };
            ctx.span(track, &label, tx.start, tx.end.max(tx.start + SimTime::from_ps(1)));
        }
        // The job ends when its last TLP has left the chip that issued it.
        if at == 0 && !t.forwarded {
            if let Purpose::DataWrite { channel, last: true, .. } | Purpose::NotifyWrite { channel, last: true, .. } =
                t.purpose
            {
                ctx.schedule_at(tx.end, Ev::JobSent { node: t.origin, channel });
            }
        }
        self.tlps[id].as_mut().expect("live TLP").at += 1;
        ctx.schedule_at(tx.out, Ev::Hop(id));
    }

    fn arrive(&mut self, ctx: &mut Context<'_, Ev>, id: usize) {
        let now = ctx.now();
        let (kind, dest, payload) = {
            let t = self.tlp(id);
            (t.kind, t.dest, t.payload)
        };
        match (dest, kind) {
            (Dest::Chip(node), TlpKind::MemWrite) if self.is_kick(id) => {
                let Purpose::Kick { channel } = self.tlp(id).purpose else { unreachable!() };
                self.release(id);
                let delay = self.peach.cycles(self.peach.dma_start_cycles);
                ctx.schedule_in(delay, Ev::JobStart { node, channel });
            }
            (Dest::Chip(node), TlpKind::Completion) => {
                let purpose = self.tlp(id).purpose;
                self.release(id);
                self.completion_at_chip(ctx, node, purpose);
            }
            (Dest::Chip(_), _) => {
                // A write entering a chip from N or a cable is routed after the chip's
                // forwarding latency.
                self.tlps[id].as_mut().expect("live TLP").forwarded = true;
                let delay = self.peach.cycles(self.peach.forward_cycles);
                ctx.schedule_in(delay, Ev::Emit(id));
            }
            (Dest::HostMemory(_) | Dest::Gpu(..), TlpKind::MemRead) => self.serve_read(ctx, id),
            (Dest::HostMemory(n), TlpKind::MemWrite) => {
                let tx = self.nodes[n as usize].host_memory.transmit(now, payload);
                ctx.schedule_at(tx.end + self.host.memory_write_latency, Ev::Visible(id));
            }
            (Dest::Gpu(..), TlpKind::MemWrite) => ctx.schedule_at(now, Ev::Visible(id)),
            (d, k) => panic!("no handler for {k:?} at {d:?}"),
        }
    }

    fn is_kick(&self, id: usize) -> bool {
        matches!(self.tlp(id).purpose, Purpose::Kick { .. })
    }

    fn release(&mut self, id: usize) {
        self.tlps[id] = None;
        self.free.push(id);
    }

    /// Host memory or a GPU answers a read with completions, streamed at its read rate.
    fn serve_read(&mut self, ctx: &mut Context<'_, Ev>, id: usize) {
        let now = ctx.now();
        let t = self.tlps[id].take().expect("live TLP");
        self.free.push(id);
        let (channel, of) = match t.purpose {
            Purpose::DescriptorFetch { channel, index } => (channel, Completes::Descriptor(index)),
            Purpose::DataRead { channel, request } => (channel, Completes::Request(request)),
            _ => unreachable!("only DMA reads are served"),
        };
        let (path, path_len) = self.path_to_chip(t.dest);
        let chunks: Vec<u64> =
            split_completions(t.addr, t.read_len, self.host_link.read_completion_boundary, self.host_link.max_payload)
                .collect();
        let n = chunks.len();
        for (i, bytes) in chunks.into_iter().enumerate() {
            let ready = match t.dest {
                Dest::HostMemory(node) => {
                    self.nodes[node as usize].host_memory.transmit(now, bytes).end + self.host.memory_read_latency
                }
                Dest::Gpu(node, g) => {
                    self.nodes[node as usize].gpu_read[g as usize].transmit(now, bytes).end + self.gpu_read_latency
                }
                Dest::Chip(_) => unreachable!(),
            };
            let origin = t.origin;
            let c = self.alloc(Tlp {
                kind: TlpKind::Completion,
                addr: t.addr,
                payload: bytes,
                read_len: 0,
                path,
                path_len,
                at: 0,
                dest: Dest::Chip(origin),
                origin,
                purpose: Purpose::Completion { channel, of, bytes, last: i + 1 == n },
                forwarded: false,
            });
            ctx.schedule_at(ready, Ev::Hop(c));
        }
    }

    // --- the DMA controller ------------------------------------------------------------------

    fn start_job(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8) {
        let ch = &mut self.nodes[node as usize].channels[channel as usize];
        if ch.chaining {
            ch.fetch_wanted = true;
            self.pump(ctx, node, channel);
        } else {
            // Register mode: requests are already in the controller; each is decoded in turn.
            let step = self.peach.cycles(self.peach.descriptor_cycles);
            let mut at = SimTime::ZERO;
            for index in 0..ch.entries.len() {
                at += step;
                ctx.schedule_in(at, Ev::DescriptorReady { node, channel, index });
            }
        }
    }

    /// Uses free tags: a due descriptor fetch first, then data reads in order.
    fn pump(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8) {
        let max = self.peach.max_outstanding_reads;
        let ch = &mut self.nodes[node as usize].channels[channel as usize];
        if ch.fetch_wanted && ch.outstanding < max {
            ch.fetch_wanted = false;
            let index = ch.next_fetch;
            ch.next_fetch += 1;
            ch.outstanding += 1;
            if ch.entries[index].internal {
                // Read from the chip's own memory: no PCIe round trip.
                ch.outstanding -= 1;
                let delay = self.peach.cycles(self.peach.internal_fetch_cycles + self.peach.descriptor_cycles);
                ctx.schedule_in(delay, Ev::DescriptorReady { node, channel, index });
            } else {
                let addr = ch.table + index as u64 * self.peach.descriptor_bytes;
                let bytes = self.peach.descriptor_bytes;
                self.issue_read(ctx, node, addr, bytes, Purpose::DescriptorFetch { channel, index });
            }
        }
        loop {
            let ch = &mut self.nodes[node as usize].channels[channel as usize];
            if ch.next_request >= ch.requests.len() || ch.outstanding >= max {
                break;
            }
            let request = ch.next_request;
            ch.next_request += 1;
            ch.outstanding += 1;
            let (addr, len) = (ch.requests[request].src, ch.requests[request].len);
            self.issue_read(ctx, node, addr, len, Purpose::DataRead { channel, request });
        }
    }

    /// A read request from the chip of `node` to its own memory (global address).
    fn issue_read(&mut self, ctx: &mut Context<'_, Ev>, node: u32, addr: u64, len: u64, purpose: Purpose) {
        let local = addr - self.map.node_base(node);
        let target = self.map.target(local).expect("sources are checked to be local and mapped");
        let (path, path_len, dest) = self.path_to_target(node, target);
        let id = self.alloc(Tlp {
            kind: TlpKind::MemRead,
            addr,
            payload: 0,
            read_len: len,
            path,
            path_len,
            at: 0,
            dest,
            origin: node,
            purpose,
            forwarded: false,
        });
        self.advance(ctx, id);
    }

    fn completion_at_chip(&mut self, ctx: &mut Context<'_, Ev>, node: u32, purpose: Purpose) {
        let Purpose::Completion { channel, of, bytes, last } = purpose else { unreachable!() };
        match of {
            Completes::Descriptor(index) => {
                self.nodes[node as usize].channels[channel as usize].outstanding -= 1;
                let delay = self.peach.cycles(self.peach.descriptor_cycles);
                ctx.schedule_in(delay, Ev::DescriptorReady { node, channel, index });
                self.pump(ctx, node, channel);
            }
            Completes::Request(r) => self.data_arrived(ctx, node, channel, r, bytes, last),
        }
    }

    fn descriptor_ready(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8, index: usize) {
        let mrrs = self.host_link.max_read_request;
        let ch = &mut self.nodes[node as usize].channels[channel as usize];
        ch.decoded[index] = ctx.now();
        let d = ch.entries[index].descriptor;
        let last_entry = index + 1 == ch.entries.len();
        let bursts: Vec<_> = d.bursts().collect();
        let nb = bursts.len();
        for (b, (src, dst, len)) in bursts.into_iter().enumerate() {
            let pieces: Vec<_> = split_requests(src, len, mrrs).collect();
            let np = pieces.len();
            for (p, (addr, n)) in pieces.into_iter().enumerate() {
                ch.requests.push(ReadRequest {
                    src: addr,
                    len: n,
                    dst: dst + (addr - src),
                    received: 0,
                    entry: index,
                    last_of_entry: b + 1 == nb && p + 1 == np,
                });
            }
        }
        // A chained descriptor's successor is fetched while this one moves data.
        if ch.chaining && !last_entry {
            ch.fetch_wanted = true;
        }
        self.pump(ctx, node, channel);
    }

    /// A completion for a data read: its bytes leave again as posted writes.
    fn data_arrived(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        node: u32,
        channel: u8,
        r: usize,
        bytes: u64,
        last_chunk: bool,
    ) {
        let mps = self.host_link.max_payload;
        let ch = &mut self.nodes[node as usize].channels[channel as usize];
        let req = &mut ch.requests[r];
        let (dst, src) = (req.dst + req.received, req.src + req.received);
        req.received += bytes;
        let entry = req.entry;
        let entry_done = last_chunk && req.last_of_entry;
        let notify = ch.entries[entry].notify.clone();
        let job = ch.job;
        let job_done = entry_done && entry + 1 == ch.entries.len();
        if last_chunk {
            ch.outstanding -= 1;
        }
        let forward = self.peach.cycles(self.peach.forward_cycles);
        let pieces: Vec<_> = split_requests(dst, bytes, mps).collect();
        let np = pieces.len();
        for (i, (addr, n)) in pieces.into_iter().enumerate() {
            let last = job_done && notify.is_empty() && i + 1 == np;
            let purpose = Purpose::DataWrite { job, channel, entry, src: src + (addr - dst), last };
            self.emit_write(ctx, forward, node, addr, n, purpose);
        }
        if entry_done {
            // Status words follow the entry's data on the same path (seed 000 §4.2.2).
            let words = notify.len();
            for (index, addr) in notify.into_iter().enumerate() {
                let purpose = Purpose::NotifyWrite { job, channel, entry, index, last: job_done && index + 1 == words };
                self.emit_write(ctx, forward, node, addr, 4, purpose);
            }
        }
        if last_chunk {
            self.pump(ctx, node, channel);
        }
    }

    /// A posted write of `payload` bytes to global `addr` leaves the DMA datapath of `node`'s
    /// chip after `delay`, to be routed there.
    fn emit_write(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        delay: SimTime,
        node: u32,
        addr: u64,
        payload: u64,
        purpose: Purpose,
    ) {
        let id = self.alloc(Tlp {
            kind: TlpKind::MemWrite,
            addr,
            payload,
            read_len: 0,
            path: [0; 5],
            path_len: 0,
            at: 0,
            dest: Dest::Chip(node),
            origin: node,
            purpose,
            forwarded: false,
        });
        ctx.schedule_in(delay, Ev::Emit(id));
    }

    /// Bytes of a write are visible: report it.
    fn visible(&mut self, now: SimTime, id: usize) {
        let t = self.tlps[id].take().expect("live TLP");
        self.free.push(id);
        let dst = t.addr;
        let out = match t.purpose {
            Purpose::DataWrite { job, channel, entry, src, .. } => {
                Output::DmaLanded { job, node: t.origin, channel, entry, src, dst, len: t.payload }
            }
            Purpose::NotifyWrite { job, channel, entry, index, .. } => {
                Output::NotifyLanded { job, node: t.origin, channel, entry, index, dst }
            }
            Purpose::Pio { id, offset } => Output::PioLanded { id, dst, offset, len: t.payload },
            other => unreachable!("not a write: {other:?}"),
        };
        self.outputs.push((now, out));
    }
}

impl Model for ClusterModel {
    type Event = Ev;

    fn handle(&mut self, ctx: &mut Context<'_, Ev>, event: Ev) {
        match event {
            Ev::CpuKick { node, channel } => {
                if let Some(track) = self.nodes[node as usize].channel_tracks[channel as usize] {
                    ctx.span(track, "kick", ctx.now(), ctx.now() + SimTime::from_ps(1));
                }
                let h = &self.nodes[node as usize].hops;
                let path = [h.cpu, h.n_down, 0, 0, 0];
                let id = self.alloc(Tlp {
                    kind: TlpKind::MemWrite,
                    addr: self.map.node_base(node),
                    payload: 4,
                    read_len: 0,
                    path,
                    path_len: 2,
                    at: 0,
                    dest: Dest::Chip(node),
                    origin: node,
                    purpose: Purpose::Kick { channel },
                    forwarded: false,
                });
                self.advance(ctx, id);
            }
            Ev::CpuStore { node, dst, len, id } => {
                // Write-combined stores leave the core as TLPs of at most `pio_write_combining`
                // bytes, aligned to it.
                let h = &self.nodes[node as usize].hops;
                let path = [h.cpu, h.n_down, 0, 0, 0];
                for (addr, n) in split_requests(dst, len, self.pio_chunk) {
                    let t = self.alloc(Tlp {
                        kind: TlpKind::MemWrite,
                        addr,
                        payload: n,
                        read_len: 0,
                        path,
                        path_len: 2,
                        at: 0,
                        dest: Dest::Chip(node),
                        origin: node,
                        purpose: Purpose::Pio { id, offset: addr - dst },
                        forwarded: true,
                    });
                    self.advance(ctx, t);
                }
            }
            Ev::Hop(id) => self.advance(ctx, id),
            Ev::JobStart { node, channel } => self.start_job(ctx, node, channel),
            Ev::DescriptorReady { node, channel, index } => self.descriptor_ready(ctx, node, channel, index),
            Ev::Emit(id) => {
                let node = match self.tlp(id).dest {
                    Dest::Chip(n) => n,
                    _ => unreachable!("emitted from a chip"),
                };
                self.route_from_chip(ctx, node, id);
            }
            Ev::Visible(id) => self.visible(ctx.now(), id),
            Ev::JobSent { node, channel } => {
                let ch = &mut self.nodes[node as usize].channels[channel as usize];
                ch.busy = false;
                if let Some(track) = self.nodes[node as usize].channel_tracks[channel as usize] {
                    let first = self.nodes[node as usize].channels[channel as usize].decoded[0];
                    ctx.span(track, "job", first.min(ctx.now()), ctx.now());
                }
                let job = self.nodes[node as usize].channels[channel as usize].job;
                self.outputs.push((ctx.now(), Output::ChannelDone { job, node, channel }));
            }
        }
    }
}

fn port_index(port: Port) -> usize {
    Port::ALL.iter().position(|p| *p == port).expect("a port")
}

/// Routing registers of `node`: for every other node, the cable port on a shortest path
/// (breadth-first over the cables, ties to the lower port N < E < W < S), grouped into runs of
/// consecutive node numbers (one range register pair per run).
fn routes_from(node: u32, p: &Platform) -> Vec<(Port, u32, u32)> {
    let n = p.nodes as usize;
    let mut first_port: Vec<Option<Port>> = vec![None; n];
    let mut seen = vec![false; n];
    seen[node as usize] = true;
    let mut frontier = vec![(node, None::<Port>)];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for (at, via) in frontier {
            let mut links: Vec<(Port, u32)> = p
                .cables
                .iter()
                .flat_map(|c| [(c.a, c.a_port, c.b), (c.b, c.b_port, c.a)])
                .filter(|(from, _, _)| *from == at)
                .map(|(_, port, to)| (port, to))
                .collect();
            links.sort();
            for (port, to) in links {
                if !seen[to as usize] {
                    seen[to as usize] = true;
                    let via = via.or(Some(port));
                    first_port[to as usize] = via;
                    next.push((to, via));
                }
            }
        }
        frontier = next;
    }
    let mut ranges: Vec<(Port, u32, u32)> = Vec::new();
    for (dst, port) in first_port.iter().enumerate() {
        let Some(port) = *port else { continue };
        let dst = dst as u32;
        match ranges.last_mut() {
            Some((p, _, hi)) if *p == port && *hi + 1 == dst => *hi = dst,
            _ => ranges.push((port, dst, dst)),
        }
    }
    ranges
}

/// Runs a cluster until it is idle, collecting its outputs (for experiments without programs).
pub fn run_to_idle(cluster: &mut Cluster, mut trace: Option<&mut Trace>) -> Vec<(SimTime, Output)> {
    let mut out = Vec::new();
    while cluster.step(trace.as_deref_mut()).is_some() {
        out.append(&mut cluster.take_outputs());
    }
    out
}
