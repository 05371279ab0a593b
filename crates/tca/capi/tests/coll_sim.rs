//! The collectives of the C ABI (`tcaColl*`) on the simulated HA-PACS/TCA, one thread per rank:
//! results on host, tcaMalloc'd and device buffers, in place, PIO and DMA sizes, non-power-of-two
//! node counts, and the errors of bad and mismatched arguments.

use std::ffi::c_void;
use std::sync::Arc;
use tca::api::*;
use tca::coll::*;
use tca::results::{TCA_ERROR_COLL_MISMATCH, TCA_ERROR_INVALID_OP};
use tca_proto::TcaError;
use tca_sim::SimJob;

mod common;

const INT: i32 = 4 << 8 | 6;
const DOUBLE: i32 = 8 << 8 | 13;
const SUM: i32 = 0;
const MAX: i32 = 2;
const BXOR: i32 = 8;
const CPU: i32 = 0;
const GPU: i32 = 1;

/// Runs `program(rank, ranks)` between `tcaInit` and `tcaFinalize` on every rank.
fn run<T: Send + 'static>(ranks: u32, program: fn(i32, i32) -> T) -> (Vec<T>, Arc<SimJob>) {
    common::run(ranks, move |r, _| {
        assert_eq!(tcaInit(), 0);
        let out = program(r as i32, ranks as i32);
        assert_eq!(tcaFinalize(), 0);
        out
    })
}

fn ints(v: &[u8]) -> Vec<i32> {
    v.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Every collective once, on pageable, tcaMalloc'd host and device buffers.
fn every_collective(me: i32, n: i32) -> Vec<String> {
    let mut bad = Vec::new();
    let mut check = |what: &str, ok: bool| {
        if !ok {
            bad.push(format!("rank {me}: {what}"));
        }
    };
    // SAFETY: every pointer points at a live buffer of the size passed.
    unsafe {
        assert_eq!(tcaCollBarrier(), 0);
        // 8-byte allreduce (PIO), pageable memory.
        let x = [f64::from(me) + 0.5];
        let mut y = [0f64];
        assert_eq!(tcaCollAllreduce(x.as_ptr().cast(), y.as_mut_ptr().cast(), 1, DOUBLE, SUM), 0);
        let want: f64 = (0..n).map(|r| f64::from(r) + 0.5).sum();
        check("allreduce double", y[0] == want);
        // 64 KiB of ints (DMA) in place, in device memory.
        let count = 16384usize;
        let mut dev: *mut c_void = std::ptr::null_mut();
        assert_eq!(tcaMalloc(&mut dev, count * 4, GPU), 0);
        let mine: Vec<i32> = (0..count as i32).map(|i| i * (me + 1)).collect();
        std::ptr::copy_nonoverlapping(mine.as_ptr().cast::<u8>(), dev.cast::<u8>(), count * 4);
        assert_eq!(tcaCollAllreduce(dev, dev, count, INT, MAX), 0);
        let got = ints(std::slice::from_raw_parts(dev.cast::<u8>(), count * 4));
        check("allreduce max in place on the GPU", got.iter().enumerate().all(|(i, &v)| v == i as i32 * n));
        // Allgather of 12 bytes (PIO) and of 20 KiB (DMA) into tcaMalloc'd memory.
        for size in [12usize, 20 << 10] {
            let mut host: *mut c_void = std::ptr::null_mut();
            assert_eq!(tcaMalloc(&mut host, size * n as usize, CPU), 0);
            let block = vec![me as u8 + 1; size];
            assert_eq!(tcaCollAllgather(block.as_ptr().cast(), host, size), 0);
            let all = std::slice::from_raw_parts(host.cast::<u8>(), size * n as usize);
            check(
                &format!("allgather {size}"),
                all.chunks(size).enumerate().all(|(r, b)| b.iter().all(|&v| v == r as u8 + 1)),
            );
            assert_eq!(tcaFree(host, CPU), 0);
        }
        // Reduce to the last rank and broadcast from it (PIO and DMA sizes).
        for count in [3usize, 5000] {
            let mine: Vec<i32> = (0..count as i32).map(|i| i + me).collect();
            let mut out = vec![0i32; count];
            assert_eq!(tcaCollReduce(mine.as_ptr().cast(), out.as_mut_ptr().cast(), count, INT, SUM, n - 1), 0);
            let sum = |i: i32| (0..n).map(|r| i + r).sum::<i32>();
            if me == n - 1 {
                check("reduce", out.iter().enumerate().all(|(i, &v)| v == sum(i as i32)));
            } else {
                check("reduce leaves recv alone elsewhere", out.iter().all(|&v| v == 0));
            }
            assert_eq!(tcaCollBcast(out.as_mut_ptr().cast(), count * 4, n - 1), 0);
            check("bcast", out.iter().enumerate().all(|(i, &v)| v == sum(i as i32)));
        }
        // Errors: every rank gets the same code, and the library stays usable.
        let one = [1i32];
        let mut o = [0i32];
        check(
            "BXOR on double",
            tcaCollAllreduce(one.as_ptr().cast(), o.as_mut_ptr().cast(), 1, DOUBLE, BXOR) == TCA_ERROR_INVALID_OP,
        );
        check("bad root", tcaCollBcast(o.as_mut_ptr().cast(), 4, n) == TcaError::InvalidNode.code());
        let count = if me == 0 { 1 } else { 2 };
        let two = [1i32, 2];
        let mut o2 = [0i32; 2];
        let r = tcaCollAllreduce(two.as_ptr().cast(), o2.as_mut_ptr().cast(), count, INT, SUM);
        check(&format!("mismatched counts give {r}"), n == 1 || r == TCA_ERROR_COLL_MISMATCH);
        assert_eq!(tcaCollAllreduce(one.as_ptr().cast(), o.as_mut_ptr().cast(), 1, INT, SUM), 0);
        check("usable after a mismatch", o[0] == n);
        assert_eq!(tcaFree(dev, GPU), 0);
    }
    bad
}

#[test]
fn every_collective_on_three_and_five_nodes() {
    for n in [1, 3, 5] {
        let (bad, _) = run(n, every_collective);
        let bad: Vec<String> = bad.into_iter().flatten().collect();
        assert!(bad.is_empty(), "{n} nodes: {bad:?}");
    }
}

/// Seed 001: the 8-byte Allreduce takes about half MVAPICH2's time (docs/smpi.md: 1.76 us on
/// two ranks of simulated HA-PACS/TCA, 9.57 us on 16).
#[test]
fn an_8_byte_allreduce_takes_about_half_the_mpi_time() {
    fn program(_: i32, _: i32) -> f64 {
        let x = [1.0f64];
        let mut y = [0f64];
        let mut t = [0f64; 2];
        // SAFETY: live locals.
        unsafe {
            assert_eq!(tcaCollAllreduce(x.as_ptr().cast(), y.as_mut_ptr().cast(), 1, DOUBLE, SUM), 0);
            let job = common::this_job();
            t[0] = job.now().as_us_f64();
            for _ in 0..20 {
                assert_eq!(tcaCollAllreduce(x.as_ptr().cast(), y.as_mut_ptr().cast(), 1, DOUBLE, SUM), 0);
            }
            t[1] = job.now().as_us_f64();
        }
        (t[1] - t[0]) / 20.0
    }
    for (n, mpi) in [(2, 1.76), (16, 9.57)] {
        let (t, _) = run(n, program);
        let worst = t.iter().copied().fold(0.0, f64::max);
        let ratio = worst / mpi;
        assert!((0.15..0.65).contains(&ratio), "{n} nodes: {worst} us, {ratio} of MPI");
    }
}
