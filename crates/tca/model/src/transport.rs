//! TLPs moving hop by hop through the cluster (seed 000 §3.2-3.4).
//!
//! Every TLP moves through FIFO servers: link directions, cables, and the throughput limits of
//! root complexes, host memory and GPUs, so traffic that shares a link queues as in hardware.
//! On entering a chip, a write is routed by the address-window router: to N with the node
//! offset subtracted, or out through E, W or S to the next chip (`forward_cycles` per chip).
//! A TLP is moved by value from one FIFO to the next ([`crate::departures`]).

use crate::cluster::{ClusterModel, Ev, Fifo, Output};
use crate::router::{Route, Target};
use crate::topology::port_index;
use base::{Context, SimTime};
use pcie::{split_completions, split_requests, TlpKind};

/// What a TLP is for, which decides what happens when it arrives.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Purpose {
    /// The CPU's store to a channel's start register (item `seq` of the channel).
    Kick { channel: u8, seq: u64 },
    /// A descriptor read from host memory for item `seq`.
    Fetch { channel: u8, seq: u64 },
    /// A data read for read request `request` of the channel.
    Read { channel: u8, request: usize },
    /// A completion coming back for a read of `of`.
    Completion { of: Reads, last: bool },
    /// Data of work `id`, read at `src`.
    Data { channel: u8, id: u64, src: u64 },
    /// A status word; visible once `needed` data TLPs of its channel to that node are.
    Status { channel: u8, id: u64, needed: u64 },
    /// A CPU store of PIO operation `id`, `offset` bytes into it.
    Pio { id: u64, offset: u64 },
}

/// The read a completion answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reads {
    Fetch { channel: u8, seq: u64 },
    Data { channel: u8, request: usize },
}

/// Where a TLP is headed once its local hops are done.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dest {
    HostMemory(u32),
    Gpu(u32, u32),
    /// The PEACH2 chip of a node (from N or a cable): routed again there.
    Chip(u32),
}

/// Most hops a TLP takes before it is routed again (chip -> N -> switch -> QPI -> GPU).
const MAX_PATH: usize = 5;

pub(crate) struct Tlp {
    kind: TlpKind,
    /// Global (window) address: the router picks the target behind N from it.
    addr: u64,
    /// Bytes carried (writes, completions); bytes asked for (reads). At most 4 KiB, the largest
    /// read request (seed 000 Table 2).
    payload: u32,
    read_len: u32,
    /// Hop indices: a TLP is copied from FIFO to FIFO, so it is kept small.
    path: [u16; MAX_PATH],
    path_len: u8,
    at: u8,
    dest: Dest,
    /// Node whose chip sent it (DMA) or whose CPU stored it (PIO, kick).
    origin: u32,
    purpose: Purpose,
    /// Set once the TLP has left the chip that made it, and for CPU stores: it no longer
    /// counts toward its channel's TLPs in the chip.
    forwarded: bool,
    /// PCIe TLPs it stands for: more than one for a train ([`crate::train`]), whose payload is
    /// theirs together.
    pub(crate) subs: u16,
    /// From the arrival of a train's first TLP at its next hop to that of its last.
    pub(crate) span: SimTime,
}

impl Tlp {
    /// The stream the TLP belongs to, for counting collisions: one per DMA channel of a node
    /// (its reads, their completions and its writes) and one per node's CPU (PIO, kicks).
    pub(crate) fn stream(&self) -> u32 {
        let class = match self.purpose {
            Purpose::Kick { .. } | Purpose::Pio { .. } => u8::MAX,
            Purpose::Fetch { channel, .. }
            | Purpose::Read { channel, .. }
            | Purpose::Data { channel, .. }
            | Purpose::Status { channel, .. }
            | Purpose::Completion { of: Reads::Fetch { channel, .. } | Reads::Data { channel, .. }, .. } => channel,
        };
        self.origin << 8 | u32::from(class)
    }

    /// A write leaving the DMA datapath of `origin`'s chip.
    pub(crate) fn write(addr: u64, payload: u64, origin: u32, purpose: Purpose) -> Tlp {
        let payload = u32::try_from(payload).expect("a TLP's payload fits in 32 bits");
        Tlp {
            kind: TlpKind::MemWrite,
            addr,
            payload,
            read_len: 0,
            path: [0; MAX_PATH],
            path_len: 0,
            at: 0,
            dest: Dest::Chip(origin),
            origin,
            purpose,
            forwarded: false,
            subs: 1,
            span: SimTime::ZERO,
        }
    }

    /// A CPU store from `node` down its N link to its chip.
    pub(crate) fn cpu_store(addr: u64, payload: u64, node: u32, path: [usize; 2], purpose: Purpose) -> Tlp {
        let payload = u32::try_from(payload).expect("a TLP's payload fits in 32 bits");
        Tlp {
            kind: TlpKind::MemWrite,
            addr,
            payload,
            read_len: 0,
            path: short([path[0], path[1], 0, 0, 0]),
            path_len: 2,
            at: 0,
            dest: Dest::Chip(node),
            origin: node,
            purpose,
            forwarded: true,
            subs: 1,
            span: SimTime::ZERO,
        }
    }
}

/// A path of hop indices as a TLP keeps it.
fn short(path: [usize; MAX_PATH]) -> [u16; MAX_PATH] {
    path.map(|h| u16::try_from(h).expect("hop indices fit in 16 bits"))
}

/// A stream as a trace names it: `node3 DMA channel 1`, `node0 CPU`.
fn stream_name(stream: u32) -> String {
    match stream & 0xff {
        0xff => format!("node{} CPU", stream >> 8),
        c => format!("node{} DMA channel {c}", stream >> 8),
    }
}

impl ClusterModel {
    /// Local hops from the chip of `node` to a local target, and the destination.
    fn path_to_target(&self, node: u32, target: Target) -> ([usize; MAX_PATH], u8, Dest) {
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
    fn path_to_chip(&self, from: Dest) -> ([usize; MAX_PATH], u8) {
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

    /// Routes a write at the chip of `node` (out of its DMA datapath, or in from N or a cable):
    /// sets its path to the port its address routes to; true when that is N.
    ///
    /// A write crosses the chip in `forward_cycles`. Every feeder of a cable port is such a
    /// write, so a cable port is taken when the write enters the chip, in the order writes enter,
    /// with the arrival `forward_cycles` later: that saves an event per write and chip. N also
    /// carries the read requests the chip issues at once, so a write toward N waits for its
    /// arrival there (in the node's `datapath` or the `relaying` FIFO of the hop it came by).
    pub(crate) fn route_at_chip(&self, node: u32, t: &mut Tlp) -> bool {
        // Addresses stay global in this model: the router's local address (node offset
        // subtracted, seed 000 §3.4) only picks the target behind N.
        let (path, len, dest) = match self.nodes[node as usize].router.route(t.addr) {
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
        (t.path, t.path_len, t.at, t.dest) = (short(path), len, 0, dest);
        !matches!(dest, Dest::Chip(_))
    }

    /// Moves a TLP through its next hop, or hands it to its destination.
    ///
    /// A hop whose only feeder is the hop before it ([`crate::topology::Hop::fed_by_one`]) is
    /// taken at once, at the time the TLP will reach it: its arrivals are its feeder's
    /// departures, already in order, so the result is the one an event per hop would give.
    pub(crate) fn advance(&mut self, ctx: &mut Context<'_, Ev>, t: Tlp) {
        self.advance_from(ctx, t, ctx.now());
    }

    /// The first TLP of `fifo` leaves it.
    pub(crate) fn depart(&mut self, ctx: &mut Context<'_, Ev>, fifo: Fifo) {
        if let Fifo::Leave(hop) = fifo {
            if let Some(bound) = self.batch_bound(hop, ctx.now()) {
                self.depart_before(ctx, hop, bound);
                return;
            }
        }
        let departures = match fifo {
            Fifo::Leave(hop) => &mut self.hops[hop].leaving,
            Fifo::Cross(hop) => &mut self.hops[hop].crossing,
            Fifo::Relay(hop) => &mut self.hops[hop].relaying,
            Fifo::Emit(node) => &mut self.nodes[node as usize].datapath,
            Fifo::MemoryRead(node) => &mut self.nodes[node as usize].memory_reads,
            Fifo::MemoryWrite(node) => &mut self.nodes[node as usize].memory_writes,
            Fifo::GpuWrite(node, g) => &mut self.nodes[node as usize].gpu_writes[g as usize],
        };
        let t = departures.pop(ctx);
        match fifo {
            // Entering a chip toward a cable port, which it reaches after crossing the chip.
            Fifo::Cross(_) => {
                let forward = self.forward;
                self.advance_from(ctx, t, ctx.now() + forward);
            }
            Fifo::MemoryWrite(_) | Fifo::GpuWrite(..) => self.visible(ctx.now(), t),
            _ => self.advance(ctx, t),
        }
    }

    /// The first TLP of `hop`'s queue leaves it, and with it those behind it that leave before
    /// `bound`, when no other feeder of their next hop can reach it ([`crate::lookahead`]).
    /// Without such TLPs the next departure's event is scheduled first, as [`Self::depart`]
    /// does, so that events of one picosecond keep their order then.
    fn depart_before(&mut self, ctx: &mut Context<'_, Ev>, hop: usize, bound: SimTime) {
        let leaving = &mut self.hops[hop].leaving;
        let t = leaving.take_fired();
        if leaving.head_time().is_none_or(|next| next >= bound) {
            leaving.rearm(ctx);
        }
        self.advance(ctx, t);
        while let Some((at, t)) = self.hops[hop].leaving.take_before(bound) {
            self.advance_from(ctx, t, at);
        }
        self.hops[hop].leaving.rearm(ctx);
    }

    /// As [`Self::advance`], for a TLP that reaches its next hop at `arrival` (not before now),
    /// given by that hop's only feeder in the order of its arrivals.
    pub(crate) fn advance_from(&mut self, ctx: &mut Context<'_, Ev>, mut t: Tlp, mut arrival: SimTime) {
        let now = ctx.now();
        loop {
            if t.at == t.path_len {
                self.arrive(ctx, t);
                return;
            }
            let (kind, addr, payload, read_len, hop_index) =
                (t.kind, t.addr, u64::from(t.payload), t.read_len, usize::from(t.path[t.at as usize]));
            let leaving_chip = t.at == 0 && !t.forwarded;
            let channel = match t.purpose {
                Purpose::Data { channel, .. } | Purpose::Status { channel, .. } => Some(channel),
                _ => None,
            };
            let (origin, stream) = (t.origin, t.stream());
            let hop = &mut self.hops[hop_index];
            let (tx, last_end) = if t.subs == 1 {
                let bytes = match &hop.link {
                    Some(link) => link.wire_bytes(kind, addr, payload),
                    None => payload,
                };
                // A lone TLP takes its turn among the TLPs of a train ahead, in the order they
                // arrived, as TLP by TLP.
                let tx = hop.server.transmit_between(arrival, bytes);
                (tx, tx.end)
            } else {
                let subs = u64::from(t.subs);
                let each = payload.div_ceil(subs);
                let each = match &hop.link {
                    Some(link) => link.wire_bytes(kind, addr, each),
                    None => each,
                };
                let (tx, last_end) = hop.server.transmit_train(arrival, t.span, each, subs);
                t.span = last_end - tx.end;
                (tx, last_end)
            };
            let behind = std::mem::replace(&mut hop.last_stream, stream);
            let stalled = tx.start > arrival && behind != stream;
            hop.tlps += u64::from(t.subs);
            hop.stalled += if stalled { u64::from(t.subs) } else { 0 };
            if let Some(track) = hop.track.filter(|_| ctx.tracing()) {
                let mut label = match kind {
                    TlpKind::MemWrite => format!("MWr {payload} B"),
                    TlpKind::MemRead => format!("MRd {read_len} B"),
                    TlpKind::Completion => format!("CplD {payload} B"),
                };
                match (t.subs, payload % u64::from(t.subs)) {
                    (1, _) => {}
                    (n, 0) => label += &format!(" ({n} TLPs of {} B)", payload / u64::from(n)),
                    (n, _) => label += &format!(" ({n} TLPs)"),
                }
                if stalled {
                    label += &format!(", stalled behind {}", stream_name(behind));
                }
                ctx.span(track, &label, tx.start, last_end.max(tx.start + SimTime::from_ps(1)));
            }
            if let (true, Some(channel)) = (leaving_chip, channel) {
                // The channel's TLP has started on the link out of its chip.
                let ch = self.channel(origin, channel);
                ch.hop0_pending -= 1;
                ch.hop0_end = ch.hop0_end.max(last_end);
                // Only a done marker waits for the TLPs before it to leave the chip; every
                // other stage is pumped by the event that unblocks it.
                if ch.hop0_pending == 0 && ch.done_is_next() && ch.schedule_pump() {
                    ctx.schedule_at(now, Ev::Pump { node: origin, channel });
                }
            }
            t.at += 1;
            let next = (t.at < t.path_len).then(|| usize::from(t.path[t.at as usize]));
            let relayed = next.is_none()
                && matches!(
                    (t.dest, t.kind, t.purpose),
                    (
                        Dest::Chip(_),
                        TlpKind::MemWrite,
                        Purpose::Data { .. } | Purpose::Status { .. } | Purpose::Pio { .. }
                    )
                );
            match next {
                Some(h) if self.hops[h].fed_by_one => arrival = tx.out,
                None if relayed => {
                    // A write entering a chip from N or a cable: its arrival does nothing else.
                    t.forwarded = true;
                    let Dest::Chip(chip) = t.dest else { unreachable!("relayed at a chip") };
                    if self.route_at_chip(chip, &mut t) {
                        let at = tx.out + self.forward;
                        self.hops[hop_index].relaying.push(ctx, at, t);
                    } else {
                        self.hops[hop_index].crossing.push(ctx, tx.out, t);
                    }
                    return;
                }
                _ => {
                    self.hops[hop_index].leaving.push(ctx, tx.out, t);
                    return;
                }
            }
        }
    }

    fn arrive(&mut self, ctx: &mut Context<'_, Ev>, t: Tlp) {
        let now = ctx.now();
        match (t.dest, t.kind, t.purpose) {
            (Dest::Chip(node), TlpKind::MemWrite, Purpose::Kick { channel, seq }) => {
                let delay = self.peach.cycles(self.peach.dma_start_cycles);
                ctx.schedule_in(delay, Ev::Kicked { node, channel, seq });
            }
            (Dest::Chip(node), TlpKind::Completion, Purpose::Completion { of, last }) => match of {
                Reads::Fetch { channel, seq } => self.fetch_completed(ctx, node, channel, seq, last),
                Reads::Data { channel, request } => {
                    let train = (t.subs, t.span);
                    self.data_completed(ctx, node, channel, request, u64::from(t.payload), train, last)
                }
            },
            (Dest::HostMemory(_) | Dest::Gpu(..), TlpKind::MemRead, _) => self.serve_read(ctx, t),
            (Dest::HostMemory(n), TlpKind::MemWrite, _) => {
                let node = &mut self.nodes[n as usize];
                let (subs, payload) = (u64::from(t.subs), u64::from(t.payload));
                let (_, last_end) = node.host_memory.transmit_train(now, t.span, payload.div_ceil(subs), subs);
                node.memory_writes.push(ctx, last_end + self.host.memory_write_latency, t);
            }
            (Dest::Gpu(..), TlpKind::MemWrite, _) if t.subs == 1 => self.visible(now, t),
            // A train's bytes become visible with its last TLP.
            (Dest::Gpu(n, g), TlpKind::MemWrite, _) => {
                let at = now + t.span;
                self.nodes[n as usize].gpu_writes[g as usize].push(ctx, at, t)
            }
            (d, k, _) => panic!("no handler for {k:?} at {d:?}"),
        }
    }

    /// A read request from the chip of `node` to its own memory (global address).
    pub(crate) fn issue_read(&mut self, ctx: &mut Context<'_, Ev>, node: u32, addr: u64, len: u64, purpose: Purpose) {
        let local = addr - self.map.node_base(node);
        let target = self.map.target(local).expect("sources are checked to be local and mapped");
        let (path, path_len, dest) = self.path_to_target(node, target);
        let t = Tlp {
            kind: TlpKind::MemRead,
            addr,
            payload: 0,
            read_len: u32::try_from(len).expect("a read request fits in 32 bits"),
            path: short(path),
            path_len,
            at: 0,
            dest,
            origin: node,
            purpose,
            forwarded: true,
            subs: 1,
            span: SimTime::ZERO,
        };
        self.advance(ctx, t);
    }

    /// Host memory or a GPU answers a read with completions, streamed at its read rate.
    fn serve_read(&mut self, ctx: &mut Context<'_, Ev>, t: Tlp) {
        let now = ctx.now();
        let of = match t.purpose {
            Purpose::Fetch { channel, seq } => Reads::Fetch { channel, seq },
            Purpose::Read { channel, request } => Reads::Data { channel, request },
            _ => unreachable!("only DMA reads are served"),
        };
        let (path, path_len) = self.path_to_chip(t.dest);
        // Completions cross the completer's link, and the host link to the chip.
        let (rcb, mps) = match t.dest {
            Dest::HostMemory(_) => (self.host_rcb, self.host_mps),
            _ => (self.gpu_rcb, self.host_mps.min(self.gpu_mps)),
        };
        // Data completions go as trains of up to `train_bytes` ([`crate::train`]): runs of
        // completions of one size, each of which becomes one write of that size, so that every
        // TLP of a train, and of the train of writes it becomes, is alike (a descriptor's are
        // too few to gain from it).
        let (train_bytes, to_dst) = match of {
            Reads::Data { channel, request } => {
                let r = self.nodes[t.origin as usize].channels[channel as usize].request(request);
                (self.train_bytes, Some((r.dst.wrapping_sub(r.src), r.max_payload)))
            }
            Reads::Fetch { .. } => (0, None),
        };
        let one_write = |src: u64, n: u64| {
            to_dst.is_some_and(|(delta, mps)| n <= mps && src.wrapping_add(delta) % 4096 + n <= 4096)
        };
        let mut left = u64::from(t.read_len);
        let mut at = t.addr;
        let mut pieces = split_completions(t.addr, left, rcb, mps).peekable();
        while let Some(first) = pieces.next() {
            let (mut bytes, mut subs) = (first, 1u16);
            if one_write(at, first) {
                while let Some(&next) = pieces.peek() {
                    if next != first || bytes + next > train_bytes || !one_write(at + bytes, next) {
                        break;
                    }
                    (bytes, subs) = (bytes + next, subs + 1);
                    pieces.next();
                }
            }
            at += bytes;
            left -= bytes;
            let (server, latency) = match t.dest {
                Dest::HostMemory(node) => (&mut self.nodes[node as usize].host_memory, self.host.memory_read_latency),
                Dest::Gpu(node, g) => (&mut self.nodes[node as usize].gpu_read[g as usize], self.gpu_read_latency),
                Dest::Chip(_) => unreachable!(),
            };
            // The completions of a train are of one size: each is served as it would be alone.
            let (tx, last_end) = server.transmit_train(now, SimTime::ZERO, first, u64::from(subs));
            let (ready, span) = (tx.end + latency, last_end - tx.end);
            let c = Tlp {
                kind: TlpKind::Completion,
                addr: t.addr,
                payload: bytes as u32,
                read_len: 0,
                path: short(path),
                path_len,
                at: 0,
                dest: Dest::Chip(t.origin),
                origin: t.origin,
                purpose: Purpose::Completion { of, last: left == 0 },
                forwarded: true,
                subs,
                span,
            };
            match t.dest {
                // Only this GPU's reads feed its link back, in the order they are served.
                Dest::Gpu(..) => self.advance_from(ctx, c, ready),
                Dest::HostMemory(node) => self.nodes[node as usize].memory_reads.push(ctx, ready, c),
                Dest::Chip(_) => unreachable!(),
            }
        }
    }

    /// The CPU of `node` stores `len` bytes at global `dst` (PIO, seed 000 §3.5.1): write-combined
    /// TLPs of at most `pio_write_combining` bytes, aligned to it.
    pub(crate) fn cpu_store(&mut self, ctx: &mut Context<'_, Ev>, node: u32, dst: u64, len: u64, id: u64) {
        let h = &self.nodes[node as usize].hops;
        let path = [h.cpu, h.n_down];
        for (addr, n) in split_requests(dst, len, self.pio_chunk) {
            self.advance(ctx, Tlp::cpu_store(addr, n, node, path, Purpose::Pio { id, offset: addr - dst }));
        }
    }

    /// The CPU of `node` stores to a start register of its chip.
    pub(crate) fn cpu_kick(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8, seq: u64) {
        let h = &self.nodes[node as usize].hops;
        let path = [h.cpu, h.n_down];
        self.advance(ctx, Tlp::cpu_store(self.map.node_base(node), 4, node, path, Purpose::Kick { channel, seq }));
    }

    /// Bytes of a write reached their memory: report them, holding a status word until the
    /// data before it is visible.
    pub(crate) fn visible(&mut self, now: SimTime, t: Tlp) {
        let node = self.map.node_of(t.addr).expect("a mapped write") as usize;
        match t.purpose {
            Purpose::Data { channel, id, src } => {
                self.outputs.push((now, Output::Landed { id, src, dst: t.addr, len: u64::from(t.payload) }));
                let ch = &mut self.nodes[t.origin as usize].channels[channel as usize];
                ch.data_visible[node] += 1;
                let seen = ch.data_visible[node];
                let mut i = 0;
                while i < ch.held.len() {
                    let (status, n, needed) = ch.held[i];
                    if n as usize == node && needed <= seen {
                        ch.held.remove(i);
                        self.outputs.push((now, Output::StatusLanded { id: status }));
                    } else {
                        i += 1;
                    }
                }
            }
            Purpose::Status { channel, id, needed } => {
                let ch = self.channel(t.origin, channel);
                if ch.data_visible[node] >= needed {
                    self.outputs.push((now, Output::StatusLanded { id }));
                } else {
                    ch.held.push((id, node as u32, needed));
                }
            }
            Purpose::Pio { id, offset } => {
                self.outputs.push((now, Output::PioLanded { id, dst: t.addr, offset, len: u64::from(t.payload) }))
            }
            other => unreachable!("not a write: {other:?}"),
        }
    }
}
