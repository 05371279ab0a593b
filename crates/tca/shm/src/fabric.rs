//! The shm fabric of one rank: its segment, its peers' mappings, its [`Engine`] and the DMA
//! engine thread that carries the engine's actions out with real memory.

use crate::config::{Config, ConfigError};
use crate::heap::Heap;
use crate::msg::Msg;
use crate::segment::{self, state, Header, Segment, BOOT, BOOT_BYTES, HEAP};
use crate::sys;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tca_proto::{
    Action, DescriptorSource, Desc, DmaMode, Engine, Handle, MemoryType, ProxyDone, TcaError, TcaResult, Token, WaitStatus, CHANNELS,
};
use tca_proto::descriptor::{Descriptor, DESCRIPTOR_BYTES};

/// Largest chain \[bytes\] the caller of [`Fabric::start_dma`] carries out itself when the
/// engine thread sleeps.
pub const INLINE_BYTES: u64 = 64 * 1024;

/// Longest single futex sleep of a wait: how often a sleeping waiter re-checks its peer's
/// liveness and its deadline.
const SLEEP_SLICE: Duration = Duration::from_millis(2);

/// A window of a peer's (or this rank's) memory open for PIO (`tcaSetPIORegion`): stores go
/// straight into the mapping of the destination's segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PioRegion {
    /// Node the stores land on.
    pub node: u16,
    /// Global address of the window's first byte.
    pub addr: u64,
    /// Window length \[bytes\].
    pub len: u64,
}

/// Which peers a wait watches for death.
#[derive(Debug, Clone, Copy)]
enum Watch {
    Nobody,
    Peer(u16),
    Everyone,
}

struct Inner {
    cfg: Config,
    /// Every node's segment, this rank's included, indexed by node.
    segs: Vec<Segment>,
    engine: Mutex<Engine>,
    heap: Mutex<Heap>,
    /// Chaining-mode descriptor table of each channel: (heap offset, entries).
    tables: Mutex<[Option<(u64, usize)>; CHANNELS]>,
    /// One lock per destination node, held while pushing into its rings: several threads of
    /// this process (the engine thread, waiting callers) may carry out actions, and each ring
    /// has one producer.
    producers: Vec<Mutex<()>>,
    /// Completed bootstrap rounds of this rank (process-local mirror of `boot_seq`).
    boot_round: Mutex<u64>,
    /// Threads of this process inside [`Inner::progress`] carrying out actions: a waiter that
    /// sees one yields its CPU instead of spinning (the engine thread may share the CPU).
    executing: AtomicU32,
    shutdown: AtomicBool,
    finished: AtomicBool,
}

/// One rank's view of the shm fabric. All methods take `&self` and may be called from any
/// thread; the DMA engine thread runs until [`Fabric::finalize`] or drop.
pub struct Fabric {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fabric")
            .field("rank", &self.inner.cfg.rank)
            .field("size", &self.inner.cfg.size)
            .field("job", &self.inner.cfg.job)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn cerr(error: TcaError, detail: impl Into<String>) -> ConfigError {
    ConfigError { error, detail: detail.into() }
}

/// Removes a name on drop unless disarmed: no segment name outlives a failed init.
struct UnlinkGuard(Option<String>);

impl Drop for UnlinkGuard {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            let _ = sys::shm_unlink(&n);
        }
    }
}

impl Fabric {
    /// Joins the job described by the environment (`tcaInit`); see [`Config::from_env`].
    ///
    /// # Errors
    /// As [`Fabric::with_config`].
    pub fn init() -> Result<Fabric, ConfigError> {
        Fabric::with_config(Config::from_env()?)
    }

    /// Joins a job: creates this rank's segment, maps every peer's, waits until every rank has
    /// mapped every other (so the names can go), removes this rank's name from `/dev/shm`, and
    /// starts the DMA engine thread. Collective: every rank of the job must call it.
    ///
    /// After this call no file of the job is left in `/dev/shm`: the memory lives while a rank
    /// maps it, so it disappears with the last rank, however the ranks end.
    ///
    /// # Errors
    /// [`TcaError::OutOfMemory`] when the segment cannot be created or mapped;
    /// [`TcaError::Timeout`] when a peer does not appear within the timeout;
    /// [`TcaError::PeerDead`] when a peer died during the start-up;
    /// [`TcaError::NotInitialized`] when a live process holds this rank's segment name.
    pub fn with_config(cfg: Config) -> Result<Fabric, ConfigError> {
        let heap_bytes = cfg.heap_bytes.div_ceil(4096) * 4096;
        let len = HEAP + heap_bytes as usize;
        let me = cfg.rank;
        let my_name = cfg.segment_name(me);
        sweep_stale();
        let own = create_own(&my_name, len)?;
        let mut guard = UnlinkGuard(Some(my_name.clone()));
        own.reserve(0, HEAP)
            .map_err(|e| cerr(TcaError::OutOfMemory, format!("cannot back the header of /dev/shm/{my_name}: {e}")))?;
        {
            let h = Segment::new_ref(&own);
            h.pid.store(sys::getpid(), Ordering::Relaxed);
            h.node.store(u32::from(me), Ordering::Relaxed);
            h.nodes.store(u32::from(cfg.size), Ordering::Relaxed);
            h.bytes.store(len as u64, Ordering::Relaxed);
            h.magic.store(segment::MAGIC, Ordering::Release);
            h.state.store(state::READY, Ordering::Release);
        }
        let deadline = Instant::now() + cfg.timeout;
        let mut maps: Vec<Option<sys::Mapping>> = (0..cfg.size).map(|_| None).collect();
        maps[me as usize] = Some(own);
        for r in 0..cfg.size {
            if r != me {
                maps[r as usize] = Some(open_peer(&cfg, r, deadline)?);
            }
        }
        let segs: Vec<Segment> = maps.into_iter().flatten().map(Segment::new).collect();
        segs[me as usize].header().state.store(state::MAPPED, Ordering::Release);
        for r in 0..cfg.size {
            while segs[r as usize].header().state.load(Ordering::Acquire) < state::MAPPED {
                let pid = segs[r as usize].header().pid.load(Ordering::Relaxed);
                if !sys::process_alive(pid) {
                    return Err(cerr(TcaError::PeerDead, format!("rank {r} died while the job started")));
                }
                if Instant::now() > deadline {
                    return Err(cerr(
                        TcaError::Timeout,
                        format!("rank {r} did not map the segments within {:?}", cfg.timeout),
                    ));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        // Every rank has mapped this segment: its name is no longer needed.
        guard.0 = None;
        let _ = sys::shm_unlink(&my_name);
        let engine = Engine::new(me, cfg.size).map_err(|e| cerr(e, "engine"))?;
        let size = cfg.size;
        let inner = Arc::new(Inner {
            heap: Mutex::new(Heap::new(HEAP as u64, heap_bytes)),
            cfg,
            segs,
            engine: Mutex::new(engine),
            tables: Mutex::new([None; CHANNELS]),
            producers: (0..size).map(|_| Mutex::new(())).collect(),
            boot_round: Mutex::new(0),
            executing: AtomicU32::new(0),
            shutdown: AtomicBool::new(false),
            finished: AtomicBool::new(false),
        });
        let worker = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name(format!("tca-dma-{me}"))
            .spawn(move || engine_thread(&worker))
            .map_err(|e| cerr(TcaError::OutOfMemory, format!("engine thread: {e}")))?;
        Ok(Fabric { inner, thread: Mutex::new(Some(thread)) })
    }

    /// This rank (TCA node id).
    pub fn rank(&self) -> u16 {
        self.inner.cfg.rank
    }

    /// Ranks in the job.
    pub fn size(&self) -> u16 {
        self.inner.cfg.size
    }

    /// The configuration this rank joined with.
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// Whether the rank is in the job: initialised and not finalized.
    pub fn is_active(&self) -> bool {
        !self.inner.finished.load(Ordering::Acquire)
    }

    fn check_live(&self) -> TcaResult<()> {
        if self.inner.finished.load(Ordering::Acquire) {
            return Err(TcaError::NotInitialized);
        }
        Ok(())
    }

    // ---- memory and handles ----

    /// Allocates `size` bytes in this rank's segment (`tcaMalloc`), 64-byte aligned and
    /// zero-filled on first use. `mem` is recorded only: on this fabric "GPU memory" is host
    /// memory (docs/shm-fabric.md).
    ///
    /// # Errors
    /// [`TcaError::ZeroSize`]; [`TcaError::OutOfMemory`] when the heap (`TCA_SHM_BYTES`) is
    /// exhausted.
    pub fn malloc(&self, size: u64, _mem: MemoryType) -> TcaResult<*mut u8> {
        self.check_live()?;
        if size == 0 {
            return Err(TcaError::ZeroSize);
        }
        let off = self.inner.alloc(size)?;
        Ok(self.inner.own().base().wrapping_add(off as usize))
    }

    /// Frees memory of [`Fabric::malloc`] (`tcaFree`).
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a pointer `malloc` did not return or already freed.
    pub fn free(&self, ptr: *mut u8) -> TcaResult<()> {
        self.check_live()?;
        let off = self.inner.own_offset(ptr).ok_or(TcaError::InvalidHandle)?;
        if lock(&self.inner.heap).free(off) {
            Ok(())
        } else {
            Err(TcaError::InvalidHandle)
        }
    }

    /// Registers `size` bytes at `ptr` (`tcaCreateHandle`); the bytes must lie inside one block
    /// of [`Fabric::malloc`].
    ///
    /// # Errors
    /// [`TcaError::ZeroSize`]; [`TcaError::InvalidHandle`] when the bytes are not inside one
    /// allocated block; [`TcaError::OutOfMemory`] when the handle table is full.
    pub fn create_handle(&self, ptr: *const u8, size: u64, mem: MemoryType) -> TcaResult<Handle> {
        self.check_live()?;
        if size == 0 {
            return Err(TcaError::ZeroSize);
        }
        let off = self.inner.own_offset(ptr.cast_mut()).ok_or(TcaError::InvalidHandle)?;
        lock(&self.inner.heap).block_of(off, size).ok_or(TcaError::InvalidHandle)?;
        let addr = segment::global(self.rank(), off);
        lock(&self.inner.engine).create_handle(addr, size, mem)
    }

    /// Unregisters a handle of this rank (`tcaDestroyHandle`).
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] when `h` is not a live handle of this rank.
    pub fn destroy_handle(&self, h: &Handle) -> TcaResult<()> {
        self.check_live()?;
        lock(&self.inner.engine).destroy_handle(h)
    }

    /// The local pointer to the first byte of a live handle of this rank.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a handle of another rank or one not live.
    pub fn local_ptr(&self, h: &Handle) -> TcaResult<*mut u8> {
        if h.node != self.rank() || !lock(&self.inner.engine).is_live(h) {
            return Err(TcaError::InvalidHandle);
        }
        self.inner.ptr(h.node, h.addr, h.size).ok_or(TcaError::InvalidHandle)
    }

    // ---- DMA ----

    /// Registers a descriptor chain on a channel (`tcaDescSet`). In chaining mode the 32-byte
    /// hardware descriptors are written into a table in this rank's segment, which the engine
    /// thread fetches entry by entry while it runs the chain.
    ///
    /// # Errors
    /// What [`Engine::set_chain`] rejects; [`TcaError::InvalidHandle`] when a handle's region
    /// is not inside its node's heap;
    /// [`TcaError::OutOfMemory`] when the descriptor table does not fit.
    pub fn set_chain(&self, channel: u8, desc: &Desc) -> TcaResult<()> {
        self.check_live()?;
        desc.check_runnable()?;
        for e in desc.entries() {
            for h in [&e.dst, &e.src] {
                if h.node >= self.size() {
                    return Err(TcaError::InvalidNode);
                }
                if self.inner.ptr(h.node, h.addr, h.size).is_none() {
                    return Err(TcaError::InvalidHandle);
                }
            }
        }
        let mut tables = lock(&self.inner.tables);
        let table = if desc.mode() == DmaMode::Chaining {
            let bytes = (desc.len() * DESCRIPTOR_BYTES) as u64;
            let off = self.inner.alloc(bytes)?;
            Some((off, desc.len()))
        } else {
            None
        };
        let result = lock(&self.inner.engine).set_chain(channel, desc);
        let slot = channel as usize;
        match result {
            Ok(()) => {
                if let Some((old, _)) = std::mem::replace(&mut tables[slot], table) {
                    lock(&self.inner.heap).free(old);
                }
                if let Some((off, _)) = table {
                    let base = self.inner.own().base().wrapping_add(off as usize);
                    for (i, d) in desc.hardware_descriptors().enumerate() {
                        let mut buf = [0u8; DESCRIPTOR_BYTES];
                        d.encode(&mut buf);
                        // SAFETY: the table block holds len * 32 bytes of this segment.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                buf.as_ptr(),
                                base.add(i * DESCRIPTOR_BYTES),
                                DESCRIPTOR_BYTES,
                            );
                        }
                    }
                }
                Ok(())
            }
            Err(e) => {
                if let Some((off, _)) = table {
                    lock(&self.inner.heap).free(off);
                }
                Err(e)
            }
        }
    }

    /// Kicks a channel (`tcaStartDMADesc`). A chain of at most [`INLINE_BYTES`] is carried out
    /// by the caller at once when the engine thread sleeps (waking the thread would cost more
    /// than the copies); otherwise the engine thread runs it while the caller goes on.
    ///
    /// # Errors
    /// What [`Engine::handle_start`] rejects.
    pub fn start_dma(&self, channel: u8) -> TcaResult<()> {
        self.check_live()?;
        let bytes = {
            let mut e = lock(&self.inner.engine);
            e.handle_start(channel)?;
            e.chain(channel)?.map_or(0, |d| d.entries().iter().map(|x| x.bytes()).sum::<u64>())
        };
        let h = self.inner.own().header();
        if bytes <= INLINE_BYTES && h.engine_waiters.0.load(Ordering::SeqCst) != 0 {
            self.inner.progress(&mut Work::default());
        } else {
            Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        }
        Ok(())
    }

    /// Waits until a channel's run is over (`tcaWaitDMAC`).
    ///
    /// # Errors
    /// [`TcaError::InvalidChannel`]; the run's error ([`TcaError::PeerDead`]);
    /// [`TcaError::Timeout`].
    pub fn wait_dma_channel(&self, channel: u8) -> TcaResult<()> {
        self.check_live()?;
        let mut work = Work::default();
        // A chain may read from or write to any rank (proxy reads wait for the source).
        self.wait(Watch::Everyone, false, true, |inner| {
            inner.progress(&mut work);
            Ok(lock(&inner.engine).wait_dma_channel(channel)? == WaitStatus::Ready)
        })
    }

    /// Waits for and consumes one notification (slot, tag) from `h.node`
    /// (`tcaWaitDMARecvDesc`).
    ///
    /// # Errors
    /// What [`Engine::wait_dma_recv`] rejects; [`TcaError::PeerDead`] when the sender died (or
    /// finished) without sending it; [`TcaError::Timeout`].
    pub fn wait_dma_recv(&self, h: &Handle, slot: u32, tag: u32) -> TcaResult<()> {
        self.check_live()?;
        h.validate()?;
        if h.node >= self.size() {
            return Err(TcaError::InvalidNode);
        }
        let watch = if h.node == self.rank() { Watch::Nobody } else { Watch::Peer(h.node) };
        let mut work = Work::default();
        self.wait(watch, false, true, |inner| {
            inner.progress(&mut work);
            let mut e = lock(&inner.engine);
            inner.drain_notifications(&mut e);
            Ok(e.wait_dma_recv(h, slot, tag)? == WaitStatus::Ready)
        })
    }

    // ---- PIO ----

    /// Opens `len` bytes at `offset` of any rank's handle for PIO (`tcaSetPIORegion`).
    ///
    /// # Errors
    /// What [`Handle::validate`] rejects; [`TcaError::InvalidNode`]; [`TcaError::ZeroSize`];
    /// [`TcaError::OutOfBounds`] when the window leaves the handle; [`TcaError::InvalidHandle`]
    /// when the handle's region is not inside its node's heap.
    pub fn pio_region(&self, h: &Handle, offset: u64, len: u64) -> TcaResult<PioRegion> {
        self.check_live()?;
        h.validate()?;
        if h.node >= self.size() {
            return Err(TcaError::InvalidNode);
        }
        if len == 0 {
            return Err(TcaError::ZeroSize);
        }
        if !h.contains(offset, len) {
            return Err(TcaError::OutOfBounds);
        }
        self.inner.ptr(h.node, h.addr, h.size).ok_or(TcaError::InvalidHandle)?;
        Ok(PioRegion { node: h.node, addr: h.addr + offset, len })
    }

    /// Stores `data` at `offset` of a PIO window (`tcaSendPIO`): CPU stores into the
    /// destination's mapping (seed 000 §3.5.1). Visible to the destination in order with
    /// later PIO after [`Fabric::pio_commit`].
    ///
    /// # Errors
    /// [`TcaError::SizeNotMultipleOf4`]; [`TcaError::OutOfBounds`]; [`TcaError::InvalidNode`]
    /// for a forged region.
    pub fn send_pio(&self, r: &PioRegion, offset: u64, data: &[u8]) -> TcaResult<()> {
        let len = data.len() as u64;
        if !len.is_multiple_of(4) {
            return Err(TcaError::SizeNotMultipleOf4);
        }
        if offset.checked_add(len).is_none_or(|end| end > r.len) {
            return Err(TcaError::OutOfBounds);
        }
        if r.node >= self.size() {
            return Err(TcaError::InvalidNode);
        }
        let dst = self.inner.ptr(r.node, r.addr + offset, len).ok_or(TcaError::OutOfBounds)?;
        // SAFETY: dst..dst+len lies inside the destination's heap (checked above); data is a
        // separate slice of the caller.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }

    /// Orders every earlier PIO store before every later one (`tcaSendPIOCommit`): a store
    /// fence. x86-64 keeps ordinary stores in order (TSO), so the compiler fence is what
    /// matters there, and `sfence` also orders streaming stores; elsewhere a release fence.
    pub fn pio_commit(&self) {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: sfence has no preconditions.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
        #[cfg(not(target_arch = "x86_64"))]
        std::sync::atomic::fence(Ordering::Release);
    }

    /// Waits until the 32-bit word at `offset` of this rank's handle `h` equals `value`: the
    /// receiving side of PIO, which polls its own memory (seed 000 §4.2.1 (3)). `peer` is the
    /// rank expected to write it; the wait fails when it dies.
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a handle not live on this rank;
    /// [`TcaError::AlignmentMismatch`] for an offset not a multiple of 4;
    /// [`TcaError::OutOfBounds`]; [`TcaError::InvalidNode`]; [`TcaError::PeerDead`];
    /// [`TcaError::Timeout`].
    pub fn wait_pio_u32(&self, h: &Handle, offset: u64, value: u32, peer: u16) -> TcaResult<()> {
        self.check_live()?;
        if peer >= self.size() {
            return Err(TcaError::InvalidNode);
        }
        if !offset.is_multiple_of(4) {
            return Err(TcaError::AlignmentMismatch);
        }
        if !h.contains(offset, 4) {
            return Err(TcaError::OutOfBounds);
        }
        if h.node != self.rank() {
            return Err(TcaError::InvalidHandle);
        }
        let word = self.inner.ptr(h.node, h.addr + offset, 4).ok_or(TcaError::InvalidHandle)?;
        // SAFETY: 4-byte aligned (segment base and handle offsets keep the low bits), inside
        // this rank's heap.
        let word = unsafe { &*word.cast::<AtomicU32>() };
        if word.load(Ordering::Acquire) == value {
            // Arrived already: the handle is checked below only when the wait goes on.
            if lock(&self.inner.engine).is_live(h) {
                return Ok(());
            }
            return Err(TcaError::InvalidHandle);
        }
        if !lock(&self.inner.engine).is_live(h) {
            return Err(TcaError::InvalidHandle);
        }
        let watch = if peer == self.rank() { Watch::Nobody } else { Watch::Peer(peer) };
        self.wait(watch, true, false, |_| Ok(word.load(Ordering::Acquire) == value))
    }

    // ---- bootstrap (handle exchange without MPI) ----

    /// Gathers `send` from every rank into `recv`, rank order (`recv.len()` is
    /// `send.len() * size`): how programs started by `tca run` exchange handles as bytes.
    /// Collective.
    ///
    /// # Errors
    /// [`TcaError::TooLarge`] above 64 KiB per rank; [`TcaError::OutOfBounds`] when `recv` has
    /// the wrong length or ranks contribute different lengths; [`TcaError::PeerDead`];
    /// [`TcaError::Timeout`].
    pub fn allgather(&self, send: &[u8], recv: &mut [u8]) -> TcaResult<()> {
        self.check_live()?;
        let n = send.len();
        if n > BOOT_BYTES {
            return Err(TcaError::TooLarge);
        }
        if recv.len() != n * self.size() as usize {
            return Err(TcaError::OutOfBounds);
        }
        let mut round = lock(&self.inner.boot_round);
        let inner = &self.inner;
        let me = inner.own();
        // Phase 1: publish; phase 2: everyone has read.
        let write_seq = 2 * *round + 1;
        let read_seq = write_seq + 1;
        // SAFETY: the bootstrap buffer is BOOT_BYTES long and only its owner writes it.
        unsafe { std::ptr::copy_nonoverlapping(send.as_ptr(), me.base().add(BOOT), n) };
        me.header().boot_len.0.store(n as u64, Ordering::Relaxed);
        me.header().boot_seq.0.store(write_seq, Ordering::Release);
        inner.ring_all_app_bells();
        self.wait(Watch::Everyone, true, false, |inner| {
            Ok(inner.segs.iter().all(|s| s.header().boot_seq.0.load(Ordering::Acquire) >= write_seq))
        })?;
        for (r, s) in inner.segs.iter().enumerate() {
            if s.header().boot_len.0.load(Ordering::Relaxed) != n as u64 {
                return Err(TcaError::OutOfBounds);
            }
            // SAFETY: rank r published n bytes before its release store of write_seq.
            unsafe { std::ptr::copy_nonoverlapping(s.base().add(BOOT), recv.as_mut_ptr().add(r * n), n) };
        }
        me.header().boot_seq.0.store(read_seq, Ordering::Release);
        inner.ring_all_app_bells();
        self.wait(Watch::Everyone, true, false, |inner| {
            Ok(inner.segs.iter().all(|s| s.header().boot_seq.0.load(Ordering::Acquire) >= read_seq))
        })?;
        *round += 1;
        Ok(())
    }

    /// Waits until every rank has called it. Collective.
    ///
    /// # Errors
    /// [`TcaError::PeerDead`]; [`TcaError::Timeout`].
    pub fn barrier(&self) -> TcaResult<()> {
        self.allgather(&[], &mut [])
    }

    /// Leaves the job (`tcaFinalize`): stops the engine thread and marks this rank finished,
    /// so that peers waiting for it fail at once instead of at their timeout. Later calls
    /// fail with [`TcaError::NotInitialized`]. Drop does the same.
    ///
    /// # Errors
    /// [`TcaError::NotInitialized`] when already finalized.
    pub fn finalize(&self) -> TcaResult<()> {
        if self.inner.finished.swap(true, Ordering::AcqRel) {
            return Err(TcaError::NotInitialized);
        }
        self.inner.shutdown.store(true, Ordering::Release);
        let h = self.inner.own().header();
        Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
        h.state.store(state::FINISHED, Ordering::Release);
        self.inner.ring_all_app_bells();
        Ok(())
    }

    /// Waits until `ready` returns true: spins for the configured spin time, then sleeps on
    /// this rank's doorbell
    /// with a timeout growing from 20 us to 2 ms, checking the watched peers' liveness and the
    /// deadline between sleeps. `cheap`: call `ready` on every spin (it only reads memory);
    /// otherwise only when the doorbell moved. `engine_reports`: `ready` asks the engine, which
    /// turns a dead peer into the right error itself (so a death of a rank the wait does not
    /// depend on does not end it).
    fn wait(
        &self,
        watch: Watch,
        cheap: bool,
        engine_reports: bool,
        mut ready: impl FnMut(&Inner) -> TcaResult<bool>,
    ) -> TcaResult<()> {
        let inner = &*self.inner;
        let h = inner.own().header();
        let mut bell = h.app_bell.0.load(Ordering::Acquire);
        if ready(inner)? {
            return Ok(());
        }
        let mut backoff = Backoff::new(inner.cfg.spin);
        loop {
            match backoff.snooze() {
                None => {
                    if inner.executing.load(Ordering::Relaxed) != 0 {
                        std::thread::yield_now();
                    }
                    let now = h.app_bell.0.load(Ordering::Acquire);
                    if cheap || now != bell {
                        bell = now;
                        if ready(inner)? {
                            return Ok(());
                        }
                    }
                }
                Some(sleep) => {
                    // Slow path: liveness, deadline, then sleep until the doorbell moves.
                    if let Some(dead) = inner.dead_peer(watch) {
                        // The engine fails what involved the dead rank; a wait the engine does
                        // not judge (PIO, bootstrap) fails here.
                        inner.mark_dead(dead);
                        match ready(inner) {
                            Ok(true) => return Ok(()),
                            Err(e) => return Err(e),
                            Ok(false) if !engine_reports => return Err(TcaError::PeerDead),
                            Ok(false) => {}
                        }
                    }
                    if backoff.elapsed() > inner.cfg.timeout {
                        return Err(TcaError::Timeout);
                    }
                    h.app_waiters.0.fetch_add(1, Ordering::SeqCst);
                    if h.app_bell.0.load(Ordering::SeqCst) == bell {
                        sys::futex_wait(&h.app_bell.0, bell, sleep);
                    }
                    h.app_waiters.0.fetch_sub(1, Ordering::SeqCst);
                    bell = h.app_bell.0.load(Ordering::Acquire);
                    if ready(inner)? {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Spin, then sleep for growing slices: the waiting policy of every wait.
struct Backoff {
    /// First read of the clock, [`Self::CLOCK_EVERY`] calls in (a wait that ends sooner never
    /// reads it).
    start: Option<Instant>,
    spin: Duration,
    calls: u32,
    sleeps: u32,
}

impl Backoff {
    /// Calls between two reads of the clock while spinning.
    const CLOCK_EVERY: u32 = 256;
    const FIRST_SLEEP: Duration = Duration::from_micros(20);

    fn new(spin: Duration) -> Self {
        Self { start: None, spin, calls: 0, sleeps: 0 }
    }

    /// Time since the first read of the clock.
    fn elapsed(&self) -> Duration {
        self.start.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Spins (one pause) and returns `None` during the spin time; afterwards returns how long
    /// to sleep next. The clock is read once every [`Self::CLOCK_EVERY`] calls.
    fn snooze(&mut self) -> Option<Duration> {
        self.calls = self.calls.wrapping_add(1);
        if self.sleeps == 0 {
            if !self.calls.is_multiple_of(Self::CLOCK_EVERY) {
                spin_loop();
                return None;
            }
            let start = *self.start.get_or_insert_with(Instant::now);
            if start.elapsed() < self.spin {
                spin_loop();
                return None;
            }
        }
        let d = (Self::FIRST_SLEEP * (1 << self.sleeps.min(7))).min(SLEEP_SLICE);
        self.sleeps += 1;
        Some(d)
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        let _ = self.finalize();
    }
}

impl Inner {
    fn own(&self) -> &Segment {
        &self.segs[self.cfg.rank as usize]
    }

    /// Allocates heap bytes and backs them with memory, so that a full `/dev/shm` is
    /// [`TcaError::OutOfMemory`] here, not a SIGBUS later.
    fn alloc(&self, size: u64) -> TcaResult<u64> {
        let mut heap = lock(&self.heap);
        let off = heap.alloc(size).ok_or(TcaError::OutOfMemory)?;
        if self.own().reserve(off, size).is_err() {
            heap.free(off);
            return Err(TcaError::OutOfMemory);
        }
        Ok(off)
    }

    /// Segment offset of a pointer into this rank's segment.
    fn own_offset(&self, ptr: *mut u8) -> Option<u64> {
        let base = self.own().base() as usize;
        let p = ptr as usize;
        (p >= base + HEAP && p < base + self.own().len()).then(|| (p - base) as u64)
    }

    /// Local pointer to `len` bytes at global address `addr`, which must be on `node` and
    /// inside its heap.
    fn ptr(&self, node: u16, addr: u64, len: u64) -> Option<*mut u8> {
        let (n, off) = segment::split(addr);
        if n != u64::from(node) {
            return None;
        }
        self.segs.get(node as usize)?.heap_ptr(off, len)
    }

    fn ring_all_app_bells(&self) {
        for s in &self.segs {
            let h = s.header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
    }

    /// Moves every notification from the rings of this rank's segment into its engine.
    fn drain_notifications(&self, e: &mut Engine) {
        let own = self.own();
        for src in 0..self.cfg.size {
            Segment::drain(own.ring(src), |v| {
                let (slot, tag) = segment::decode_notify(v);
                // A malformed entry can only come from a corrupted peer: drop it.
                let _ = e.handle_notify_arrived(src, slot, tag);
            });
        }
    }

    fn peer_alive(&self, node: u16) -> bool {
        let h: &Header = self.segs[node as usize].header();
        h.state.load(Ordering::Acquire) != state::FINISHED && sys::process_alive(h.pid.load(Ordering::Relaxed))
    }

    fn dead_peer(&self, watch: Watch) -> Option<u16> {
        match watch {
            Watch::Nobody => None,
            Watch::Peer(p) => (!self.peer_alive(p)).then_some(p),
            Watch::Everyone => (0..self.cfg.size).filter(|&r| r != self.cfg.rank).find(|&r| !self.peer_alive(r)),
        }
    }

    /// Tells the engine a peer is gone: its runs fail, waits for it fail.
    fn mark_dead(&self, node: u16) {
        let _ = lock(&self.engine).handle_peer_dead(node);
        let h = self.own().header();
        Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
    }

    /// Pushes a notification into `dst`'s ring for this rank; waits while the ring is full.
    /// `false` when `dst` died or stopped consuming for the whole timeout.
    fn push_notify(&self, dst: u16, slot: u16, tag: u32) -> bool {
        let _producer = lock(&self.producers[dst as usize]);
        let seg = &self.segs[dst as usize];
        let ring = seg.ring(self.cfg.rank);
        let v = segment::encode_notify(slot, tag);
        let start = Instant::now();
        while !Segment::push(ring, v) {
            if !self.peer_alive(dst) || start.elapsed() > self.cfg.timeout {
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        let h = seg.header();
        Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        true
    }

    /// Pushes a proxy-read message into `dst`'s message ring for this rank and wakes `dst`'s
    /// engine thread; waits while the ring is full. `false` as for [`Inner::push_notify`].
    fn push_msg(&self, dst: u16, m: &Msg) -> bool {
        let _producer = lock(&self.producers[dst as usize]);
        let seg = &self.segs[dst as usize];
        let entry = m.encode();
        let start = Instant::now();
        while !seg.msg_ring(self.cfg.rank).push(&entry) {
            if !self.peer_alive(dst) || start.elapsed() > self.cfg.timeout {
                return false;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        let h = seg.header();
        Segment::ring_bell(&h.engine_bell.0, &h.engine_waiters.0);
        true
    }

    /// Whether a message ring of this rank holds anything (no lock taken).
    fn has_msgs(&self) -> bool {
        let own = self.own();
        (0..self.cfg.size).any(|src| {
            let r = own.msg_ring(src);
            r.head.0.load(Ordering::Acquire) != r.tail.0.load(Ordering::Relaxed)
        })
    }

    /// Applies one proxy-read message to this rank's engine. A request the engine cannot
    /// register (table full) is answered with the error, so the requester's run fails
    /// instead of waiting.
    fn apply_msg(&self, e: &mut Engine, m: Msg, refusals: &mut Vec<(u16, Msg)>) {
        match m {
            Msg::Request(r) => {
                if let Err(err) = e.handle_proxy_request(r) {
                    let done = ProxyDone { responder: self.cfg.rank, token: r.token, result: Err(err) };
                    refusals.push((r.requester, Msg::Done(done)));
                }
            }
            Msg::Interrupt => e.handle_interrupt(),
            Msg::Done(d) => {
                let _ = e.handle_proxy_done(d);
            }
        }
    }
}

/// Removes the names of segments whose owner died before it could remove them (a rank killed
/// inside `tcaInit` under a launcher that does not clean up): a name is removed only when its
/// header is valid (so its creator finished writing it) and names a process that is gone.
pub fn sweep_stale() {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("tca-") {
            continue;
        }
        let Ok(Some(m)) = sys::shm_open_existing(&name, HEAP) else {
            continue;
        };
        let h = Segment::new_ref(&m);
        if h.magic.load(Ordering::Acquire) == segment::MAGIC && !sys::process_alive(h.pid.load(Ordering::Relaxed)) {
            let _ = sys::shm_unlink(&name);
        }
    }
}

fn create_own(name: &str, len: usize) -> Result<sys::Mapping, ConfigError> {
    for _ in 0..3 {
        match sys::shm_create(name, len) {
            Ok(m) => return Ok(m),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // A leftover of a crashed run of the same job id, or a live duplicate rank.
                if let Ok(Some(m)) = sys::shm_open_existing(name, HEAP) {
                    let h = Segment::new_ref(&m);
                    let pid = h.pid.load(Ordering::Relaxed);
                    if h.state.load(Ordering::Acquire) != state::FINISHED
                        && sys::process_alive(pid)
                        && pid != sys::getpid()
                    {
                        return Err(cerr(
                            TcaError::NotInitialized,
                            format!("/dev/shm/{name} belongs to live process {pid}: same job id and rank twice?"),
                        ));
                    }
                }
                let _ = sys::shm_unlink(name);
            }
            Err(e) => {
                return Err(cerr(TcaError::OutOfMemory, format!("cannot create /dev/shm/{name} ({len} bytes): {e}")))
            }
        }
    }
    Err(cerr(TcaError::NotInitialized, format!("cannot claim /dev/shm/{name}")))
}

fn open_peer(cfg: &Config, r: u16, deadline: Instant) -> Result<sys::Mapping, ConfigError> {
    let name = cfg.segment_name(r);
    loop {
        match sys::shm_open_existing(&name, HEAP) {
            Ok(Some(m)) => {
                let h = Segment::new_ref(&m);
                let ok = h.magic.load(Ordering::Relaxed) == segment::MAGIC
                    && h.state.load(Ordering::Acquire) >= state::READY
                    && h.state.load(Ordering::Acquire) != state::FINISHED
                    && h.node.load(Ordering::Relaxed) == u32::from(r)
                    && h.nodes.load(Ordering::Relaxed) == u32::from(cfg.size)
                    && h.bytes.load(Ordering::Relaxed) == m.len() as u64
                    && sys::process_alive(h.pid.load(Ordering::Relaxed));
                if ok {
                    return Ok(m);
                }
            }
            Ok(None) => {}
            Err(e) => return Err(cerr(TcaError::OutOfMemory, format!("cannot map /dev/shm/{name}: {e}"))),
        }
        if Instant::now() > deadline {
            return Err(cerr(
                TcaError::Timeout,
                format!("rank {r} of job {} did not start within {:?}", cfg.job, cfg.timeout),
            ));
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Buffers of one executor of engine actions (the engine thread, or a waiting caller).
#[derive(Default)]
struct Work {
    batch: Vec<Action>,
    done: Vec<Token>,
    local: Vec<(u16, u16, u32)>,
    msgs: Vec<(u16, Msg)>,
}

impl Inner {
    /// Takes every action the engine has queued and carries it out with real memory: copies
    /// for writes, descriptor reads for fetches, ring entries for notifications; then reports
    /// the completions. Returns false when there was nothing to do. Called by the engine
    /// thread, and by callers waiting for DMA, so that a waiting caller runs its own chain
    /// instead of waiting for the thread to be scheduled.
    fn progress(&self, work: &mut Work) -> bool {
        let mut any = false;
        while self.progress_once(work) {
            any = true;
        }
        any
    }

    fn progress_once(&self, work: &mut Work) -> bool {
        let me = self.cfg.rank;
        let inner = self;
        let mut refusals = Vec::new();
        {
            let mut e = lock(&self.engine);
            if self.has_msgs() {
                let own = self.own();
                for src in 0..self.cfg.size {
                    own.msg_ring(src).drain(|b| {
                        if let Some(m) = Msg::decode(b) {
                            self.apply_msg(&mut e, m, &mut refusals);
                        }
                    });
                }
            }
            while let Some(a) = e.poll_action() {
                work.batch.push(a);
            }
        }
        for (node, m) in refusals {
            if !self.push_msg(node, &m) {
                self.mark_dead(node);
            }
        }
        if work.batch.is_empty() {
            return false;
        }
        self.executing.fetch_add(1, Ordering::Relaxed);
        let Work { batch, done, local, msgs } = work;
        let mut wake_app = false;
        for a in batch.drain(..) {
            match a {
                Action::Write(w) => {
                    let src = inner.ptr(w.src_node, w.src_addr, w.len);
                    let dst = inner.ptr(w.dst_node, w.dst_addr, w.len);
                    if let (Some(s), Some(d)) = (src, dst) {
                        // SAFETY: both ranges lie inside mapped heaps (set_chain checked every
                        // handle; the engine checked offsets against the handles).
                        unsafe { std::ptr::copy(s, d, w.len as usize) };
                    }
                    done.push(w.token);
                }
                Action::Descriptor { channel, entry, source: DescriptorSource::HostMemory } => {
                    // The controller reads the 32-byte descriptor from the table in memory.
                    if let Some((off, n)) = lock(&inner.tables)[channel as usize % CHANNELS] {
                        if (entry as usize) < n {
                            let at = off + u64::from(entry) * DESCRIPTOR_BYTES as u64;
                            if let Some(p) = inner.own().heap_ptr(at, DESCRIPTOR_BYTES as u64) {
                                let mut buf = [0u8; DESCRIPTOR_BYTES];
                                // SAFETY: inside the table block of this segment.
                                unsafe { std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), DESCRIPTOR_BYTES) };
                                std::hint::black_box(Descriptor::decode(&buf).ok());
                            }
                        }
                    }
                }
                Action::Notify(n) => {
                    if n.dst_node == me {
                        local.push((n.src_node, n.slot, n.tag));
                        wake_app = true;
                    } else if !inner.push_notify(n.dst_node, n.slot, n.tag) {
                        inner.mark_dead(n.dst_node);
                    }
                }
                Action::ChannelDone { .. } | Action::ChannelFailed { .. } => wake_app = true,
                // Registers, internal memory and kicks cost nothing here.
                Action::Kick { .. } | Action::Descriptor { .. } => {}
                Action::RegisterProxy { node, request } => msgs.push((node, Msg::Request(request))),
                Action::Interrupt { node } => msgs.push((node, Msg::Interrupt)),
                Action::ProxyDone { node, done } => msgs.push((node, Msg::Done(done))),
            }
        }
        // Messages to other ranks go out in order; those to this rank are applied below.
        let mut to_self = Vec::new();
        for (node, m) in msgs.drain(..) {
            if node == me {
                to_self.push(m);
            } else if !self.push_msg(node, &m) {
                self.mark_dead(node);
            }
        }
        if !done.is_empty() || !local.is_empty() || !to_self.is_empty() {
            let mut e = lock(&self.engine);
            for t in done.drain(..) {
                let _ = e.handle_write_done(t);
            }
            for (src, slot, tag) in local.drain(..) {
                let _ = e.handle_notify_arrived(src, slot, tag);
            }
            let mut refusals = Vec::new();
            for m in to_self {
                self.apply_msg(&mut e, m, &mut refusals);
            }
            drop(e);
            for (node, m) in refusals {
                if !self.push_msg(node, &m) {
                    self.mark_dead(node);
                }
            }
        }
        self.executing.fetch_sub(1, Ordering::Relaxed);
        if wake_app {
            let h = self.own().header();
            Segment::ring_bell(&h.app_bell.0, &h.app_waiters.0);
        }
        true
    }
}

/// The DMA engine thread: carries out the engine's actions as they come, sleeping on the
/// engine doorbell when there are none, until shutdown.
fn engine_thread(inner: &Inner) {
    let h = inner.own().header();
    let mut work = Work::default();
    let mut idle: Option<Backoff> = None;
    loop {
        let bell = h.engine_bell.0.load(Ordering::Acquire);
        if inner.progress(&mut work) {
            idle = None;
            continue;
        }
        if inner.shutdown.load(Ordering::Acquire) {
            return;
        }
        let backoff = idle.get_or_insert_with(|| Backoff::new(inner.cfg.spin));
        if backoff.snooze().is_none() {
            continue;
        }
        h.engine_waiters.0.store(1, Ordering::SeqCst);
        if h.engine_bell.0.load(Ordering::SeqCst) == bell {
            sys::futex_wait(&h.engine_bell.0, bell, Duration::from_millis(50));
        }
        h.engine_waiters.0.store(0, Ordering::SeqCst);
    }
}
