//! One node of a TCA system in virtual time: the CPU and its root complex with host memory,
//! GPUs behind the CPU's integrated PCIe switch, and a PEACH2 board on the N port
//! (seed 000 §3.2, Fig. 1; §3.5.2; §4.1).
//!
//! Every TLP is moved hop by hop through FIFO [`Server`]s (link directions and the throughput
//! limits of the root complex and GPUs), so traffic sharing a link or a limit queues as it does
//! in hardware. The DMA controller of PEACH2 executes a chain: it fetches 32-byte descriptors
//! from host memory (chaining mode) or takes them from its registers (register mode), issues read
//! requests up to its tag limit, turns each completion into posted writes routed by address, and
//! reports completion in its status register once the last write has left the chip. The host CPU
//! kicks the channel with one register write and polls the status register, as the driver does
//! in the seed's measurement (seed 000 §4.1: timing from just before the kick until the poll
//! sees the end).

use crate::descriptor::{Descriptor, FLAG_LAST};
use crate::pcie::{split_completions, split_requests, Server, TlpKind};
use crate::platform::Platform;
use crate::router::{AddressMap, Route, Router, Target};
use tca_sim::{Context, Model, SimTime, Simulation, Trace, TrackId};

/// Where a DMA buffer lives on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Host,
    Gpu(u32),
}

/// How the DMA controller gets its requests (seed 000 §3.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaMode {
    /// Descriptors fetched from host memory over PCIe.
    Chaining,
    /// Up to `register_slots` requests written to controller registers beforehand.
    Register,
}

/// One intra-node DMA experiment: `count` transfers of `size` bytes from `src` to `dst`, as one
/// chain on channel 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaRun {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub mode: DmaMode,
    /// Bytes per transfer (per descriptor).
    pub size: u64,
    /// Transfers (descriptors) in the chain.
    pub count: u32,
}

/// What one run measured in virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaResult {
    /// From just before the kick until the polling CPU sees the channel done.
    pub elapsed: SimTime,
    /// When the last write left PEACH2 (the controller's notion of done).
    pub sent: SimTime,
    pub bytes: u64,
    pub events: u64,
    /// Bytes that arrived at the destination (checked equal to `bytes`).
    pub delivered: u64,
    /// When each descriptor was decoded and its reads could start, by descriptor index.
    pub decoded: Vec<SimTime>,
}

impl DmaResult {
    /// Bandwidth as the seed computes it [bytes/s].
    pub fn bandwidth(&self) -> f64 {
        self.bytes as f64 / (self.elapsed.as_ps() as f64 * 1e-12)
    }
}

/// Measurements per point, of which the best is kept (seed 000 §4.1: best of 5).
pub const MEASUREMENTS: u64 = 5;

/// A run the model cannot carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    #[error("transfer size {0} B is not a multiple of 4")]
    SizeNotMultipleOf4(u64),
    #[error("transfer size and count must be positive")]
    Empty,
    #[error("register mode holds at most {slots} requests, {count} asked")]
    TooManyForRegisters { slots: u32, count: u32 },
    #[error("GPU {gpu} does not exist (the node has {gpus})")]
    NoSuchGpu { gpu: u32, gpus: u32 },
    #[error("{bytes} B of buffers do not fit in the {region} B mapped for the {what}")]
    DoesNotFit {
        bytes: u64,
        region: u64,
        what: &'static str,
    },
    #[error("transfer size {size} B exceeds the descriptor's 4 GiB limit")]
    TooLarge { size: u64 },
}

/// Runs one DMA experiment on the node of `platform`.
///
/// # Errors
/// [`DmaError`] for sizes the controller cannot move or buffers the address map cannot hold.
pub fn run_dma(
    platform: &Platform,
    run: &DmaRun,
    trace: Option<&mut Trace>,
) -> Result<DmaResult, DmaError> {
    let gpus = platform.gpu.sockets.len() as u32;
    if run.size == 0 || run.count == 0 {
        return Err(DmaError::Empty);
    }
    if !run.size.is_multiple_of(4) {
        return Err(DmaError::SizeNotMultipleOf4(run.size));
    }
    if run.size > u32::MAX as u64 {
        return Err(DmaError::TooLarge { size: run.size });
    }
    if run.mode == DmaMode::Register && run.count > platform.peach2.register_slots {
        return Err(DmaError::TooManyForRegisters {
            slots: platform.peach2.register_slots,
            count: run.count,
        });
    }
    for e in [run.src, run.dst] {
        if let Endpoint::Gpu(g) = e {
            if g >= gpus {
                return Err(DmaError::NoSuchGpu { gpu: g, gpus });
            }
        }
    }
    let map = AddressMap::new(&platform.address_map, gpus);
    let total = run.size * run.count as u64;
    // Source at the start of its region; destination at the start of its own region, or in the
    // second half when both are the same memory. The descriptor table sits at the top of host memory.
    let table_bytes = run.count as u64 * platform.peach2.descriptor_bytes;
    let region = |e: Endpoint| match e {
        Endpoint::Host => map.host_bytes - table_bytes.next_multiple_of(4096),
        Endpoint::Gpu(_) => map.gpu_bytes,
    };
    let same = run.src == run.dst;
    for (e, what) in [(run.src, "source"), (run.dst, "destination")] {
        let room = if same { region(e) / 2 } else { region(e) };
        if total > room {
            return Err(DmaError::DoesNotFit {
                bytes: total,
                region: room,
                what,
            });
        }
    }
    let target = |e: Endpoint, off: u64| match e {
        Endpoint::Host => Target::Host(off),
        Endpoint::Gpu(g) => Target::Gpu(g, off),
    };
    let src0 = map.global(0, target(run.src, 0));
    let dst0 = map.global(
        0,
        target(run.dst, if same { region(run.dst) / 2 } else { 0 }),
    );
    let descriptors: Vec<Descriptor> = (0..run.count as u64)
        .map(|i| {
            let mut d = Descriptor::copy(src0 + i * run.size, dst0 + i * run.size, run.size as u32);
            if i + 1 == run.count as u64 {
                d.flags |= FLAG_LAST;
            }
            d
        })
        .collect();
    let table = map.global(
        0,
        Target::Host(map.host_bytes - table_bytes.next_multiple_of(4096)),
    );

    let mut node = Node::new(platform, map);
    node.channel.load(run.mode, descriptors, table);
    if let Some(t) = trace {
        node.register_tracks(t);
        let mut sim = Simulation::new();
        sim.schedule_at(SimTime::ZERO, Ev::Start);
        sim.run(&mut node, Some(t));
        node.result(sim.delivered(), total)
    } else {
        let mut sim = Simulation::new();
        sim.schedule_at(SimTime::ZERO, Ev::Start);
        sim.run(&mut node, None);
        node.result(sim.delivered(), total)
    }
}

/// A FIFO resource of the node and what it counts.
struct Hop {
    server: Server,
    /// Links count whole TLPs on the wire; limits inside chips count payload bytes only.
    link: Option<crate::pcie::LinkSpec>,
    name: &'static str,
    track: Option<TrackId>,
}

/// Indices of the node's hops.
#[derive(Clone, Copy)]
struct Hops {
    n_up: usize,
    n_down: usize,
    cpu: usize,
    p2p: usize,
    p2p_read: usize,
    qpi_to_remote: usize,
    qpi_to_local: usize,
    /// First GPU link; GPU g has `gpu0 + 2g` (down) and `gpu0 + 2g + 1` (up).
    gpu0: usize,
}

/// What a TLP is for, decided by whoever sent it.
#[derive(Debug, Clone, Copy)]
enum Purpose {
    DescriptorFetch {
        index: usize,
    },
    DataRead {
        request: usize,
    },
    Completion {
        of: Completes,
        bytes: u64,
        last: bool,
    },
    DataWrite {
        last: bool,
    },
    Kick,
}

#[derive(Debug, Clone, Copy)]
enum Completes {
    Descriptor(usize),
    Request(usize),
}

/// Where a TLP is delivered once its route is done.
#[derive(Debug, Clone, Copy)]
enum Dest {
    HostMemory,
    Gpu(u32),
    Peach2,
}

struct Tlp {
    kind: TlpKind,
    addr: u64,
    payload: u64,
    /// For reads: bytes asked.
    read_len: u64,
    route: [usize; 5],
    route_len: usize,
    at: usize,
    dest: Dest,
    purpose: Purpose,
}

enum Ev {
    Start,
    /// A TLP reaches the next hop of its route (or its destination).
    Hop(usize),
    /// A descriptor has been decoded and its reads may start.
    DescriptorReady(usize),
    /// A DMA write leaves the controller's datapath toward its port.
    EmitWrite(usize),
    /// The last write of the chain has left PEACH2.
    ChainSent,
}

/// One read request of the data phase.
struct ReadRequest {
    src: u64,
    len: u64,
    dst: u64,
    received: u64,
    last_of_chain: bool,
}

/// The DMA channel used by the experiments (channel 0 of four).
#[derive(Default)]
struct Channel {
    chaining: bool,
    table: u64,
    descriptors: Vec<Descriptor>,
    next_fetch: usize,
    /// A descriptor fetch is due but waits for a free tag.
    fetch_wanted: bool,
    requests: Vec<ReadRequest>,
    next_request: usize,
    outstanding: u32,
    sent_at: Option<SimTime>,
    decoded: Vec<SimTime>,
}

impl Channel {
    fn load(&mut self, mode: DmaMode, descriptors: Vec<Descriptor>, table: u64) {
        self.chaining = mode == DmaMode::Chaining;
        self.table = table;
        self.decoded = vec![SimTime::MAX; descriptors.len()];
        self.descriptors = descriptors;
    }
}

struct Node {
    peach: crate::platform::Peach2Spec,
    host: crate::platform::HostSpec,
    gpu: crate::platform::GpuSpec,
    host_link: crate::pcie::LinkSpec,
    map: AddressMap,
    router: Router,
    hops: Vec<Hop>,
    ids: Hops,
    /// Host memory behind the integrated I/O unit; GPU read engines.
    host_memory: Server,
    gpu_read: Vec<Server>,
    tlps: Vec<Tlp>,
    /// Writes waiting in the controller (index into `tlps`), by EmitWrite event.
    channel: Channel,
    delivered: u64,
    chain_track: Option<TrackId>,
}

impl Node {
    fn new(p: &Platform, map: AddressMap) -> Self {
        let mut hops = Vec::new();
        let mut add = |server: Server, link: Option<crate::pcie::LinkSpec>, name: &'static str| {
            hops.push(Hop {
                server,
                link,
                name,
                track: None,
            });
            hops.len() - 1
        };
        let link = Some(p.host_link.clone());
        let n_up = add(
            Server::for_link(&p.host_link),
            link.clone(),
            "N port -> root complex",
        );
        let n_down = add(
            Server::for_link(&p.host_link),
            link,
            "root complex -> N port",
        );
        let cpu = add(
            Server::latency_only(p.host.mmio_latency),
            None,
            "CPU core <-> root port",
        );
        let p2p = add(
            Server::latency_only(p.host.p2p_latency),
            None,
            "integrated switch (peer-to-peer)",
        );
        let p2p_read = add(
            Server::with_bandwidth(p.host.p2p_read_bandwidth, p.host.p2p_latency),
            None,
            "integrated switch (peer-to-peer read completions)",
        );
        let qpi_to_remote = add(
            Server::with_bandwidth(p.host.qpi_bandwidth, p.host.qpi_latency),
            None,
            "QPI socket 0 -> 1",
        );
        let qpi_to_local = add(
            Server::with_bandwidth(p.host.qpi_bandwidth, p.host.qpi_latency),
            None,
            "QPI socket 1 -> 0",
        );
        let gpu0 = hops.len();
        for _ in &p.gpu.sockets {
            hops.push(Hop {
                server: Server::for_link(&p.gpu_link),
                link: Some(p.gpu_link.clone()),
                name: "root port -> GPU",
                track: None,
            });
            hops.push(Hop {
                server: Server::for_link(&p.gpu_link),
                link: Some(p.gpu_link.clone()),
                name: "GPU -> root port",
                track: None,
            });
        }
        let gpu_read = p
            .gpu
            .sockets
            .iter()
            .map(|_| Server::with_bandwidth(p.gpu.read_bandwidth, SimTime::ZERO))
            .collect();
        Node {
            peach: p.peach2.clone(),
            host: p.host.clone(),
            gpu: p.gpu.clone(),
            host_link: p.host_link.clone(),
            router: Router::for_node(&map, 0, &[]),
            map,
            hops,
            ids: Hops {
                n_up,
                n_down,
                cpu,
                p2p,
                p2p_read,
                qpi_to_remote,
                qpi_to_local,
                gpu0,
            },
            host_memory: Server::with_bandwidth(p.host.inbound_bandwidth, SimTime::ZERO),
            gpu_read,
            tlps: Vec::new(),
            channel: Channel::default(),
            delivered: 0,
            chain_track: None,
        }
    }

    fn register_tracks(&mut self, trace: &mut Trace) {
        for (i, hop) in self.hops.iter_mut().enumerate() {
            let name = if i >= self.ids.gpu0 {
                format!("GPU{} link: {}", (i - self.ids.gpu0) / 2, hop.name)
            } else {
                hop.name.to_owned()
            };
            hop.track = Some(trace.track(&name));
        }
        self.chain_track = Some(trace.track("PEACH2 DMA channel 0"));
    }

    fn result(&self, events: u64, bytes: u64) -> Result<DmaResult, DmaError> {
        let sent = self
            .channel
            .sent_at
            .expect("a loaded chain always finishes");
        assert_eq!(self.delivered, bytes, "the model lost or duplicated data");
        Ok(DmaResult {
            elapsed: self.polled(sent),
            sent,
            bytes,
            events,
            delivered: self.delivered,
            decoded: self.channel.decoded.clone(),
        })
    }

    /// When the driver's poll loop sees the status register report `sent`, best of
    /// [`MEASUREMENTS`] measurements.
    ///
    /// The driver kicks, then reads the status register back to back: each read goes down
    /// (`mmio_latency` + N link), is answered after `register_read_cycles`, and comes back up.
    /// Where the samples fall relative to the end differs between measurements; the seed keeps
    /// the best of 5 (seed 000 §4.1), modelled as 5 poll loops whose first read is issued
    /// `k/5` of a round trip after the kick. The poll traffic itself is left out of the link
    /// queues: one 24-byte TLP per round trip in each direction.
    fn polled(&self, sent: SimTime) -> SimTime {
        let link = &self.host_link;
        let down = self.host.mmio_latency
            + link.serialization(link.wire_bytes(TlpKind::MemRead, 0, 0))
            + link.latency;
        let sample = self.peach.cycles(self.peach.register_read_cycles);
        let up = link.serialization(link.wire_bytes(TlpKind::Completion, 0, 4))
            + link.latency
            + self.host.mmio_latency;
        let rtt = (down + sample + up).as_ps();
        (0..MEASUREMENTS)
            .map(|k| {
                let first_sample = k * rtt / MEASUREMENTS + down.as_ps() + sample.as_ps();
                let reads = sent.as_ps().saturating_sub(first_sample).div_ceil(rtt);
                SimTime::from_ps(first_sample + reads * rtt) + up
            })
            .min()
            .expect("at least one measurement")
    }

    /// Socket of a GPU; PEACH2 and host memory are on socket 0.
    fn crosses_qpi(&self, gpu: u32) -> bool {
        self.gpu.sockets[gpu as usize] != 0
    }

    /// Hops from PEACH2 to a local target.
    fn route_from_peach(&self, target: Target) -> ([usize; 5], usize, Dest) {
        let h = self.ids;
        match target {
            Target::Host(_) => ([h.n_up, 0, 0, 0, 0], 1, Dest::HostMemory),
            Target::Gpu(g, _) if self.crosses_qpi(g) => (
                [h.n_up, h.p2p, h.qpi_to_remote, h.gpu0 + 2 * g as usize, 0],
                4,
                Dest::Gpu(g),
            ),
            Target::Gpu(g, _) => (
                [h.n_up, h.p2p, h.gpu0 + 2 * g as usize, 0, 0],
                3,
                Dest::Gpu(g),
            ),
        }
    }

    /// Hops for completions from a target back to PEACH2.
    fn route_to_peach(&self, from: Dest) -> [usize; 5] {
        let h = self.ids;
        match from {
            Dest::Gpu(g) if self.crosses_qpi(g) => [
                h.gpu0 + 2 * g as usize + 1,
                h.qpi_to_local,
                h.p2p_read,
                h.n_down,
                0,
            ],
            Dest::Gpu(g) => [h.gpu0 + 2 * g as usize + 1, h.p2p_read, h.n_down, 0, 0],
            _ => [h.n_down, 0, 0, 0, 0],
        }
    }

    fn local_target(&self, addr: u64) -> Target {
        match self.router.route(addr) {
            Ok(Route::Host(local)) => self
                .map
                .target(local)
                .expect("buffers are placed inside the map"),
            other => panic!("intra-node model got a route off the node: {other:?}"),
        }
    }

    /// Creates a TLP and starts it on its first hop now.
    #[allow(clippy::too_many_arguments)]
    fn send(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        kind: TlpKind,
        addr: u64,
        payload: u64,
        read_len: u64,
        route: [usize; 5],
        route_len: usize,
        dest: Dest,
        purpose: Purpose,
    ) {
        self.tlps.push(Tlp {
            kind,
            addr,
            payload,
            read_len,
            route,
            route_len,
            at: 0,
            dest,
            purpose,
        });
        let id = self.tlps.len() - 1;
        self.advance(ctx, id);
    }

    /// Moves a TLP through its next hop, or delivers it.
    fn advance(&mut self, ctx: &mut Context<'_, Ev>, id: usize) {
        let now = ctx.now();
        let tlp = &self.tlps[id];
        if tlp.at == tlp.route_len {
            self.deliver(ctx, id);
            return;
        }
        let hop = &mut self.hops[tlp.route[tlp.at]];
        let bytes = match &hop.link {
            Some(link) => link.wire_bytes(tlp.kind, tlp.addr, tlp.payload),
            None => tlp.payload,
        };
        let tx = hop.server.transmit(now, bytes);
        if let (Some(track), true) = (hop.track, ctx.tracing()) {
            let label = match tlp.kind {
                TlpKind::MemWrite => format!("MWr {} B", tlp.payload),
                TlpKind::MemRead => format!("MRd {} B", tlp.read_len),
                TlpKind::Completion => format!("CplD {} B", tlp.payload),
            };
            ctx.span(
                track,
                &label,
                tx.start,
                tx.end.max(tx.start + SimTime::from_ps(1)),
            );
        }
        if tlp.at == 0 {
            if let Purpose::DataWrite { last: true } = tlp.purpose {
                ctx.schedule_at(tx.end, Ev::ChainSent);
            }
        }
        self.tlps[id].at += 1;
        ctx.schedule_at(tx.out, Ev::Hop(id));
    }

    fn deliver(&mut self, ctx: &mut Context<'_, Ev>, id: usize) {
        let now = ctx.now();
        let (kind, addr, payload, read_len, dest, purpose) = {
            let t = &self.tlps[id];
            (t.kind, t.addr, t.payload, t.read_len, t.dest, t.purpose)
        };
        match (dest, kind) {
            (Dest::HostMemory | Dest::Gpu(_), TlpKind::MemRead) => {
                self.serve_read(ctx, dest, addr, read_len, purpose)
            }
            (Dest::HostMemory, TlpKind::MemWrite) => {
                self.host_memory.transmit(now, payload);
                self.delivered += payload;
            }
            (Dest::Gpu(_), TlpKind::MemWrite) => self.delivered += payload,
            (Dest::Peach2, _) => self.at_peach(ctx, purpose),
            (d, k) => panic!("no handler for {k:?} at {d:?}"),
        }
    }

    /// Host memory or a GPU answers a read with completions, streamed at its read rate.
    fn serve_read(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        from: Dest,
        addr: u64,
        len: u64,
        purpose: Purpose,
    ) {
        let now = ctx.now();
        let of = match purpose {
            Purpose::DescriptorFetch { index } => Completes::Descriptor(index),
            Purpose::DataRead { request } => Completes::Request(request),
            _ => unreachable!("only reads are served"),
        };
        let route = self.route_to_peach(from);
        let route_len = route.iter().rposition(|h| *h != 0).map_or(1, |i| i + 1);
        let chunks: Vec<u64> = split_completions(
            addr,
            len,
            self.host_link.read_completion_boundary,
            self.host_link.max_payload,
        )
        .collect();
        let n = chunks.len();
        for (i, bytes) in chunks.into_iter().enumerate() {
            let ready = match from {
                Dest::HostMemory => {
                    self.host_memory.transmit(now, bytes).end + self.host.memory_read_latency
                }
                Dest::Gpu(g) => {
                    self.gpu_read[g as usize].transmit(now, bytes).end + self.gpu.read_latency
                }
                _ => unreachable!(),
            };
            self.tlps.push(Tlp {
                kind: TlpKind::Completion,
                addr,
                payload: bytes,
                read_len: 0,
                route,
                route_len,
                at: 0,
                dest: Dest::Peach2,
                purpose: Purpose::Completion {
                    of,
                    bytes,
                    last: i + 1 == n,
                },
            });
            ctx.schedule_at(ready, Ev::Hop(self.tlps.len() - 1));
        }
    }

    fn at_peach(&mut self, ctx: &mut Context<'_, Ev>, purpose: Purpose) {
        match purpose {
            Purpose::Kick => self.kick(ctx),
            Purpose::Completion {
                of: Completes::Descriptor(index),
                ..
            } => {
                self.channel.outstanding -= 1;
                let delay = self.peach.cycles(self.peach.descriptor_cycles);
                ctx.schedule_in(delay, Ev::DescriptorReady(index));
                self.pump(ctx);
            }
            Purpose::Completion {
                of: Completes::Request(r),
                bytes,
                last,
            } => self.data_arrived(ctx, r, bytes, last),
            other => panic!("PEACH2 got an unexpected TLP: {other:?}"),
        }
    }

    fn kick(&mut self, ctx: &mut Context<'_, Ev>) {
        if self.channel.chaining {
            self.channel.fetch_wanted = true;
            self.pump(ctx);
        } else {
            // Register mode: requests are already in the controller; each is decoded in turn.
            let step = self.peach.cycles(self.peach.descriptor_cycles);
            let mut at = SimTime::ZERO;
            for i in 0..self.channel.descriptors.len() {
                at += step;
                ctx.schedule_in(at, Ev::DescriptorReady(i));
            }
        }
    }

    /// Uses free tags: a due descriptor fetch first, then data reads in order.
    fn pump(&mut self, ctx: &mut Context<'_, Ev>) {
        if self.channel.fetch_wanted && self.channel.outstanding < self.peach.max_outstanding_reads
        {
            self.channel.fetch_wanted = false;
            self.fetch_descriptor(ctx);
        }
        self.issue_reads(ctx);
    }

    fn fetch_descriptor(&mut self, ctx: &mut Context<'_, Ev>) {
        let index = self.channel.next_fetch;
        self.channel.next_fetch += 1;
        self.channel.outstanding += 1;
        let addr = self.channel.table + index as u64 * self.peach.descriptor_bytes;
        let (route, len, dest) = self.route_from_peach(self.local_target(addr));
        let bytes = self.peach.descriptor_bytes;
        self.send(
            ctx,
            TlpKind::MemRead,
            addr,
            0,
            bytes,
            route,
            len,
            dest,
            Purpose::DescriptorFetch { index },
        );
    }

    fn descriptor_ready(&mut self, ctx: &mut Context<'_, Ev>, index: usize) {
        self.channel.decoded[index] = ctx.now();
        let d = self.channel.descriptors[index];
        let last_descriptor = d.flags & FLAG_LAST != 0;
        let mrrs = self.host_link.max_read_request;
        let bursts: Vec<_> = d.bursts().collect();
        let nb = bursts.len();
        for (b, (src, dst, len)) in bursts.into_iter().enumerate() {
            let pieces: Vec<_> = split_requests(src, len, mrrs).collect();
            let np = pieces.len();
            for (p, (addr, n)) in pieces.into_iter().enumerate() {
                self.channel.requests.push(ReadRequest {
                    src: addr,
                    len: n,
                    dst: dst + (addr - src),
                    received: 0,
                    last_of_chain: last_descriptor && b + 1 == nb && p + 1 == np,
                });
            }
        }
        // A chained descriptor's successor is fetched while this one moves data.
        if self.channel.chaining && !last_descriptor {
            self.channel.fetch_wanted = true;
        }
        self.pump(ctx);
    }

    fn issue_reads(&mut self, ctx: &mut Context<'_, Ev>) {
        while self.channel.next_request < self.channel.requests.len()
            && self.channel.outstanding < self.peach.max_outstanding_reads
        {
            let r = self.channel.next_request;
            self.channel.next_request += 1;
            self.channel.outstanding += 1;
            let (addr, len) = (self.channel.requests[r].src, self.channel.requests[r].len);
            let (route, hops, dest) = self.route_from_peach(self.local_target(addr));
            self.send(
                ctx,
                TlpKind::MemRead,
                addr,
                0,
                len,
                route,
                hops,
                dest,
                Purpose::DataRead { request: r },
            );
        }
    }

    /// A completion for a data read: its bytes leave again as posted writes.
    fn data_arrived(&mut self, ctx: &mut Context<'_, Ev>, r: usize, bytes: u64, last_chunk: bool) {
        let req = &mut self.channel.requests[r];
        let dst = req.dst + req.received;
        req.received += bytes;
        let final_bytes = last_chunk && req.last_of_chain;
        if last_chunk {
            self.channel.outstanding -= 1;
        }
        let pieces: Vec<_> = split_requests(dst, bytes, self.host_link.max_payload).collect();
        let np = pieces.len();
        let forward = self.peach.cycles(self.peach.forward_cycles);
        for (i, (addr, n)) in pieces.into_iter().enumerate() {
            let (route, len, dest) = self.route_from_peach(self.local_target(addr));
            self.tlps.push(Tlp {
                kind: TlpKind::MemWrite,
                addr,
                payload: n,
                read_len: 0,
                route,
                route_len: len,
                at: 0,
                dest,
                purpose: Purpose::DataWrite {
                    last: final_bytes && i + 1 == np,
                },
            });
            ctx.schedule_in(forward, Ev::EmitWrite(self.tlps.len() - 1));
        }
        if last_chunk {
            self.pump(ctx);
        }
    }
}

impl Model for Node {
    type Event = Ev;

    fn handle(&mut self, ctx: &mut Context<'_, Ev>, event: Ev) {
        match event {
            Ev::Start => {
                // The CPU stores to the kick register, then polls the status register.
                let h = self.ids;
                let addr = self.map.node_base(0);
                self.send(
                    ctx,
                    TlpKind::MemWrite,
                    addr,
                    4,
                    0,
                    [h.cpu, h.n_down, 0, 0, 0],
                    2,
                    Dest::Peach2,
                    Purpose::Kick,
                );
            }
            Ev::Hop(id) => self.advance(ctx, id),
            Ev::DescriptorReady(i) => self.descriptor_ready(ctx, i),
            Ev::EmitWrite(id) => self.advance(ctx, id),
            Ev::ChainSent => {
                self.channel.sent_at = Some(ctx.now());
                if let Some(track) = self.chain_track {
                    ctx.span(track, "chain", SimTime::ZERO, ctx.now());
                }
            }
        }
    }
}
