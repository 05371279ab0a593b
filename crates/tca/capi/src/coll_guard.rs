//! Keeps the collective library's DMA chains from running in place of the program's.
//!
//! The library registers its own chains ([`Fabric::desc_set`]) on the channels
//! `TCA_COLL_CHANNELS` names. A program that registered a chain on such a channel once and
//! kicks it every iteration (`tcaStartDMADesc`) would run the library's chain after a
//! collective. So the fabric handed to the library is a [`Recording`] one, which notes every
//! channel the library set a chain on; the rank's `tcaStartDMADesc` on such a channel then
//! answers [`TCA_ERROR_CHANNEL_TAKEN`] until the program registers a chain there again
//! (`tcaDescSet`, `tcaSetDMAChain`, `tcaSetDMAChainInt`, or `tcaDestroyDMADesc` registering the
//! remaining tags). `tcaWaitDMAC` is unchanged: it waits for the channel's last run, which runs
//! nothing and, after a collective, is over.
//!
//! Why an error and not the program's chain registered again after the collective: that
//! registration could fail inside the collective for reasons of the program's (a handle of its
//! chain destroyed since), and on the hardware registering a table is work the program did not
//! ask for. State is kept per rank (per fabric object, as the descriptor tables do).

use crate::results::{CErr, TCA_ERROR_CHANNEL_TAKEN};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};
use tca_proto::fabric::{CopyKind, PointerInfo};
use tca_proto::{Desc, Fabric, FabricResult, Handle, MemoryType, PioRegion};

/// The channels the library took, as a bit mask, by rank.
fn taken() -> MutexGuard<'static, BTreeMap<usize, u8>> {
    static TAKEN: Mutex<BTreeMap<usize, u8>> = Mutex::new(BTreeMap::new());
    TAKEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The collective library of rank `key` set chains on the channels of `mask`.
pub(crate) fn took(key: usize, mask: u8) {
    if mask != 0 {
        *taken().entry(key).or_default() |= mask;
    }
}

/// The program of rank `key` registered a chain on `ch`: it is the program's again.
pub(crate) fn chain_set(key: usize, ch: u8) {
    if let Some(m) = taken().get_mut(&key) {
        *m &= !(1u8 << ch);
    }
}

/// `tcaStartDMADesc`: [`TCA_ERROR_CHANNEL_TAKEN`] where the library's chain is on `ch`.
pub(crate) fn check_start(key: usize, ch: u8) -> Result<(), CErr> {
    match taken().get(&key) {
        Some(m) if ch < 8 && m & (1 << ch) != 0 => Err(CErr::Abi(TCA_ERROR_CHANNEL_TAKEN)),
        _ => Ok(()),
    }
}

/// `tcaFinalize`.
pub(crate) fn forget(key: usize) {
    taken().remove(&key);
}

/// A fabric that passes every call on to `inner` and notes the channels `desc_set` registered
/// a chain on.
pub(crate) struct Recording<'a> {
    inner: &'a dyn Fabric,
    set: AtomicU8,
}

impl<'a> Recording<'a> {
    pub(crate) fn new(inner: &'a dyn Fabric) -> Self {
        Recording { inner, set: AtomicU8::new(0) }
    }

    /// The channels a chain was registered on, as a bit mask.
    pub(crate) fn channels(&self) -> u8 {
        self.set.load(Ordering::Relaxed)
    }
}

impl Fabric for Recording<'_> {
    fn node_id(&self) -> FabricResult<u16> {
        self.inner.node_id()
    }
    fn node_count(&self) -> FabricResult<u16> {
        self.inner.node_count()
    }
    fn malloc(&self, size: u64, mem: MemoryType) -> FabricResult<u64> {
        self.inner.malloc(size, mem)
    }
    fn free(&self, addr: u64) -> FabricResult<()> {
        self.inner.free(addr)
    }
    fn create_handle(&self, addr: u64, size: u64, mem: MemoryType) -> FabricResult<Handle> {
        self.inner.create_handle(addr, size, mem)
    }
    fn destroy_handle(&self, handle: &Handle) -> FabricResult<()> {
        self.inner.destroy_handle(handle)
    }
    fn write(&self, handle: &Handle, offset: u64, data: &[u8]) -> FabricResult<()> {
        self.inner.write(handle, offset, data)
    }
    fn read(&self, handle: &Handle, offset: u64, out: &mut [u8]) -> FabricResult<()> {
        self.inner.read(handle, offset, out)
    }
    fn desc_set(&self, channel: u8, desc: &Desc) -> FabricResult<()> {
        let r = self.inner.desc_set(channel, desc);
        // A refused chain leaves the channel's chain in place.
        if r.is_ok() && channel < 8 {
            self.set.fetch_or(1 << channel, Ordering::Relaxed);
        }
        r
    }
    fn start_dma(&self, channel: u8) -> FabricResult<()> {
        self.inner.start_dma(channel)
    }
    fn wait_dmac(&self, channel: u8) -> FabricResult<()> {
        self.inner.wait_dmac(channel)
    }
    fn wait_dma_recv(&self, handle: &Handle, slot: u32, tag: u32) -> FabricResult<()> {
        self.inner.wait_dma_recv(handle, slot, tag)
    }
    fn set_pio_region(&self, handle: &Handle, offset: u64, len: u64) -> FabricResult<PioRegion> {
        self.inner.set_pio_region(handle, offset, len)
    }
    fn send_pio(&self, region: &PioRegion, offset: u64, data: &[u8]) -> FabricResult<()> {
        self.inner.send_pio(region, offset, data)
    }
    fn send_pio_commit(&self) -> FabricResult<()> {
        self.inner.send_pio_commit()
    }
    fn wait_pio(&self, handle: &Handle, offset: u64, expected: &[u8], peer: Option<u16>) -> FabricResult<()> {
        self.inner.wait_pio(handle, offset, expected, peer)
    }
    fn barrier(&self) -> FabricResult<()> {
        self.inner.barrier()
    }
    fn allgather(&self, send: &[u8]) -> FabricResult<Vec<u8>> {
        self.inner.allgather(send)
    }
    fn wtime(&self) -> FabricResult<f64> {
        self.inner.wtime()
    }
    fn compute(&self, seconds: f64) -> FabricResult<()> {
        self.inner.compute(seconds)
    }
    fn finalize(&self) -> FabricResult<()> {
        self.inner.finalize()
    }
    fn gpu_count(&self) -> FabricResult<u32> {
        self.inner.gpu_count()
    }
    fn malloc_on(&self, size: u64, mem: MemoryType, gpu: u32) -> FabricResult<u64> {
        self.inner.malloc_on(size, mem, gpu)
    }
    fn gpu_peer_access(&self, gpu: u32, peer: u32) -> FabricResult<bool> {
        self.inner.gpu_peer_access(gpu, peer)
    }
    fn pointer_info(&self, ptr: u64) -> FabricResult<PointerInfo> {
        self.inner.pointer_info(ptr)
    }
    unsafe fn memcpy(&self, dst: u64, src: u64, len: u64, kind: CopyKind) -> FabricResult<()> {
        // SAFETY: the caller's contract, passed on unchanged.
        unsafe { self.inner.memcpy(dst, src, len, kind) }
    }
}
