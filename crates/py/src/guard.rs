//! The fabric the collective library gets on a Python rank: every call passed on, and the
//! channels `desc_set` registered a chain on noted, so that the rank's `start_dma` on such a
//! channel raises `TcaApiError` (`ChannelTaken`, code 111 as in the C ABI) until the program
//! calls `desc_set` there again, instead of running the library's chain (the C ABI does the
//! same: `crates/tca/capi/src/coll_guard.rs`).

use std::sync::atomic::{AtomicU8, Ordering};
use tca_proto::fabric::{CopyKind, PointerInfo};
use tca_proto::{Desc, Fabric, FabricResult, Handle, MemoryType, PioRegion};

/// The result code of a kick on a channel the library took (`TCA_ERROR_CHANNEL_TAKEN`).
pub(crate) const CHANNEL_TAKEN: i32 = 111;

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
