//! The job's per-link counters on simulated HA-PACS/TCA: ranks 0 and 1 write into rank 2's GPU
//! at the same time, and their DMA streams collide on the cable from node 1 to node 2; one
//! writer alone does not stall there.

use std::path::Path;
use std::time::Duration;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType};
use tca_sim::{SimJob, SimRank};

const BYTES: u64 = 128 << 10;
const SHARED: &str = "node1 E port -> node2";

fn ha_pacs() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

/// Ranks in `writers` each DMA `BYTES` of their GPU memory into their own part of rank 2's
/// buffer, started together after a barrier; the job's statistics and trace at the end.
fn job(writers: &'static [u32]) -> (tca_sim::JobStats, String) {
    let job = SimJob::new(&ha_pacs(), 3, true).unwrap();
    let threads: Vec<_> = (0..3)
        .map(|rank| {
            let r = SimRank::new(job.clone(), rank).unwrap();
            std::thread::spawn(move || {
                let mine = r.malloc(2 * BYTES, MemoryType::Gpu).unwrap();
                let mine = r.create_handle(mine, 2 * BYTES, MemoryType::Gpu).unwrap();
                let all = r.allgather(&mine.to_bytes()).unwrap();
                let n = all.len() / 3;
                let target = Handle::from_bytes(&all[2 * n..]).unwrap();
                r.barrier().unwrap();
                if writers.contains(&rank) {
                    let mut d = Desc::new();
                    d.set_memcpy(&target, u64::from(rank) * BYTES, &mine, 0, BYTES, DmaFlags::NONE, 0, 0).unwrap();
                    r.desc_set(0, &d).unwrap();
                    r.start_dma(0).unwrap();
                    r.wait_dmac(0).unwrap();
                }
                r.barrier().unwrap();
                r.job().finish(rank);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = job.stats(Duration::from_secs(1));
    assert_eq!(stats.links, job.link_stats());
    (stats, job.trace_json().unwrap())
}

#[test]
fn colliding_dma_streams_stall_on_the_shared_ring_link() {
    let (both, both_trace) = job(&[0, 1]);
    let (alone, alone_trace) = job(&[0]);
    let on = |s: &tca_sim::JobStats| s.links.iter().find(|l| l.name == SHARED).cloned().unwrap();
    let (b, a) = (on(&both), on(&alone));
    assert_eq!((a.tlps, b.tlps), (BYTES / 256, 2 * BYTES / 256), "{a:?} {b:?}");
    assert_eq!(a.stalled_tlps, 0, "{a:?}");
    assert!(b.stalled_tlps > BYTES / 256, "{b:?}");
    assert_eq!(b.busy.as_ps(), 2 * a.busy.as_ps());
    assert_eq!(alone.stalled_tlps(), 0, "one stream collides with nothing anywhere");
    assert!(both.stalled_tlps() >= b.stalled_tlps);
    let json = both.to_json();
    let entry = format!("{{\"link\": \"{SHARED}\", \"stalled_tlps\": {}, ", b.stalled_tlps);
    assert!(json.contains(&entry), "{json}");

    // The trace shows the link's occupancy, a train of TLPs (half a read request) at a time, on
    // its own track, and names the stream a stalled train queued behind.
    let track = format!("\"args\":{{\"name\":\"{SHARED}\"}}");
    assert!(both_trace.contains(&track) && alone_trace.contains(&track));
    let train = "MWr 2048 B (8 TLPs of 256 B)";
    assert!(alone_trace.contains(&format!("\"name\":\"{train}\"")));
    assert!(!alone_trace.contains("stalled behind"));
    assert!(both_trace.contains(&format!("\"name\":\"{train}, stalled behind node1 DMA channel 0\"")));
    assert!(both_trace.contains(&format!("\"name\":\"{train}, stalled behind node0 DMA channel 0\"")));
}
