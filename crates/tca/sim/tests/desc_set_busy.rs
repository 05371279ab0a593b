//! `tcaDescSet` on a channel whose run is still in flight waits for the run to end, then sets
//! the new chain (what HA-PACS/TCA programs expect), on the simulated 2013 testbed.

use base::SimTime;
use std::path::Path;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType};
use tca_sim::SimRank;

fn testbed() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml")).unwrap()
}

const BIG: u64 = 256 * 1024;
const SMALL: u64 = 4096;

/// Both ranks allocate `BIG + SMALL` bytes of host memory and exchange handles; rank 0 fills
/// its buffer with a pattern.
fn setup(r: &SimRank) -> (Handle, Handle) {
    let size = BIG + SMALL;
    let addr = r.malloc(size, MemoryType::Cpu).unwrap();
    let mine = r.create_handle(addr, size, MemoryType::Cpu).unwrap();
    if r.rank() == 0 {
        r.write(&mine, 0, &pattern(size)).unwrap();
    }
    let all = r.allgather(&mine.to_bytes()).unwrap();
    let n = mine.to_bytes().len();
    let peer = 1 - r.rank() as usize;
    (mine, Handle::from_bytes(&all[peer * n..(peer + 1) * n]).unwrap())
}

fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i * 13 % 251) as u8 + 1).collect()
}

fn chain(dst: &Handle, src: &Handle, offset: u64, size: u64, tag: u32) -> Desc {
    let mut d = Desc::new();
    d.set_memcpy(dst, offset, src, offset, size, DmaFlags::NOTIFY, 0, tag).unwrap();
    d
}

/// Rank 0 runs a 256 KiB chain on channel 0 and, while it is in flight, sets a 4 KiB chain
/// on the same channel (`then_wait` false) or first waits with `tcaWaitDMAC` (true). Returns
/// (when rank 0's second call returned, after the start; rank 1's buffer).
fn second_chain(then_wait: bool) -> (SimTime, Vec<u8>) {
    let out = tca_sim::run(&testbed(), 2, move |r| {
        let (mine, peer) = setup(r);
        if r.rank() == 0 {
            r.desc_set(0, &chain(&peer, &mine, 0, BIG, 1)).unwrap();
            r.start_dma(0).unwrap();
            let t0 = r.now().unwrap();
            if then_wait {
                r.wait_dmac(0).unwrap();
            }
            // Set while the first run is in flight (or just after tcaWaitDMAC).
            r.desc_set(0, &chain(&peer, &mine, BIG, SMALL, 2)).unwrap();
            let took = r.now().unwrap() - t0;
            r.start_dma(0).unwrap();
            r.wait_dmac(0).unwrap();
            r.barrier().unwrap();
            (took, Vec::new())
        } else {
            r.wait_dma_recv(&peer, 0, 1).unwrap();
            r.wait_dma_recv(&peer, 0, 2).unwrap();
            let mut b = vec![0; (BIG + SMALL) as usize];
            r.read(&mine, 0, &mut b).unwrap();
            r.barrier().unwrap();
            (SimTime::ZERO, b)
        }
    })
    .unwrap();
    (out[0].0, out[1].1.clone())
}

#[test]
fn desc_set_on_a_running_channel_waits_for_the_run_then_the_new_chain_runs() {
    let (took, got) = second_chain(false);
    assert_eq!(got, pattern(BIG + SMALL), "both chains' data arrived");
    // 256 KiB at most 3.5 GB/s (seed 000 §4.2.3) takes at least 70 us: the set waited.
    assert!(took.as_us_f64() > 70.0, "{took}");
    // The library polls the status register as tcaWaitDMAC does: the same moment.
    let (with_wait, got) = second_chain(true);
    assert_eq!(got, pattern(BIG + SMALL));
    assert_eq!(took, with_wait);
}

#[test]
fn desc_set_on_an_idle_channel_takes_no_time() {
    let took = tca_sim::run(&testbed(), 2, |r| {
        let (mine, peer) = setup(r);
        let t0 = r.now().unwrap();
        r.desc_set(1, &chain(&peer, &mine, 0, SMALL, 1)).unwrap();
        r.desc_set(1, &chain(&peer, &mine, SMALL, SMALL, 1)).unwrap();
        r.now().unwrap() - t0
    })
    .unwrap();
    assert_eq!(took, vec![SimTime::ZERO; 2]);
}

#[test]
fn a_bad_chain_set_on_a_running_channel_is_refused_without_waiting() {
    let out = tca_sim::run(&testbed(), 2, |r| {
        let (mine, peer) = setup(r);
        if r.rank() != 0 {
            r.wait_dma_recv(&peer, 0, 1).unwrap();
            return Ok(());
        }
        r.desc_set(0, &chain(&peer, &mine, 0, BIG, 1)).unwrap();
        r.start_dma(0).unwrap();
        let t0 = r.now().unwrap();
        let r2 = r.desc_set(0, &Desc::new());
        assert_eq!(r.now().unwrap(), t0);
        r.wait_dmac(0).unwrap();
        r2.map_err(|e| e.error)
    })
    .unwrap();
    assert_eq!(out[0], Err(tca_proto::TcaError::InvalidDescriptor));
}
