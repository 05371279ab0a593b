//! Property: whatever the links lose, duplicate, delay or reorder, the message streams between
//! two nodes (directly or across one relay) arrive complete, once, and in order.

mod common;

use base::harness::LinkConfig;
use base::SimTime;
use common::{message, Net};
use hxb_proto::{Coord, Grid};
use proptest::prelude::*;

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
}
