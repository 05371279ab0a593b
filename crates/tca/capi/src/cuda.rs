//! Entry points for the CUDA runtime of the simulator (`libtcacudart.so`, docs/cuda.md).
//!
//! The runtime is another shared library with its own statics; it finds these functions at
//! run time (`dlsym`), so that its calls act on the very rank state of this library: the
//! fabric `tcaInit` chose and the buffers `tcaMalloc` hands out. A CUDA call made before
//! `tcaInit` joins the job as `tcaInit` would (programs commonly allocate their buffers
//! first); `tca_cuda_set_device` only records the device.
//!
//! Every function returns a `tcaresult` (the runtime turns it into a `cudaError_t`). Pointer
//! kinds of [`tca_cuda_pointer`]: 0 memory the fabric did not allocate (pageable), 1 host
//! memory of the fabric (pinned), 2 GPU memory; the values of CUDA's `cudaMemoryType`.

#![allow(clippy::missing_safety_doc)]

use crate::registry::{self, with_fabric};
use crate::results::{run_nested, CErr};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;
use tca_proto::fabric::{CopyKind, MemorySpace};
use tca_proto::{Fabric, MemoryType, TcaError};

/// The GPU `cudaSetDevice` chose, by caller ([`registry::caller_key`]: CUDA's current device
/// is per host thread; inside SMPI, per rank).
static DEVICE: Mutex<BTreeMap<u64, u32>> = Mutex::new(BTreeMap::new());

/// The GPU the caller's CUDA calls use (`cudaSetDevice`).
pub(crate) fn current_device() -> u32 {
    DEVICE.lock().unwrap_or_else(|e| e.into_inner()).get(&registry::caller_key()).copied().unwrap_or(0)
}

/// [`registry::caller_key`], for the runtime's own per-rank state (its last error).
#[no_mangle]
pub extern "C-unwind" fn tca_cuda_caller() -> u64 {
    std::panic::catch_unwind(registry::caller_key).unwrap_or(0)
}

/// Calls `f` with the calling thread's fabric, joining the job first if the thread has not.
fn with_joined<T>(f: impl FnOnce(&dyn Fabric) -> Result<T, CErr>) -> Result<T, CErr> {
    match with_fabric(|fab| Ok(fab.node_id()?)) {
        Err(CErr::Tca(TcaError::NotInitialized)) => registry::init(&registry::chosen_name(), "CUDA runtime")?,
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    with_fabric(f)
}

fn device_arg(device: c_int) -> Result<u32, CErr> {
    u32::try_from(device).map_err(|_| CErr::Tca(TcaError::InvalidNode))
}

/// `cudaSetDevice`: records `device` for this thread; checks it against the node's GPUs if
/// the thread is in the job already, or on the simulator against the platform's (it joins no
/// job: programs pick their GPU before `MPI_Init`).
#[no_mangle]
pub extern "C-unwind" fn tca_cuda_set_device(device: c_int) -> c_int {
    run_nested(|| {
        let d = device_arg(device)?;
        let gpus = match with_fabric(|f| Ok(f.gpu_count()?)) {
            Ok(n) => Some(n),
            Err(CErr::Tca(TcaError::NotInitialized)) if registry::chosen_name() == registry::SMPI => {
                tca_smpi::platform_gpus()
            }
            Err(CErr::Tca(TcaError::NotInitialized)) => None,
            Err(e) => return Err(e),
        };
        if gpus.is_some_and(|n| d >= n) {
            return Err(CErr::Tca(TcaError::InvalidNode));
        }
        DEVICE.lock().unwrap_or_else(|e| e.into_inner()).insert(registry::caller_key(), d);
        Ok(())
    })
}

/// `cudaGetDevice`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_get_device(device: *mut c_int) -> c_int {
    run_nested(|| {
        let out = device.as_mut().ok_or(CErr::Arg)?;
        *out = c_int::try_from(current_device()).map_err(|_| CErr::Tca(TcaError::InvalidNode))?;
        Ok(())
    })
}

/// `cudaGetDeviceCount`: the GPUs of this rank's node (joins the job; on the simulator before
/// `MPI_Init`, the platform's GPUs per node without joining).
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_device_count(count: *mut c_int) -> c_int {
    run_nested(|| {
        let out = count.as_mut().ok_or(CErr::Arg)?;
        let n = match tca_smpi::gpus_before_mpi_init() {
            Some(n) if registry::chosen_name() == registry::SMPI => n,
            _ => with_joined(|f| Ok(f.gpu_count()?))?,
        };
        *out = c_int::try_from(n).map_err(|_| CErr::Tca(TcaError::TooLarge))?;
        Ok(())
    })
}

/// `cudaDeviceCanAccessPeer`.
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_can_access_peer(can: *mut c_int, device: c_int, peer: c_int) -> c_int {
    run_nested(|| {
        let out = can.as_mut().ok_or(CErr::Arg)?;
        let (d, p) = (device_arg(device)?, device_arg(peer)?);
        *out = c_int::from(with_joined(|f| Ok(f.gpu_peer_access(d, p)?))?);
        Ok(())
    })
}

/// `cudaMalloc` (`mem` = `tcaMemoryGPU`, on the current device) and `cudaMallocHost`
/// (`tcaMemoryCPU`): a zeroed buffer of this rank, which `tcaCreateHandle` takes.
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_malloc(ptr: *mut *mut c_void, size: usize, mem: c_int) -> c_int {
    run_nested(|| {
        let out = ptr.as_mut().ok_or(CErr::Arg)?;
        let mem = MemoryType::from_byte(u8::try_from(mem).map_err(|_| CErr::Arg)?).map_err(|_| CErr::Arg)?;
        let gpu = current_device();
        let addr = with_joined(|f| Ok(f.malloc_on(size as u64, mem, gpu)?))?;
        *out = addr as usize as *mut c_void;
        Ok(())
    })
}

/// `cudaFree` (`mem` = `tcaMemoryGPU`) and `cudaFreeHost` (`tcaMemoryCPU`): `ptr` must be
/// the start of a buffer of that kind.
#[no_mangle]
pub extern "C-unwind" fn tca_cuda_free(ptr: *mut c_void, mem: c_int) -> c_int {
    run_nested(|| {
        let p = ptr as usize as u64;
        with_joined(|f| {
            let info = f.pointer_info(p)?;
            let kind_ok = match info.space {
                MemorySpace::Device(_) => mem == MemoryType::Gpu as c_int,
                MemorySpace::Pinned => mem == MemoryType::Cpu as c_int,
                MemorySpace::Pageable => false,
            };
            if !kind_ok || info.base != p {
                return Err(CErr::Arg);
            }
            Ok(f.free(p)?)
        })
    })
}

/// `cudaMemcpy` with CUDA's `cudaMemcpyKind` value `kind`; returns when the copy is done
/// (on the simulator: after its simulated time).
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    count: usize,
    kind: c_int,
) -> c_int {
    run_nested(|| {
        let kind = CopyKind::from_value(kind).ok_or(CErr::Arg)?;
        if dst.is_null() || src.is_null() {
            return Err(CErr::Arg);
        }
        let (d, s) = (dst as usize as u64, src as usize as u64);
        // SAFETY: the caller's pointers, as for cudaMemcpy; the fabric checks its own buffers.
        with_joined(|f| Ok(unsafe { f.memcpy(d, s, count as u64, kind) }?))
    })
}

/// `cudaMemset` of GPU memory: the bytes are set at once (on the simulator this takes no
/// simulated time).
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_memset(ptr: *mut c_void, value: c_int, count: usize) -> c_int {
    run_nested(|| {
        let p = ptr as usize as u64;
        let info = with_joined(|f| Ok(f.pointer_info(p)?))?;
        if !info.space.is_device() || !info.holds(p, count as u64) {
            return Err(CErr::Arg);
        }
        // SAFETY: `count` bytes from `ptr` lie inside a live GPU buffer of this rank.
        unsafe { std::ptr::write_bytes(ptr.cast::<u8>(), value as u8, count) };
        Ok(())
    })
}

/// `cudaPointerGetAttributes`: `kind` (0 pageable, 1 pinned host, 2 GPU), the GPU (-2 for
/// pageable memory, CUDA's `cudaInvalidDeviceId`; the current device for pinned memory), and
/// the allocation holding `ptr` (`base`, `size`; `ptr` and 0 for pageable memory).
#[no_mangle]
pub unsafe extern "C-unwind" fn tca_cuda_pointer(
    ptr: *const c_void,
    kind: *mut c_int,
    device: *mut c_int,
    base: *mut *mut c_void,
    size: *mut usize,
) -> c_int {
    run_nested(|| {
        let (kind, device) = (kind.as_mut().ok_or(CErr::Arg)?, device.as_mut().ok_or(CErr::Arg)?);
        let info = with_joined(|f| Ok(f.pointer_info(ptr as usize as u64)?))?;
        (*kind, *device) = match info.space {
            MemorySpace::Pageable => (0, -2),
            MemorySpace::Pinned => (1, c_int::try_from(current_device()).unwrap_or(0)),
            MemorySpace::Device(g) => (2, c_int::try_from(g).map_err(|_| CErr::Tca(TcaError::InvalidNode))?),
        };
        if let Some(b) = base.as_mut() {
            *b = info.base as usize as *mut c_void;
        }
        if let Some(s) = size.as_mut() {
            *s = info.size as usize;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::TCA_ERROR_INVALID_ARGUMENT;

    #[test]
    fn bad_arguments_are_refused_before_any_fabric_is_needed() {
        std::thread::spawn(|| {
            assert_eq!(tca_cuda_set_device(-1), TcaError::InvalidNode.code());
            assert_eq!(tca_cuda_set_device(3), 0, "recorded before the rank joins");
            let mut d = -1;
            // SAFETY: valid out-pointers or NULL, which is checked.
            unsafe {
                assert_eq!(tca_cuda_get_device(&mut d), 0);
                assert_eq!(tca_cuda_get_device(std::ptr::null_mut()), TCA_ERROR_INVALID_ARGUMENT);
                let mut x = 0u8;
                let p = (&mut x as *mut u8).cast::<c_void>();
                assert_eq!(tca_cuda_memcpy(p, p, 1, 5), TCA_ERROR_INVALID_ARGUMENT, "no such cudaMemcpyKind");
                assert_eq!(tca_cuda_memcpy(std::ptr::null_mut(), p, 1, 4), TCA_ERROR_INVALID_ARGUMENT);
                assert_eq!(tca_cuda_malloc(std::ptr::null_mut(), 64, 1), TCA_ERROR_INVALID_ARGUMENT);
            }
            assert_eq!(d, 3);
        })
        .join()
        .unwrap();
    }
}
