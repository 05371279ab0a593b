//! The shm fabric of one rank, [`ShmFabric`]: its state, how it starts and stops, and the
//! [`tca_proto::Fabric`] interface, each call carried out by the module of its idea:
//! [`crate::boot`] joins the job, [`crate::memory`] allocates and registers, [`crate::dma`]
//! sets and runs chains, [`crate::pio`] stores and polls, [`crate::collective`] gathers,
//! [`crate::wait`] waits, [`crate::executor`] carries the engine's actions out.

use crate::boot;
use crate::config::{Config, ConfigError};
use crate::replay::Replays;
use crate::ring::{Producer, MSG_BYTES};
use crate::segment::{state, Segment, HEAP};
use crate::store_lock::StoreLock;
use crate::wait::WaitPolicy;
use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;
use tca_proto::fabric::PointerInfo;
use tca_proto::heap::Heap;
use tca_proto::{
    Desc, Engine, Fabric, FabricError, FabricResult, Handle, MemoryType, PioRegion, TcaError, TcaResult, CHANNELS,
};

/// Alignment of every `tcaMalloc` block \[bytes\]: a cache line, so blocks never share one
/// and the low address bits (SYSTEMS.md §1 alignment rule) are those of the caller's offsets.
const HEAP_ALIGN: u64 = 64;

/// Locks a mutex; a panic of another thread while holding it does not poison the fabric.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Progress of this rank's collectives ([`crate::collective`]).
#[derive(Debug, Default)]
pub(crate) struct Collectives {
    /// Completed rounds (process-local mirror of `boot_seq`).
    pub round: u64,
    /// Set when a collective failed half-way (a wait timed out or a peer died): the ranks are
    /// out of step, and every later collective fails with this error.
    pub broken: Option<TcaError>,
}

/// What the engine thread and the callers of one rank share.
pub(crate) struct Inner {
    pub cfg: Config,
    pub policy: WaitPolicy,
    /// Every node's segment, this rank's included, indexed by node.
    pub segs: Vec<Segment>,
    pub engine: Mutex<Engine>,
    pub heap: Mutex<Heap>,
    /// Heap offsets of the blocks allocated as GPU memory (host memory here, docs/cuda.md).
    pub gpu_blocks: Mutex<BTreeSet<u64>>,
    /// Chaining-mode descriptor table of each channel: (heap offset, entries).
    pub tables: Mutex<[Option<(u64, usize)>; CHANNELS]>,
    /// Bytes of the chain set on each channel (a kick decides without the engine lock who
    /// carries the chain out).
    pub chain_bytes: [AtomicU64; CHANNELS],
    /// One lock per destination node, held while pushing into its rings: several threads of
    /// this process (the engine thread, waiting callers) may carry out actions, and each ring
    /// has one producer.
    /// A [`StoreLock`]: a caller that has just written a payload and a notification into a
    /// peer's segment gives it back without waiting for those stores ([`crate::inline`]).
    pub producers: Vec<StoreLock<Producer>>,
    /// Per destination node, the proxy-read messages that found its message ring full, in
    /// order; the lock is also the ring's producer lock ([`Inner::push_msg`]).
    pub outbox: Vec<Mutex<VecDeque<[u8; MSG_BYTES]>>>,
    /// Bit per destination node whose outbox holds messages: the engine thread sends them.
    pub outbox_waiting: AtomicU32,
    /// A thread of this process offers a share of a write to each destination node
    /// ([`crate::shared_copy`]).
    pub offering: Vec<AtomicBool>,
    /// Per destination and size class, the part of a shared write the writer copies itself,
    /// in 64ths ([`crate::shared_copy::Split`]).
    pub splits: Vec<crate::shared_copy::Split>,
    /// Per destination: a share its waiter took was given up on, and may still be copied
    /// ([`crate::shared_copy`]).
    pub abandoned: Vec<AtomicBool>,
    /// Shares of peers' writes this rank's waiters copied ([`ShmFabric::shares_copied`]).
    pub shares_copied: AtomicU64,
    pub collectives: Mutex<Collectives>,
    /// Threads of this process inside [`Inner::progress`] carrying out actions: a waiter that
    /// sees one yields its CPU instead of spinning (the engine thread may share the CPU).
    pub executing: AtomicU32,
    /// The engine holds notifications that arrived and were not consumed (a mirror, written
    /// under the engine lock): a waiter without a call then asks the library at once.
    pub held: AtomicU32,
    /// Counts the drains of the notification rings that took entries (under the engine lock):
    /// a waiter whose notification another thread moved into the engine sees it change.
    pub drained: AtomicU64,
    /// The claim of each channel ([`crate::replay::Claim`]): held while a thread starts it or
    /// sets its chain, and while a caller carries out its run alone ([`crate::inline`]), when
    /// the engine already counts the run done but the bytes may not all be written yet.
    pub carrying: [AtomicBool; CHANNELS],
    /// The run each channel's next kick may repeat without the engine ([`crate::replay`]).
    pub replays: Replays,
    /// Nodes marked dead (bit per node), as the engine knows them: a repeat checks it.
    pub dead: AtomicU32,
    /// Kicks of each channel that started a run (counted under the engine lock), and the kick
    /// whose run a caller last finished alone: equal, `tcaWaitDMAC` needs no engine lock.
    pub kicks: [AtomicU32; CHANNELS],
    pub finished_alone: [AtomicU32; CHANNELS],
    /// Per channel, the error code (0: none) of a run whose copy or notification failed
    /// after the engine had counted the run done (a share the receiver's waiter stopped in,
    /// [`crate::shared_copy`]; a notification ring that stayed full, or whose receiver died);
    /// the channel's next `tcaWaitDMAC` returns it.
    pub failed_alone: [AtomicI32; CHANNELS],
    /// 1 + the node a notification was last pushed to without a fence before the look at its
    /// sleeping waiters (0: none); the next DMA call of this process looks again, fenced.
    pub unfenced: AtomicU32,
    /// The job's ranks have no CPU to spare (ranks >= CPUs): the engine thread could only run
    /// on the CPU of the caller that kicked, so every chain is carried out by the caller
    /// ([`crate::dma`]), and the engine thread does not spin when idle.
    pub no_free_cpu: bool,
    pub shutdown: AtomicBool,
    pub finished: AtomicBool,
}

impl Inner {
    /// This rank's segment.
    #[inline]
    pub fn own(&self) -> &Segment {
        &self.segs[self.cfg.rank as usize]
    }

    /// [`TcaError::NotInitialized`] once the rank has finalized.
    #[inline]
    pub fn check_live(&self) -> TcaResult<()> {
        if self.finished.load(Ordering::Acquire) {
            return Err(TcaError::NotInitialized);
        }
        Ok(())
    }

    /// Rings every rank's application doorbell (a collective moved, this rank finished).
    pub fn ring_all_app_bells(&self) {
        for s in &self.segs {
            let h = s.header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
    }
}

/// One rank's view of the shm fabric (see the crate documentation). The TCA API is its
/// [`tca_proto::Fabric`] implementation; all methods take `&self` and may be called from any
/// thread; the DMA engine thread runs until [`Fabric::finalize`] or drop.
pub struct ShmFabric {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
    start: Instant,
}

impl std::fmt::Debug for ShmFabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmFabric")
            .field("rank", &self.inner.cfg.rank)
            .field("size", &self.inner.cfg.size)
            .field("job", &self.inner.cfg.job)
            .field("policy", &self.inner.policy)
            .finish()
    }
}

impl ShmFabric {
    /// Joins the job described by the environment (`tcaInit`); see [`Config::from_env`].
    ///
    /// # Errors
    /// As [`ShmFabric::with_config`].
    pub fn init() -> Result<ShmFabric, ConfigError> {
        ShmFabric::with_config(Config::from_env()?)
    }

    /// Joins a job: creates this rank's segment, maps every peer's, waits until every rank has
    /// mapped every other, removes this rank's name from `/dev/shm` ([`crate::boot`]), decides
    /// how waits behave ([`WaitPolicy::decide`]: no spinning when the ranks outnumber the CPUs
    /// they may run on), and starts the DMA engine thread. Collective: every rank of the job
    /// must call it.
    ///
    /// # Errors
    /// [`TcaError::OutOfMemory`] when the segment cannot be created or mapped;
    /// [`TcaError::Timeout`] when a peer does not appear within the timeout;
    /// [`TcaError::PeerDead`] when a peer died during the start-up;
    /// [`TcaError::NotInitialized`] when a live process holds this rank's segment name.
    pub fn with_config(cfg: Config) -> Result<ShmFabric, ConfigError> {
        let start = Instant::now();
        let (segs, heap_bytes) = boot::join(&cfg)?;
        let policy = WaitPolicy::decide(&cfg, &segs);
        let me = cfg.rank;
        let engine = Engine::new(me, cfg.size).map_err(|e| ConfigError { error: e, detail: "engine".into() })?;
        let size = cfg.size;
        let inner = Arc::new(Inner {
            heap: Mutex::new(Heap::new(HEAP as u64, heap_bytes, HEAP_ALIGN)),
            gpu_blocks: Mutex::default(),
            cfg,
            policy,
            segs,
            engine: Mutex::new(engine),
            tables: Mutex::new([None; CHANNELS]),
            chain_bytes: Default::default(),
            producers: (0..size).map(|_| StoreLock::new(Producer::default())).collect(),
            outbox: (0..size).map(|_| Mutex::new(VecDeque::new())).collect(),
            outbox_waiting: AtomicU32::new(0),
            offering: (0..size).map(|_| AtomicBool::new(false)).collect(),
            splits: (0..size).map(|_| Default::default()).collect(),
            abandoned: (0..size).map(|_| AtomicBool::new(false)).collect(),
            shares_copied: AtomicU64::new(0),
            carrying: Default::default(),
            replays: Replays::default(),
            dead: AtomicU32::new(0),
            kicks: Default::default(),
            finished_alone: Default::default(),
            failed_alone: Default::default(),
            unfenced: AtomicU32::new(0),
            collectives: Mutex::new(Collectives::default()),
            executing: AtomicU32::new(0),
            drained: AtomicU64::new(0),
            held: AtomicU32::new(0),
            no_free_cpu: u32::from(size) >= policy.cpus,
            shutdown: AtomicBool::new(false),
            finished: AtomicBool::new(false),
        });
        let worker = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name(format!("tca-dma-{me}"))
            .spawn(move || worker.engine_thread())
            .map_err(|e| ConfigError { error: TcaError::OutOfMemory, detail: format!("engine thread: {e}") })?;
        Ok(ShmFabric { inner, thread: Mutex::new(Some(thread)), start })
    }

    /// The configuration this rank joined with.
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// How this rank's waits behave, as decided at init.
    pub fn policy(&self) -> &WaitPolicy {
        &self.inner.policy
    }

    /// How many times a waiting thread of this rank copied part of a peer's large write into
    /// this rank's memory ([`crate::shared_copy`]).
    pub fn shares_copied(&self) -> u64 {
        self.inner.shares_copied.load(Ordering::Relaxed)
    }

    /// Where the stores into PIO window `r` go in this process, for a caller that stores
    /// without a call ([`crate::pio::PioDirect`]); `None` when every store must go through
    /// [`Fabric::send_pio`].
    pub fn pio_direct(&self, r: &PioRegion) -> Option<crate::pio::PioDirect> {
        self.inner.pio_direct(r)
    }

    /// This rank's memory for a caller that waits without a call ([`crate::pio::WaitView`]);
    /// `None` when every wait must go through [`Fabric::wait_pio`].
    pub fn wait_view(&self) -> Option<crate::pio::WaitView> {
        self.inner.wait_view()
    }

    /// This rank's notification rings for a caller that waits without a call
    /// ([`crate::dma::NotifyView`]); `None` when every wait must go through
    /// [`Fabric::wait_dma_recv`].
    pub fn notify_view(&self) -> Option<crate::dma::NotifyView> {
        self.inner.notify_view()
    }

    /// This process's channels for a caller that starts and waits for them without a call
    /// ([`crate::replay::StartView`]); `None` when every start must go through
    /// [`Fabric::start_dma`].
    pub fn start_view(&self) -> Option<crate::replay::StartView> {
        self.inner.start_view()
    }

    /// The run kept for repeats on `channel` is dropped: its next start goes to the engine.
    pub fn forget_repeat(&self, channel: u8) {
        self.inner.forget_repeat(channel);
    }

    /// Wakes the waiters of `node` that sleep (a caller that notified it without a call saw
    /// one).
    pub fn wake(&self, node: u16) {
        if let Some(seg) = self.inner.segs.get(node as usize) {
            let h = seg.header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
    }

    /// Whether the rank is in the job: initialised and not finalized.
    pub fn is_active(&self) -> bool {
        !self.inner.finished.load(Ordering::Acquire)
    }
}

impl Drop for ShmFabric {
    fn drop(&mut self) {
        let _ = self.finalize();
    }
}

impl Fabric for ShmFabric {
    fn node_id(&self) -> FabricResult<u16> {
        self.inner.check_live()?;
        Ok(self.inner.cfg.rank)
    }

    fn node_count(&self) -> FabricResult<u16> {
        self.inner.check_live()?;
        Ok(self.inner.cfg.size)
    }

    /// Memory in this rank's segment, 64-byte aligned, zero-filled on first use; the address
    /// is a pointer of this process. `mem` is recorded only: "GPU memory" is host memory here.
    fn malloc(&self, size: u64, mem: MemoryType) -> FabricResult<u64> {
        Ok(self.inner.malloc(size, mem)?)
    }

    /// Handles of the block stop working at once, for every rank (the owner's handle table
    /// in shared memory is cleared).
    fn free(&self, addr: u64) -> FabricResult<()> {
        Ok(self.inner.free(addr)?)
    }

    fn create_handle(&self, addr: u64, size: u64, mem: MemoryType) -> FabricResult<Handle> {
        Ok(self.inner.create_handle(addr, size, mem)?)
    }

    fn destroy_handle(&self, handle: &Handle) -> FabricResult<()> {
        Ok(self.inner.destroy_handle(handle)?)
    }

    fn write(&self, handle: &Handle, offset: u64, data: &[u8]) -> FabricResult<()> {
        Ok(self.inner.write(handle, offset, data)?)
    }

    fn read(&self, handle: &Handle, offset: u64, out: &mut [u8]) -> FabricResult<()> {
        Ok(self.inner.read(handle, offset, out)?)
    }

    fn desc_set(&self, channel: u8, desc: &Desc) -> FabricResult<()> {
        Ok(self.inner.desc_set(channel, desc)?)
    }

    fn start_dma(&self, channel: u8) -> FabricResult<()> {
        Ok(self.inner.start_dma(channel)?)
    }

    fn wait_dmac(&self, channel: u8) -> FabricResult<()> {
        Ok(self.inner.wait_dmac(channel)?)
    }

    fn wait_dma_recv(&self, handle: &Handle, slot: u32, tag: u32) -> FabricResult<()> {
        Ok(self.inner.wait_dma_recv(handle, slot, tag)?)
    }

    fn set_pio_region(&self, handle: &Handle, offset: u64, len: u64) -> FabricResult<PioRegion> {
        Ok(self.inner.set_pio_region(handle, offset, len)?)
    }

    #[inline]
    fn send_pio(&self, region: &PioRegion, offset: u64, data: &[u8]) -> FabricResult<()> {
        Ok(self.inner.send_pio(region, offset, data)?)
    }

    #[inline]
    fn send_pio_commit(&self) -> FabricResult<()> {
        Ok(self.inner.send_pio_commit()?)
    }

    #[inline]
    fn wait_pio(&self, handle: &Handle, offset: u64, expected: &[u8], peer: Option<u16>) -> FabricResult<()> {
        Ok(self.inner.wait_pio(handle, offset, expected, peer)?)
    }

    fn barrier(&self) -> FabricResult<()> {
        self.inner.allgather(&[]).map(|_| ())
    }

    fn allgather(&self, send: &[u8]) -> FabricResult<Vec<u8>> {
        self.inner.allgather(send)
    }

    /// Seconds since this rank joined (a monotonic clock).
    fn wtime(&self) -> FabricResult<f64> {
        self.inner.check_live()?;
        Ok(self.start.elapsed().as_secs_f64())
    }

    /// Returns at once: the computation took its real time already.
    fn compute(&self, seconds: f64) -> FabricResult<()> {
        self.inner.check_live()?;
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(FabricError::with_detail(
                TcaError::OutOfBounds,
                format!("compute time must be finite and >= 0 s, got {seconds}"),
            ));
        }
        Ok(())
    }

    /// Stops the engine thread and marks this rank finished, so that peers waiting for it
    /// fail at once instead of at their timeout. Drop does the same.
    fn finalize(&self) -> FabricResult<()> {
        let inner = &self.inner;
        if inner.finished.swap(true, Ordering::AcqRel) {
            return Err(TcaError::NotInitialized.into());
        }
        inner.shutdown.store(true, Ordering::Release);
        let h = inner.own().header();
        Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
        h.state.store(state::FINISHED, Ordering::Release);
        inner.ring_all_app_bells();
        Ok(())
    }

    /// This host has no GPU: a buffer allocated as GPU memory is host memory of the segment,
    /// reported as device 0 (the trait's default `memcpy` then copies with the CPU).
    fn pointer_info(&self, ptr: u64) -> FabricResult<PointerInfo> {
        Ok(self.inner.pointer_info(ptr)?)
    }
}
