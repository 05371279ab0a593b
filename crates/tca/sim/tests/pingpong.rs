//! Rank programs on the simulated 2013 testbed: data really moves, calls take virtual time,
//! runs are deterministic, deadlocks are reported.

use std::path::Path;
use tca_proto::{Desc, DmaFlags, Handle, MemoryType};
use tca_model::platform::Platform;
use base::SimTime;
use tca_sim::{FabricError, Op, Reply, SimJob};

fn testbed() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml")).unwrap()
}

fn run<T: Send + 'static>(ranks: u32, f: impl Fn(&SimJob, u32) -> T + Send + Sync + 'static) -> Vec<T> {
    tca_sim::run(&testbed(), ranks, f).unwrap()
}

fn handle(r: Reply) -> Handle {
    match r {
        Reply::Handle(h) => h,
        other => panic!("expected a handle, got {other:?}"),
    }
}

fn time(job: &SimJob, rank: u32) -> SimTime {
    match job.call(rank, Op::Wtime).unwrap() {
        Reply::Time(t) => t,
        _ => unreachable!(),
    }
}

/// Both ranks allocate `size` bytes in `mem` and exchange handles.
fn setup(job: &SimJob, rank: u32, size: u64, mem: MemoryType) -> (Handle, Handle) {
    let mine = handle(job.call(rank, Op::Malloc { size, mem, gpu: 0 }).unwrap());
    let Reply::Gathered(all) = job.call(rank, Op::Allgather { bytes: mine.to_bytes().to_vec() }).unwrap() else {
        unreachable!()
    };
    let peer = Handle::from_bytes(&all[1 - rank as usize]).unwrap();
    (mine, peer)
}

#[test]
fn pio_ping_pong_moves_the_data_and_takes_about_a_microsecond() {
    let one_way = run(2, |job, rank| {
        let (mine, peer) = setup(job, rank, 64, MemoryType::Cpu);
        let t0 = time(job, rank);
        for i in 1..=10u8 {
            let msg = vec![i; 8];
            if rank == 0 {
                job.call(rank, Op::SendPio { dst: peer, offset: 0, bytes: msg.clone() }).unwrap();
                job.call(rank, Op::WaitValue { handle: mine, offset: 0, bytes: msg }).unwrap();
            } else {
                job.call(rank, Op::WaitValue { handle: mine, offset: 0, bytes: msg.clone() }).unwrap();
                job.call(rank, Op::SendPio { dst: peer, offset: 0, bytes: msg }).unwrap();
            }
        }
        (time(job, rank) - t0).as_us_f64() / 20.0
    });
    // Seed 000 §4.2.3 Fig. 7: PIO CPU-CPU minimum 0.9 us one way (+-15%, predicted).
    assert!((one_way[0] / 0.9 - 1.0).abs() < 0.15, "{one_way:?}");
}

#[test]
fn dma_with_remote_notification_delivers_bytes_then_notifies() {
    let got = run(2, |job, rank| {
        let (mine, peer) = setup(job, rank, 4096, MemoryType::Cpu);
        if rank == 0 {
            let payload: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
            job.call(rank, Op::Write { handle: mine, offset: 0, bytes: payload.clone() }).unwrap();
            let mut d = Desc::new();
            d.set_memcpy(&peer, 0, &mine, 0, 4096, DmaFlags::NOTIFY, 3, 42).unwrap();
            job.call(rank, Op::SetChain { channel: 0, desc: Box::new(d) }).unwrap();
            job.call(rank, Op::StartDma { channel: 0 }).unwrap();
            job.call(rank, Op::WaitDmac { channel: 0 }).unwrap();
            payload
        } else {
            job.call(rank, Op::WaitRecv { handle: peer, slot: 3, tag: 42 }).unwrap();
            let Reply::Bytes(b) = job.call(rank, Op::Read { handle: mine, offset: 0, len: 4096 }).unwrap() else {
                unreachable!()
            };
            b
        }
    });
    assert_eq!(got[0], got[1]);
}

#[test]
fn runs_are_deterministic() {
    let once = || {
        run(2, |job, rank| {
            let (mine, peer) = setup(job, rank, 256, MemoryType::Gpu);
            let mut d = Desc::new();
            d.set_memcpy(&peer, 0, &mine, 0, 256, DmaFlags::NOTIFY, 0, rank).unwrap();
            job.call(rank, Op::SetChain { channel: 1, desc: Box::new(d) }).unwrap();
            job.call(rank, Op::StartDma { channel: 1 }).unwrap();
            job.call(rank, Op::WaitRecv { handle: peer, slot: 0, tag: 1 - rank }).unwrap();
            time(job, rank)
        })
    };
    assert_eq!(once(), once());
}

#[test]
fn waiting_for_a_notification_nobody_sends_is_a_deadlock() {
    let errs = run(2, |job, rank| {
        let (_, peer) = setup(job, rank, 64, MemoryType::Cpu);
        job.call(rank, Op::WaitRecv { handle: peer, slot: 1, tag: 9 }).unwrap_err()
    });
    for e in errs {
        let FabricError::Deadlock { detail, .. } = e else { panic!("{e}") };
        assert!(detail.contains("rank 0 waits for tcaWaitDMARecvDesc(handle of node 1, slot 1, tag 9)"), "{detail}");
        assert!(detail.contains("rank 1 waits for"));
    }
}

#[test]
fn a_barrier_after_a_rank_finished_is_a_deadlock_not_a_hang() {
    let out = run(2, |job, rank| if rank == 0 { job.call(rank, Op::Barrier).err() } else { None });
    assert!(matches!(out[0], Some(FabricError::Deadlock { .. })));
}

#[test]
fn compute_advances_the_clock() {
    let t = run(1, |job, rank| {
        job.call(rank, Op::Compute { duration: SimTime::from_us(5) }).unwrap();
        time(job, rank)
    });
    assert_eq!(t[0], SimTime::from_us(5));
}

#[test]
fn a_remote_read_by_proxy_write_returns_the_right_bytes_later() {
    let out = run(2, |job, rank| {
        let (mine, peer) = setup(job, rank, 1024, MemoryType::Cpu);
        if rank == 1 {
            let data: Vec<u8> = (0..1024u32).map(|i| (i % 253) as u8).collect();
            job.call(rank, Op::Write { handle: mine, offset: 0, bytes: data.clone() }).unwrap();
            job.call(rank, Op::Barrier).unwrap();
            job.call(rank, Op::Barrier).unwrap();
            return (data, SimTime::ZERO);
        }
        job.call(rank, Op::Barrier).unwrap();
        // Rank 0 reads rank 1's buffer into its own: the source is remote.
        let mut d = Desc::new();
        d.set_memcpy(&mine, 0, &peer, 0, 1024, DmaFlags::NOTIFY_SELF, 0, 5).unwrap();
        job.call(rank, Op::SetChain { channel: 0, desc: Box::new(d) }).unwrap();
        let t0 = time(job, rank);
        job.call(rank, Op::StartDma { channel: 0 }).unwrap();
        job.call(rank, Op::WaitDmac { channel: 0 }).unwrap();
        job.call(rank, Op::WaitRecv { handle: mine, slot: 0, tag: 5 }).unwrap();
        let took = time(job, rank) - t0;
        job.call(rank, Op::Barrier).unwrap();
        let Reply::Bytes(b) = job.call(rank, Op::Read { handle: mine, offset: 0, len: 1024 }).unwrap() else {
            unreachable!()
        };
        (b, took)
    });
    assert_eq!(out[0].0, out[1].0);
    // A PIO request, the responder's interrupt (3 us) and its DMA: slower than a local read.
    assert!(out[0].1 > SimTime::from_us(3), "{}", out[0].1);
}

#[test]
fn descriptors_in_peach2_internal_memory_start_sooner() {
    let elapsed = |flags: DmaFlags| {
        run(1, move |job, rank| {
            let h = |r: Reply| match r {
                Reply::Handle(h) => h,
                _ => unreachable!(),
            };
            let src = h(job.call(rank, Op::Malloc { size: 4096, mem: MemoryType::Cpu, gpu: 0 }).unwrap());
            let dst = h(job.call(rank, Op::Malloc { size: 4096, mem: MemoryType::Gpu, gpu: 0 }).unwrap());
            let mut d = Desc::new();
            for i in 0..8 {
                d.set_memcpy(&dst, i * 64, &src, i * 64, 64, flags, 0, 0).unwrap();
            }
            d.set_mode(Some(tca_proto::DmaMode::Chaining)).unwrap();
            job.call(rank, Op::SetChain { channel: 0, desc: Box::new(d) }).unwrap();
            let t0 = time(job, rank);
            job.call(rank, Op::StartDma { channel: 0 }).unwrap();
            job.call(rank, Op::WaitDmac { channel: 0 }).unwrap();
            time(job, rank) - t0
        })[0]
    };
    let (host, internal) = (elapsed(DmaFlags::NONE), elapsed(DmaFlags::USE_INTERNAL));
    // Eight descriptor fetches over PCIe (each a host-memory round trip) against on-chip reads.
    assert!(internal + SimTime::from_us(2) < host, "internal {internal}, host {host}");
}
