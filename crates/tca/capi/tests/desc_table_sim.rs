//! The descriptor-table calls on the simulated fabric: a block-stride halo exchange on a ring
//! of 4 simulated HA-PACS/TCA nodes (one thread per rank, as C programs run there), its chain
//! registered five ways. Tables by tag are the same chain as a `tcaDesc` in chaining mode, and
//! the internal-memory table the same as a chaining `tcaDesc` whose entries carry
//! `tcaDMAUseInternal`: the simulated times are equal to the picosecond, and differ from those
//! of register mode and of descriptors fetched from host memory. Every halo is checked.

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tca::api::*;
use tca::desc_table::*;
use tca_model::platform::Platform;
use tca_proto::{DmaFlags, Fabric, FabricResult, TcaError};
use tca_sim::{SimJob, SimRank};

thread_local! {
    static RANK: Cell<u32> = const { Cell::new(0) };
}

static JOB: Mutex<Option<Arc<SimJob>>> = Mutex::new(None);

const RANKS: u32 = 4;
const GPU: c_int = 1;
const NX: usize = 64; // interior doubles per row
const NY: usize = 32; // rows
const H: usize = 2; // halo width [doubles]
const ROW: usize = NX + 2 * H;
const ITERS: usize = 5;

/// How the chain of the two faces is registered on channel 0.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Way {
    /// Two tables by tag, one entry each (the second at slot 1), two `tcaSetDMAChain`.
    Tags,
    /// One `tcaDesc`, chaining mode forced.
    DescChaining,
    /// One `tcaDesc`, automatic mode (register mode for two entries).
    DescRegister,
    /// Internal memory, slots 0 and 1, `tcaSetDMAChainInt`.
    Internal,
    /// One `tcaDesc` in chaining mode whose entries carry `tcaDMAUseInternal`.
    DescInternal,
}

fn value(rank: usize, iter: usize, y: usize, x: usize) -> f64 {
    (rank * 1_000_000 + iter * 1000 + y) as f64 + x as f64 * 1e-3
}

/// The two faces of one rank: (destination handle, destination offset, source offset, notify tag).
fn faces(all: &[[u8; 32]], me: usize, n: usize) -> [(*const Handle32, i64, i64, c_int); 2] {
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let d = std::mem::size_of::<f64>() as i64;
    [
        // Right interior columns -> next rank's left halo.
        (all[next].as_ptr().cast(), 0, NX as i64 * d, 1),
        // Left interior columns -> previous rank's right halo.
        (all[prev].as_ptr().cast(), (NX + H) as i64 * d, H as i64 * d, 2),
    ]
}

/// One rank's exchange; returns the halo values that were wrong.
fn rank_program(way: Way) -> usize {
    let (pitch, width) = (ROW * 8, H * 8);
    let notify = DmaFlags::NOTIFY.bits() as c_int;
    // SAFETY: every pointer passed below points at a live local or buffer of the right size.
    unsafe {
        assert_eq!(tcaInit(), 0);
        let (mut me, mut n) = (0, 0);
        assert_eq!((tcaGetNodeId(&mut me), tcaGetNodeCount(&mut n)), (0, 0));
        let (me, n) = (me as usize, n as usize);
        let bytes = ROW * NY * 8;
        let mut buf: *mut c_void = std::ptr::null_mut();
        assert_eq!(tcaMalloc(&mut buf, bytes, GPU), 0);
        let grid = std::slice::from_raw_parts_mut(buf.cast::<f64>(), ROW * NY);
        let mut mine = [0u8; 32];
        assert_eq!(tcaCreateHandle(mine.as_mut_ptr().cast(), buf, bytes, GPU), 0);
        let mut flat = vec![0u8; 32 * n];
        assert_eq!(tcaAllgather(mine.as_ptr().cast(), flat.as_mut_ptr().cast(), 32), 0);
        let all: Vec<[u8; 32]> = flat.chunks(32).map(|c| c.try_into().unwrap()).collect();
        let src: *const Handle32 = mine.as_ptr().cast();
        let faces = faces(&all, me, n);

        let mut tags = [0; 2];
        let desc = tcaDescNew();
        let mut slot = 0;
        if way == Way::Internal {
            assert_eq!(tcaDMADescInt_Init(), 0);
        }
        for (i, &(dst, dst_off, src_off, wt)) in faces.iter().enumerate() {
            let r = match way {
                Way::Tags => {
                    assert_eq!(tcaCreateDMADesc(&mut tags[i], 1024), 0);
                    tcaSetDMADesc_Memcpy2D(
                        tags[i], slot, &mut slot, dst, dst_off, pitch, src, src_off, pitch, width, NY, notify, 1, wt,
                    )
                }
                Way::Internal => tcaSetDMADescInt_Memcpy2D(
                    slot, &mut slot, dst, dst_off, pitch, src, src_off, pitch, width, NY, notify, 1, wt,
                ),
                Way::DescChaining | Way::DescRegister | Way::DescInternal => {
                    let f =
                        if way == Way::DescInternal { notify | DmaFlags::USE_INTERNAL.bits() as c_int } else { notify };
                    tcaDescSetMemcpy2D(desc, dst, dst_off, pitch, src, src_off, pitch, width, NY, f, 1, wt)
                }
            };
            assert_eq!(r, 0, "{way:?} face {i}");
        }
        match way {
            Way::Tags => assert_eq!((tcaSetDMAChain(0, tags[0]), tcaSetDMAChain(0, tags[1])), (0, 0)),
            Way::Internal => assert_eq!(tcaSetDMAChainInt(0, 0), 0),
            Way::DescChaining | Way::DescInternal => assert_eq!((tcaDescSetMode(desc, 2), tcaDescSet(desc, 0)), (0, 0)),
            Way::DescRegister => assert_eq!(tcaDescSet(desc, 0), 0),
        }

        let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
        let mut wrong = 0;
        for it in 0..ITERS {
            for y in 0..NY {
                for x in H..NX + H {
                    grid[y * ROW + x] = value(me, it, y, x);
                }
            }
            assert_eq!(tcaBarrier(), 0);
            assert_eq!(tcaStartDMADesc(0), 0);
            assert_eq!(tcaWaitDMARecvDesc(all[prev].as_ptr().cast(), 1, 1), 0);
            assert_eq!(tcaWaitDMARecvDesc(all[next].as_ptr().cast(), 1, 2), 0);
            assert_eq!(tcaWaitDMAC(0), 0);
            for y in 0..NY {
                for k in 0..H {
                    wrong += usize::from(grid[y * ROW + k] != value(prev, it, y, NX + k));
                    wrong += usize::from(grid[y * ROW + NX + H + k] != value(next, it, y, H + k));
                }
            }
            assert_eq!(tcaBarrier(), 0);
        }
        if way == Way::Tags {
            assert_eq!((tcaDestroyDMADesc(tags[0]), tcaDestroyDMADesc(tags[1])), (0, 0));
            assert_eq!(tcaStartDMADesc(0), TcaError::ChannelNotSet.code(), "no tag left");
        }
        assert_eq!(tcaDescFree(desc), 0);
        assert_eq!(tcaFree(buf, GPU), 0);
        assert_eq!(tcaFinalize(), 0);
        wrong
    }
}

/// Runs the exchange on a fresh simulated job; its simulated time in picoseconds.
fn simulate(way: Way) -> u64 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml");
    let job = SimJob::new(&Platform::load(&path).unwrap(), RANKS, false).unwrap();
    *JOB.lock().unwrap() = Some(job.clone());
    let threads: Vec<_> = (0..RANKS)
        .map(|r| {
            let job = job.clone();
            std::thread::spawn(move || {
                RANK.with(|c| c.set(r));
                let wrong = rank_program(way);
                job.finish(r);
                wrong
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().expect("rank thread"), 0, "{way:?}: wrong halo values");
    }
    job.now().as_ps()
}

#[test]
fn table_chains_time_as_the_equivalent_desc_chains() {
    tca::set_fabric_factory("sim", || -> FabricResult<Box<dyn Fabric>> {
        let job = JOB.lock().unwrap().clone().expect("the job exists");
        Ok(Box::new(SimRank::new(job, RANK.with(Cell::get))?))
    })
    .unwrap();
    // SAFETY: this binary's only test; no other thread reads the environment.
    unsafe { std::env::set_var("TCA_FABRIC", "sim") };
    let t = |w| simulate(w) as f64 / 1e6;
    let (tags, chaining, register) = (t(Way::Tags), t(Way::DescChaining), t(Way::DescRegister));
    let (internal, desc_internal) = (t(Way::Internal), t(Way::DescInternal));
    eprintln!("us: tags {tags} desc-chaining {chaining} desc-register {register} internal {internal} desc-internal {desc_internal}");
    assert_eq!(tags, chaining, "tables by tag are a chaining-mode chain");
    assert_eq!(internal, desc_internal, "internal memory is a chaining chain fetched from the chip");
    // The comparison can tell the modes apart: no descriptor fetch in register mode, a fetch
    // from the chip's memory instead of over the host link for internal memory.
    assert!(register < tags, "register {register} us, chaining {tags} us");
    assert!(internal < tags, "internal {internal} us, host memory {tags} us");
}
