//! Devices: `cudaSetDevice`, `cudaGetDevice`, `cudaGetDeviceCount`, `cudaDeviceSynchronize`,
//! `cudaDeviceCanAccessPeer`, `cudaDeviceEnablePeerAccess`, `cudaDeviceDisablePeerAccess`.
//!
//! The devices are the GPUs of the rank's node (the platform's on the simulator, one on the
//! shm fabric). The current device is per host thread, as in CUDA (per rank inside SMPI); `cudaSetDevice` records it
//! without joining the job.

use crate::errors::{
    api, CudaError, INVALID_DEVICE, INVALID_VALUE, PEER_ACCESS_ALREADY_ENABLED, PEER_ACCESS_NOT_ENABLED,
    PEER_ACCESS_UNSUPPORTED, SUCCESS,
};
use crate::memory::with_libtca;
use std::collections::BTreeSet;
use std::ffi::{c_int, c_uint};
use std::sync::Mutex;

/// (caller, device, peer) triples with peer access enabled (per host thread in CUDA; per rank
/// inside SMPI: `crate::libtca::caller`).
static PEERS: Mutex<BTreeSet<(u64, c_int, c_int)>> = Mutex::new(BTreeSet::new());

fn peers() -> std::sync::MutexGuard<'static, BTreeSet<(u64, c_int, c_int)>> {
    PEERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// `cudaSetDevice`.
#[no_mangle]
pub extern "C-unwind" fn cudaSetDevice(device: c_int) -> CudaError {
    // SAFETY: a plain integer argument.
    api(|| with_libtca(|t| unsafe { (t.set_device)(device) }))
}

/// `cudaGetDevice`.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaGetDevice(device: *mut c_int) -> CudaError {
    api(|| with_libtca(|t| (t.get_device)(device)))
}

/// `cudaGetDeviceCount`.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaGetDeviceCount(count: *mut c_int) -> CudaError {
    api(|| with_libtca(|t| (t.device_count)(count)))
}

/// `cudaDeviceSynchronize`: every copy of this runtime is synchronous and no kernel runs, so
/// there is never work to wait for.
#[no_mangle]
pub extern "C-unwind" fn cudaDeviceSynchronize() -> CudaError {
    api(|| with_libtca(|_| 0))
}

/// `cudaDeviceCanAccessPeer`: 1 for two GPUs behind the same CPU socket.
#[no_mangle]
pub unsafe extern "C-unwind" fn cudaDeviceCanAccessPeer(can: *mut c_int, device: c_int, peer: c_int) -> CudaError {
    api(|| with_libtca(|t| (t.can_access_peer)(can, device, peer)))
}

/// The current device and whether it can access `peer`, or the error.
fn current_and_access(peer: c_int) -> Result<c_int, CudaError> {
    let (mut device, mut can) = (0, 0);
    // SAFETY: valid out-pointers.
    let code = with_libtca(|t| unsafe { (t.get_device)(&mut device) });
    if code != SUCCESS {
        return Err(code);
    }
    if peer == device {
        // As CUDA: a device is not its own peer.
        return Err(INVALID_DEVICE);
    }
    // SAFETY: as above.
    let code = with_libtca(|t| unsafe { (t.can_access_peer)(&mut can, device, peer) });
    match code {
        SUCCESS if can == 1 => Ok(device),
        SUCCESS => Err(PEER_ACCESS_UNSUPPORTED),
        e => Err(e),
    }
}

/// `cudaDeviceEnablePeerAccess` (`flags` must be 0). Recorded only: copies between two GPUs
/// of one socket are peer writes in the model either way (docs/cuda.md).
#[no_mangle]
pub extern "C-unwind" fn cudaDeviceEnablePeerAccess(peer: c_int, flags: c_uint) -> CudaError {
    api(|| {
        if flags != 0 {
            return INVALID_VALUE;
        }
        match current_and_access(peer) {
            Ok(d) if peers().insert((crate::libtca::caller(), d, peer)) => SUCCESS,
            Ok(_) => PEER_ACCESS_ALREADY_ENABLED,
            Err(e) => e,
        }
    })
}

/// `cudaDeviceDisablePeerAccess`.
#[no_mangle]
pub extern "C-unwind" fn cudaDeviceDisablePeerAccess(peer: c_int) -> CudaError {
    api(|| match current_and_access(peer) {
        Ok(d) if peers().remove(&(crate::libtca::caller(), d, peer)) => SUCCESS,
        Ok(_) => PEER_ACCESS_NOT_ENABLED,
        Err(e) => e,
    })
}
