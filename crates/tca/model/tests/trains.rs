//! Trains (`crates/tca/model/src/train.rs`) against TLP by TLP on the 16-node HA-PACS/TCA
//! sub-cluster: a stream alone gets the same times to the picosecond with far fewer events;
//! streams sharing a ring link finish within 2 %.

use base::SimTime;
use std::path::Path;
use tca_model::platform::Platform;
use tca_model::router::Target;
use tca_model::{Cluster, DescriptorSource, Output, Work};

fn ha_pacs() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

/// What a run gave: when each stream's run was done, when its last byte landed, the bytes
/// landed and the events it took.
#[derive(Debug)]
struct Run {
    done: Vec<SimTime>,
    landed_last: Vec<SimTime>,
    bytes: u64,
    events: u64,
}

/// Channel 0 of each `from` node copies `len` bytes from its GPU 0 into GPU 0 of `to`, all
/// kicked at time 0.
fn run(mut c: Cluster, streams: &[(u32, u32)], len: u64) -> Run {
    let map = c.address_map().clone();
    for (i, &(from, to)) in streams.iter().enumerate() {
        let (src, dst) = (map.global(from, Target::Gpu(0, 0)), map.global(to, Target::Gpu(0, (i as u64 + 1) << 24)));
        let id = i as u64;
        let descriptor = Work::Descriptor { source: DescriptorSource::Registers, addr: 0 };
        for w in [Work::Kick, descriptor, Work::Write { id, src, dst, len }, Work::Done { id }] {
            c.work(SimTime::ZERO, from, 0, w).unwrap();
        }
    }
    while c.step(None).is_some() {}
    let mut out = Vec::new();
    c.drain_outputs(&mut out);
    let n = streams.len();
    let mut r = Run { done: vec![SimTime::ZERO; n], landed_last: vec![SimTime::ZERO; n], bytes: 0, events: c.events() };
    for (t, o) in out {
        match o {
            Output::Done { id } => r.done[id as usize] = t,
            Output::Landed { id, len, .. } => {
                r.landed_last[id as usize] = r.landed_last[id as usize].max(t);
                r.bytes += len;
            }
            _ => {}
        }
    }
    r
}

#[test]
fn a_stream_alone_gets_the_same_times_in_trains() {
    // Node 0 to node 2 crosses node 1's chip: GPU read, N link, two cables, N link, GPU write.
    for len in [4, 300, 4096, 5000, 1 << 20] {
        let exact = run(Cluster::tlp_by_tlp(&ha_pacs()), &[(0, 2)], len);
        let trains = run(Cluster::new(&ha_pacs()), &[(0, 2)], len);
        assert_eq!(
            (trains.done.clone(), trains.landed_last.clone()),
            (exact.done.clone(), exact.landed_last.clone()),
            "{len} B"
        );
        assert_eq!((trains.bytes, exact.bytes), (len, len));
        if len == 1 << 20 {
            assert!(
                trains.events * 4 < exact.events,
                "{} events in trains, {} TLP by TLP",
                trains.events,
                exact.events
            );
        }
    }
}

#[test]
fn streams_sharing_a_link_finish_within_two_percent() {
    // Node 0 -> node 2 and node 1 -> node 2 share the cable node1 E -> node2 and node 2's N link.
    for len in [16 << 10, 1 << 20] {
        let exact = run(Cluster::tlp_by_tlp(&ha_pacs()), &[(0, 2), (1, 2)], len);
        let trains = run(Cluster::new(&ha_pacs()), &[(0, 2), (1, 2)], len);
        for (a, b) in exact.landed_last.iter().zip(&trains.landed_last) {
            let (a, b) = (a.as_ps() as f64, b.as_ps() as f64);
            assert!((b / a - 1.0).abs() < 0.02, "{len} B: last byte at {b} ps in trains, {a} ps TLP by TLP");
        }
        assert_eq!(trains.bytes, 2 * len);
    }
}
