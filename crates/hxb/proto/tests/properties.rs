//! Properties: whatever the links lose, duplicate, delay or reorder, the message streams between
//! two nodes (directly or across one relay) arrive complete, once, and in order. Over links that
//! keep their order, with any delays: without loss no packet is ever sent twice, and with loss
//! every repeat (fast or after the timeout) replaces a frame that was really lost.

mod common;

use base::harness::{Fault, LinkConfig};
use base::SimTime;
use common::{message, Net};
use hxb_proto::{Coord, Grid};
use proptest::prelude::*;

/// A timeout far above any delay of these links: 1 s.
const RTO_1S: u64 = 1_000_000_000_000;

/// A faulty gigabit link.
fn faulty(loss: f64, duplicate: f64, reorder: f64, reorder_us: u64) -> LinkConfig {
    LinkConfig {
        loss,
        duplicate,
        reorder,
        reorder_delay: SimTime::from_us(reorder_us),
        ..LinkConfig::new(SimTime::from_us(5), 125_000_000)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn streams_survive_any_fault_pattern(
        seed in any::<u64>(),
        loss in 0.0..0.25f64,
        duplicate in 0.0..0.3f64,
        reorder in 0.0..0.5f64,
        reorder_us in 0u64..300,
        k in 1u8..=3,
        relay in any::<bool>(),
        there in proptest::collection::vec(0usize..12_000, 1..6),
        back in proptest::collection::vec(0usize..12_000, 0..4),
    ) {
        // Through one relay, (1,0,0), or directly.
        let (grid, b) = if relay {
            (Grid(Coord::new(2, 2, 1)), Coord::new(1, 1, 0))
        } else {
            (Grid(Coord::new(2, 1, 1)), Coord::new(1, 0, 0))
        };
        let a = Coord::new(0, 0, 0);
        let mut net = Net::new(seed, grid, k, 1000, 1_000_000_000, |_, _| faulty(loss, duplicate, reorder, reorder_us));
        let there: Vec<Vec<u8>> = there.iter().enumerate().map(|(i, &n)| message(i as u32, n)).collect();
        let back: Vec<Vec<u8>> = back.iter().enumerate().map(|(i, &n)| message(100 + i as u32, n)).collect();
        for m in &there {
            net.send(a, b, m);
        }
        for m in &back {
            net.send(b, a, m);
        }
        // run_to_idle also checks that no node kept a buffer, a packet or an owed ACK.
        net.run_to_idle(SimTime::from_us(10_000_000));
        prop_assert_eq!(net.host(b).from(a), there);
        prop_assert_eq!(net.host(a).from(b), back);
        if relay {
            prop_assert!(net.host(Coord::new(1, 0, 0)).node.stats().relayed > 0);
        }
    }

    #[test]
    fn in_order_links_without_loss_never_repeat_a_packet(
        seed in any::<u64>(),
        k in 1u8..=4,
        delays in proptest::collection::vec(0u64..400, 12),
        relay in any::<bool>(),
        there in proptest::collection::vec(0usize..40_000, 1..8),
        back in proptest::collection::vec(0usize..40_000, 0..5),
    ) {
        let (grid, b) = if relay {
            (Grid(Coord::new(2, 2, 1)), Coord::new(1, 1, 0))
        } else {
            (Grid(Coord::new(2, 1, 1)), Coord::new(1, 0, 0))
        };
        let a = Coord::new(0, 0, 0);
        let link = |d: usize, l: u8| LinkConfig::new(SimTime::from_us(1 + delays[d * 4 + usize::from(l)]), 125_000_000);
        let mut net = Net::new(seed, grid, k, 8192, RTO_1S, link);
        let there: Vec<Vec<u8>> = there.iter().enumerate().map(|(i, &n)| message(i as u32, n)).collect();
        let back: Vec<Vec<u8>> = back.iter().enumerate().map(|(i, &n)| message(100 + i as u32, n)).collect();
        for m in &there {
            net.send(a, b, m);
        }
        for m in &back {
            net.send(b, a, m);
        }
        net.run_to_idle(SimTime::from_us(10_000_000));
        prop_assert_eq!(net.host(b).from(a), there);
        prop_assert_eq!(net.host(a).from(b), back);
        for i in 0..grid.nodes() {
            let s = net.h.endpoint(i).node.stats();
            prop_assert_eq!((s.retransmitted, s.duplicates), (0, 0), "node {}: {:?}", i, s);
        }
    }

    #[test]
    fn every_repeat_replaces_a_lost_frame(
        seed in any::<u64>(),
        k in 1u8..=4,
        delays in proptest::collection::vec(0u64..400, 4),
        loss_per_mille in 1u64..150,
        sizes in proptest::collection::vec(0usize..60_000, 1..8),
    ) {
        // Only a's data frames are lost (its ACKs from b never are) and the timeout is far
        // above any delay, so a repeat that b already had would be a spurious one.
        let grid = Grid(Coord::new(2, 1, 1));
        let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
        let link = |_: usize, l: u8| LinkConfig::new(SimTime::from_us(1 + delays[usize::from(l)]), 125_000_000);
        let mut net = Net::new(seed, grid, k, 8192, RTO_1S, link);
        let from = net.idx(a);
        for l in 0..k {
            let mut x = seed ^ (u64::from(l) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            net.h.set_injector(net.links[&(0, 0, l)], Box::new(move |f| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if f.from == from && x % 1000 < loss_per_mille { Fault::Drop } else { Fault::Pass }
            }));
        }
        let sent: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| message(i as u32, n)).collect();
        for m in &sent {
            net.send(a, b, m);
        }
        net.run_to_idle(SimTime::from_us(100_000_000));
        prop_assert_eq!(net.host(b).from(a), sent);
        let dropped: u64 = net.h.links().iter().map(|l| l.stats().dropped).sum();
        let (sa, sb) = (net.host(a).node.stats(), net.host(b).node.stats());
        prop_assert_eq!((sa.retransmitted, sb.duplicates), (dropped, 0), "{:?}", sa);
        prop_assert!(sa.fast_retransmitted <= sa.retransmitted);
    }
}
