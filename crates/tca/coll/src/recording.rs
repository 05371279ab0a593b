//! A fabric that notes which DMA channels its user registered chains on.
//!
//! The library registers its own chains on the channels `TCA_COLL_CHANNELS` names. A program
//! that registered a chain once and kicks it every iteration would, after a collective, run the
//! library's chain. Its API layer (the C ABI, the Python rank) hands the library a
//! [`Recording`] of the rank's fabric and, after the collective, refuses kicks on the channels
//! it reports until the program registers a chain there again.

use std::sync::atomic::{AtomicU8, Ordering};
use tca_proto::fabric::{CopyKind, PointerInfo};
use tca_proto::{Desc, Fabric, FabricResult, Handle, MemoryType, PioRegion};

/// A fabric that passes every call on to `inner` and notes the channels `desc_set` registered
/// a chain on.
pub struct Recording<'a> {
    inner: &'a dyn Fabric,
    set: AtomicU8,
}

impl<'a> Recording<'a> {
    /// `inner`, with no channel noted yet.
    pub fn new(inner: &'a dyn Fabric) -> Self {
        Recording { inner, set: AtomicU8::new(0) }
    }

    /// The channels a chain was registered on, as a bit mask.
    pub fn channels(&self) -> u8 {
        self.set.load(Ordering::Relaxed)
    }
}

impl Fabric for Recording<'_> {
    fn node_id(&self) -> FabricResult<u16> {
        self.inner.node_id()
    }
    fn call_within(&self, within: Option<&'static str>) {
        self.inner.call_within(within);
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
