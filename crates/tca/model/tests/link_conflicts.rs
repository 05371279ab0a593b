//! Per-link counters on the 16-node HA-PACS/TCA sub-cluster (two rings of 8 joined through S):
//! two DMA streams whose routes share a ring link queue on it; a stream alone does not.

use base::SimTime;
use std::path::Path;
use tca_model::platform::Platform;
use tca_model::router::Target;
use tca_model::{Cluster, DescriptorSource, LinkStats, Output, Work};

fn ha_pacs() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

const BYTES: u64 = 64 << 10;

/// Channel 0 of each `from` node writes 64 KiB of its host memory into `to`'s host memory, all
/// kicked at time 0; runs to the end and returns the counters and when each run was done.
fn run(streams: &[(u32, u32)]) -> (Vec<LinkStats>, Vec<SimTime>) {
    let mut c = Cluster::new(&ha_pacs());
    let map = c.address_map().clone();
    for (i, &(from, to)) in streams.iter().enumerate() {
        let (src, dst) = (map.global(from, Target::Host(1 << 20)), map.global(to, Target::Host((i as u64 + 1) << 20)));
        let descriptor = Work::Descriptor { source: DescriptorSource::Registers, addr: 0 };
        for w in
            [Work::Kick, descriptor, Work::Write { id: i as u64, src, dst, len: BYTES }, Work::Done { id: i as u64 }]
        {
            c.work(SimTime::ZERO, from, 0, w).unwrap();
        }
    }
    let (mut out, mut done) = (Vec::new(), vec![SimTime::ZERO; streams.len()]);
    while c.step(None).is_some() {}
    c.drain_outputs(&mut out);
    let mut landed = 0;
    for (t, o) in out {
        match o {
            Output::Done { id } => done[id as usize] = t,
            Output::Landed { len, .. } => landed += len,
            _ => {}
        }
    }
    assert_eq!(landed, BYTES * streams.len() as u64, "every byte lands");
    (c.link_stats(), done)
}

fn link<'a>(stats: &'a [LinkStats], name: &str) -> &'a LinkStats {
    stats.iter().find(|l| l.name == name).unwrap_or_else(|| panic!("no link {name}"))
}

#[test]
fn two_streams_sharing_a_ring_link_stall_on_it_and_one_alone_does_not() {
    // Node 0 -> node 2 goes E through node 1; node 1 -> node 2 takes the same cable.
    let shared = "node1 E port -> node2";
    let (alone, alone_done) = run(&[(0, 2)]);
    let (both, both_done) = run(&[(0, 2), (1, 2)]);

    let l = link(&alone, shared);
    // 64 KiB in TLPs of the 256-byte maximum payload (seed 000 §4.1.1).
    assert_eq!(l.tlps, BYTES / 256);
    assert_eq!(l.stalled_tlps, 0, "{l:?}");
    assert_eq!(link(&alone, "node0 E port -> node1").stalled_tlps, 0);

    let l = link(&both, shared);
    assert_eq!(l.tlps, 2 * BYTES / 256);
    // The streams interleave on the cable: more TLPs than one stream has wait behind the other.
    assert!(l.stalled_tlps > BYTES / 256, "{l:?}");
    // Node 0's first hop is its own: nobody else uses it.
    assert_eq!(link(&both, "node0 E port -> node1").stalled_tlps, 0);
    // Busy time is the serialisation of the TLPs: twice as much for twice the TLPs.
    assert_eq!(l.busy.as_ps(), 2 * link(&alone, shared).busy.as_ps());
    // Sharing the link makes the later stream finish later than it would alone.
    assert!(both_done.iter().max().unwrap() > &alone_done[0], "{both_done:?} vs {alone_done:?}");
    // Links nobody used carried nothing.
    let unused = link(&both, "node9 E port -> node10");
    assert_eq!((unused.tlps, unused.stalled_tlps, unused.busy), (0, 0, SimTime::ZERO));
}
