//! The C ABI on the simulated fabric: with `TCA_FABRIC=sim` and a factory that gives each
//! thread a rank of one simulated job, the unchanged C calls of a DMA ping-pong run in virtual
//! time on HA-PACS/TCA (how C programs will run on the simulator, one thread per rank).

use std::cell::Cell;
use std::ffi::c_void;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tca::api::*;
use tca::results::TCA_ERROR_MEMORY_TYPE_MISMATCH;
use tca_model::platform::Platform;
use tca_proto::{DmaFlags, Fabric, FabricResult, TcaError};
use tca_sim::{SimJob, SimRank};

thread_local! {
    /// The rank this thread plays.
    static RANK: Cell<u32> = const { Cell::new(0) };
}

static JOB: OnceLock<Arc<SimJob>> = OnceLock::new();

const CPU: i32 = 0;
const GPU: i32 = 1;
const SIZE: usize = 4096;

/// One rank's ping-pong through the C functions; returns its node id.
fn rank_program() -> i32 {
    // SAFETY: every pointer passed below points at a live local of the right size.
    unsafe {
        assert_eq!(tcaInit(), 0);
        let mut me = -1;
        assert_eq!(tcaGetNodeId(&mut me), 0);
        let peer = 1 - me;
        let mut buf: *mut c_void = std::ptr::null_mut();
        assert_eq!(tcaMalloc(&mut buf, SIZE, CPU), 0);
        let mut mine = [0u8; 32];
        assert_eq!(tcaCreateHandle(mine.as_mut_ptr().cast(), buf, SIZE, CPU), 0);
        let mut all = [0u8; 64];
        assert_eq!(tcaAllgather(mine.as_ptr().cast(), all.as_mut_ptr().cast(), 32), 0);
        let theirs: [u8; 32] = all[peer as usize * 32..][..32].try_into().unwrap();
        let desc = tcaDescNew();
        let notify = DmaFlags::NOTIFY.bits() as i32;
        let (dst, src) = (theirs.as_ptr().cast(), mine.as_ptr().cast());
        assert_eq!(tcaDescSetMemcpy(desc, dst, 0, src, 0, SIZE, notify, 0, me), 0);
        assert_eq!(tcaDescSet(desc, 0), 0);
        assert_eq!(tcaBarrier(), 0);
        for _ in 0..10 {
            if me == 0 {
                assert_eq!(tcaStartDMADesc(0), 0);
                assert_eq!(tcaWaitDMARecvDesc(dst, 0, peer), 0);
            } else {
                assert_eq!(tcaWaitDMARecvDesc(dst, 0, peer), 0);
                assert_eq!(tcaStartDMADesc(0), 0);
            }
            assert_eq!(tcaWaitDMAC(0), 0);
        }
        assert_eq!(tcaWaitDMAC(7), TcaError::InvalidChannel.code(), "errors keep their codes");
        // A chain set right after a start (the run in flight) waits for the run.
        if me == 0 {
            assert_eq!(tcaStartDMADesc(0), 0);
            assert_eq!(tcaDescSet(desc, 0), 0);
        } else {
            assert_eq!(tcaWaitDMARecvDesc(dst, 0, peer), 0);
        }
        assert_eq!(tcaDescFree(desc), 0);
        assert_eq!(tcaFree(buf, GPU), TCA_ERROR_MEMORY_TYPE_MISMATCH, "a CPU block");
        assert_eq!(tcaFree(buf, CPU), 0);
        assert_eq!(tcaFree(buf, CPU), TcaError::InvalidHandle.code());
        assert_eq!(tcaFinalize(), 0);
        me
    }
}

#[test]
fn c_calls_run_a_dma_ping_pong_in_virtual_time() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml");
    let job = JOB.get_or_init(|| SimJob::new(&Platform::load(&path).unwrap(), 2, false).unwrap()).clone();
    tca::set_fabric_factory("sim", || -> FabricResult<Box<dyn Fabric>> {
        let job = JOB.get().expect("the job exists").clone();
        Ok(Box::new(SimRank::new(job, RANK.with(Cell::get))?))
    })
    .unwrap();
    // SAFETY: no other thread of this test binary reads the environment concurrently.
    unsafe { std::env::set_var("TCA_FABRIC", "sim") };
    let threads: Vec<_> = (0..2)
        .map(|r| {
            let job = job.clone();
            std::thread::spawn(move || {
                RANK.with(|c| c.set(r));
                let me = rank_program();
                job.finish(r);
                me
            })
        })
        .collect();
    let ids: Vec<i32> = threads.into_iter().map(|t| t.join().expect("rank thread")).collect();
    assert_eq!(ids, [0, 1]);
    // Twenty one-way 4 KiB DMA transfers on HA-PACS/TCA: a few microseconds each.
    let t = job.now().as_us_f64();
    assert!((20.0 * 2.0..20.0 * 10.0).contains(&t), "{t} us");
}
