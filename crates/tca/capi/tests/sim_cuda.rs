//! The CUDA entry points of the C ABI (what `libtcacudart.so` calls) on the simulated
//! HA-PACS/TCA, one thread per rank: `cudaMalloc` buffers are simulated GPU memory that
//! `tcaCreateHandle(tcaMemoryGPU)` takes, a CUDA call before `tcaInit` joins the job, data
//! really moves, and `cudaMemcpy` takes the time of the PCIe model.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use tca::api::*;
use tca::cuda::*;

mod common;
use common::run;
use tca_proto::{DmaFlags, TcaError};
use tca_sim::SimJob;

const CPU: i32 = 0;
const GPU: i32 = 1;
// cudaMemcpyKind values.
const H2H: i32 = 0;
const H2D: i32 = 1;
const D2H: i32 = 2;
const D2D: i32 = 3;
const DEFAULT: i32 = 4;

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// Microseconds one `tca_cuda_memcpy` takes on a one-rank job.
unsafe fn timed_copy(job: &SimJob, dst: *mut c_void, src: *const c_void, n: usize, kind: i32) -> f64 {
    let t0 = job.now();
    assert_eq!(tca_cuda_memcpy(dst, src, n, kind), 0);
    (job.now() - t0).as_us_f64()
}

#[test]
fn cuda_copies_move_the_data_and_take_the_pcie_time() {
    let (times, _) = run(1, |_, job| unsafe {
        const N: usize = 4 << 20;
        // A CUDA call before tcaInit joins the job.
        assert_eq!(tca_cuda_set_device(1), 0);
        let (mut dev, mut dev2, mut pinned) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(tca_cuda_malloc(&mut dev, N, GPU), 0);
        assert_eq!(tca_cuda_set_device(0), 0);
        assert_eq!(tca_cuda_malloc(&mut dev2, N, GPU), 0);
        assert_eq!(tca_cuda_malloc(&mut pinned, N, CPU), 0);
        let (mut kind, mut device, mut base, mut size) = (-1, -1, std::ptr::null_mut(), 0usize);
        assert_eq!(tca_cuda_pointer(dev.cast::<u8>().add(100).cast(), &mut kind, &mut device, &mut base, &mut size), 0);
        assert_eq!((kind, device, base, size), (2, 1, dev, N), "GPU 1's memory");
        let data = pattern(N, 7);
        assert_eq!(tca_cuda_pointer(data.as_ptr().cast(), &mut kind, &mut device, &mut base, &mut size), 0);
        assert_eq!((kind, device), (0, -2), "the program's own memory is pageable");
        assert_eq!(tca_cuda_pointer(pinned, &mut kind, &mut device, &mut base, &mut size), 0);
        assert_eq!(kind, 1);
        let mut count = 0;
        assert_eq!(tca_cuda_device_count(&mut count), 0);
        assert_eq!(count, 4, "HA-PACS/TCA nodes have 4 GPUs");
        let (mut can01, mut can02) = (-1, -1);
        assert_eq!(tca_cuda_can_access_peer(&mut can01, 0, 1), 0);
        assert_eq!(tca_cuda_can_access_peer(&mut can02, 0, 2), 0);
        assert_eq!((can01, can02), (1, 0), "GPUs 0 and 1 share a socket, 2 is on the other");

        // Pageable -> GPU 1 -> GPU 0 -> pinned -> pageable, each step checked.
        let mut t = vec![
            timed_copy(job, dev, data.as_ptr().cast(), 8, H2D),
            timed_copy(job, dev, data.as_ptr().cast(), N, DEFAULT),
            timed_copy(job, dev2, dev, N, D2D),
            timed_copy(job, pinned, dev2, 8, D2H),
            timed_copy(job, pinned, dev2, N, DEFAULT),
        ];
        assert_eq!(std::slice::from_raw_parts(pinned.cast::<u8>(), N), &data[..], "the bytes went round");
        let mut back = vec![0u8; N];
        t.push(timed_copy(job, back.as_mut_ptr().cast(), pinned, N, H2H));
        assert_eq!(back, data);

        // A kind that contradicts the pointers, a range past a buffer, memset of GPU memory.
        assert_eq!(tca_cuda_memcpy(dev, pinned, 8, D2H), TcaError::InvalidHandle.code());
        assert_eq!(tca_cuda_memcpy(dev.cast::<u8>().add(N - 4).cast(), pinned, 8, H2D), TcaError::OutOfBounds.code());
        assert_eq!(tca_cuda_memset(dev.cast::<u8>().add(16).cast(), 0xab, 16), 0);
        assert_eq!(tca_cuda_memcpy(back.as_mut_ptr().cast(), dev, 48, D2H), 0);
        assert_eq!((back[15], back[16], back[31], back[32]), (data[15], 0xab, 0xab, data[32]));
        assert_eq!(tca_cuda_memset(pinned, 0, 16), tca::TCA_ERROR_INVALID_ARGUMENT, "not device memory");

        // cudaFree takes device memory only, cudaFreeHost pinned memory only.
        assert_eq!(tca_cuda_free(pinned, GPU), tca::TCA_ERROR_INVALID_ARGUMENT);
        assert_eq!(tca_cuda_free(dev.cast::<u8>().add(64).cast(), GPU), tca::TCA_ERROR_INVALID_ARGUMENT);
        for (p, mem) in [(dev, GPU), (dev2, GPU), (pinned, CPU)] {
            assert_eq!(tca_cuda_free(p, mem), 0);
        }
        // A freed buffer's pointer is simulated memory outside any live buffer: refused, as
        // CUDA refuses a device pointer outside an allocation.
        let freed = tca_cuda_pointer(dev, &mut kind, &mut device, &mut base, &mut size);
        assert_eq!(freed, TcaError::InvalidHandle.code(), "a freed buffer is no longer device memory");
        assert_eq!(tcaFinalize(), 0);
        t
    });
    let t = &times[0];
    eprintln!("copy times [us]: {t:?}");
    // 8 B host -> GPU: the call overhead, 6.6 us (seed 003 §3.1 Fig. 2), plus doorbell, method
    // fetch, the engine's read of host memory and the semaphore: about 8.3 us.
    assert!((8.0..8.8).contains(&t[0]), "8 B H2D: {t:?}");
    // 4 MiB host -> GPU: 64-byte completions on Gen2 x16, 8 GB/s x 64/84 = 6.10 GB/s.
    let h2d_rate = (4 << 20) as f64 / ((t[1] - t[0]) * 1e-6) / 1e9;
    assert!((h2d_rate - 6.095).abs() / 6.095 < 0.01, "H2D {h2d_rate} GB/s: {t:?}");
    // GPU -> host: the copy engine (6.5 GB/s) limits the 256-byte writes (7.31 GB/s).
    let d2h_rate = (4 << 20) as f64 / ((t[4] - t[3]) * 1e-6) / 1e9;
    assert!((d2h_rate - 6.5).abs() / 6.5 < 0.01, "D2H {d2h_rate} GB/s: {t:?}");
    assert!(t[3] > t[0], "a small D2H waits for its flush read: {t:?}");
    // GPU 1 -> GPU 0 (one socket): peer writes at up to 5 GB/s.
    assert!(t[2] > (4 << 20) as f64 / 5e3, "peer copy {t:?}");
    assert!((t[5] - 6.6).abs() < 1e-6, "host -> host costs the call only: {t:?}");
}

/// Rank 1's GPU buffer, published before the handle exchange.
static RANK1_BUFFER: AtomicUsize = AtomicUsize::new(0);

#[test]
fn a_dma_moves_one_ranks_gpu_buffer_into_anothers() {
    const N: usize = 65536;
    let (got, job) = run(2, |me, _| unsafe {
        let peer = 1 - me;
        // Buffers first (and filled through cudaMemcpy), tcaInit afterwards, as programs do.
        assert_eq!(tca_cuda_set_device(me as i32), 0);
        let mut dev = std::ptr::null_mut();
        assert_eq!(tca_cuda_malloc(&mut dev, N, GPU), 0);
        let mine = pattern(N, me as u8);
        assert_eq!(tca_cuda_memcpy(dev, mine.as_ptr().cast(), N, DEFAULT), 0);
        if me == 1 {
            RANK1_BUFFER.store(dev as usize, Ordering::Release);
        }
        assert_eq!(tcaInit(), 0);
        let mut h = [0u8; 32];
        assert_eq!(tcaCreateHandle(h.as_mut_ptr().cast(), dev, N, GPU), 0);
        let mut all = [0u8; 64];
        assert_eq!(tcaAllgather(h.as_ptr().cast(), all.as_mut_ptr().cast(), 32), 0);
        let theirs = &all[peer as usize * 32..][..32];
        if me == 0 {
            let desc = tcaDescNew();
            let flags = DmaFlags::NOTIFY.bits() as i32;
            assert_eq!(tcaDescSetMemcpy(desc, theirs.as_ptr().cast(), 0, h.as_ptr().cast(), 0, N, flags, 0, 5), 0);
            assert_eq!(tcaDescSet(desc, 0), 0);
            assert_eq!(tcaStartDMADesc(0), 0);
            assert_eq!(tcaWaitDMAC(0), 0);
            assert_eq!(tcaDescFree(desc), 0);
        } else {
            assert_eq!(tcaWaitDMARecvDesc(theirs.as_ptr().cast(), 0, 5), 0);
        }
        let mut out = vec![0u8; N];
        assert_eq!(tca_cuda_memcpy(out.as_mut_ptr().cast(), dev, N, D2H), 0);
        // Rank 1's buffer is not memory of rank 0 (ranks are threads of this process here).
        if me == 0 {
            let theirs = RANK1_BUFFER.load(Ordering::Acquire) as *const c_void;
            let (mut kind, mut device, mut base, mut size) = (-1, -1, std::ptr::null_mut(), 0);
            let code = tca_cuda_pointer(theirs, &mut kind, &mut device, &mut base, &mut size);
            assert_eq!(code, TcaError::InvalidHandle.code());
        }
        assert_eq!(tcaBarrier(), 0);
        assert_eq!(tca_cuda_free(dev, GPU), 0);
        assert_eq!(tcaFinalize(), 0);
        (dev as usize, out)
    });
    assert_eq!(got[1].1, pattern(N, 0), "rank 1's GPU buffer holds rank 0's data");
    assert_eq!(got[0].1, pattern(N, 0), "rank 0's own buffer is unchanged");
    assert_ne!(got[0].0, got[1].0);
    assert!(job.now().as_us_f64() > 2.0 * 8.0, "two timed copies per rank at least");
}
