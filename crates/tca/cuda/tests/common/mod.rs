//! What the test programs running the CUDA runtime against libtca share.

use std::ffi::CStr;
use tcacudart::errors::*;

/// libtca's CUDA entry points, kept in this program for `dlsym` to find.
pub fn keep_entry_points() {
    use tca::cuda::*;
    let all = [
        tca_cuda_set_device as *const () as usize,
        tca_cuda_get_device as *const () as usize,
        tca_cuda_device_count as *const () as usize,
        tca_cuda_can_access_peer as *const () as usize,
        tca_cuda_malloc as *const () as usize,
        tca_cuda_free as *const () as usize,
        tca_cuda_memcpy as *const () as usize,
        tca_cuda_memset as *const () as usize,
        tca_cuda_pointer as *const () as usize,
    ];
    assert!(std::hint::black_box(all).iter().all(|&f| f != 0));
}

/// Asserts `cudaSuccess`, naming the error otherwise.
pub fn ok(code: CudaError) {
    // SAFETY: static NUL-terminated strings.
    let name = unsafe { CStr::from_ptr(cudaGetErrorName(code)) };
    assert_eq!(code, SUCCESS, "{name:?}");
}
