//! The CUDA runtime's functions on the simulated HA-PACS/TCA, one thread per rank, with the
//! TCA calls of the C ABI: what a C program linked with `-ltcacudart -ltca` does on the
//! simulator. The runtime finds libtca's entry points in this test program (built with
//! `--export-dynamic`, see build.rs) as it finds them in `libtca.so`.

mod common;

use common::{keep_entry_points, ok};
use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::path::Path;
use std::sync::Arc;
use tca::api::*;
use tca_model::platform::Platform;
use tca_proto::{DmaFlags, Fabric, FabricResult};
use tca_sim::{SimJob, SimRank};
use tcacudart::device::*;
use tcacudart::errors::*;
use tcacudart::memory::*;

thread_local! {
    static PART: RefCell<Option<(Arc<SimJob>, u32)>> = const { RefCell::new(None) };
}

const N: usize = 1 << 20;

fn rank_program(me: u32) -> Vec<u8> {
    let peer = 1 - me;
    // SAFETY: every pointer passed points at a live local or a buffer of the right size.
    unsafe {
        ok(cudaSetDevice(me as c_int));
        let mut dev: *mut c_void = std::ptr::null_mut();
        ok(cudaMalloc(&mut dev, N));
        let mut attr = std::mem::zeroed::<PointerAttributes>();
        ok(cudaPointerGetAttributes(&mut attr, dev));
        assert_eq!((attr.kind, attr.memory_type, attr.device), (MemoryType::Device, MemoryType::Device, me as c_int));
        let mut count = 0;
        ok(cudaGetDeviceCount(&mut count));
        assert_eq!(count, 4);
        assert_eq!(cudaSetDevice(4), INVALID_DEVICE);
        assert_eq!(cudaGetLastError(), INVALID_DEVICE);
        assert_eq!(cudaGetLastError(), SUCCESS);
        let mut d = -1;
        ok(cudaGetDevice(&mut d));
        assert_eq!(d, me as c_int, "a refused device leaves the current one");
        // Peer access: GPU 0 and 1 share a socket; 2 is across QPI.
        let other = 1 - me as c_int;
        ok(cudaDeviceEnablePeerAccess(other, 0));
        assert_eq!(cudaDeviceEnablePeerAccess(other, 0), PEER_ACCESS_ALREADY_ENABLED);
        assert_eq!(cudaDeviceEnablePeerAccess(2, 0), PEER_ACCESS_UNSUPPORTED);
        assert_eq!(cudaDeviceEnablePeerAccess(me as c_int, 0), INVALID_DEVICE, "a device is not its own peer");
        assert_eq!(cudaDeviceDisablePeerAccess(me as c_int), INVALID_DEVICE);
        ok(cudaDeviceDisablePeerAccess(other));
        assert_eq!(cudaDeviceDisablePeerAccess(other), PEER_ACCESS_NOT_ENABLED);

        let data: Vec<u8> = (0..N).map(|i| (i * 7 + me as usize) as u8).collect();
        ok(cudaMemcpy(dev, data.as_ptr().cast(), N, 4));
        assert_eq!(cudaMemcpy(dev, data.as_ptr().cast(), 8, 2), INVALID_VALUE, "DeviceToHost from host memory");
        assert_eq!(cudaMemcpy(dev, data.as_ptr().cast(), 8, 9), INVALID_MEMCPY_DIRECTION);
        ok(cudaDeviceSynchronize());

        assert_eq!(tcaInit(), 0);
        let mut h = [0u8; 32];
        assert_eq!(tcaCreateHandle(h.as_mut_ptr().cast(), dev, N, 1), 0);
        let mut all = [0u8; 64];
        assert_eq!(tcaAllgather(h.as_ptr().cast(), all.as_mut_ptr().cast(), 32), 0);
        let theirs = &all[peer as usize * 32..][..32];
        if me == 0 {
            let desc = tcaDescNew();
            let flags = DmaFlags::NOTIFY.bits() as i32;
            assert_eq!(tcaDescSetMemcpy(desc, theirs.as_ptr().cast(), 0, h.as_ptr().cast(), 0, N, flags, 0, 1), 0);
            assert_eq!(tcaDescSet(desc, 0), 0);
            assert_eq!(tcaStartDMADesc(0), 0);
            assert_eq!(tcaWaitDMAC(0), 0);
            assert_eq!(tcaDescFree(desc), 0);
        } else {
            assert_eq!(tcaWaitDMARecvDesc(theirs.as_ptr().cast(), 0, 1), 0);
        }
        let mut pinned: *mut c_void = std::ptr::null_mut();
        ok(cudaHostAlloc(&mut pinned, N, 0x2));
        assert_eq!(cudaHostAlloc(&mut pinned, N, 0x100), INVALID_VALUE, "an unknown flag");
        ok(cudaMemcpy(pinned, dev, N, 2));
        let got = std::slice::from_raw_parts(pinned.cast::<u8>(), N).to_vec();
        assert_eq!(tcaBarrier(), 0);
        assert_eq!(cudaFree(pinned), INVALID_VALUE, "pinned memory is freed with cudaFreeHost");
        ok(cudaFreeHost(pinned));
        ok(cudaFree(dev));
        ok(cudaFree(std::ptr::null_mut()));
        assert_eq!(tcaFinalize(), 0);
        got
    }
}

#[test]
fn a_cuda_and_tca_program_runs_on_the_simulator() {
    keep_entry_points();
    tca::set_fabric_factory("sim", || -> FabricResult<Box<dyn Fabric>> {
        let (job, rank) = PART.with(|p| p.borrow().clone()).expect("the thread plays a rank");
        Ok(Box::new(SimRank::new(job, rank)?))
    })
    .unwrap();
    // SAFETY: set before the rank threads start.
    unsafe { std::env::set_var("TCA_FABRIC", "sim") };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml");
    let job = SimJob::new(&Platform::load(&path).unwrap(), 2, false).unwrap();
    let threads: Vec<_> = (0..2)
        .map(|r| {
            let job = job.clone();
            std::thread::spawn(move || {
                PART.with(|p| *p.borrow_mut() = Some((job.clone(), r)));
                let got = rank_program(r);
                job.finish(r);
                got
            })
        })
        .collect();
    let got: Vec<Vec<u8>> = threads.into_iter().map(|t| t.join().expect("rank")).collect();
    let sent: Vec<u8> = (0..N).map(|i| (i * 7) as u8).collect();
    assert_eq!(got[0], sent);
    assert_eq!(got[1], sent, "rank 1's GPU memory holds what rank 0's DMA wrote");
}
