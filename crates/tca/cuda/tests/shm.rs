//! The CUDA runtime's memory on the shm fabric, as a C program linked with `-ltcacudart -ltca`
//! run as a job of one rank sees it: the runtime finds libtca's entry points in this test
//! program (built with `--export-dynamic`, see build.rs).

mod common;

use common::{keep_entry_points, ok};
use std::ffi::{c_int, c_void};
use tca::api::*;
use tcacudart::device::*;
use tcacudart::errors::*;
use tcacudart::memory::*;

/// `cudaMemcpyDefault`: the kind from the pointers.
const DEFAULT: c_int = 4;

/// A buffer filled, freed and allocated again (at the same address, first fit) reads as
/// zero, as a fresh one does: small blocks and blocks of whole pages, device and pinned. A
/// pointer into a freed buffer or past a live one is `cudaErrorInvalidValue`, as on the
/// simulator.
#[test]
fn memory_handed_out_again_reads_as_zero() {
    keep_entry_points();
    // SAFETY: set before any thread of the runtime starts; the only test of this program.
    unsafe {
        std::env::set_var("TCA_RANK", "0");
        std::env::set_var("TCA_SIZE", "1");
        std::env::set_var("TCA_JOB_ID", format!("cudatest{}", std::process::id()));
        std::env::remove_var("TCA_FABRIC");
    }
    // SAFETY: every pointer passed points at a live local or a buffer of the right size.
    unsafe {
        ok(cudaSetDevice(0));
        for size in [200usize, 4096 + 100, 4 << 20] {
            for pinned in [false, true] {
                let what = format!("{size} B, {}", if pinned { "cudaMallocHost" } else { "cudaMalloc" });
                let alloc = |p: &mut *mut c_void| if pinned { cudaMallocHost(p, size) } else { cudaMalloc(p, size) };
                let free = |p: *mut c_void| if pinned { cudaFreeHost(p) } else { cudaFree(p) };
                let mut first: *mut c_void = std::ptr::null_mut();
                ok(alloc(&mut first));
                let mut bytes = vec![0x77u8; size];
                ok(cudaMemcpy(first, bytes.as_ptr().cast(), size, DEFAULT));
                ok(free(first));
                let mut again: *mut c_void = std::ptr::null_mut();
                ok(alloc(&mut again));
                assert_eq!(again, first, "{what}: the block is handed out again");
                ok(cudaMemcpy(bytes.as_mut_ptr().cast(), again, size, DEFAULT));
                let dirty = bytes.iter().filter(|&&b| b != 0).count();
                assert_eq!(dirty, 0, "{what}: {dirty} bytes of the freed buffer's are left");
                ok(free(again));
            }
        }
        // A pointer into a freed buffer, or just past a live one, is no memory of the program.
        let mut freed: *mut c_void = std::ptr::null_mut();
        let mut live: *mut c_void = std::ptr::null_mut();
        ok(cudaMalloc(&mut freed, 4096));
        ok(cudaMalloc(&mut live, 4096));
        ok(cudaFree(freed));
        let mut host = [0u8; 16];
        for p in [freed, live.cast::<u8>().add(8192).cast()] {
            assert_eq!(cudaMemcpy(host.as_mut_ptr().cast(), p, 16, DEFAULT), INVALID_VALUE, "{p:?}");
            let mut attributes = std::mem::MaybeUninit::<PointerAttributes>::uninit();
            assert_eq!(cudaPointerGetAttributes(attributes.as_mut_ptr(), p), INVALID_VALUE, "{p:?}");
            cudaGetLastError();
        }
        ok(cudaFree(live));
        assert_eq!(tcaFinalize(), 0);
    }
}
