//! Rank programs on the simulated 2013 testbed: data really moves, calls take virtual time,
//! runs are deterministic, deadlocks are reported.

use base::SimTime;
use std::path::Path;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType, TcaError};
use tca_sim::SimRank;

fn testbed() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml")).unwrap()
}

fn run<T: Send + 'static>(ranks: u32, f: impl Fn(&SimRank) -> T + Send + Sync + 'static) -> Vec<T> {
    tca_sim::run(&testbed(), ranks, f).unwrap()
}

/// `tcaMalloc` + `tcaCreateHandle`.
fn alloc(r: &SimRank, size: u64, mem: MemoryType) -> Handle {
    let addr = r.malloc(size, mem).unwrap();
    r.create_handle(addr, size, mem).unwrap()
}

fn time(r: &SimRank) -> SimTime {
    r.now().unwrap()
}

/// Both ranks allocate `size` bytes in `mem` and exchange handles.
fn setup(r: &SimRank, size: u64, mem: MemoryType) -> (Handle, Handle) {
    let mine = alloc(r, size, mem);
    let all = r.allgather(&mine.to_bytes()).unwrap();
    let n = mine.to_bytes().len();
    let peer = 1 - r.rank() as usize;
    (mine, Handle::from_bytes(&all[peer * n..(peer + 1) * n]).unwrap())
}

fn start(r: &SimRank, channel: u8, d: &Desc) {
    r.desc_set(channel, d).unwrap();
    r.start_dma(channel).unwrap();
}

#[test]
fn pio_ping_pong_moves_the_data_and_takes_about_a_microsecond() {
    let one_way = run(2, |r| {
        let (mine, peer) = setup(r, 64, MemoryType::Cpu);
        let region = r.set_pio_region(&peer, 0, 64).unwrap();
        let t0 = time(r);
        for i in 1..=10u8 {
            let msg = vec![i; 8];
            if r.rank() == 0 {
                r.send_pio(&region, 0, &msg).unwrap();
                r.wait_pio(&mine, 0, &msg, Some(1)).unwrap();
            } else {
                r.wait_pio(&mine, 0, &msg, Some(0)).unwrap();
                r.send_pio(&region, 0, &msg).unwrap();
            }
        }
        (time(r) - t0).as_us_f64() / 20.0
    });
    // Seed 000 §4.2.3 Fig. 7: PIO CPU-CPU minimum 0.9 us one way (+-15%, predicted).
    assert!((one_way[0] / 0.9 - 1.0).abs() < 0.15, "{one_way:?}");
}

#[test]
fn dma_with_remote_notification_delivers_bytes_then_notifies() {
    let got = run(2, |r| {
        let (mine, peer) = setup(r, 4096, MemoryType::Cpu);
        if r.rank() == 0 {
            let payload: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
            r.write(&mine, 0, &payload).unwrap();
            let mut d = Desc::new();
            d.set_memcpy(&peer, 0, &mine, 0, 4096, DmaFlags::NOTIFY, 3, 42).unwrap();
            start(r, 0, &d);
            r.wait_dmac(0).unwrap();
            payload
        } else {
            r.wait_dma_recv(&peer, 3, 42).unwrap();
            let mut b = vec![0; 4096];
            r.read(&mine, 0, &mut b).unwrap();
            b
        }
    });
    assert_eq!(got[0], got[1]);
}

#[test]
fn runs_are_deterministic() {
    let once = || {
        run(2, |r| {
            let (_, peer) = setup(r, 256, MemoryType::Gpu);
            let mine = alloc(r, 256, MemoryType::Gpu);
            let mut d = Desc::new();
            d.set_memcpy(&peer, 0, &mine, 0, 256, DmaFlags::NOTIFY, 0, r.rank()).unwrap();
            start(r, 1, &d);
            r.wait_dma_recv(&peer, 0, 1 - r.rank()).unwrap();
            time(r)
        })
    };
    assert_eq!(once(), once());
}

#[test]
fn waiting_for_a_notification_nobody_sends_is_a_deadlock() {
    let errs = run(2, |r| {
        let (_, peer) = setup(r, 64, MemoryType::Cpu);
        r.wait_dma_recv(&peer, 1, 9).unwrap_err()
    });
    for e in errs {
        assert_eq!(e.error, TcaError::Deadlock);
        let detail = e.detail.unwrap();
        assert!(detail.contains("rank 0 waits for tcaWaitDMARecvDesc(handle of node 1, slot 1, tag 9)"), "{detail}");
        assert!(detail.contains("rank 1 waits for"));
    }
}

/// A rank that finished never joins a collective: the other loses a peer, as on shm, and the
/// next collective fails the same way.
#[test]
fn a_barrier_after_a_rank_finished_loses_a_peer() {
    let out = run(2, |r| (r.rank() == 0).then(|| (r.barrier().unwrap_err(), r.allgather(&[1, 2]).unwrap_err())));
    let (first, second) = out[0].clone().unwrap();
    assert_eq!((first.error, second.error), (TcaError::PeerDead, TcaError::PeerDead));
    assert!(first.detail.unwrap().contains("rank 1 finalized before this collective"));
}

#[test]
fn an_allgather_of_different_sizes_fails_everywhere_and_the_job_goes_on() {
    let out = run(2, |r| {
        let bad = r.allgather(&vec![7; 4 + r.rank() as usize]).map(drop);
        let next = r.barrier();
        (bad.map_err(|e| e.error), next.is_ok())
    });
    for (bad, next) in out {
        assert_eq!(bad, Err(TcaError::OutOfBounds));
        assert!(next, "the job is usable after a failed collective");
    }
}

#[test]
fn compute_advances_the_clock_and_overflow_is_an_error() {
    let t = run(1, |r| {
        r.compute(5e-6).unwrap();
        let first = time(r);
        let big = r.compute(1e7).and_then(|_| r.compute(1e7)).map_err(|e| e.error);
        (first, big)
    });
    assert_eq!(t[0].0, SimTime::from_us(5));
    assert_eq!(t[0].1, Err(TcaError::TooLarge), "2e7 s is past the end of simulated time");
}

#[test]
fn a_remote_read_by_proxy_write_returns_the_right_bytes_later() {
    let out = run(2, |r| {
        let (mine, peer) = setup(r, 1024, MemoryType::Cpu);
        if r.rank() == 1 {
            let data: Vec<u8> = (0..1024u32).map(|i| (i % 253) as u8).collect();
            r.write(&mine, 0, &data).unwrap();
            r.barrier().unwrap();
            r.barrier().unwrap();
            return (data, SimTime::ZERO);
        }
        r.barrier().unwrap();
        // Rank 0 reads rank 1's buffer into its own: the source is remote.
        let mut d = Desc::new();
        d.set_memcpy(&mine, 0, &peer, 0, 1024, DmaFlags::NOTIFY_SELF, 0, 5).unwrap();
        r.desc_set(0, &d).unwrap();
        let t0 = time(r);
        r.start_dma(0).unwrap();
        r.wait_dmac(0).unwrap();
        r.wait_dma_recv(&mine, 0, 5).unwrap();
        let took = time(r) - t0;
        r.barrier().unwrap();
        let mut b = vec![0; 1024];
        r.read(&mine, 0, &mut b).unwrap();
        (b, took)
    });
    assert_eq!(out[0].0, out[1].0);
    // A PIO request, the responder's interrupt (3 us) and its DMA: slower than a local read.
    assert!(out[0].1 > SimTime::from_us(3), "{}", out[0].1);
}

/// Without `tcaDMAContinue` each entry waits for the one before; with it the controller fetches
/// the next descriptor and reads while the previous entry's data moves (seed 000 Fig. 4).
#[test]
fn continue_lets_entries_overlap_and_saves_time() {
    let elapsed = |flags: DmaFlags| {
        run(1, move |r| {
            let src = alloc(r, 65536, MemoryType::Cpu);
            let dst = alloc(r, 65536, MemoryType::Cpu);
            r.write(&src, 0, &(0..65536u32).map(|i| i as u8).collect::<Vec<_>>()).unwrap();
            let mut d = Desc::new();
            for i in 0..16 {
                d.set_memcpy(&dst, i * 4096, &src, i * 4096, 4096, flags, 0, 0).unwrap();
            }
            d.set_mode(Some(tca_proto::DmaMode::Chaining)).unwrap();
            r.desc_set(0, &d).unwrap();
            let t0 = time(r);
            r.start_dma(0).unwrap();
            r.wait_dmac(0).unwrap();
            let took = time(r) - t0;
            let (mut a, mut b) = (vec![0; 65536], vec![0; 65536]);
            r.read(&src, 0, &mut a).unwrap();
            r.read(&dst, 0, &mut b).unwrap();
            assert_eq!(a, b, "every byte arrived either way");
            took
        })[0]
    };
    let (fenced, overlapped) = (elapsed(DmaFlags::NONE), elapsed(DmaFlags::CONTINUE));
    assert!(overlapped.as_ps() * 5 < fenced.as_ps() * 4, "fenced {fenced}, with CONTINUE {overlapped}");
}

#[test]
fn descriptors_in_peach2_internal_memory_start_sooner() {
    let elapsed = |flags: DmaFlags| {
        run(1, move |r| {
            let src = alloc(r, 4096, MemoryType::Cpu);
            let dst = alloc(r, 4096, MemoryType::Gpu);
            let mut d = Desc::new();
            for i in 0..8 {
                d.set_memcpy(&dst, i * 64, &src, i * 64, 64, flags, 0, 0).unwrap();
            }
            d.set_mode(Some(tca_proto::DmaMode::Chaining)).unwrap();
            r.desc_set(0, &d).unwrap();
            let t0 = time(r);
            r.start_dma(0).unwrap();
            r.wait_dmac(0).unwrap();
            time(r) - t0
        })[0]
    };
    let (host, internal) = (elapsed(DmaFlags::NONE), elapsed(DmaFlags::USE_INTERNAL));
    // Eight descriptor fetches over PCIe (each a host-memory round trip) against on-chip reads.
    assert!(internal + SimTime::from_us(2) < host, "internal {internal}, host {host}");
}

/// A DMA into a buffer its owner freed fails on the writer's side instead of landing: at
/// `tcaDescSet`, as the handle died with the buffer, as on the shm fabric
/// (tests/free_and_reuse.rs has more).
#[test]
fn a_dma_into_a_freed_buffer_fails_at_the_writer() {
    let out = run(2, |r| {
        let addr = r.malloc(4096, MemoryType::Cpu).unwrap();
        let mine = r.create_handle(addr, 4096, MemoryType::Cpu).unwrap();
        let all = r.allgather(&mine.to_bytes()).unwrap();
        let n = mine.to_bytes().len();
        let peer = Handle::from_bytes(&all[(1 - r.rank() as usize) * n..][..n]).unwrap();
        if r.rank() == 1 {
            r.free(addr).unwrap();
        }
        r.barrier().unwrap();
        if r.rank() == 1 {
            return None;
        }
        let mut d = Desc::new();
        d.set_memcpy(&peer, 0, &mine, 0, 4096, DmaFlags::NONE, 0, 0).unwrap();
        Some(r.desc_set(0, &d).map_err(|e| e.error))
    });
    assert_eq!(out[0], Some(Err(TcaError::InvalidHandle)));
}

/// A rank whose program has finished answers nothing more.
#[test]
fn a_finished_rank_is_not_initialized() {
    let platform = testbed();
    let job = tca_sim::SimJob::new(&platform, 1, false).unwrap();
    let r = SimRank::new(job.clone(), 0).unwrap();
    r.finalize().unwrap();
    assert_eq!(r.malloc(64, MemoryType::Cpu).map_err(|e| e.error), Err(TcaError::NotInitialized));
}

/// A proxy read served on the holder's last channel while the holder's own program runs a chain
/// on that channel: the two share it in order and both finish with the right bytes.
#[test]
fn a_proxy_read_shares_the_proxy_channel_with_the_program() {
    let out = run(2, |r| {
        let (mine, peer) = setup(r, 65536, MemoryType::Cpu);
        let data: Vec<u8> = (0..65536u32).map(|i| (i * 13 % 251) as u8 + r.rank() as u8).collect();
        r.write(&mine, 0, &data).unwrap();
        let scratch = alloc(r, 65536, MemoryType::Cpu);
        r.barrier().unwrap();
        let channel = tca_proto::PROXY_CHANNEL;
        let mut d = Desc::new();
        if r.rank() == 1 {
            // Rank 1 copies its buffer locally, 16 entries overlapped, on the proxy channel.
            for i in 0..16 {
                d.set_memcpy(&scratch, i * 4096, &mine, i * 4096, 4096, DmaFlags::CONTINUE, 0, 0).unwrap();
            }
        } else {
            // Rank 0 reads rank 1's buffer: served by rank 1's driver on the same channel.
            d.set_memcpy(&scratch, 0, &peer, 0, 65536, DmaFlags::NONE, 0, 0).unwrap();
        }
        start(r, channel, &d);
        r.wait_dmac(channel).unwrap();
        r.compute(20e-6).unwrap();
        r.barrier().unwrap();
        let mut got = vec![0; 65536];
        r.read(&scratch, 0, &mut got).unwrap();
        (data, got)
    });
    assert_eq!(out[1].1, out[1].0, "rank 1's local copy");
    assert_eq!(out[0].1, out[1].0, "rank 0 read rank 1's buffer");
}

/// A program may reuse a DMA source as soon as `tcaWaitDMAC` returns, while the run's last
/// TLPs are still on their way to the peer: those carry the bytes read before, not the new ones.
#[test]
fn a_source_reused_after_the_wait_leaves_the_bytes_in_flight_alone() {
    const SIZE: u64 = 256 << 10;
    let pattern: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    // On HA-PACS/TCA the status register reads done some 0.1 us before the last bytes land.
    let platform =
        Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap();
    let out = tca_sim::run(&platform, 2, move |r| {
        let (mine, peer) = setup(r, SIZE, MemoryType::Cpu);
        if r.rank() == 0 {
            r.write(&mine, 0, &pattern).unwrap();
        }
        r.barrier().unwrap();
        if r.rank() == 0 {
            let mut d = Desc::new();
            d.set_memcpy(&peer, 0, &mine, 0, SIZE, DmaFlags::NOTIFY, 1, 9).unwrap();
            start(r, 0, &d);
            r.wait_dmac(0).unwrap();
            r.write(&mine, 0, &vec![0xff; SIZE as usize]).unwrap();
            (time(r), true)
        } else {
            r.wait_dma_recv(&peer, 1, 9).unwrap();
            let mut got = vec![0; SIZE as usize];
            r.read(&mine, 0, &mut got).unwrap();
            (time(r), got == pattern)
        }
    })
    .unwrap();
    let ((reused, _), (notified, intact)) = (out[0], out[1]);
    assert!(reused < notified, "the source was reused before the data arrived ({reused} >= {notified})");
    assert!(intact, "the bytes that arrived are those read before the source was reused");
}

/// A rank that starts a remote read (rank 2's buffer into rank 0's) with a notification and
/// finalizes at once: rank 0's wait for that notification succeeds, as the read is still on
/// its way (rank 2's driver serves it), and only the next wait fails with PeerDead.
#[test]
fn a_remote_read_of_a_rank_that_finalized_still_arrives() {
    let platform =
        Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap();
    let out = tca_sim::run(&platform, 3, |r| {
        let mine = alloc(r, 4096, MemoryType::Cpu);
        r.write(&mine, 0, &[r.rank() as u8 + 1; 4096]).unwrap();
        let all = r.allgather(&mine.to_bytes()).unwrap();
        let n = mine.to_bytes().len();
        let of = |rank: usize| Handle::from_bytes(&all[rank * n..][..n]).unwrap();
        r.barrier().unwrap();
        match r.rank() {
            1 => {
                let mut d = Desc::new();
                d.set_memcpy(&of(0), 0, &of(2), 0, 4096, DmaFlags::NOTIFY, 3, 7).unwrap();
                start(r, 0, &d);
                r.finalize().unwrap();
                None
            }
            0 => {
                let first = r.wait_dma_recv(&of(1), 3, 7).map_err(|e| e.error);
                let mut got = vec![0; 4096];
                r.read(&mine, 0, &mut got).unwrap();
                let second = r.wait_dma_recv(&of(1), 3, 7).map_err(|e| e.error);
                // Rank 2's driver stays until rank 0 has its bytes.
                let region = r.set_pio_region(&of(2), 0, 4).unwrap();
                r.send_pio(&region, 0, &[0xaa; 4]).unwrap();
                Some((first, got.iter().all(|b| *b == 3), second))
            }
            _ => {
                r.wait_pio(&mine, 0, &[0xaa; 4], Some(0)).unwrap();
                None
            }
        }
    })
    .unwrap();
    assert_eq!(out[0], Some((Ok(()), true, Err(TcaError::PeerDead))));
}
