//! The simulated TCA system that rank programs act on: one protocol [`Engine`] per node (what
//! happens: handles, chains, notifications, proxy reads), the [`Cluster`] model (when it
//! happens) and [`Memory`] (what the bytes are), joined as `crate::actions` describes.
//!
//! A request of a rank ([`Op`]) is carried out at the current virtual time; one that must wait
//! ([`Wait`]) is answered when the simulation reaches the time its condition holds.

use crate::actions::{table_bytes, Pending, PendingTable, RESERVED};
use crate::copy_time::CopyModel;
use crate::memory::Memory;
use base::{SimTime, Trace};
use tca_model::platform::Platform;
use tca_model::router::Target;
use tca_model::{Cluster, Output};
use tca_proto::fabric::{CopyKind, PointerInfo};
use tca_proto::heap::Heap;
use tca_proto::{ChannelState, Desc, Engine, FabricError, Handle, MemoryType, TcaError, WaitStatus, CHANNELS};

/// Allocations are aligned to this (a page).
const ALIGN: u64 = 4096;

/// A request a rank makes (see [`crate::SimRank`] for the call each one carries out).
#[derive(Debug, Clone)]
#[allow(missing_docs)]
pub enum Op {
    Malloc {
        size: u64,
        mem: MemoryType,
        gpu: u32,
    },
    Free {
        addr: u64,
    },
    CreateHandle {
        addr: u64,
        size: u64,
        mem: MemoryType,
    },
    ModelAddr {
        ptr: u64,
    },
    PointerInfo {
        ptr: u64,
    },
    Memcpy {
        dst: u64,
        src: u64,
        len: u64,
        kind: CopyKind,
    },
    GpuSockets,
    DestroyHandle {
        handle: Handle,
    },
    /// `tcaSetPIORegion`: the handle is live, of a node of the job.
    CheckLive {
        handle: Handle,
    },
    Write {
        handle: Handle,
        offset: u64,
        bytes: Vec<u8>,
    },
    Read {
        handle: Handle,
        offset: u64,
        len: u64,
    },
    DescSet {
        channel: u8,
        desc: Box<Desc>,
    },
    StartDma {
        channel: u8,
    },
    WaitDmac {
        channel: u8,
    },
    WaitRecv {
        handle: Handle,
        slot: u32,
        tag: u32,
    },
    SendPio {
        dst: Handle,
        offset: u64,
        bytes: Vec<u8>,
    },
    /// Wait until the bytes at `offset` of this rank's `handle` equal `bytes`; `peer`, when
    /// given, is the rank expected to store them (the wait fails once it has finalized and
    /// nothing it sent is still on the way).
    WaitValue {
        handle: Handle,
        offset: u64,
        bytes: Vec<u8>,
        peer: Option<u16>,
    },
    Compute {
        duration: SimTime,
    },
    Barrier,
    Allgather {
        bytes: Vec<u8>,
    },
    Wtime,
}

impl Op {
    /// How a waiting rank is described in a deadlock report.
    pub fn describe(&self) -> String {
        match self {
            Op::WaitDmac { channel } => format!("tcaWaitDMAC(channel {channel})"),
            Op::DescSet { channel, .. } => format!("tcaDescSet(channel {channel}) until the channel's run is over"),
            Op::StartDma { channel } => format!("tcaStartDMADesc(channel {channel}) until the channel's run is over"),
            Op::WaitRecv { handle, slot, tag } => {
                // The tag as the C program wrote it (an int).
                let tag = *tag as i32;
                format!("tcaWaitDMARecvDesc(handle of node {}, slot {slot}, tag {tag})", handle.node)
            }
            Op::WaitValue { handle, offset, bytes, .. } => {
                format!("data at offset {offset} of a node-{} buffer to become {bytes:02x?}", handle.node)
            }
            Op::Barrier => "tcaBarrier".into(),
            Op::Allgather { .. } => "tcaAllgather".into(),
            other => format!("{other:?}"),
        }
    }
}

/// What a finished request returns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Reply {
    Unit,
    Addr(u64),
    Handle(Handle),
    Bytes(Vec<u8>),
    Gathered(Vec<Vec<u8>>),
    Time(SimTime),
    Pointer(PointerInfo),
    Sockets(Vec<u32>),
}

/// A request that must wait for the simulation.
#[derive(Debug, Clone)]
pub(crate) enum Wait {
    /// Ready at a known time.
    Until(SimTime),
    /// The channel's run is over and the polling CPU has seen its status register say so.
    Dmac {
        node: u16,
        channel: u8,
        since: SimTime,
    },
    Recv {
        node: u16,
        handle: Handle,
        slot: u32,
        tag: u32,
    },
    Value {
        addr: u64,
        bytes: Vec<u8>,
        peer: Option<u16>,
    },
    Collective,
    /// `tcaDescSet` or `tcaStartDMADesc` on a running channel: carried out once the run is
    /// over and the polling CPU has seen its status register say so (as [`Wait::Dmac`]).
    ChannelFree {
        node: u16,
        channel: u8,
        then: AfterRun,
        since: SimTime,
    },
}

/// What a rank does once its channel's run is over ([`Wait::ChannelFree`]).
#[derive(Debug, Clone)]
pub(crate) enum AfterRun {
    SetChain(Box<Desc>),
    Start,
}

/// Outcome of submitting a request.
pub(crate) enum Submitted {
    Done(Result<Reply, FabricError>),
    Wait(Wait),
}

/// What a channel's status register says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Idle,
    Running,
    Done(SimTime),
}

/// The free and used memory of one node: its host memory after the reserved part, and each
/// GPU's memory.
struct Allocator {
    host: Heap,
    gpus: Vec<Heap>,
}

impl Allocator {
    /// The heap of `target`'s memory.
    fn heap(&mut self, target: Target) -> Option<&mut Heap> {
        match target {
            Target::Host(_) => Some(&mut self.host),
            Target::Gpu(g, _) => self.gpus.get_mut(g as usize),
        }
    }
}

/// The simulated sub-cluster (see the module documentation).
pub(crate) struct World {
    pub(crate) platform: Platform,
    pub(crate) cluster: Cluster,
    pub(crate) engines: Vec<Engine>,
    pub(crate) memory: Memory,
    alloc: Vec<Allocator>,
    pub(crate) pending: PendingTable,
    pub(crate) markers: Vec<[Marker; CHANNELS]>,
    /// Bytes of each channel's descriptor table in host memory.
    pub(crate) table_bytes: u64,
    /// Outputs taken from the cluster and not yet applied (a buffer reused across steps).
    outputs: Vec<(SimTime, Output)>,
    pub(crate) now: SimTime,
    /// Counts the changes a wait can see (requests, hardware outputs applied).
    pub(crate) changes: u64,
    /// Per node, the changes of its memory (data landing, requests) and of its engine and
    /// channel status (hardware outputs for it, requests), each also counted in `changes`: a
    /// wait of a node whose condition did not hold needs no new look while the counter its
    /// condition reads stays the same (a wait for a value reads memory, the others control).
    pub(crate) memory_changes: Vec<u64>,
    pub(crate) control_changes: Vec<u64>,
    pub(crate) trace: Option<Trace>,
    /// The platform's `cudaMemcpy` parameters, resolved once (or why they cannot be: a
    /// platform without CUDA baselines still runs TCA programs).
    pub(crate) copy_model: Result<CopyModel, String>,
}

impl World {
    /// A world of `nodes` nodes of `platform` (rank i runs on node i), recording hardware spans
    /// into `trace` if given.
    pub(crate) fn new(platform: &Platform, nodes: u32, trace: Option<Trace>) -> Result<World, FabricError> {
        if nodes == 0 || nodes > platform.nodes {
            return Err(FabricError::with_detail(
                TcaError::InvalidNode,
                format!(
                    "{nodes} ranks asked; platform {} has {} nodes (one rank per node)",
                    platform.name, platform.nodes
                ),
            ));
        }
        let engines = (0..nodes).map(|n| Engine::new(n as u16, nodes as u16)).collect::<Result<Vec<_>, _>>()?;
        let mut cluster = Cluster::new(platform);
        let trace = trace.map(|mut t| {
            cluster.register_tracks(&mut t);
            t
        });
        let channels = u64::from(platform.peach2.dma_channels);
        let table_bytes = table_bytes(cluster.address_map().host_bytes, channels);
        let gpus = platform.gpu.sockets.len();
        let (host_bytes, gpu_bytes) = (cluster.address_map().host_bytes, cluster.address_map().gpu_bytes);
        let host_start = (RESERVED + channels * table_bytes).min(host_bytes);
        let map = cluster.address_map();
        let memory = Memory::with_window(map.base, map.node_bytes * u64::from(map.max_nodes));
        Ok(World {
            platform: platform.clone(),
            cluster,
            engines,
            memory,
            alloc: (0..nodes)
                .map(|_| Allocator {
                    host: Heap::new(host_start, host_bytes - host_start, ALIGN),
                    gpus: (0..gpus).map(|_| Heap::new(0, gpu_bytes, ALIGN)).collect(),
                })
                .collect(),
            pending: PendingTable::default(),
            markers: vec![[Marker::Idle; CHANNELS]; nodes as usize],
            table_bytes,
            outputs: Vec::new(),
            now: SimTime::ZERO,
            changes: 0,
            memory_changes: vec![0; nodes as usize],
            control_changes: vec![0; nodes as usize],
            trace,
            copy_model: CopyModel::new(platform),
        })
    }

    /// Hardware events delivered so far.
    pub(crate) fn events(&self) -> u64 {
        self.cluster.events()
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

    /// Every handle of another node in the chain of `node`'s `channel` is live in its owner's
    /// table: a DMA into or from a buffer its owner destroyed the handle of, or freed, fails at
    /// the start with [`TcaError::InvalidHandle`], as on the shm fabric. (The engine checks the
    /// handles of its own node, and everything else of the start.)
    fn check_peer_handles(&self, node: u16, channel: u8) -> Result<(), FabricError> {
        let Some(chain) = self.engines[node as usize].chain(channel)? else {
            return Ok(());
        };
        self.check_live(chain.entries().iter().flat_map(|e| [&e.dst, &e.src]).filter(|h| h.node != node))
    }

    /// Every handle is live in its owner's table ([`TcaError::InvalidHandle`] when its owner
    /// destroyed it or freed its buffer, or for a forged copy; [`TcaError::InvalidNode`] for a
    /// node outside the job).
    fn check_live<'a>(&self, mut handles: impl Iterator<Item = &'a Handle>) -> Result<(), FabricError> {
        handles.try_for_each(|h| match self.engines.get(h.node as usize) {
            None => Err(TcaError::InvalidNode.into()),
            Some(owner) if !owner.is_live(h) => Err(FabricError::with_detail(
                TcaError::InvalidHandle,
                "a handle of the chain was destroyed or its buffer freed by its owner",
            )),
            Some(_) => Ok(()),
        })
    }

    /// As [`World::addr_in`] for a buffer of `node` itself (what a CPU reads and writes directly).
    fn own_addr(&self, node: u16, handle: &Handle, offset: u64, len: u64) -> Result<u64, FabricError> {
        if handle.node != node {
            return Err(TcaError::InvalidHandle.into());
        }
        self.addr_in(handle, offset, len)
    }

    /// Carries out or starts request `op` of the rank on `node`.
    pub(crate) fn submit(&mut self, node: u16, op: Op) -> Submitted {
        // A request may change what any wait sees.
        self.changes += 1;
        for c in self.memory_changes.iter_mut().chain(self.control_changes.iter_mut()) {
            *c += 1;
        }
        match self.submit_inner(node, op) {
            Ok(s) => s,
            Err(e) => Submitted::Done(Err(e)),
        }
    }

    fn submit_inner(&mut self, node: u16, op: Op) -> Result<Submitted, FabricError> {
        let done = |r: Reply| Ok(Submitted::Done(Ok(r)));
        let engine = node as usize;
        match op {
            Op::Malloc { size, mem, gpu } => done(Reply::Addr(self.malloc(node, size, mem, gpu)?)),
            Op::Free { addr: ptr } => {
                self.free(node, ptr)?;
                done(Reply::Unit)
            }
            Op::CreateHandle { addr: ptr, size, mem } => {
                if size == 0 {
                    return Err(TcaError::ZeroSize.into());
                }
                let addr = self.own_global(node, ptr)?;
                if !self.memory.contains(addr, size.max(1)) {
                    let detail = format!("{size} bytes at {ptr:#x} leave the buffer");
                    return Err(FabricError::with_detail(TcaError::InvalidHandle, detail));
                }
                done(Reply::Handle(self.engines[engine].create_handle(addr, size, mem)?))
            }
            Op::ModelAddr { ptr } => done(Reply::Addr(self.own_global(node, ptr)?)),
            Op::PointerInfo { ptr } => done(Reply::Pointer(self.pointer_info(node, ptr)?)),
            Op::Memcpy { dst, src, len, kind } => {
                let took = self.memcpy(node, dst, src, len, kind)?;
                let until = self.now.as_ps().checked_add(took.as_ps()).map(SimTime::from_ps).ok_or_else(|| {
                    FabricError::with_detail(TcaError::TooLarge, "the copy ends past the end of simulated time")
                })?;
                Ok(Submitted::Wait(Wait::Until(until)))
            }
            Op::GpuSockets => done(Reply::Sockets(self.platform.gpu.sockets.clone())),
            Op::DestroyHandle { handle } => {
                self.engines[engine].destroy_handle(&handle)?;
                done(Reply::Unit)
            }
            Op::CheckLive { handle } => {
                if usize::from(handle.node) >= self.engines.len() {
                    return Err(TcaError::InvalidNode.into());
                }
                self.addr_in(&handle, 0, 0)?;
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
            Op::DescSet { channel, desc } => {
                if desc.len() as u64 * self.platform.peach2.descriptor_bytes > self.table_bytes {
                    return Err(TcaError::TooLarge.into());
                }
                desc.check_runnable()?;
                // Checked at once, as on the shm fabric (and again at every start).
                self.check_live(desc.entries().iter().flat_map(|e| [&e.dst, &e.src]))?;
                // A program may set a new chain while the channel's previous run is in flight:
                // the library waits for the run, as the published API does.
                if self.engines[engine].channel_state(channel)? == ChannelState::Running {
                    let then = AfterRun::SetChain(desc);
                    return Ok(Submitted::Wait(Wait::ChannelFree { node, channel, then, since: self.now }));
                }
                self.engines[engine].set_chain(channel, &desc)?;
                done(Reply::Unit)
            }
            Op::StartDma { channel } => {
                // A start while the channel's previous run is in flight (no tcaWaitDMAC between
                // them) waits for that run, as on the shm fabric: until its status register
                // reads done, which a run's last posted write comes before.
                let running = self.engines[engine].channel_state(channel)? == ChannelState::Running;
                if running || self.markers[engine][channel as usize] == Marker::Running {
                    let then = AfterRun::Start;
                    return Ok(Submitted::Wait(Wait::ChannelFree { node, channel, then, since: self.now }));
                }
                self.start(node, channel)?;
                done(Reply::Unit)
            }
            Op::WaitDmac { channel } => {
                self.engines[engine].channel_state(channel)?;
                Ok(Submitted::Wait(Wait::Dmac { node, channel, since: self.now }))
            }
            Op::WaitRecv { handle, slot, tag } => {
                // Validate now so a bad slot is an error, not a deadlock.
                match self.engines[engine].wait_dma_recv(&handle, slot, tag)? {
                    WaitStatus::Ready => done(Reply::Unit),
                    WaitStatus::Pending => Ok(Submitted::Wait(Wait::Recv { node, handle, slot, tag })),
                }
            }
            Op::SendPio { dst, offset, bytes } => {
                // As on the shm fabric: a multiple of 4 bytes (tca-api.h), and no store at
                // all for none.
                if !bytes.len().is_multiple_of(4) {
                    return Err(TcaError::SizeNotMultipleOf4.into());
                }
                let addr = self.addr_in(&dst, offset, bytes.len() as u64)?;
                if bytes.is_empty() {
                    return done(Reply::Unit);
                }
                let len = bytes.len() as u64;
                let id = self.pending.insert(Pending::Pio { from: node, dst: addr, bytes });
                self.pio(u32::from(node), addr, len, id)?;
                done(Reply::Unit)
            }
            Op::WaitValue { handle, offset, bytes, peer } => {
                handle.check_word_wait(offset, bytes.len() as u64)?;
                let addr = self.own_addr(node, &handle, offset, bytes.len() as u64)?;
                let w = Wait::Value { addr, bytes, peer };
                Ok(match self.ready_at(&w) {
                    Some(Ok(_)) => Submitted::Done(Ok(Reply::Unit)),
                    _ => Submitted::Wait(w),
                })
            }
            Op::Compute { duration } => {
                let until = self.now.as_ps().checked_add(duration.as_ps()).map(SimTime::from_ps).ok_or_else(|| {
                    FabricError::with_detail(TcaError::TooLarge, "the computation ends past the end of simulated time")
                })?;
                Ok(Submitted::Wait(Wait::Until(until)))
            }
            Op::Barrier | Op::Allgather { .. } => Ok(Submitted::Wait(Wait::Collective)),
            Op::Wtime => done(Reply::Time(self.now)),
        }
    }

    /// `tcaMalloc`: a zeroed buffer on `node`; its pointer in this process.
    fn malloc(&mut self, node: u16, size: u64, mem: MemoryType, gpu: u32) -> Result<u64, FabricError> {
        if size == 0 {
            return Err(TcaError::ZeroSize.into());
        }
        let a = &mut self.alloc[node as usize];
        let heap = match mem {
            MemoryType::Cpu => &mut a.host,
            MemoryType::Gpu => {
                let gpus = a.gpus.len();
                a.gpus.get_mut(gpu as usize).ok_or_else(|| {
                    FabricError::with_detail(TcaError::InvalidNode, format!("GPU {gpu} of a node with {gpus}"))
                })?
            }
        };
        let off = heap.alloc(size).ok_or(TcaError::OutOfMemory)?;
        let target = match mem {
            MemoryType::Cpu => Target::Host(off),
            MemoryType::Gpu => Target::Gpu(gpu, off),
        };
        let addr = self.cluster.address_map().global(u32::from(node), target);
        self.memory.add(addr, size).ok_or_else(|| {
            self.alloc[node as usize].heap(target).map(|h| h.free(off));
            FabricError::with_detail(TcaError::OutOfMemory, format!("this process cannot back {size} bytes"))
        })
    }

    /// `tcaFree`, `cudaFree`: the buffer at `ptr` of `node` goes back to its heap, and the
    /// handles inside it stop working before its memory can be handed out again (as on the shm
    /// fabric).
    fn free(&mut self, node: u16, ptr: u64) -> Result<(), FabricError> {
        let addr = self.own_global(node, ptr)?;
        if !self.memory.remove(addr) {
            let detail = format!("{ptr:#x} is inside a buffer, not at its start");
            return Err(FabricError::with_detail(TcaError::InvalidHandle, detail));
        }
        let map = self.cluster.address_map();
        let target = map.target(addr - map.node_base(u32::from(node))).ok_or(TcaError::InvalidHandle)?;
        let off = match target {
            Target::Host(off) | Target::Gpu(_, off) => off,
        };
        let heap = self.alloc[node as usize].heap(target).ok_or(TcaError::InvalidHandle)?;
        let len = heap.block_at(off).ok_or(TcaError::InvalidHandle)?;
        heap.free(off);
        self.engines[node as usize].destroy_handles_in(addr, addr + len);
        Ok(())
    }

    /// When `w` is satisfied, if that is known now (a notification is consumed), or why it
    /// never will be.
    pub(crate) fn ready_at(&mut self, w: &Wait) -> Option<Result<SimTime, FabricError>> {
        match w {
            Wait::Until(t) => Some(Ok(*t)),
            Wait::Dmac { node, channel, since } => match self.engines[*node as usize].wait_dma_channel(*channel) {
                Err(e) => Some(Err(e.into())),
                Ok(WaitStatus::Pending) => None,
                Ok(WaitStatus::Ready) => self.run_seen_over(*node, *channel, *since),
            },
            // A failed run is over too: the new chain replaces it (tcaWaitDMAC reports the
            // failure until the next start).
            Wait::ChannelFree { node, channel, since, .. } => {
                match self.engines[*node as usize].wait_dma_channel(*channel) {
                    Err(_) => Some(Ok(self.now)),
                    Ok(WaitStatus::Pending) => None,
                    Ok(WaitStatus::Ready) => self.run_seen_over(*node, *channel, *since),
                }
            }
            Wait::Recv { node, handle, slot, tag } => {
                match self.engines[*node as usize].wait_dma_recv(handle, *slot, *tag) {
                    Ok(WaitStatus::Ready) => Some(Ok(self.now)),
                    Ok(WaitStatus::Pending) => None,
                    Err(e) => Some(Err(e.into())),
                }
            }
            Wait::Value { addr, bytes, .. } => {
                (self.memory.read(*addr, bytes.len() as u64).as_deref() == Some(bytes)).then_some(Ok(self.now))
            }
            Wait::Collective => None,
        }
    }

    /// When a CPU polling the status register of `channel` since `since` sees its finished
    /// run over; `None` while the hardware has not written the status yet.
    fn run_seen_over(&self, node: u16, channel: u8, since: SimTime) -> Option<Result<SimTime, FabricError>> {
        match self.markers[node as usize][channel as usize] {
            Marker::Idle => Some(Ok(self.now)),
            Marker::Running => None,
            Marker::Done(t) => Some(Ok(self.cluster.poll_register(since, t))),
        }
    }

    /// Whether something of `node`'s is still on the way ([`PendingTable::any_of`]), a remote
    /// read of its held by another node's driver included.
    pub(crate) fn in_flight_of(&self, node: u16) -> bool {
        self.pending.any_of(node) || self.engines.iter().any(|e| e.serves_reads_of(node))
    }

    /// Starts the chain of `node`'s `channel`.
    fn start(&mut self, node: u16, channel: u8) -> Result<(), FabricError> {
        self.check_peer_handles(node, channel)?;
        self.engines[node as usize].handle_start(channel)?;
        self.markers[node as usize][channel as usize] = Marker::Running;
        self.drain(node)
    }

    /// Answers a wait whose deadline the simulation reached: for [`Wait::ChannelFree`] the chain
    /// is set or started now; every other wait is answered with [`Reply::Unit`].
    pub(crate) fn finish(&mut self, wait: &Wait) -> Result<Reply, FabricError> {
        match wait {
            Wait::ChannelFree { node, channel, then: AfterRun::SetChain(desc), .. } => {
                self.engines[*node as usize].set_chain(*channel, desc)?;
            }
            Wait::ChannelFree { node, channel, then: AfterRun::Start, .. } => self.start(*node, *channel)?,
            _ => {}
        }
        Ok(Reply::Unit)
    }

    /// Bytes at global `addr` changed (waits for a value on its node look again).
    pub(crate) fn memory_changed(&mut self, addr: u64) {
        self.changes += 1;
        let node = self.cluster.address_map().node_of(addr);
        if let Some(c) = node.and_then(|n| self.memory_changes.get_mut(n as usize)) {
            *c += 1;
        }
    }

    /// The engine or a channel status of `node` changed (its other waits look again).
    pub(crate) fn control_changed(&mut self, node: u16) {
        self.changes += 1;
        self.control_changes[node as usize] += 1;
    }

    /// Time of the next hardware event.
    pub(crate) fn next_event(&self) -> Option<SimTime> {
        self.cluster.next_time()
    }

    /// Jumps the clock to `t` (no hardware event before it).
    pub(crate) fn advance_to(&mut self, t: SimTime) {
        debug_assert!(t >= self.now);
        self.now = t;
    }

    /// Runs the next hardware event and applies what it made happen.
    pub(crate) fn step(&mut self) -> Result<(), FabricError> {
        self.step_quietly_to(SimTime::ZERO)
    }

    /// Runs the next hardware event and, while none has made anything happen, the following
    /// ones at times up to `last`; applies what the last one made happen. An event without
    /// outputs changes nothing a rank can see, so nobody needs to look between them.
    pub(crate) fn step_quietly_to(&mut self, last: SimTime) -> Result<(), FabricError> {
        let mut outputs = std::mem::take(&mut self.outputs);
        while let Some(t) = self.cluster.step(self.trace.as_mut()) {
            self.now = t;
            self.cluster.drain_outputs(&mut outputs);
            if !outputs.is_empty() || self.cluster.next_time().is_none_or(|next| next > last) {
                break;
            }
        }
        let mut result = Ok(());
        for (at, out) in outputs.drain(..) {
            if result.is_ok() {
                result = self.apply(at, out);
            }
        }
        self.outputs = outputs;
        result
    }
}
