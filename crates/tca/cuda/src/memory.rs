//! Memory and copies: `cudaMalloc`, `cudaMallocHost`, `cudaHostAlloc`, `cudaFree`,
//! `cudaFreeHost`, `cudaMemcpy`, `cudaMemset`, `cudaPointerGetAttributes`.
//!
//! Device memory is the fabric's GPU memory (`tcaMemoryGPU` on the device `cudaSetDevice`
//! chose), host memory from `cudaMallocHost` is the fabric's host memory (`tcaMemoryCPU`):
//! both can be given to `tcaCreateHandle`. Any other pointer of the program is pageable host
//! memory.

use crate::errors::{api, from_tca, CudaError, INITIALIZATION_ERROR, INVALID_MEMCPY_DIRECTION, INVALID_VALUE, SUCCESS};
use crate::libtca::{libtca, Libtca};
use std::ffi::{c_int, c_uint, c_void};

/// `tcaMemoryCPU`, `tcaMemoryGPU` (`tca-api.h`).
const TCA_MEMORY_CPU: c_int = 0;
const TCA_MEMORY_GPU: c_int = 1;

/// `cudaHostAllocDefault | Portable | Mapped | WriteCombined`: every flag `cudaHostAlloc`
/// takes; all give the same pinned memory here.
const HOST_ALLOC_FLAGS: c_uint = 0x1 | 0x2 | 0x4;

/// Calls `libtca.so` and converts its result; `cudaErrorInitializationError` without it.
pub(crate) fn with_libtca(f: impl FnOnce(&Libtca) -> c_int) -> CudaError {
    match libtca() {
        Some(t) => from_tca(f(t)),
        None => INITIALIZATION_ERROR,
    }
}

/// `enum cudaMemoryType`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryType {
    /// Memory the runtime did not allocate (`cudaMemoryTypeUnregistered`).
    Unregistered = 0,
    /// Pinned host memory (`cudaMemoryTypeHost`).
    Host = 1,
    /// Device memory (`cudaMemoryTypeDevice`).
    Device = 2,
    /// Managed memory (`cudaMemoryTypeManaged`; never returned here).
    Managed = 3,
}

/// `struct cudaPointerAttributes`, with both the field name of CUDA 10 and later (`type`) and
/// that of earlier versions (`memoryType`), so that programs of either era compile.
#[repr(C)]
#[derive(Debug)]
pub struct PointerAttributes {
    /// As `kind`; the name before CUDA 10.
    pub memory_type: MemoryType,
    /// `type`.
    pub kind: MemoryType,
    /// The device of the memory; `cudaInvalidDeviceId` (-2) for unregistered memory.
    pub device: c_int,
    /// The pointer as the device sees it (unified addressing: the pointer itself), NULL for
    /// unregistered memory.
    pub device_pointer: *mut c_void,
    /// The pointer as the host sees it, NULL for device memory.
    pub host_pointer: *mut c_void,
    /// Always 0 (no managed memory).
    pub is_managed: c_int,
}

unsafe fn alloc(ptr: *mut *mut c_void, size: usize, mem: c_int) -> CudaError {
    if ptr.is_null() {
        return INVALID_VALUE;
    }
    if size == 0 {
        // As CUDA: no memory, a NULL pointer, success.
        *ptr = std::ptr::null_mut();
        return SUCCESS;
    }
    with_libtca(|t| (t.malloc)(ptr, size, mem))
}

/// `cudaMalloc`: GPU memory of the current device, zero-filled.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaMalloc(dev_ptr: *mut *mut c_void, size: usize) -> CudaError {
    api(|| alloc(dev_ptr, size, TCA_MEMORY_GPU))
}

/// `cudaMallocHost`: pinned host memory, zero-filled.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaMallocHost(ptr: *mut *mut c_void, size: usize) -> CudaError {
    api(|| alloc(ptr, size, TCA_MEMORY_CPU))
}

/// `cudaHostAlloc`: as `cudaMallocHost`; every flag CUDA defines is accepted.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaHostAlloc(ptr: *mut *mut c_void, size: usize, flags: c_uint) -> CudaError {
    api(|| if flags & !HOST_ALLOC_FLAGS != 0 { INVALID_VALUE } else { alloc(ptr, size, TCA_MEMORY_CPU) })
}

fn release(ptr: *mut c_void, mem: c_int) -> CudaError {
    if ptr.is_null() {
        return SUCCESS;
    }
    // SAFETY: libtca checks that the pointer starts a buffer of that kind before freeing it.
    with_libtca(|t| unsafe { (t.free)(ptr, mem) })
}

/// `cudaFree`: `dev_ptr` must be a pointer `cudaMalloc` returned; NULL does nothing.
#[no_mangle]
pub extern "C-unwind" fn cudaFree(dev_ptr: *mut c_void) -> CudaError {
    api(|| release(dev_ptr, TCA_MEMORY_GPU))
}

/// `cudaFreeHost`: `ptr` must be a pointer `cudaMallocHost` returned; NULL does nothing.
#[no_mangle]
pub extern "C-unwind" fn cudaFreeHost(ptr: *mut c_void) -> CudaError {
    api(|| release(ptr, TCA_MEMORY_CPU))
}

/// `cudaMemcpy`: `kind` is a `cudaMemcpyKind` (`cudaMemcpyDefault`: from the pointers); a kind
/// that contradicts the pointers is `cudaErrorInvalidValue`. Returns when the copy is done.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaMemcpy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> CudaError {
    api(|| {
        if !(0..=4).contains(&kind) {
            return INVALID_MEMCPY_DIRECTION;
        }
        if count == 0 {
            return SUCCESS;
        }
        with_libtca(|t| (t.memcpy)(dst, src, count, kind))
    })
}

/// `cudaMemset`: sets `count` bytes of device memory to `value`.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaMemset(dev_ptr: *mut c_void, value: c_int, count: usize) -> CudaError {
    api(|| if count == 0 { SUCCESS } else { with_libtca(|t| (t.memset)(dev_ptr, value, count)) })
}

/// `cudaPointerGetAttributes` (CUDA 11 semantics: memory the runtime did not allocate is
/// `cudaMemoryTypeUnregistered`, not an error).
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaPointerGetAttributes(
    attributes: *mut PointerAttributes,
    ptr: *const c_void,
) -> CudaError {
    api(|| {
        let Some(out) = attributes.as_mut() else { return INVALID_VALUE };
        let (mut kind, mut device) = (0, 0);
        let code =
            with_libtca(|t| (t.pointer)(ptr, &mut kind, &mut device, std::ptr::null_mut(), std::ptr::null_mut()));
        if code != SUCCESS {
            return code;
        }
        let p = ptr.cast_mut();
        let (memory, device_pointer, host_pointer) = match kind {
            2 => (MemoryType::Device, p, std::ptr::null_mut()),
            1 => (MemoryType::Host, p, p),
            _ => (MemoryType::Unregistered, std::ptr::null_mut(), p),
        };
        *out = PointerAttributes {
            memory_type: memory,
            kind: memory,
            device,
            device_pointer,
            host_pointer,
            is_managed: 0,
        };
        SUCCESS
    })
}
