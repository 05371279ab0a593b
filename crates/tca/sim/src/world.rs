//! The simulated TCA system that rank programs act on: one [`Engine`] per node (the API
//! semantics: handles, chains, notification matching), the [`Cluster`] hardware model (when
//! things happen) and [`Memory`] (what the bytes are).
//!
//! A DMA start is carried out in two steps. The node's engine runs the chain's semantics at once,
//! every write acknowledged as it is issued, which yields the ordered writes and notifications
//! of the chain; the cluster then executes the chain's hardware descriptors in virtual time, and
//! as its outputs arrive the bytes are copied and the notifications delivered to the destination
//! engines. Programs therefore see data and notifications exactly when the hardware model says.
//!
//! A chain runs as segments in order: runs of entries whose source is on the node become one
//! hardware job of the channel; an entry whose source is on another node is a remote read by
//! proxy write (seed 000 §3.5): the CPU stores a request into the source node's request area,
//! that node's driver runs after `host.interrupt_latency` and writes the data with a DMA of its
//! own (on its last channel), followed by a completion word back to the requester.

use crate::memory::Memory;
use std::collections::{BTreeMap, VecDeque};
use tca_proto::{Action, Desc, DmaFlags, Engine, Handle, MemoryType, Notify, TcaError, WaitStatus};
use tca_model::cluster::{Cluster, DmaJob, JobEntry, Output};
use tca_model::platform::Platform;
use tca_model::router::Target;
use base::{SimTime, Trace};

/// Host memory reserved at the start of each node's part: notification words (first 4 KiB),
/// then one descriptor table per channel.
const NOTIFY_AREA: u64 = 4096;
const TABLE_BYTES: u64 = 256 * 1024;
/// Offsets in the first host page of each node: proxy requests and proxy completion words.
const PROXY_AREA: u64 = 0x800;
const PROXY_DONE_AREA: u64 = 0x40;
/// Allocations are aligned to this (a page).
const ALIGN: u64 = 4096;

/// A request a rank makes; see [`crate::RankHandle`] for each one's meaning.
#[derive(Debug, Clone)]
pub enum Op {
    Malloc { size: u64, mem: MemoryType, gpu: u32 },
    Free { handle: Handle },
    Write { handle: Handle, offset: u64, bytes: Vec<u8> },
    Read { handle: Handle, offset: u64, len: u64 },
    SetChain { channel: u8, desc: Box<Desc> },
    StartDma { channel: u8 },
    WaitDmac { channel: u8 },
    WaitRecv { handle: Handle, slot: u32, tag: u32 },
    SendPio { dst: Handle, offset: u64, bytes: Vec<u8> },
    WaitValue { handle: Handle, offset: u64, bytes: Vec<u8> },
    Compute { duration: SimTime },
    Barrier,
    Allgather { bytes: Vec<u8> },
    Wtime,
}

impl Op {
    /// How a waiting rank is described in a deadlock report.
    pub fn describe(&self) -> String {
        match self {
            Op::WaitDmac { channel } => format!("tcaWaitDMAC(channel {channel})"),
            Op::WaitRecv { handle, slot, tag } => {
                format!("tcaWaitDMARecvDesc(handle of node {}, slot {slot}, tag {tag})", handle.node)
            }
            Op::WaitValue { handle, offset, bytes } => {
                format!("data at offset {offset} of a node-{} buffer to become {bytes:02x?}", handle.node)
            }
            Op::Barrier => "barrier".into(),
            Op::Allgather { .. } => "allgather".into(),
            other => format!("{other:?}"),
        }
    }
}

/// What a finished request returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Unit,
    Handle(Handle),
    Bytes(Vec<u8>),
    Gathered(Vec<Vec<u8>>),
    Time(SimTime),
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricError {
    #[error("{0:?}: {msg}", msg = tca_proto::error_string(.0.code()))]
    Api(TcaError),
    #[error("deadlock at {at}: {detail}")]
    Deadlock { at: SimTime, detail: String },
    #[error("{0}")]
    Unsupported(String),
}

impl From<TcaError> for FabricError {
    fn from(e: TcaError) -> Self {
        FabricError::Api(e)
    }
}

/// A request that must wait for the simulation.
#[derive(Debug, Clone)]
pub enum Wait {
    /// Ready at a known time.
    Until(SimTime),
    Dmac {
        node: u32,
        channel: u8,
        since: SimTime,
    },
    Recv {
        node: u32,
        handle: Handle,
        slot: u32,
        tag: u32,
    },
    Value {
        addr: u64,
        bytes: Vec<u8>,
    },
    Collective,
}

/// Global address of the status word a notification is written to: in the first host page of
/// the destination node, one word per slot.
fn notify_word(map: &tca_model::router::AddressMap, n: &Notify) -> u64 {
    map.node_base(n.dst_node as u32) + 0x100 + 4 * n.slot as u64
}

/// Outcome of submitting a request.
pub enum Submitted {
    Done(Result<Reply, FabricError>),
    Wait(Wait),
}

/// The run of a chain on one channel.
struct JobInfo {
    /// The chain's entries, in hardware form, with their status words.
    entries: Vec<JobEntry>,
    /// The notifications of each entry, in the order of its status words.
    notifies: Vec<Vec<Notify>>,
    segments: Vec<Segment>,
    /// Index of the running segment.
    current: usize,
    /// Bytes of each entry not yet landed.
    remaining: Vec<u64>,
    /// Status words (by index) that landed before their entry's last data: a GPU destination is
    /// farther than the host memory holding the word; they are delivered with the last data.
    held: Vec<Vec<usize>>,
    done_at: Option<SimTime>,
}

/// Part of a chain that runs as one piece of hardware work.
#[derive(Debug, Clone, Copy)]
enum Segment {
    /// Entries `first..end`, all with local sources: one job of the channel.
    Local { first: usize, end: usize },
    /// One entry read from `responder` by proxy write.
    Proxy { entry: usize, responder: u32 },
}

/// What a hardware job of the cluster stands for.
#[derive(Debug, Clone, Copy)]
enum HwJob {
    /// A local segment of the run on `owner` (node, channel), starting at entry `first`.
    Local { owner: (u32, u8), first: usize },
    /// A proxy write.
    Proxy(ProxyRun),
}

/// A proxy write a responder's driver runs for a requester's channel.
#[derive(Debug, Clone, Copy)]
struct ProxyRun {
    requester: u32,
    channel: u8,
    entry: usize,
}

struct PioOp {
    dst: u64,
    bytes: Vec<u8>,
}

/// Per-node allocation cursors (host memory and each GPU).
struct Allocator {
    host_next: u64,
    gpu_next: Vec<u64>,
}

/// The simulated system.
pub struct World {
    platform: Platform,
    cluster: Cluster,
    engines: Vec<Engine>,
    memory: Memory,
    alloc: Vec<Allocator>,
    jobs: BTreeMap<(u32, u8), JobInfo>,
    pio: BTreeMap<u64, PioOp>,
    next_pio: u64,
    /// PIO stores that carry proxy requests, by PIO id.
    proxy_requests: BTreeMap<u64, ProxyRun>,
    /// Proxy writes waiting for (front: running on) each responder's proxy channel.
    proxy_queue: BTreeMap<u32, VecDeque<ProxyRun>>,
    /// Hardware jobs by id.
    hw_jobs: BTreeMap<u64, HwJob>,
    /// Responders whose proxy write waits for their own program to free the proxy channel.
    proxy_waiting: Vec<(u32, SimTime)>,
    now: SimTime,
    pub(crate) trace: Option<Trace>,
}

impl World {
    /// A world of `nodes` nodes of `platform` (rank i runs on node i).
    pub fn new(platform: &Platform, nodes: u32, trace: bool) -> Result<World, FabricError> {
        if nodes == 0 || nodes > platform.nodes {
            return Err(FabricError::Unsupported(format!(
                "{nodes} ranks asked; platform {} has {} nodes (one rank per node)",
                platform.name, platform.nodes
            )));
        }
        let engines = (0..nodes).map(|n| Engine::new(n as u16, nodes as u16)).collect::<Result<Vec<_>, _>>()?;
        let mut cluster = Cluster::new(platform);
        let trace = trace.then(|| {
            let mut t = Trace::new();
            cluster.register_tracks(&mut t);
            t
        });
        let channels = platform.peach2.dma_channels as u64;
        let gpus = platform.gpu.sockets.len();
        Ok(World {
            platform: platform.clone(),
            cluster,
            engines,
            memory: Memory::default(),
            alloc: (0..nodes)
                .map(|_| Allocator { host_next: NOTIFY_AREA + channels * TABLE_BYTES, gpu_next: vec![0; gpus] })
                .collect(),
            jobs: BTreeMap::new(),
            pio: BTreeMap::new(),
            next_pio: 0,
            proxy_requests: BTreeMap::new(),
            proxy_queue: BTreeMap::new(),
            proxy_waiting: Vec::new(),
            hw_jobs: BTreeMap::new(),
            now: SimTime::ZERO,
            trace,
        })
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Hardware events delivered so far.
    pub fn events(&self) -> u64 {
        self.cluster.events()
    }

    fn map(&self) -> &tca_model::router::AddressMap {
        self.cluster.address_map()
    }

    /// Global address of `offset` bytes into `handle` (a live handle of any node), checking
    /// `len` bytes fit.
    fn addr_in(&self, handle: &Handle, offset: u64, len: u64) -> Result<u64, FabricError> {
        match self.engines.get(handle.node as usize) {
            Some(e) if e.is_live(handle) => {}
            _ => return Err(TcaError::InvalidHandle.into()),
        }
        match offset.checked_add(len) {
            Some(end) if end <= handle.size => Ok(handle.addr + offset),
            _ => Err(TcaError::OutOfBounds.into()),
        }
    }

    /// As [`World::addr_in`] for a buffer of `node` itself (what a CPU reads and writes directly).
    fn own_addr(&self, node: u32, handle: &Handle, offset: u64, len: u64) -> Result<u64, FabricError> {
        if handle.node as u32 != node {
            return Err(TcaError::InvalidHandle.into());
        }
        self.addr_in(handle, offset, len)
    }

    /// Carries out or starts request `op` of the rank on `node`.
    pub fn submit(&mut self, node: u32, op: Op) -> Submitted {
        match self.submit_inner(node, op) {
            Ok(s) => s,
            Err(e) => Submitted::Done(Err(e)),
        }
    }

    fn submit_inner(&mut self, node: u32, op: Op) -> Result<Submitted, FabricError> {
        let done = |r: Reply| Ok(Submitted::Done(Ok(r)));
        match op {
            Op::Malloc { size, mem, gpu } => done(Reply::Handle(self.malloc(node, size, mem, gpu)?)),
            Op::Free { handle } => {
                if handle.node as u32 != node {
                    return Err(TcaError::InvalidHandle.into());
                }
                self.engines[node as usize].destroy_handle(&handle)?;
                self.memory.remove(handle.addr);
                done(Reply::Unit)
            }
            Op::Write { handle, offset, bytes } => {
                let addr = self.own_addr(node, &handle, offset, bytes.len() as u64)?;
                self.memory.write(addr, &bytes);
                done(Reply::Unit)
            }
            Op::Read { handle, offset, len } => {
                let addr = self.own_addr(node, &handle, offset, len)?;
                done(Reply::Bytes(self.memory.read(addr, len).ok_or(TcaError::InvalidHandle)?))
            }
            Op::SetChain { channel, desc } => {
                self.engines[node as usize].set_chain(channel, &desc)?;
                done(Reply::Unit)
            }
            Op::StartDma { channel } => {
                self.start_dma(node, channel)?;
                done(Reply::Unit)
            }
            Op::WaitDmac { channel } => {
                self.engines[node as usize].channel_state(channel)?;
                if !self.jobs.contains_key(&(node, channel)) {
                    return Err(TcaError::ChannelNotSet.into());
                }
                Ok(Submitted::Wait(Wait::Dmac { node, channel, since: self.now }))
            }
            Op::WaitRecv { handle, slot, tag } => {
                // Validate now so a bad slot is an error, not a deadlock.
                match self.engines[node as usize].wait_dma_recv(&handle, slot, tag)? {
                    WaitStatus::Ready => done(Reply::Unit),
                    WaitStatus::Pending => Ok(Submitted::Wait(Wait::Recv { node, handle, slot, tag })),
                }
            }
            Op::SendPio { dst, offset, bytes } => {
                if bytes.is_empty() {
                    return Err(TcaError::ZeroSize.into());
                }
                let addr = self.addr_in(&dst, offset, bytes.len() as u64)?;
                let id = self.next_pio;
                self.next_pio += 1;
                self.cluster
                    .pio(self.now, node, addr, bytes.len() as u64, id)
                    .map_err(|e| FabricError::Unsupported(e.to_string()))?;
                self.pio.insert(id, PioOp { dst: addr, bytes });
                done(Reply::Unit)
            }
            Op::WaitValue { handle, offset, bytes } => {
                let addr = self.own_addr(node, &handle, offset, bytes.len() as u64)?;
                let w = Wait::Value { addr, bytes };
                Ok(match self.ready_at(&w) {
                    Some(_) => Submitted::Done(Ok(Reply::Unit)),
                    None => Submitted::Wait(w),
                })
            }
            Op::Compute { duration } => Ok(Submitted::Wait(Wait::Until(self.now + duration))),
            Op::Barrier | Op::Allgather { .. } => Ok(Submitted::Wait(Wait::Collective)),
            Op::Wtime => done(Reply::Time(self.now)),
        }
    }

    /// `tcaMalloc` + `tcaCreateHandle`: a zeroed buffer on `node` and its handle.
    fn malloc(&mut self, node: u32, size: u64, mem: MemoryType, gpu: u32) -> Result<Handle, FabricError> {
        if size == 0 {
            return Err(TcaError::ZeroSize.into());
        }
        let map = self.map().clone();
        let a = &mut self.alloc[node as usize];
        let (target, cursor, limit) = match mem {
            MemoryType::Cpu => (Target::Host(a.host_next), &mut a.host_next, map.host_bytes),
            MemoryType::Gpu => {
                let next = a.gpu_next.get_mut(gpu as usize).ok_or(TcaError::InvalidHandle)?;
                (Target::Gpu(gpu, *next), next, map.gpu_bytes)
            }
        };
        let rounded = size.next_multiple_of(ALIGN);
        if *cursor + rounded > limit {
            return Err(TcaError::OutOfMemory.into());
        }
        *cursor += rounded;
        let addr = map.global(node, target);
        let handle = self.engines[node as usize].create_handle(addr, size, mem)?;
        self.memory.add(addr, size);
        Ok(handle)
    }

    /// `tcaStartDMADesc`: the engines' semantics at once, then the hardware in virtual time.
    fn start_dma(&mut self, node: u32, channel: u8) -> Result<(), FabricError> {
        if self.jobs.get(&(node, channel)).is_some_and(|j| j.done_at.is_none()) {
            return Err(TcaError::ChannelBusy.into());
        }
        let desc = self.engines[node as usize].chain(channel)?.ok_or(TcaError::ChannelNotSet)?.clone();
        self.engines[node as usize].handle_start(channel)?;
        let notifies = self.run_semantics(node, &desc)?;
        let map = self.cluster.address_map().clone();
        let entries: Vec<JobEntry> = desc
            .entries()
            .iter()
            .zip(&notifies)
            .map(|(e, ns)| JobEntry {
                descriptor: e.descriptor,
                notify: ns.iter().map(|n| notify_word(&map, n)).collect(),
                internal: e.flags.contains(DmaFlags::USE_INTERNAL),
            })
            .collect();
        if entries.len() as u64 * self.platform.peach2.descriptor_bytes > TABLE_BYTES {
            return Err(TcaError::TooLarge.into());
        }
        let mut segments = Vec::new();
        for (i, e) in desc.entries().iter().enumerate() {
            let src = e.src_node() as u32;
            match segments.last_mut() {
                _ if src != node => segments.push(Segment::Proxy { entry: i, responder: src }),
                Some(Segment::Local { end, .. }) if *end == i => *end = i + 1,
                _ => segments.push(Segment::Local { first: i, end: i + 1 }),
            }
        }
        let info = JobInfo {
            remaining: desc.entries().iter().map(|e| e.bytes()).collect(),
            held: vec![Vec::new(); entries.len()],
            entries,
            notifies,
            segments,
            current: 0,
            done_at: None,
        };
        self.jobs.insert((node, channel), info);
        self.start_segment(node, channel, hw_mode(desc.mode()))
    }

    /// Runs the chain's semantics on the engines at once (every write acknowledged as issued,
    /// proxy requests answered by their responders) and returns each entry's notifications.
    fn run_semantics(&mut self, node: u32, desc: &Desc) -> Result<Vec<Vec<Notify>>, FabricError> {
        let expected: Vec<usize> = desc
            .entries()
            .iter()
            .map(|e| e.flags.contains(DmaFlags::NOTIFY) as usize + e.flags.contains(DmaFlags::NOTIFY_SELF) as usize)
            .collect();
        let mut notifies: Vec<Vec<Notify>> = vec![Vec::new(); expected.len()];
        let mut next_entry = 0;
        let mut busy = VecDeque::from([node]);
        while let Some(at) = busy.pop_front() {
            while let Some(action) = self.engines[at as usize].poll_action() {
                match action {
                    Action::Write(w) => self.engines[at as usize].handle_write_done(w.token)?,
                    Action::Notify(n) if at == node => {
                        while next_entry < expected.len() && notifies[next_entry].len() == expected[next_entry] {
                            next_entry += 1;
                        }
                        notifies.get_mut(next_entry).ok_or(TcaError::UnexpectedCompletion)?.push(n);
                    }
                    Action::RegisterProxy { node: to, request } => {
                        self.engines[to as usize].handle_proxy_request(request)?;
                    }
                    Action::Interrupt { node: to } => {
                        self.engines[to as usize].handle_interrupt();
                        busy.push_back(to as u32);
                    }
                    Action::ProxyDone { node: to, done } => {
                        self.engines[to as usize].handle_proxy_done(done)?;
                        busy.push_back(to as u32);
                    }
                    Action::ChannelFailed { error, .. } => return Err(error.into()),
                    Action::Notify(_) | Action::DescriptorFetch { .. } | Action::ChannelDone { .. } => {}
                }
            }
        }
        Ok(notifies)
    }

    /// Starts the current segment of the run on (`node`, `channel`) now.
    fn start_segment(&mut self, node: u32, channel: u8, mode: tca_model::cluster::DmaMode) -> Result<(), FabricError> {
        let job = &self.jobs[&(node, channel)];
        match job.segments[job.current] {
            Segment::Local { first, end } => {
                let id = self.hw_jobs.len() as u64;
                let dma = DmaJob {
                    mode,
                    entries: job.entries[first..end].to_vec(),
                    table_offset: NOTIFY_AREA + channel as u64 * TABLE_BYTES,
                    id,
                };
                self.hw_jobs.insert(id, HwJob::Local { owner: (node, channel), first });
                self.cluster.kick(self.now, node, channel, dma).map_err(|e| FabricError::Unsupported(e.to_string()))
            }
            Segment::Proxy { entry, responder } => {
                // The request (the descriptor, 32 B) is stored into the responder's request area.
                let id = self.next_pio;
                self.next_pio += 1;
                let area = self.cluster.address_map().node_base(responder) + PROXY_AREA;
                self.cluster
                    .pio(self.now, node, area, self.platform.peach2.descriptor_bytes, id)
                    .map_err(|e| FabricError::Unsupported(e.to_string()))?;
                self.proxy_requests.insert(id, ProxyRun { requester: node, channel, entry });
                Ok(())
            }
        }
    }

    /// The responder's driver runs a proxy write on its proxy channel at `at` (queued behind
    /// earlier ones).
    fn kick_proxy(&mut self, at: SimTime, responder: u32, run: ProxyRun) {
        let queue = self.proxy_queue.entry(responder).or_default();
        queue.push_back(run);
        if queue.len() == 1 {
            self.kick_next_proxy(at, responder);
        }
    }

    fn kick_next_proxy(&mut self, at: SimTime, responder: u32) {
        let Some(&run) = self.proxy_queue.get(&responder).and_then(|q| q.front()) else { return };
        let job = &self.jobs[&(run.requester, run.channel)];
        let mut entry = job.entries[run.entry].clone();
        // First the completion word back to the requester, then the entry's own notifications.
        let done_word = self.cluster.address_map().node_base(run.requester) + PROXY_DONE_AREA + 4 * run.channel as u64;
        entry.notify.insert(0, done_word);
        let channel = self.proxy_channel();
        let id = self.hw_jobs.len() as u64;
        self.hw_jobs.insert(id, HwJob::Proxy(run));
        let dma =
            DmaJob { mode: tca_model::cluster::DmaMode::Register, entries: vec![entry], table_offset: NOTIFY_AREA, id };
        if let Err(e) = self.cluster.kick(at, responder, channel, dma) {
            // The responder's program holds its last channel: the proxy write waits for it.
            debug_assert!(matches!(e, tca_model::cluster::ClusterError::ChannelBusy { .. }), "{e}");
            self.proxy_waiting.push((responder, at));
        }
    }

    /// The channel a node's driver uses for proxy writes: the last one.
    fn proxy_channel(&self) -> u8 {
        (self.platform.peach2.dma_channels - 1) as u8
    }

    /// The running segment of (`node`, `channel`) finished at `at`: start the next or finish.
    fn segment_done(&mut self, at: SimTime, node: u32, channel: u8) {
        let job = self.jobs.get_mut(&(node, channel)).expect("a running job");
        job.current += 1;
        if job.current < job.segments.len() {
            let mode = self.engines[node as usize]
                .chain(channel)
                .ok()
                .flatten()
                .map_or(tca_model::cluster::DmaMode::Chaining, |d| hw_mode(d.mode()));
            let _ = self.start_segment(node, channel, mode);
        } else {
            job.done_at = Some(at);
        }
        // A proxy write waiting for this channel can go now.
        if let Some(i) = self.proxy_waiting.iter().position(|(n, _)| *n == node) {
            if channel == self.proxy_channel() {
                let (responder, _) = self.proxy_waiting.remove(i);
                self.kick_next_proxy(at, responder);
            }
        }
    }

    /// When `w` is satisfied, if that is known now (for a notification it is consumed).
    pub fn ready_at(&mut self, w: &Wait) -> Option<SimTime> {
        match w {
            Wait::Until(t) => Some(*t),
            Wait::Dmac { node, channel, since } => {
                let done = self.jobs.get(&(*node, *channel))?.done_at?;
                Some(self.cluster.poll_register(*since, done))
            }
            Wait::Recv { node, handle, slot, tag } => {
                match self.engines[*node as usize].wait_dma_recv(handle, *slot, *tag) {
                    Ok(WaitStatus::Ready) => Some(self.now),
                    _ => None,
                }
            }
            Wait::Value { addr, bytes } => {
                (self.memory.read(*addr, bytes.len() as u64).as_deref() == Some(bytes)).then_some(self.now)
            }
            Wait::Collective => None,
        }
    }

    /// Time of the next hardware event.
    pub fn next_event(&self) -> Option<SimTime> {
        self.cluster.next_time()
    }

    /// Jumps the clock to `t` (no hardware event before it).
    pub fn advance_to(&mut self, t: SimTime) {
        debug_assert!(t >= self.now);
        self.now = t;
    }

    /// The run and entry an output of hardware job `job`, entry `entry`, belongs to.
    fn owner_of(&self, job: u64, entry: usize) -> ((u32, u8), usize) {
        match self.hw_jobs[&job] {
            HwJob::Local { owner, first } => (owner, first + entry),
            HwJob::Proxy(run) => ((run.requester, run.channel), run.entry),
        }
    }

    /// Status word `index` of an entry landed: delivered now, or with the entry's last data.
    fn word_landed(&mut self, owner: (u32, u8), entry: usize, index: usize) {
        let job = self.jobs.get_mut(&owner).expect("a kicked job");
        if job.remaining[entry] == 0 {
            self.notify(owner, entry, index);
        } else {
            job.held[entry].push(index);
        }
    }

    /// Delivers notification `index` of an entry to its destination engine.
    fn notify(&mut self, owner: (u32, u8), entry: usize, index: usize) {
        let n = self.jobs[&owner].notifies[entry][index];
        let _ = self.engines[n.dst_node as usize].handle_notify_arrived(n.src_node, n.slot, n.tag);
    }

    /// Runs the next hardware event and applies what became visible.
    pub fn step(&mut self) {
        let Some(t) = self.cluster.step(self.trace.as_mut()) else {
            return;
        };
        self.now = t;
        for (at, out) in self.cluster.take_outputs() {
            match out {
                Output::DmaLanded { job, entry, src, dst, len, .. } => {
                    self.memory.copy(src, dst, len);
                    let (owner, entry) = self.owner_of(job, entry);
                    let run = self.jobs.get_mut(&owner).expect("a kicked job");
                    run.remaining[entry] -= len;
                    if run.remaining[entry] == 0 {
                        for index in std::mem::take(&mut run.held[entry]) {
                            self.notify(owner, entry, index);
                        }
                    }
                }
                Output::NotifyLanded { job, entry, index, .. } => match self.hw_jobs[&job] {
                    // The first word of a proxy write is its completion back to the requester.
                    HwJob::Proxy(run) if index == 0 => self.segment_done(at, run.requester, run.channel),
                    HwJob::Proxy(run) => self.word_landed((run.requester, run.channel), run.entry, index - 1),
                    HwJob::Local { owner, first } => self.word_landed(owner, first + entry, index),
                },
                Output::PioLanded { id, offset, len, .. } => {
                    if let Some(run) = self.proxy_requests.remove(&id) {
                        let job = &self.jobs[&(run.requester, run.channel)];
                        let Segment::Proxy { responder, .. } = job.segments[job.current] else { unreachable!() };
                        self.kick_proxy(at + self.platform.host.interrupt_latency, responder, run);
                        continue;
                    }
                    let op = &self.pio[&id];
                    let bytes = op.bytes[offset as usize..(offset + len) as usize].to_vec();
                    self.memory.write(op.dst + offset, &bytes);
                    if offset + len == op.bytes.len() as u64 {
                        self.pio.remove(&id);
                    }
                }
                Output::ChannelDone { job, node, channel } => match self.hw_jobs[&job] {
                    HwJob::Proxy(_) => {
                        self.proxy_queue.get_mut(&node).expect("running").pop_front();
                        self.kick_next_proxy(at, node);
                    }
                    HwJob::Local { .. } => self.segment_done(at, node, channel),
                },
            }
        }
    }
}

fn hw_mode(m: tca_proto::DmaMode) -> tca_model::cluster::DmaMode {
    match m {
        tca_proto::DmaMode::Chaining => tca_model::cluster::DmaMode::Chaining,
        tca_proto::DmaMode::Register => tca_model::cluster::DmaMode::Register,
    }
}
