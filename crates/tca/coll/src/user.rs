//! The caller's buffers: host memory (pageable or the fabric's pinned memory) the CPU copies
//! directly. Device memory is registered with a handle for the call where PEACH2 can move the
//! data itself ([`UserBuf::handle`], `crate::device`): small contributions are DMA sources and
//! small results PIO stores into it; the rest goes
//! through the fabric's `cudaMemcpy` ([`Fabric::memcpy`]), which the simulator times as a PCIe
//! copy. A host copy by the CPU costs no simulated time (as the reduction arithmetic does not).

use crate::error::CollResult;
use tca_proto::fabric::{CopyKind, MemorySpace};
use tca_proto::{Fabric, Handle, MemoryType};

/// A buffer of the caller: its address in this process and whether it is device memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserBuf {
    ptr: u64,
    /// The GPU of device memory.
    gpu: Option<u32>,
    /// The end of the fabric's allocation holding the buffer (device memory only).
    end: u64,
}

impl UserBuf {
    /// What the fabric knows of `ptr`.
    pub(crate) fn new(f: &dyn Fabric, ptr: u64) -> CollResult<UserBuf> {
        if ptr == 0 {
            return Ok(UserBuf { ptr, gpu: None, end: 0 });
        }
        let info = f.pointer_info(ptr)?;
        let gpu = match info.space {
            MemorySpace::Device(g) => Some(g),
            _ => None,
        };
        Ok(UserBuf { ptr, gpu, end: info.base.saturating_add(info.size) })
    }

    /// The GPU whose memory the buffer is, if it is device memory.
    pub(crate) fn gpu(&self) -> Option<u32> {
        self.gpu
    }

    /// A host buffer (a slice of the caller).
    pub(crate) fn host(ptr: *const u8) -> UserBuf {
        UserBuf { ptr: ptr as usize as u64, gpu: None, end: 0 }
    }

    /// A handle on `len` bytes from byte `off` of a device buffer, rounded up to whole words,
    /// when those words lie inside its allocation and start at `align` bytes (a power of two)
    /// of the model's addresses; `None` otherwise (host memory, or the data must be staged).
    /// The caller destroys the handle.
    pub(crate) fn handle(&self, f: &dyn Fabric, off: u64, len: u64, align: u64) -> CollResult<Option<Handle>> {
        let at = self.ptr + off;
        let words = len.div_ceil(4) * 4;
        if self.gpu.is_none() || len == 0 || !at.is_multiple_of(4) || at.saturating_add(words) > self.end {
            return Ok(None);
        }
        let h = f.create_handle(at, words, MemoryType::Gpu)?;
        if !h.addr.is_multiple_of(align) {
            f.destroy_handle(&h)?;
            return Ok(None);
        }
        Ok(Some(h))
    }

    /// The address of byte `off`.
    pub(crate) fn at(&self, off: u64) -> u64 {
        self.ptr + off
    }

    /// Copies `out.len()` bytes from byte `off` of the buffer.
    ///
    /// # Safety
    /// The buffer holds `off + out.len()` bytes.
    pub(crate) unsafe fn read(&self, f: &dyn Fabric, off: u64, out: &mut [u8]) -> CollResult<()> {
        // SAFETY: the caller's contract; out is a slice of this process.
        unsafe { self.copy_out(f, off, out.as_mut_ptr() as usize as u64, out.len() as u64) }
    }

    /// Copies `len` bytes from byte `off` of the buffer to host memory at `dst`.
    ///
    /// # Safety
    /// The buffer holds `off + len` bytes and `dst` is host memory of `len` bytes.
    pub(crate) unsafe fn copy_out(&self, f: &dyn Fabric, off: u64, dst: u64, len: u64) -> CollResult<()> {
        if len == 0 {
            return Ok(());
        }
        if self.gpu.is_some() {
            // SAFETY: the caller's contract.
            unsafe { f.memcpy(dst, self.ptr + off, len, CopyKind::DeviceToHost)? };
        } else {
            // SAFETY: the caller's contract; ranges may overlap (in place).
            unsafe { std::ptr::copy((self.ptr + off) as usize as *const u8, dst as usize as *mut u8, len as usize) };
        }
        Ok(())
    }

    /// Copies `data` to byte `off` of the buffer.
    ///
    /// # Safety
    /// The buffer holds `off + data.len()` bytes.
    pub(crate) unsafe fn write(&self, f: &dyn Fabric, off: u64, data: &[u8]) -> CollResult<()> {
        // SAFETY: the caller's contract.
        unsafe { self.copy_in(f, off, data.as_ptr() as usize as u64, data.len() as u64) }
    }

    /// Copies `len` bytes of host memory at `src` to byte `off` of the buffer.
    ///
    /// # Safety
    /// The buffer holds `off + len` bytes and `src` is host memory of `len` bytes.
    pub(crate) unsafe fn copy_in(&self, f: &dyn Fabric, off: u64, src: u64, len: u64) -> CollResult<()> {
        if len == 0 {
            return Ok(());
        }
        if self.gpu.is_some() {
            // SAFETY: the caller's contract.
            unsafe { f.memcpy(self.ptr + off, src, len, CopyKind::HostToDevice)? };
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::ptr::copy(src as usize as *const u8, (self.ptr + off) as usize as *mut u8, len as usize) };
        }
        Ok(())
    }
}
