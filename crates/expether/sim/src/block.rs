//! A block-I/O benchmark in the manner of fio with one thread (seed 002 §4.2.1-§4.2.2): the
//! host issues I/Os of one size and direction, `iodepth` at a time, to an NVMe-like block
//! device whose timing is an `expether_model::BlockTiming`.
//!
//! TLPs of one I/O: the host rings a doorbell (a 4-byte write); the device reads the 64-byte
//! command from host memory; a read moves its data to host memory in writes of `max_payload`
//! bytes as the media deliver each chunk; a write fetches its data with read requests of
//! `read_request` bytes (at most `outstanding_reads` in flight) that the root complex answers
//! with completions of `max_payload` bytes; then the device writes a 16-byte completion entry
//! and a 4-byte interrupt message. The host's CPU (one thread) spends `submit` per I/O before
//! the doorbell and `complete` after the interrupt.

use crate::system::{Node, Timers};
use crate::tlp::{address, parts, Kind, Region, Tlp};
use base::SimTime;
use expether_model::{BlockTiming, HostTiming};
use std::collections::{HashMap, VecDeque};

/// What the benchmark does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockJob {
    /// Writes (true) or reads.
    pub write: bool,
    /// Bytes per I/O.
    pub bytes: u64,
    /// I/Os in flight.
    pub iodepth: u32,
    /// I/Os in all.
    pub ios: u32,
}

const COMMAND_BYTES: u32 = 64;
const ENTRY_BYTES: u32 = 16;
const MSI_BYTES: u32 = 4;

fn timer(kind: u64, a: u64, b: u64) -> u64 {
    kind << 56 | (a & 0xFF_FFFF) << 32 | (b & 0xFFFF_FFFF)
}

fn untimer(id: u64) -> (u64, u32, u32) {
    (id >> 56, ((id >> 32) & 0xFF_FFFF) as u32, id as u32)
}

/// The host: fio's thread, the block layer and driver, the root complex.
pub struct BlockHost {
    t: HostTiming,
    job: BlockJob,
    max_payload: u64,
    rcb: u64,
    cpu_free: SimTime,
    issued: u32,
    done: u32,
    started: Vec<SimTime>,
    /// Latency of each I/O, from fio issuing it to fio seeing it done.
    pub latencies: Vec<SimTime>,
    /// When the last I/O finished.
    pub finished: SimTime,
    /// Bytes of read data written to host memory.
    pub data_in: u64,
    responses: HashMap<u32, (u16, u32)>,
    next_response: u32,
    out: VecDeque<Tlp>,
    spans: Option<Vec<(String, SimTime, SimTime)>>,
}

const SUBMIT: u64 = 1;
const RESPOND: u64 = 2;
const COMPLETE: u64 = 3;

impl BlockHost {
    /// A host running `job`; completions it returns carry at most `max_payload` bytes and split
    /// at `rcb` boundaries.
    pub fn new(t: HostTiming, job: BlockJob, max_payload: u32, rcb: u64, trace: bool) -> Self {
        BlockHost {
            t,
            job,
            max_payload: u64::from(max_payload),
            rcb,
            cpu_free: SimTime::ZERO,
            issued: 0,
            done: 0,
            started: vec![SimTime::ZERO; job.ios as usize],
            latencies: Vec::with_capacity(job.ios as usize),
            finished: SimTime::ZERO,
            data_in: 0,
            responses: HashMap::new(),
            next_response: 0,
            out: VecDeque::new(),
            spans: trace.then(Vec::new),
        }
    }

    /// Whether every I/O has finished.
    pub fn is_done(&self) -> bool {
        self.done == self.job.ios
    }

    /// I/Os finished.
    pub fn completed(&self) -> u32 {
        self.done
    }

    /// When I/O `io` was issued, if it was.
    pub fn issued_at(&self, io: u32) -> Option<SimTime> {
        (io < self.issued).then(|| self.started[io as usize])
    }

    fn submit(&mut self, now: SimTime, timers: &mut Timers) {
        let io = self.issued;
        self.issued += 1;
        let start = now.max(self.cpu_free);
        self.started[io as usize] = start;
        self.cpu_free = start + self.t.submit;
        timers.at(self.cpu_free, timer(SUBMIT, 0, u64::from(io)));
    }
}

impl Node for BlockHost {
    fn start(&mut self, now: SimTime, timers: &mut Timers) {
        for _ in 0..self.job.iodepth.min(self.job.ios) {
            self.submit(now, timers);
        }
    }

    fn handle_tlp(&mut self, now: SimTime, tlp: Tlp, timers: &mut Timers) {
        match tlp.kind {
            Kind::MemRd => {
                let k = self.next_response;
                self.next_response = self.next_response.wrapping_add(1);
                self.responses.insert(k, (tlp.tag, tlp.len));
                timers.at(now + self.t.memory_read_latency, timer(RESPOND, 0, u64::from(k)));
            }
            Kind::MemWr => match parts(tlp.addr) {
                Some((Region::Data, _, _)) => self.data_in += u64::from(tlp.len),
                Some((Region::Interrupt, io, _)) => {
                    let end = now.max(self.cpu_free) + self.t.complete;
                    self.cpu_free = end;
                    timers.at(end, timer(COMPLETE, 0, u64::from(io)));
                }
                _ => {}
            },
            Kind::Cpl => {}
        }
    }

    fn handle_timer(&mut self, now: SimTime, id: u64, timers: &mut Timers) {
        let (kind, _, n) = untimer(id);
        match kind {
            SUBMIT => self.out.push_back(Tlp::write(address(Region::Doorbell, n, 0), 4)),
            RESPOND => {
                let (tag, len) = self.responses.remove(&n).expect("a pending read");
                for (off, piece) in split(u64::from(len), self.rcb, self.max_payload) {
                    self.out.push_back(Tlp::completion(tag, off as u32, piece as u32));
                }
            }
            COMPLETE => {
                let lat = now - self.started[n as usize];
                if let Some(s) = self.spans.as_mut() {
                    s.push((format!("I/O {n}"), self.started[n as usize], now));
                }
                self.latencies.push(lat);
                self.done += 1;
                self.finished = now;
                if self.issued < self.job.ios {
                    self.submit(now, timers);
                }
            }
            _ => unreachable!("unknown host timer {id:#x}"),
        }
    }

    fn next_tlp(&mut self, _now: SimTime) -> Option<Tlp> {
        self.out.pop_front()
    }

    fn take_spans(&mut self) -> Vec<(String, SimTime, SimTime)> {
        self.spans.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

/// Completions answering a read of `len` bytes at a host address aligned to `rcb`: at most
/// `max_payload` each (PCIe: a completer may split at RCB boundaries; the root complex here
/// sends whole max-payload pieces). Returns (offset, length) pairs.
fn split(len: u64, rcb: u64, max_payload: u64) -> Vec<(u64, u64)> {
    let mut at = 0;
    pcie::split_completions(0, len, rcb, max_payload)
        .map(|n| {
            let piece = (at, n);
            at += n;
            piece
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
struct ReadReq {
    region: Region,
    io: u32,
    offset: u32,
    len: u32,
    got: u32,
}

#[derive(Debug)]
enum Out {
    One(Tlp),
    Data { io: u32, offset: u64, left: u64 },
    Finish(u32),
}

#[derive(Debug, Default)]
struct IoState {
    fetched: u64,
    programmed_upto: u64,
    chunks_left: u32,
    first_unit: u32,
}

/// The device: an NVMe-like controller over a `BlockTiming`.
pub struct BlockDevice {
    t: BlockTiming,
    job: BlockJob,
    tags: Vec<Option<ReadReq>>,
    free_tags: Vec<u16>,
    reads: VecDeque<ReadReq>,
    out: VecDeque<Out>,
    commands: VecDeque<u32>,
    command_busy: bool,
    unit_free: Vec<SimTime>,
    ios: HashMap<u32, IoState>,
    spans: Option<Vec<(String, SimTime, SimTime)>>,
}

const COMMAND_DONE: u64 = 1;
const CHUNK_READY: u64 = 2;
const CHUNK_WRITTEN: u64 = 3;

impl BlockDevice {
    /// A device serving `job` (its commands all have the job's size and direction).
    pub fn new(t: BlockTiming, job: BlockJob, trace: bool) -> Self {
        BlockDevice {
            tags: vec![None; t.outstanding_reads as usize],
            free_tags: (0..t.outstanding_reads as u16).rev().collect(),
            unit_free: vec![SimTime::ZERO; t.units as usize],
            t,
            job,
            reads: VecDeque::new(),
            out: VecDeque::new(),
            commands: VecDeque::new(),
            command_busy: false,
            ios: HashMap::new(),
            spans: trace.then(Vec::new),
        }
    }

    fn issue_reads(&mut self) {
        while !self.reads.is_empty() {
            let Some(tag) = self.free_tags.pop() else { break };
            let r = self.reads.pop_front().expect("checked");
            self.tags[tag as usize] = Some(r);
            self.out.push_back(Out::One(Tlp::read(address(r.region, r.io, r.offset), r.len, tag)));
        }
    }

    fn next_command(&mut self, now: SimTime, timers: &mut Timers) {
        if self.command_busy {
            return;
        }
        let Some(io) = self.commands.pop_front() else { return };
        self.command_busy = true;
        let stage = if self.job.write { self.t.write_command } else { self.t.read_command };
        timers.at(now + stage, timer(COMMAND_DONE, 0, u64::from(io)));
        if let Some(s) = self.spans.as_mut() {
            s.push((format!("command {io}"), now, now + stage));
        }
    }

    /// A unit takes chunk `idx` of `io` from `now`; returns when it is ready.
    fn media(&mut self, now: SimTime, io: u32, offset: u64, len: u64, unit: u32) -> SimTime {
        let write = self.job.write;
        let start = now.max(self.unit_free[unit as usize]);
        let end = start + self.t.unit_busy(len, write);
        self.unit_free[unit as usize] = end;
        if let Some(s) = self.spans.as_mut() {
            s.push((format!("I/O {io} media @{offset}"), start, end));
        }
        end + self.t.access(write)
    }

    /// Writes: program every chunk whose data has all arrived.
    fn program(&mut self, now: SimTime, io: u32, timers: &mut Timers) {
        let st = self.ios.get(&io).expect("a known I/O");
        let (upto, fetched, first) = (st.programmed_upto, st.fetched, st.first_unit);
        let chunks: Vec<_> = self.t.chunks(self.job.bytes, first).filter(|c| c.offset >= upto).collect();
        for c in chunks {
            if c.offset + c.len > fetched {
                break;
            }
            let ready = self.media(now, io, c.offset, c.len, c.unit);
            timers.at(ready, timer(CHUNK_WRITTEN, 0, u64::from(io)));
            self.ios.get_mut(&io).expect("known").programmed_upto = c.offset + c.len;
        }
    }
}

/// A pseudo-random first unit for I/O `io` (random-access I/O lands anywhere).
fn scatter(io: u32, units: u32) -> u32 {
    ((u64::from(io).wrapping_mul(2_654_435_761) >> 16) % u64::from(units)) as u32
}

impl Node for BlockDevice {
    fn start(&mut self, _now: SimTime, _timers: &mut Timers) {}

    fn handle_tlp(&mut self, now: SimTime, tlp: Tlp, timers: &mut Timers) {
        match tlp.kind {
            Kind::MemWr => {
                if let Some((Region::Doorbell, io, _)) = parts(tlp.addr) {
                    let chunks = self.t.chunks(self.job.bytes, scatter(io, self.t.units)).count() as u32;
                    let first_unit = scatter(io, self.t.units);
                    self.ios.insert(io, IoState { chunks_left: chunks, first_unit, ..IoState::default() });
                    self.reads.push_back(ReadReq {
                        region: Region::Command,
                        io,
                        offset: 0,
                        len: COMMAND_BYTES,
                        got: 0,
                    });
                    self.issue_reads();
                }
            }
            Kind::Cpl => {
                let slot = &mut self.tags[tlp.tag as usize];
                let r = slot.as_mut().expect("a completion for a tag in use");
                r.got += tlp.len;
                if r.got < r.len {
                    return;
                }
                let r = slot.take().expect("checked");
                self.free_tags.push(tlp.tag);
                self.issue_reads();
                match r.region {
                    Region::Command => {
                        self.commands.push_back(r.io);
                        self.next_command(now, timers);
                    }
                    _ => {
                        let st = self.ios.get_mut(&r.io).expect("a known I/O");
                        st.fetched += u64::from(r.len);
                        let all = st.fetched >= self.job.bytes;
                        self.program(now, r.io, timers);
                        if all {
                            self.command_busy = false;
                            self.next_command(now, timers);
                        }
                    }
                }
            }
            Kind::MemRd => {}
        }
    }

    fn handle_timer(&mut self, now: SimTime, id: u64, timers: &mut Timers) {
        let (kind, _, io) = untimer(id);
        match kind {
            COMMAND_DONE if self.job.write => {
                let step = u64::from(self.t.read_request);
                let mut off = 0;
                while off < self.job.bytes {
                    let len = step.min(self.job.bytes - off) as u32;
                    self.reads.push_back(ReadReq { region: Region::Data, io, offset: off as u32, len, got: 0 });
                    off += step;
                }
                self.issue_reads();
            }
            COMMAND_DONE => {
                self.command_busy = false;
                self.next_command(now, timers);
                let first = self.ios[&io].first_unit;
                let chunks: Vec<_> = self.t.chunks(self.job.bytes, first).collect();
                for c in chunks {
                    let ready = self.media(now, io, c.offset, c.len, c.unit);
                    timers.at(ready, timer(CHUNK_READY, c.offset >> 12, u64::from(io)));
                }
            }
            CHUNK_READY => {
                let (_, page, _) = untimer(id);
                let offset = u64::from(page) << 12;
                let len = self.t.chunk.min(self.job.bytes - offset);
                self.out.push_back(Out::Data { io, offset, left: len });
                self.chunk_done(io);
            }
            CHUNK_WRITTEN => self.chunk_done(io),
            _ => unreachable!("unknown device timer {id:#x}"),
        }
    }

    fn next_tlp(&mut self, _now: SimTime) -> Option<Tlp> {
        match self.out.front_mut()? {
            Out::One(_) => match self.out.pop_front() {
                Some(Out::One(t)) => Some(t),
                _ => unreachable!(),
            },
            Out::Data { io, offset, left } => {
                let n = (*left).min(u64::from(self.t.max_payload));
                let t = Tlp::write(address(Region::Data, *io, *offset as u32), n as u32);
                *offset += n;
                *left -= n;
                if *left == 0 {
                    self.out.pop_front();
                }
                Some(t)
            }
            Out::Finish(io) => {
                let io = *io;
                self.out.pop_front();
                self.out.push_front(Out::One(Tlp::write(address(Region::Interrupt, io, 0), MSI_BYTES)));
                self.ios.remove(&io);
                Some(Tlp::write(address(Region::CompletionEntry, io, 0), ENTRY_BYTES))
            }
        }
    }

    fn take_spans(&mut self) -> Vec<(String, SimTime, SimTime)> {
        self.spans.as_mut().map(std::mem::take).unwrap_or_default()
    }
}

impl BlockDevice {
    fn chunk_done(&mut self, io: u32) {
        let st = self.ios.get_mut(&io).expect("a known I/O");
        st.chunks_left -= 1;
        if st.chunks_left == 0 {
            self.out.push_back(Out::Finish(io));
        }
    }
}
