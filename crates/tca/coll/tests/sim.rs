//! The collectives on the thread simulator (simulated HA-PACS/TCA, 1-16 nodes): every operator
//! on every type against a serial fold in rank order, identical bits on every rank, PIO and DMA
//! sizes, work areas small enough to force pieces, in place, device buffers, and the errors.

use proptest::prelude::*;
use std::path::Path;
use tca_coll::{fold, long_double_from_f64, Coll, CollError, Config, DataType, Op};
use tca_model::platform::Platform;
use tca_proto::{Fabric, MemoryType, TcaError};
use tca_sim::SimRank;

fn platform() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

fn run<T: Send + 'static>(n: u32, f: impl Fn(&SimRank) -> T + Send + Sync + 'static) -> Vec<T> {
    tca_sim::run(&platform(), n, f).unwrap()
}

/// Rank `r`'s `count` elements of `ty`: any bits for integers, finite values for floats.
fn input(ty: DataType, count: usize, r: u32, seed: u64) -> Vec<u8> {
    let mut x = seed ^ (u64::from(r) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..count)
        .flat_map(|_| {
            let v = next();
            // Zeros now and then, for the logical operators.
            let v = if v % 5 == 0 { 0 } else { v };
            let real = (v % 2001) as f64 / 16.0 - 62.5 + (v >> 40) as f64 * 1e-7;
            match ty {
                DataType::Float => (real as f32).to_le_bytes().to_vec(),
                DataType::Double => real.to_le_bytes().to_vec(),
                DataType::LongDouble => long_double_from_f64(real).to_vec(),
                _ => v.to_le_bytes()[..ty.size()].to_vec(),
            }
        })
        .collect()
}

/// Work areas of 64 KiB (DMA payloads go in pieces); with `bruck`, PIO allgathers and
/// reductions take Bruck's rounds instead of the direct exchange.
fn config(bruck: bool) -> Config {
    Config { max_area: 1 << 16, direct_limit: if bruck { 0 } else { tca_coll::DIRECT_LIMIT }, ..Config::default() }
}

/// Every rank's results of allreduce, reduce (in place), allgather and bcast.
fn all_collectives(n: u32, ty: DataType, op: Op, count: usize, root: u32, seed: u64, bruck: bool) {
    let out = run(n, move |r| {
        let mut c = Coll::new(r, config(bruck)).unwrap();
        let me = r.rank();
        let mine = input(ty, count, me, seed);
        let mut sum = vec![0u8; mine.len()];
        c.allreduce(r, &mine, &mut sum, ty, op).unwrap();
        let mut red = mine.clone();
        let at = red.as_mut_ptr() as u64;
        // SAFETY: in place on a live vector of count elements.
        unsafe { c.reduce_raw(r, at, at, count as u64, ty, op, i64::from(root)).unwrap() };
        let mut all = vec![0u8; mine.len() * n as usize];
        c.allgather(r, &mine, &mut all).unwrap();
        let mut b = if me == root { mine.clone() } else { vec![0; mine.len()] };
        c.bcast(r, &mut b, i64::from(root)).unwrap();
        c.barrier(r).unwrap();
        c.free(r).unwrap();
        (sum, red, all, b)
    });
    let inputs: Vec<Vec<u8>> = (0..n).map(|r| input(ty, count, r, seed)).collect();
    let want = fold(ty, op, inputs.iter().map(Vec::as_slice));
    let gathered = inputs.concat();
    for (rank, (sum, red, all, b)) in out.iter().enumerate() {
        assert_eq!(sum, &want, "allreduce, rank {rank}");
        if rank as u32 == root {
            assert_eq!(red, &want, "reduce at the root");
        } else {
            assert_eq!(red, &inputs[rank], "reduce leaves the others' buffers");
        }
        assert_eq!(all, &gathered, "allgather, rank {rank}");
        assert_eq!(b, &inputs[root as usize], "bcast, rank {rank}");
    }
}

fn any_type() -> impl Strategy<Value = DataType> {
    proptest::sample::select(DataType::ALL.to_vec())
}

fn any_op() -> impl Strategy<Value = Op> {
    proptest::sample::select(Op::ALL.to_vec())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Sizes from nothing through PIO to DMA in pieces (64 KiB areas), 1-16 nodes.
    #[test]
    fn collectives_equal_the_serial_reference(
        n in 1u32..=16,
        ty in any_type(),
        op in any_op(),
        count in prop_oneof![0usize..40, 40usize..400, 2000usize..5000],
        root_pick in 0u32..16,
        seed: u64,
        bruck: bool,
    ) {
        let op = if ty.is_float() && op.is_bitwise() { Op::Max } else { op };
        all_collectives(n, ty, op, count, root_pick % n, seed, bruck);
    }
}

#[test]
fn every_operator_on_every_type_on_five_nodes_over_pio_and_dma() {
    for ty in DataType::ALL {
        for op in Op::ALL.into_iter().filter(|o| !(ty.is_float() && o.is_bitwise())) {
            for (count, bruck) in [(7, false), (7, true), (3000, false)] {
                all_collectives(5, ty, op, count, 3, 11, bruck);
            }
        }
    }
}

#[test]
fn device_buffers_and_in_place_allgather() {
    let out = run(6, |r| {
        let mut c = Coll::new(r, Config::default()).unwrap();
        let (me, n) = (u64::from(r.rank()), 6u64);
        let size = 5000u64;
        let dev = r.malloc(size * n, MemoryType::Gpu).unwrap();
        let pattern = |rank: u64| (0..size).map(move |i| (i * 3 + rank * 41) as u8);
        // SAFETY: dev holds size * n bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(dev as usize as *mut u8, (size * n) as usize) };
        for (b, v) in buf[(me * size) as usize..][..size as usize].iter_mut().zip(pattern(me)) {
            *b = v;
        }
        // SAFETY: in place on the device buffer.
        unsafe { c.allgather_raw(r, dev, dev, size).unwrap() };
        let ok = (0..n).all(|rank| buf[(rank * size) as usize..][..size as usize].iter().copied().eq(pattern(rank)));
        let t0 = r.wtime().unwrap();
        // SAFETY: as above.
        unsafe { c.allreduce_raw(r, dev, dev, size * n / 8, DataType::Double, Op::Max).unwrap() };
        (ok, r.wtime().unwrap() - t0)
    });
    assert!(out.iter().all(|(ok, _)| *ok), "in-place allgather on the GPU");
}

#[test]
fn mismatched_arguments_fail_on_every_rank_and_the_job_goes_on() {
    for (n, what) in [(2, "count"), (7, "count"), (7, "root"), (5, "kind"), (4, "path")] {
        let out = run(n, move |r| {
            let mut c = Coll::new(r, Config::default()).unwrap();
            let me = r.rank();
            let mut buf = vec![1u8; 4096];
            let bad = match what {
                "count" => {
                    c.allreduce_in_place(r, &mut buf[..4 * (1 + usize::from(me == 3 % n))], DataType::Int, Op::Sum)
                }
                "root" => c.bcast(r, &mut buf[..8], i64::from(me % 2)),
                "kind" if me == 0 => c.barrier(r),
                "kind" => c.allreduce_in_place(r, &mut buf[..8], DataType::Int, Op::Sum),
                // One rank small enough for PIO, the others over DMA.
                _ => c.bcast(r, &mut buf[..if me == 1 { 8 } else { 4096 }], 0),
            };
            let after = c.allreduce_in_place(r, &mut buf[..4], DataType::Int, Op::Sum);
            (bad, after, buf[..4].to_vec())
        });
        for (bad, after, sum) in out {
            assert!(matches!(bad, Err(CollError::Mismatch(_))), "{what} on {n}: {bad:?}");
            assert!(after.is_ok());
            assert_eq!(i32::from_le_bytes(sum.try_into().unwrap()), n as i32 * 0x0101_0101);
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let out = run(3, |r| {
        let mut c = Coll::new(r, Config::default()).unwrap();
        let mut b = [0u8; 8];
        let root = c.bcast(r, &mut b, 3).unwrap_err();
        let band = c.allreduce_in_place(r, &mut b, DataType::Double, Op::Band).unwrap_err();
        let odd = c.allreduce_in_place(r, &mut b[..6], DataType::Int, Op::Sum).unwrap_err();
        (root, band, odd)
    });
    for (root, band, odd) in out {
        assert_eq!(root.tca_error(), Some(TcaError::InvalidNode));
        assert!(matches!(band, CollError::InvalidOp(_)), "{band}");
        assert!(matches!(odd, CollError::InvalidArgument(_)), "{odd}");
    }
}

/// Seed 001: an 8-byte Allreduce takes about half MVAPICH2's time; MPI_Allreduce of 8 B on
/// simulated HA-PACS/TCA is 1.76/3.67/6.10/9.57 us at 2/4/8/16 ranks (docs/smpi.md).
#[test]
fn an_8_byte_allreduce_takes_about_half_the_mpi_time() {
    for (n, mpi) in [(2u32, 1.76), (4, 3.67), (8, 6.10), (16, 9.57)] {
        let t = run(n, |r| {
            let mut c = Coll::new(r, Config::default()).unwrap();
            let mut x = 1.0f64.to_le_bytes();
            c.allreduce_in_place(r, &mut x, DataType::Double, Op::Sum).unwrap();
            let t0 = r.wtime().unwrap();
            for _ in 0..50 {
                c.allreduce_in_place(r, &mut x, DataType::Double, Op::Sum).unwrap();
            }
            (r.wtime().unwrap() - t0) / 50.0 * 1e6
        });
        let worst = t.iter().copied().fold(0.0, f64::max);
        assert!((0.1..0.65).contains(&(worst / mpi)), "{n} nodes: {worst:.2} us against MPI's {mpi} us");
    }
}
