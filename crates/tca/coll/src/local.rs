//! Node-local DMA into the caller's device buffers: a PEACH2 DMA may have its source and its
//! destination on the same node (seed 000 §3.5.2: the DMA controller reads from and writes to
//! any address of the TCA window, this node's included), so results reach GPU memory without
//! `cudaMemcpy` and, from [`PUT_DMA_MIN`] bytes on, without a long run of PIO stores.
//!
//! A copy is one entry (a block-stride entry for the blocks of an allgather) on the first
//! configured channel, with a notification of slot [`SLOT_LOCAL`] tagged with this rank's own
//! count of local copies; the rank waits for the notification (the data has landed: the
//! notification is written after it on the same path) and for the channel's run to end.

use crate::coll::Coll;
use crate::error::CollResult;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType};

/// The notification slot of node-local copies.
pub const SLOT_LOCAL: u32 = 60;

/// Results of at least this many bytes go into device memory by a local DMA from host memory
/// instead of PIO stores. Measured on simulated HA-PACS/TCA (`docs/collectives.md`): results
/// of 8 and 16 KiB took 1.3 and 0.7 us longer by DMA, 32 KiB 0.5 us less.
pub const PUT_DMA_MIN: usize = 32 << 10;

/// A pinned host buffer with a handle, the source of local copies of results computed by the
/// CPU (grown by doubling).
#[derive(Debug)]
pub(crate) struct Stage {
    ptr: u64,
    bytes: u64,
    handle: Handle,
}

/// One node-local copy: `width` bytes `count` times, the i-th from `src_off + i * src_pitch`
/// of `src` to `dst_off + i * dst_pitch` of `dst`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocalCopy<'a> {
    pub dst: &'a Handle,
    pub dst_off: u64,
    pub dst_pitch: u64,
    pub src: &'a Handle,
    pub src_off: u64,
    pub src_pitch: u64,
    pub width: u64,
    pub count: u64,
}

impl Coll {
    /// Runs `c` and returns once its data has landed.
    pub(crate) fn local_copy(&mut self, f: &dyn Fabric, c: LocalCopy<'_>) -> CollResult<()> {
        let ch = self.config.channels[0];
        self.local_tag = self.local_tag.wrapping_add(1);
        let tag = self.local_tag;
        let mut d = Desc::new();
        if c.count == 1 {
            d.set_memcpy(c.dst, c.dst_off, c.src, c.src_off, c.width, DmaFlags::NOTIFY, SLOT_LOCAL, tag)?;
        } else {
            d.set_memcpy_2d(
                c.dst,
                c.dst_off,
                c.dst_pitch,
                c.src,
                c.src_off,
                c.src_pitch,
                c.width,
                c.count,
                DmaFlags::NOTIFY,
                SLOT_LOCAL,
                tag,
            )?;
        }
        f.desc_set(ch, &d)?;
        f.start_dma(ch)?;
        f.wait_dma_recv(c.src, SLOT_LOCAL, tag)?;
        f.wait_dmac(ch)?;
        Ok(())
    }

    /// `data` (whole words) into the device memory of `dst` (a handle on exactly those bytes):
    /// copied by the CPU into the stage at the same low 4 address bits as `dst`, then one local
    /// DMA.
    pub(crate) fn dma_put(&mut self, f: &dyn Fabric, dst: &Handle, data: &[u8]) -> CollResult<()> {
        let need = data.len() as u64 + 16;
        if self.stage.as_ref().is_none_or(|s| s.bytes < need) {
            self.drop_stage(f)?;
            let bytes = need.next_power_of_two().max(4096);
            let ptr = f.malloc(bytes, MemoryType::Cpu)?;
            let handle = f.create_handle(ptr, bytes, MemoryType::Cpu)?;
            self.stage = Some(Stage { ptr, bytes, handle });
        }
        let s = self.stage.as_ref().expect("allocated above");
        let at = dst.addr.wrapping_sub(s.handle.addr) & 15;
        // SAFETY: `at + data.len()` lies inside the stage, which only this rank uses, and no
        // DMA reads it now (the last local copy was waited for).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), (s.ptr + at) as usize as *mut u8, data.len());
        }
        let src = s.handle;
        let len = data.len() as u64;
        let c =
            LocalCopy { dst, dst_off: 0, dst_pitch: len, src: &src, src_off: at, src_pitch: len, width: len, count: 1 };
        self.local_copy(f, c)
    }

    /// Frees the stage, if any.
    pub(crate) fn drop_stage(&mut self, f: &dyn Fabric) -> CollResult<()> {
        if let Some(s) = self.stage.take() {
            f.destroy_handle(&s.handle)?;
            f.free(s.ptr)?;
        }
        Ok(())
    }
}
