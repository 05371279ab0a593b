//! The simulated TCA system that rank programs act on: one [`Engine`] per node (the API
//! semantics: handles, chains, notification matching), the [`Cluster`] hardware model (when
//! things happen) and [`Memory`] (what the bytes are).
//!
//! A DMA start is carried out in two steps. The node's engine runs the chain's semantics at once,
//! every write acknowledged as it is issued, which yields the ordered writes and notifications
//! of the chain; the cluster then executes the chain's hardware descriptors in virtual time, and
//! as its outputs arrive the bytes are copied and the notifications delivered to the destination
//! engines. Programs therefore see data and notifications exactly when the hardware model says.

use crate::memory::Memory;
use std::collections::BTreeMap;
use tca_api::{Action, Desc, Engine, Handle, MemoryType, Notify, TcaError, WaitStatus};
use tca_hw::cluster::{Cluster, DmaJob, JobEntry, Output};
use tca_hw::platform::Platform;
use tca_hw::router::Target;
use tca_sim::{SimTime, Trace};

/// Host memory reserved at the start of each node's part: notification words (first 4 KiB),
/// then one descriptor table per channel.
const NOTIFY_AREA: u64 = 4096;
const TABLE_BYTES: u64 = 256 * 1024;
/// Allocations are aligned to this (a page).
const ALIGN: u64 = 4096;

/// A request a rank makes; see [`crate::RankHandle`] for each one's meaning.
#[derive(Debug, Clone)]
pub enum Op {
    Malloc {
        size: u64,
        mem: MemoryType,
        gpu: u32,
    },
    Free {
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
    SetChain {
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
    WaitValue {
        handle: Handle,
        offset: u64,
        bytes: Vec<u8>,
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
            Op::WaitRecv { handle, slot, tag } => {
                format!(
                    "tcaWaitDMARecvDesc(handle of node {}, slot {slot}, tag {tag})",
                    handle.node
                )
            }
            Op::WaitValue {
                handle,
                offset,
                bytes,
            } => {
                format!(
                    "data at offset {offset} of a node-{} buffer to become {bytes:02x?}",
                    handle.node
                )
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
    #[error("{0:?}: {msg}", msg = tca_api::error_string(.0.code()))]
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

/// Outcome of submitting a request.
pub enum Submitted {
    Done(Result<Reply, FabricError>),
    Wait(Wait),
}

struct JobInfo {
    /// The notification of each entry, if it notifies.
    notifies: Vec<Option<Notify>>,
    /// Bytes of each entry not yet landed.
    remaining: Vec<u64>,
    /// The entry's notification word landed before its last data (a GPU destination is
    /// farther than the host memory holding the word); it is delivered with the last data.
    held: Vec<bool>,
    done_at: Option<SimTime>,
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
        let engines = (0..nodes)
            .map(|n| Engine::new(n as u16, nodes as u16))
            .collect::<Result<Vec<_>, _>>()?;
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
                .map(|_| Allocator {
                    host_next: NOTIFY_AREA + channels * TABLE_BYTES,
                    gpu_next: vec![0; gpus],
                })
                .collect(),
            jobs: BTreeMap::new(),
            pio: BTreeMap::new(),
            next_pio: 0,
            now: SimTime::ZERO,
            trace,
        })
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    fn map(&self) -> &tca_hw::router::AddressMap {
        self.cluster.address_map()
    }

    /// Global address of `offset` bytes into `handle`, checking `len` bytes fit.
    fn addr_in(
        &self,
        node: u32,
        handle: &Handle,
        offset: u64,
        len: u64,
    ) -> Result<u64, FabricError> {
        let _ = node;
        match self.engines.get(handle.node as usize) {
            Some(e) if e.is_live(handle) => {}
            _ => return Err(TcaError::InvalidHandle.into()),
        }
        match offset.checked_add(len) {
            Some(end) if end <= handle.size => Ok(handle.addr + offset),
            _ => Err(TcaError::OutOfBounds.into()),
        }
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
            Op::Malloc { size, mem, gpu } => {
                done(Reply::Handle(self.malloc(node, size, mem, gpu)?))
            }
            Op::Free { handle } => {
                if handle.node as u32 != node {
                    return Err(TcaError::InvalidHandle.into());
                }
                self.engines[node as usize].destroy_handle(&handle)?;
                self.memory.remove(handle.addr);
                done(Reply::Unit)
            }
            Op::Write {
                handle,
                offset,
                bytes,
            } => {
                if handle.node as u32 != node {
                    return Err(TcaError::InvalidHandle.into());
                }
                let addr = self.addr_in(node, &handle, offset, bytes.len() as u64)?;
                self.memory.write(addr, &bytes);
                done(Reply::Unit)
            }
            Op::Read {
                handle,
                offset,
                len,
            } => {
                if handle.node as u32 != node {
                    return Err(TcaError::InvalidHandle.into());
                }
                let addr = self.addr_in(node, &handle, offset, len)?;
                done(Reply::Bytes(
                    self.memory.read(addr, len).ok_or(TcaError::InvalidHandle)?,
                ))
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
                Ok(Submitted::Wait(Wait::Dmac {
                    node,
                    channel,
                    since: self.now,
                }))
            }
            Op::WaitRecv { handle, slot, tag } => {
                // Validate now so a bad slot is an error, not a deadlock.
                match self.engines[node as usize].wait_dma_recv(&handle, slot, tag)? {
                    WaitStatus::Ready => done(Reply::Unit),
                    WaitStatus::Pending => Ok(Submitted::Wait(Wait::Recv {
                        node,
                        handle,
                        slot,
                        tag,
                    })),
                }
            }
            Op::SendPio { dst, offset, bytes } => {
                if bytes.is_empty() {
                    return Err(TcaError::ZeroSize.into());
                }
                let addr = self.addr_in(node, &dst, offset, bytes.len() as u64)?;
                let id = self.next_pio;
                self.next_pio += 1;
                self.cluster
                    .pio(self.now, node, addr, bytes.len() as u64, id)
                    .map_err(|e| FabricError::Unsupported(e.to_string()))?;
                self.pio.insert(id, PioOp { dst: addr, bytes });
                done(Reply::Unit)
            }
            Op::WaitValue {
                handle,
                offset,
                bytes,
            } => {
                if handle.node as u32 != node {
                    return Err(TcaError::InvalidHandle.into());
                }
                let addr = self.addr_in(node, &handle, offset, bytes.len() as u64)?;
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
    fn malloc(
        &mut self,
        node: u32,
        size: u64,
        mem: MemoryType,
        gpu: u32,
    ) -> Result<Handle, FabricError> {
        if size == 0 {
            return Err(TcaError::ZeroSize.into());
        }
        let map = self.map().clone();
        let a = &mut self.alloc[node as usize];
        let (target, cursor, limit) = match mem {
            MemoryType::Cpu => (Target::Host(a.host_next), &mut a.host_next, map.host_bytes),
            MemoryType::Gpu => {
                let next = a
                    .gpu_next
                    .get_mut(gpu as usize)
                    .ok_or(TcaError::InvalidHandle)?;
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

    /// `tcaStartDMADesc`: the engine's semantics at once, then the hardware in virtual time.
    fn start_dma(&mut self, node: u32, channel: u8) -> Result<(), FabricError> {
        let engine = &mut self.engines[node as usize];
        let desc = engine
            .chain(channel)?
            .ok_or(TcaError::ChannelNotSet)?
            .clone();
        engine.handle_start(channel)?;
        let bursts: Vec<u64> = desc
            .entries()
            .iter()
            .map(|e| e.descriptor.count as u64)
            .collect();
        let mut notifies: Vec<Option<Notify>> = vec![None; bursts.len()];
        let (mut writes, mut entry_done) = (0u64, 0usize);
        while let Some(action) = engine.poll_action() {
            match action {
                Action::Write(w) => {
                    writes += 1;
                    engine.handle_write_done(w.token)?;
                }
                Action::Notify(n) => {
                    // Belongs to the last entry whose writes are all issued.
                    while entry_done + 1 < bursts.len() && bursts[..=entry_done].iter().sum::<u64>() < writes {
                        entry_done += 1;
                    }
                    notifies[entry_done] = Some(n);
                }
                Action::DescriptorFetch { .. } | Action::ChannelDone { .. } => {}
                Action::ChannelFailed { error, .. } => return Err(error.into()),
                Action::RegisterProxy { .. } | Action::Interrupt { .. } | Action::ProxyDone { .. } => {
                    return Err(FabricError::Unsupported(
                        "a DMA whose source is on another node (proxy write, seed 000 §3.5) is not simulated yet".into(),
                    ))
                }
            }
        }
        let map = self.cluster.address_map().clone();
        let entries = desc
            .entries()
            .iter()
            .zip(&notifies)
            .map(|(e, n)| JobEntry {
                descriptor: e.descriptor,
                notify: n.map(|n| map.node_base(n.dst_node as u32) + 0x100 + 4 * n.slot as u64),
            })
            .collect::<Vec<_>>();
        if entries.len() as u64 * self.platform.peach2.descriptor_bytes > TABLE_BYTES {
            return Err(TcaError::TooLarge.into());
        }
        let mode = desc.mode();
        let job = DmaJob {
            mode,
            entries,
            table_offset: NOTIFY_AREA + channel as u64 * TABLE_BYTES,
        };
        self.cluster
            .kick(self.now, node, channel, job)
            .map_err(|e| match e {
                tca_hw::cluster::ClusterError::ChannelBusy { .. } => {
                    FabricError::Api(TcaError::ChannelBusy)
                }
                other => FabricError::Unsupported(other.to_string()),
            })?;
        let remaining = desc.entries().iter().map(|e| e.bytes()).collect();
        let held = vec![false; notifies.len()];
        self.jobs.insert(
            (node, channel),
            JobInfo {
                notifies,
                remaining,
                held,
                done_at: None,
            },
        );
        Ok(())
    }

    /// When `w` is satisfied, if that is known now (for a notification it is consumed).
    pub fn ready_at(&mut self, w: &Wait) -> Option<SimTime> {
        match w {
            Wait::Until(t) => Some(*t),
            Wait::Dmac {
                node,
                channel,
                since,
            } => {
                let done = self.jobs.get(&(*node, *channel))?.done_at?;
                Some(self.cluster.poll_register(*since, done))
            }
            Wait::Recv {
                node,
                handle,
                slot,
                tag,
            } => match self.engines[*node as usize].wait_dma_recv(handle, *slot, *tag) {
                Ok(WaitStatus::Ready) => Some(self.now),
                _ => None,
            },
            Wait::Value { addr, bytes } => (self.memory.read(*addr, bytes.len() as u64).as_deref()
                == Some(bytes))
            .then_some(self.now),
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

    /// Delivers the notification of an entry whose data has all landed.
    fn notify(&mut self, node: u32, channel: u8, entry: usize) {
        let n = self.jobs[&(node, channel)].notifies[entry].expect("entry notifies");
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
                Output::DmaLanded {
                    node,
                    channel,
                    entry,
                    src,
                    dst,
                    len,
                } => {
                    self.memory.copy(src, dst, len);
                    let job = self.jobs.get_mut(&(node, channel)).expect("a kicked job");
                    job.remaining[entry] -= len;
                    if job.remaining[entry] == 0 && job.held[entry] {
                        job.held[entry] = false;
                        self.notify(node, channel, entry);
                    }
                }
                Output::NotifyLanded {
                    node,
                    channel,
                    entry,
                    ..
                } => {
                    let job = self.jobs.get_mut(&(node, channel)).expect("a kicked job");
                    if job.remaining[entry] == 0 {
                        self.notify(node, channel, entry);
                    } else {
                        job.held[entry] = true;
                    }
                }
                Output::PioLanded {
                    id, offset, len, ..
                } => {
                    let op = &self.pio[&id];
                    let bytes = op.bytes[offset as usize..(offset + len) as usize].to_vec();
                    self.memory.write(op.dst + offset, &bytes);
                    if offset + len == op.bytes.len() as u64 {
                        self.pio.remove(&id);
                    }
                }
                Output::ChannelDone { node, channel } => {
                    if let Some(job) = self.jobs.get_mut(&(node, channel)) {
                        job.done_at = Some(at);
                    }
                }
            }
        }
    }
}
