//! The timing of one PEACH2 DMA channel (seed 000 §3.5.2): the work the protocol core hands it,
//! in order, and when each piece of it happens.
//!
//! The channel does not decide what to transfer: the TCA engine does (chains, block-stride
//! bursts, notifications, fences) and the simulated fabric passes its actions here as [`Work`].
//! The channel times them through three stages, each in the order the work was given:
//!
//! 1. *decode*: a kick opens the channel `dma_start_cycles` after the CPU's store reaches the chip;
//!    a request in registers is decoded in `descriptor_cycles`; a descriptor in host memory is
//!    first read over PCIe (one tag), one in internal memory after `internal_fetch_cycles`.
//!    One descriptor is decoded at a time, so the next one is fetched while the data of the
//!    previous moves (the prefetch of seed 000 Fig. 4-6) when the engine has given it already.
//! 2. *reads*: each write's source is read in requests of at most the maximum read request size,
//!    at most `max_outstanding_reads` tags in flight (descriptor fetches first);
//! 3. *writes*: completions leave again as posted writes of at most the maximum payload after
//!    `forward_cycles`; a write is *posted* when its last byte has entered the datapath. A status
//!    word follows every write given before it; a done marker is reached when every TLP before
//!    it has left the chip (what the status register the CPU polls says).

use crate::cluster::{ClusterModel, Ev, Output};
use crate::transport::{Purpose, Tlp};
use base::{Context, SimTime, TrackId};
use pcie::split_requests;
use std::collections::VecDeque;

/// Where the controller takes a request from (seed 000 §3.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorSource {
    /// Register mode: written into the controller before the kick.
    Registers,
    /// Chaining mode: a descriptor read from host memory over PCIe.
    HostMemory,
    /// Chaining mode: a descriptor read from PEACH2 internal memory (seed 001).
    InternalMemory,
}

/// One piece of work for a DMA channel, given in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// The CPU stores to the channel's start register; work given after it waits for it.
    Kick,
    /// The request of the next writes is taken from `source`; `addr` is the descriptor's global
    /// address when it is in host memory.
    Descriptor {
        /// Where the request is.
        source: DescriptorSource,
        /// Global address of the 32-byte descriptor (host memory only).
        addr: u64,
    },
    /// Read `len` bytes at `src` (this node) and write them at `dst` (any node).
    Write {
        /// The caller's name, echoed in [`Output::Landed`] and [`Output::Posted`].
        id: u64,
        /// Global source address.
        src: u64,
        /// Global destination address.
        dst: u64,
        /// Bytes.
        len: u64,
    },
    /// A 4-byte status word to `dst`, after every write given before it; it is not visible
    /// before them (PCIe posted writes do not pass each other).
    Status {
        /// The caller's name, echoed in [`Output::StatusLanded`].
        id: u64,
        /// Global address of the word.
        dst: u64,
    },
    /// The status register reads "done" once everything given before has left the chip.
    Done {
        /// The caller's name, echoed in [`Output::Done`].
        id: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Waiting,
    Started,
    Finished,
}

#[derive(Debug, Clone, Copy)]
struct Item {
    work: Work,
    stage: Stage,
    /// Write: bytes not yet in the datapath.
    left: u64,
}

/// A read request of a write, in flight or waiting for a tag.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ReadRequest {
    /// Sequence number of the write it belongs to.
    seq: u64,
    pub(crate) src: u64,
    pub(crate) dst: u64,
    len: u64,
    received: u64,
    /// The largest payload of the writes it becomes (`ClusterModel::max_payload_to`).
    pub(crate) max_payload: u64,
}

/// One DMA channel of a PEACH2.
#[derive(Default)]
pub(crate) struct Channel {
    items: VecDeque<Item>,
    /// Sequence number of `items[0]`; of the next item given.
    first: u64,
    next: u64,
    /// Next item the decode stage and the write stage look at.
    next_decode: u64,
    next_emit: u64,
    /// A descriptor in host memory waiting for a tag: (its item, its address).
    fetch_wanted: Option<(u64, u64)>,
    /// Read requests by slot, slots reused; those waiting for a tag, in order.
    requests: Vec<ReadRequest>,
    free_requests: Vec<usize>,
    waiting_reads: VecDeque<usize>,
    outstanding: u32,
    pump_scheduled: bool,
    /// TLPs emitted that have not started on their first hop, and the end of the last that did.
    pub(crate) hop0_pending: u32,
    pub(crate) hop0_end: SimTime,
    /// Data TLPs emitted and made visible, by destination node: a status word emitted after n
    /// data TLPs to a node is visible once n are.
    pub(crate) data_emitted: Vec<u64>,
    pub(crate) data_visible: Vec<u64>,
    /// Status words that arrived before the data they follow: (TLP, node, data count needed).
    pub(crate) held: Vec<(u64, u32, u64)>,
    /// When each descriptor since the channel's last kick was decoded, for experiments (cleared
    /// at every kick, so a long run holds one run's worth).
    pub(crate) decoded: Vec<SimTime>,
    /// Start of the current run, for the trace.
    pub(crate) run_start: Option<SimTime>,
    pub(crate) track: Option<TrackId>,
}

impl Channel {
    pub(crate) fn new(nodes: usize) -> Self {
        Channel { data_emitted: vec![0; nodes], data_visible: vec![0; nodes], ..Channel::default() }
    }

    fn item(&mut self, seq: u64) -> &mut Item {
        &mut self.items[(seq - self.first) as usize]
    }

    /// Takes `work`; returns its sequence number.
    pub(crate) fn push(&mut self, work: Work) -> u64 {
        let left = match work {
            Work::Write { len, .. } => len,
            _ => 0,
        };
        self.items.push_back(Item { work, stage: Stage::Waiting, left });
        self.next += 1;
        self.next - 1
    }

    /// Marks the pump as scheduled; false when it was already.
    pub(crate) fn schedule_pump(&mut self) -> bool {
        !std::mem::replace(&mut self.pump_scheduled, true)
    }

    /// The write stage stands at a done marker.
    pub(crate) fn done_is_next(&self) -> bool {
        self.next_emit < self.next_decode
            && matches!(self.items[(self.next_emit - self.first) as usize].work, Work::Done { .. })
    }

    pub(crate) fn request(&self, r: usize) -> &ReadRequest {
        &self.requests[r]
    }

    fn new_request(&mut self, r: ReadRequest) -> usize {
        match self.free_requests.pop() {
            Some(i) => {
                self.requests[i] = r;
                i
            }
            None => {
                self.requests.push(r);
                self.requests.len() - 1
            }
        }
    }
}

impl ClusterModel {
    pub(crate) fn channel(&mut self, node: u32, channel: u8) -> &mut Channel {
        &mut self.nodes[node as usize].channels[channel as usize]
    }

    /// Moves every stage of a channel as far as it can go now.
    pub(crate) fn pump(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8) {
        self.channel(node, channel).pump_scheduled = false;
        self.advance_decode(ctx, node, channel);
        self.issue_reads(ctx, node, channel);
        self.advance_emit(ctx, node, channel);
        let ch = self.channel(node, channel);
        let done = ch.next_decode.min(ch.next_emit);
        while ch.first < done {
            ch.items.pop_front();
            ch.first += 1;
        }
    }

    fn advance_decode(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8) {
        let mrrs = self.host_link.max_read_request;
        loop {
            let ch = self.channel(node, channel);
            let seq = ch.next_decode;
            if seq == ch.next {
                return;
            }
            let item = *ch.item(seq);
            match (item.work, item.stage) {
                (Work::Kick | Work::Descriptor { .. }, Stage::Started) | (Work::Kick, Stage::Waiting) => return,
                (Work::Descriptor { source, addr }, Stage::Waiting) => {
                    ch.item(seq).stage = Stage::Started;
                    let cycles = match source {
                        DescriptorSource::Registers => self.peach.descriptor_cycles,
                        DescriptorSource::InternalMemory => {
                            self.peach.internal_fetch_cycles + self.peach.descriptor_cycles
                        }
                        DescriptorSource::HostMemory => {
                            ch.fetch_wanted = Some((seq, addr));
                            return;
                        }
                    };
                    ctx.schedule_in(self.peach.cycles(cycles), Ev::Decoded { node, channel, seq });
                    return;
                }
                (Work::Write { src, dst, len, .. }, Stage::Waiting) => {
                    let max_payload = self.max_payload_to(node, dst);
                    let ch = self.channel(node, channel);
                    ch.item(seq).stage = Stage::Started;
                    for (addr, n) in split_requests(src, len, mrrs) {
                        let r = ch.new_request(ReadRequest {
                            seq,
                            src: addr,
                            dst: dst + (addr - src),
                            len: n,
                            received: 0,
                            max_payload,
                        });
                        ch.waiting_reads.push_back(r);
                    }
                    ch.next_decode += 1;
                }
                _ => ch.next_decode += 1,
            }
        }
    }

    /// Uses free tags: a wanted descriptor fetch first, then data reads in order.
    fn issue_reads(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8) {
        let max = self.peach.max_outstanding_reads;
        let descriptor_bytes = self.peach.descriptor_bytes;
        loop {
            let ch = self.channel(node, channel);
            if ch.outstanding >= max {
                return;
            }
            if let Some((seq, addr)) = ch.fetch_wanted.take() {
                ch.outstanding += 1;
                self.issue_read(ctx, node, addr, descriptor_bytes, Purpose::Fetch { channel, seq });
                continue;
            }
            let Some(r) = ch.waiting_reads.pop_front() else { return };
            ch.outstanding += 1;
            let req = ch.requests[r];
            self.issue_read(ctx, node, req.src, req.len, Purpose::Read { channel, request: r });
        }
    }

    fn advance_emit(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8) {
        loop {
            let now = ctx.now();
            let ch = self.channel(node, channel);
            let seq = ch.next_emit;
            if seq == ch.next_decode {
                return;
            }
            let item = *ch.item(seq);
            match item.work {
                Work::Write { .. } if item.stage != Stage::Finished => return,
                Work::Status { id, dst } => {
                    let purpose = Purpose::Status { channel, id, needed: 0 };
                    self.emit_write(ctx, node, dst, 4, purpose, (1, SimTime::ZERO));
                }
                Work::Done { id } => {
                    if ch.hop0_pending > 0 {
                        return;
                    }
                    let at = ch.hop0_end.max(now);
                    ctx.schedule_at(at, Ev::DoneReached { node, channel, id });
                }
                _ => {}
            }
            self.channel(node, channel).next_emit += 1;
        }
    }

    /// The descriptor of item `seq` is decoded: its writes may read.
    pub(crate) fn decoded(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8, seq: u64) {
        let now = ctx.now();
        let ch = self.channel(node, channel);
        ch.item(seq).stage = Stage::Finished;
        ch.decoded.push(now);
        ch.run_start.get_or_insert(now);
        self.pump(ctx, node, channel);
    }

    /// The kick of item `seq` has opened the channel.
    pub(crate) fn kicked(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8, seq: u64) {
        let ch = self.channel(node, channel);
        ch.item(seq).stage = Stage::Finished;
        ch.decoded.clear();
        self.pump(ctx, node, channel);
    }

    /// A completion of `bytes` for a descriptor fetch reached the chip.
    pub(crate) fn fetch_completed(&mut self, ctx: &mut Context<'_, Ev>, node: u32, channel: u8, seq: u64, last: bool) {
        if !last {
            return;
        }
        self.channel(node, channel).outstanding -= 1;
        let delay = self.peach.cycles(self.peach.descriptor_cycles);
        ctx.schedule_in(delay, Ev::Decoded { node, channel, seq });
        self.pump(ctx, node, channel);
    }

    /// A completion of `bytes` for data read request `r` reached the chip: its bytes leave
    /// again as posted writes. A train of completions (`subs` TLPs whose last arrives `span`
    /// after the first) leaves as one train of writes, posted when its last byte is in.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn data_completed(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        node: u32,
        channel: u8,
        r: usize,
        bytes: u64,
        (subs, span): (u16, SimTime),
        last: bool,
    ) {
        let ch = self.channel(node, channel);
        let req = &mut ch.requests[r];
        let mps = req.max_payload;
        let (seq, dst, src) = (req.seq, req.dst + req.received, req.src + req.received);
        req.received += bytes;
        let Work::Write { id, .. } = ch.item(seq).work else { unreachable!("reads belong to writes") };
        if subs == 1 {
            for (addr, n) in split_requests(dst, bytes, mps) {
                let purpose = Purpose::Data { channel, id, src: src + (addr - dst) };
                self.emit_write(ctx, node, addr, n, purpose, (1, SimTime::ZERO));
            }
            self.completion_posted(ctx, node, channel, r, bytes, last);
        } else {
            // A train's completions each become one write (`ClusterModel::serve_read`).
            self.emit_write(ctx, node, dst, bytes, Purpose::Data { channel, id, src }, (subs, span));
            let (request, bytes) = (r as u32, bytes as u32);
            ctx.schedule_in(span, Ev::TrainPosted { node, channel, last, request, bytes });
        }
    }

    /// The last byte of a completion (or train) for read request `r` has entered the datapath.
    pub(crate) fn completion_posted(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        node: u32,
        channel: u8,
        r: usize,
        bytes: u64,
        last: bool,
    ) {
        let ch = self.channel(node, channel);
        let seq = ch.requests[r].seq;
        let item = ch.item(seq);
        item.left -= bytes;
        if item.left == 0 {
            item.stage = Stage::Finished;
            let Work::Write { id, .. } = item.work else { unreachable!("reads belong to writes") };
            self.outputs.push((ctx.now(), Output::Posted { id }));
        }
        if last {
            let ch = self.channel(node, channel);
            ch.outstanding -= 1;
            ch.free_requests.push(r);
        }
        self.pump(ctx, node, channel);
    }

    /// A posted write of `payload` bytes to global `addr` (or a train of `subs` writes whose
    /// last comes `span` after the first) leaves the DMA datapath of `node`'s chip after
    /// `forward_cycles`, to be routed there.
    fn emit_write(
        &mut self,
        ctx: &mut Context<'_, Ev>,
        node: u32,
        addr: u64,
        payload: u64,
        mut purpose: Purpose,
        (subs, span): (u16, SimTime),
    ) {
        let dst_node = self.map.node_of(addr).expect("checked when the work was taken") as usize;
        let ch_index = match purpose {
            Purpose::Data { channel, .. } | Purpose::Status { channel, .. } => channel,
            _ => unreachable!("only data and status words leave a channel"),
        };
        let ch = self.channel(node, ch_index);
        ch.hop0_pending += 1;
        match &mut purpose {
            Purpose::Data { .. } => ch.data_emitted[dst_node] += 1,
            Purpose::Status { needed, .. } => *needed = ch.data_emitted[dst_node],
            _ => {}
        }
        let mut t = Tlp::write(addr, payload, node, purpose);
        (t.subs, t.span) = (subs, span);
        let at = ctx.now() + self.forward;
        if self.route_at_chip(node, &mut t) {
            self.nodes[node as usize].datapath.push(ctx, at, t);
        } else {
            self.advance_from(ctx, t, at);
        }
    }
}
