//! A CUDA runtime for TCA programs (`libtcacudart.so`, `include/cuda_runtime.h`): the subset of
//! the CUDA runtime API that HA-PACS/TCA programs use for their buffers, with CUDA's names,
//! types and error values, whose memory and copies are those of the TCA fabric the program runs
//! on (docs/cuda.md).
//!
//! - On the simulator, device memory is the simulated GPU memory of the rank's node (the
//!   addresses the TCA model routes, so `tcaCreateHandle(tcaMemoryGPU)` takes a `cudaMalloc`
//!   pointer), the bytes really move, and `cudaMemcpy` takes the time the PCIe model gives.
//! - On the shm fabric there is no GPU: device memory is host memory and `cudaMemcpy` is a
//!   CPU copy, so that the same sources run there with their data verified.
//!
//! Kernels, streams and events are not part of it: kernels need nvcc and a GPU.
//!
//! The library holds no rank or memory state: every call goes to `libtca.so`'s CUDA entry
//! points ([`libtca`]), found at first use. Every function returns a `cudaError_t`
//! ([`errors`]), records a failure as the thread's last error and never unwinds into C.

#![warn(missing_docs)]
#![allow(clippy::missing_safety_doc, non_snake_case)]

pub mod device;
pub mod errors;
pub mod libtca;
pub mod memory;

/// Where the C header lies in the source tree.
pub const HEADER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include/cuda_runtime.h");
