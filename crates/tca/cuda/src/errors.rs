//! `cudaError_t`: the codes this runtime returns, with CUDA's values, names and messages; the
//! per-thread last error (`cudaGetLastError`, `cudaPeekAtLastError`); and how a `tcaresult`
//! of `libtca.so` becomes a CUDA code.
//!
//! Every exported function runs its body through [`api`]: the code is recorded as the
//! thread's last error when it is not `cudaSuccess`, and a panic becomes
//! [`UNKNOWN`] instead of unwinding into C.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use tca_proto::{TcaError, TCA_SUCCESS};

/// `cudaError_t`.
pub type CudaError = c_int;

/// `cudaSuccess`.
pub const SUCCESS: CudaError = 0;
/// `cudaErrorInvalidValue`.
pub const INVALID_VALUE: CudaError = 1;
/// `cudaErrorMemoryAllocation`.
pub const MEMORY_ALLOCATION: CudaError = 2;
/// `cudaErrorInitializationError`.
pub const INITIALIZATION_ERROR: CudaError = 3;
/// `cudaErrorInvalidMemcpyDirection`.
pub const INVALID_MEMCPY_DIRECTION: CudaError = 21;
/// `cudaErrorInvalidDevice`.
pub const INVALID_DEVICE: CudaError = 101;
/// `cudaErrorPeerAccessUnsupported`.
pub const PEER_ACCESS_UNSUPPORTED: CudaError = 217;
/// `cudaErrorPeerAccessAlreadyEnabled`.
pub const PEER_ACCESS_ALREADY_ENABLED: CudaError = 704;
/// `cudaErrorPeerAccessNotEnabled`.
pub const PEER_ACCESS_NOT_ENABLED: CudaError = 705;
/// `cudaErrorUnknown`.
pub const UNKNOWN: CudaError = 999;

/// Every code of this runtime: (value, name, message), as CUDA's runtime defines them.
pub const ERRORS: [(CudaError, &CStr, &CStr); 10] = [
    (SUCCESS, c"cudaSuccess", c"no error"),
    (INVALID_VALUE, c"cudaErrorInvalidValue", c"invalid argument"),
    (MEMORY_ALLOCATION, c"cudaErrorMemoryAllocation", c"out of memory"),
    (INITIALIZATION_ERROR, c"cudaErrorInitializationError", c"initialization error"),
    (INVALID_MEMCPY_DIRECTION, c"cudaErrorInvalidMemcpyDirection", c"invalid copy direction for memcpy"),
    (INVALID_DEVICE, c"cudaErrorInvalidDevice", c"invalid device ordinal"),
    (
        PEER_ACCESS_UNSUPPORTED,
        c"cudaErrorPeerAccessUnsupported",
        c"peer access is not supported between these two devices",
    ),
    (PEER_ACCESS_ALREADY_ENABLED, c"cudaErrorPeerAccessAlreadyEnabled", c"peer access is already enabled"),
    (PEER_ACCESS_NOT_ENABLED, c"cudaErrorPeerAccessNotEnabled", c"peer access has not been enabled"),
    (UNKNOWN, c"cudaErrorUnknown", c"unknown error"),
];

/// `libtca.so`'s codes of its own (`tca-api.h`): a NULL pointer or bad number, a panic
/// inside the library, a `TCA_FABRIC` naming no fabric.
const TCA_ERROR_INVALID_ARGUMENT: c_int = 100;
const TCA_ERROR_INTERNAL: c_int = 101;
const TCA_ERROR_UNKNOWN_FABRIC: c_int = 102;

/// The CUDA code of a `tcaresult` of `libtca.so`'s CUDA entry points.
pub fn from_tca(code: c_int) -> CudaError {
    match code {
        TCA_SUCCESS => SUCCESS,
        TCA_ERROR_INVALID_ARGUMENT => INVALID_VALUE,
        TCA_ERROR_INTERNAL => UNKNOWN,
        TCA_ERROR_UNKNOWN_FABRIC => INITIALIZATION_ERROR,
        _ => match TcaError::from_code(code) {
            Some(TcaError::OutOfMemory) => MEMORY_ALLOCATION,
            Some(TcaError::InvalidNode) => INVALID_DEVICE,
            // Joining the job failed, or the rank has left it.
            Some(TcaError::NotInitialized | TcaError::TooManyNodes | TcaError::Timeout | TcaError::PeerDead) => {
                INITIALIZATION_ERROR
            }
            Some(TcaError::Deadlock) | None => UNKNOWN,
            Some(_) => INVALID_VALUE,
        },
    }
}

/// The last error of a runtime call, by caller (per host thread in CUDA; per rank inside
/// SMPI: `crate::libtca::caller`).
static LAST: Mutex<BTreeMap<u64, CudaError>> = Mutex::new(BTreeMap::new());

fn last() -> std::sync::MutexGuard<'static, BTreeMap<u64, CudaError>> {
    LAST.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs an exported function's body: records a failure as the thread's last error; a panic
/// is [`UNKNOWN`]. A rank SimGrid killed during the body ends here
/// ([`crate::libtca::end_if_killed`]).
pub fn api(f: impl FnOnce() -> CudaError) -> CudaError {
    let code = catch_unwind(AssertUnwindSafe(f)).unwrap_or(UNKNOWN);
    crate::libtca::end_if_killed();
    if code != SUCCESS {
        last().insert(crate::libtca::caller(), code);
    }
    code
}

/// The message of `code`, or CUDA's text for a code it does not know.
fn text(code: CudaError, name: bool) -> *const c_char {
    match ERRORS.iter().find(|(c, _, _)| *c == code) {
        Some((_, n, m)) => (if name { n } else { m }).as_ptr(),
        None => c"unrecognized error code".as_ptr(),
    }
}

/// `cudaGetErrorString`: never NULL.
#[no_mangle]
pub extern "C-unwind" fn cudaGetErrorString(error: CudaError) -> *const c_char {
    text(error, false)
}

/// `cudaGetErrorName`: never NULL.
#[no_mangle]
pub extern "C-unwind" fn cudaGetErrorName(error: CudaError) -> *const c_char {
    text(error, true)
}

/// `cudaGetLastError`: the last error of a call on this thread, which is reset to
/// `cudaSuccess`.
#[no_mangle]
pub extern "C-unwind" fn cudaGetLastError() -> CudaError {
    last().remove(&crate::libtca::caller()).unwrap_or(SUCCESS)
}

/// `cudaPeekAtLastError`: as `cudaGetLastError`, without the reset.
#[no_mangle]
pub extern "C-unwind" fn cudaPeekAtLastError() -> CudaError {
    last().get(&crate::libtca::caller()).copied().unwrap_or(SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_names_and_the_last_error() {
        // SAFETY: the returned pointers are static NUL-terminated strings.
        let s = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap().to_string();
        assert_eq!(s(cudaGetErrorString(INVALID_VALUE)), "invalid argument");
        assert_eq!(s(cudaGetErrorName(INVALID_DEVICE)), "cudaErrorInvalidDevice");
        assert_eq!(s(cudaGetErrorString(12345)), "unrecognized error code");
        std::thread::spawn(|| {
            assert_eq!(cudaGetLastError(), SUCCESS);
            assert_eq!(api(|| MEMORY_ALLOCATION), MEMORY_ALLOCATION);
            assert_eq!(api(|| SUCCESS), SUCCESS, "a success keeps the last error");
            assert_eq!(cudaPeekAtLastError(), MEMORY_ALLOCATION);
            assert_eq!(cudaGetLastError(), MEMORY_ALLOCATION);
            assert_eq!(cudaGetLastError(), SUCCESS);
            assert_eq!(api(|| panic!("a bug")), UNKNOWN);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn tca_codes_map_to_cuda_codes() {
        assert_eq!(from_tca(0), SUCCESS);
        assert_eq!(from_tca(TcaError::OutOfMemory.code()), MEMORY_ALLOCATION);
        assert_eq!(from_tca(TcaError::InvalidNode.code()), INVALID_DEVICE);
        assert_eq!(from_tca(TcaError::NotInitialized.code()), INITIALIZATION_ERROR);
        assert_eq!(from_tca(TcaError::OutOfBounds.code()), INVALID_VALUE);
        assert_eq!(from_tca(TcaError::InvalidHandle.code()), INVALID_VALUE);
        assert_eq!(from_tca(TCA_ERROR_INVALID_ARGUMENT), INVALID_VALUE);
        assert_eq!(from_tca(TCA_ERROR_UNKNOWN_FABRIC), INITIALIZATION_ERROR);
        assert_eq!(from_tca(-7), UNKNOWN);
    }

    #[test]
    fn the_abi_codes_are_libtcas() {
        assert_eq!(TCA_ERROR_INVALID_ARGUMENT, tca::TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(TCA_ERROR_INTERNAL, tca::TCA_ERROR_INTERNAL);
        assert_eq!(TCA_ERROR_UNKNOWN_FABRIC, tca::TCA_ERROR_UNKNOWN_FABRIC);
    }
}
