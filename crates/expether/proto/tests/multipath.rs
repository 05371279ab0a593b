//! Multipath (seed 002 §3.3.1 "イーサネットパスの集約", §4.1): one connection sent round robin
//! over several Ethernet paths whose latencies differ; the receiver's reorder buffer puts the
//! frames back in order, so the skew costs no retransmission and the paths' bandwidths add up.

mod common;

use base::harness::{Harness, LinkConfig};
use base::SimTime;
use common::{mac, tlp, Node, TEN_GBE};
use expether_proto::{Config, ExpError, Stats};
use proptest::prelude::*;

/// Two bridges joined by one link per path (`links[i]` is path `i`); bridge 0 sends `count`
/// TLPs of `len` bytes to bridge 1. Returns the receiver's TLPs, the time of the last, and the
/// sender's and receiver's counters.
fn run(links: &[LinkConfig], count: u32, len: usize, seed: u64) -> (Vec<Vec<u8>>, SimTime, Stats, Stats) {
    let mut h: Harness<Node> = Harness::new(seed);
    for i in 0..2 {
        let mut c = Config::new(mac(i), 5);
        (c.paths, c.queue_bytes, c.failure_losses, c.rto_ps) = (links.len() as u8, 1 << 20, 0, 200_000_000);
        h.add_endpoint(Node::new(c));
    }
    for (path, link) in links.iter().enumerate() {
        h.add_link(link.clone(), &[(0, path), (1, path)]);
    }
    h.act(0, |n, _| n.pending.extend((0..count).map(|k| (mac(1), tlp(0, 1, k, len)))));
    assert!(h.run(SimTime::from_us(1_000_000)), "not idle after a virtual second");
    let rx = h.endpoint(1);
    let last = rx.received.last().map_or(SimTime::ZERO, |r| r.0);
    (rx.from(0), last, h.endpoint(0).bridge.stats(), rx.bridge.stats())
}

fn path(latency_us: u64) -> LinkConfig {
    LinkConfig::new(SimTime::from_us(latency_us), TEN_GBE)
}

#[test]
fn two_paths_with_skew_deliver_in_order_at_twice_the_rate_without_retransmission() {
    let (count, len) = (20_000, 256);
    let expected: Vec<Vec<u8>> = (0..count).map(|k| tlp(0, 1, k, len)).collect();
    let (one, t1, _, _) = run(&[path(2)], count, len, 1);
    // The second path is 18 us slower: every frame on it arrives after frames sent later.
    let (two, t2, tx, rx) = run(&[path(2), path(20)], count, len, 1);
    assert_eq!((one, &two), (expected.clone(), &expected));
    assert_eq!((tx.retransmitted, tx.dup_ack_rounds, tx.timeout_rounds, rx.discarded), (0, 0, 0, 0));
    assert!(rx.reordered > u64::from(count) / 20, "{} frames held", rx.reordered);
    let speedup = t1.as_ps() as f64 / t2.as_ps() as f64;
    eprintln!("one path {t1:?}, two paths {t2:?}: x{speedup:.3}, {} frames reordered", rx.reordered);
    assert!(speedup > 1.9, "two 10GbE paths give x{speedup:.3}");
}

#[test]
fn a_loss_on_one_path_is_recovered_in_order_exactly_once() {
    let lossy = LinkConfig { loss: 0.02, ..path(10) };
    let (count, len) = (3000, 200);
    let (got, _, tx, _) = run(&[path(2), lossy], count, len, 7);
    assert_eq!(got, (0..count).map(|k| tlp(0, 1, k, len)).collect::<Vec<_>>());
    assert!(tx.retransmitted > 0 && tx.dup_ack_rounds > 0, "{tx:?}");
}

#[test]
fn path_counts_outside_1_to_16_are_refused() {
    for paths in [0, 17] {
        let c = Config { paths, ..Config::new(mac(0), 5) };
        assert_eq!(expether_proto::Bridge::new(c).err(), Some(ExpError::Config("paths must be 1..=16")));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn multipath_streams_survive_loss_duplication_reordering_and_skew(
        seed in any::<u64>(),
        latencies in proptest::collection::vec(1u64..40, 1..4),
        loss in 0.0..0.1f64,
        duplicate in 0.0..0.1f64,
        reorder in 0.0..0.3f64,
        count in 0u32..600,
        len in 6usize..400,
    ) {
        let links: Vec<LinkConfig> = latencies
            .iter()
            .map(|&us| LinkConfig { loss, duplicate, reorder, reorder_delay: SimTime::from_us(3), ..path(us) })
            .collect();
        let (got, _, _, _) = run(&links, count, len, seed);
        prop_assert_eq!(got, (0..count).map(|k| tlp(0, 1, k, len)).collect::<Vec<_>>());
    }
}
