//! Scale: the 3-D neighbour exchange on all 2,560 PACS-CS nodes (seed 004 Table 1:
//! 16 x 16 x 10, 2 links per dimension): every node sends 8 KiB to each of its 6 neighbours.
//! The test asserts that every message arrives intact, with no loss and no retransmission;
//! `cargo test --release -p hxb-sim --test scale -- --nocapture` prints the wall time.

use hxb_sim::experiments::neighbour::exchange;
use hxb_sim::platform::find;

#[test]
fn pacs_cs_neighbour_exchange_delivers_every_message() {
    let p = find("pacs-cs").unwrap();
    let wall = std::time::Instant::now();
    let r = exchange(&p, 8 << 10).unwrap();
    let wall = wall.elapsed();
    assert_eq!(r.nodes, 2560);
    assert_eq!(r.sent, 2560 * 6);
    assert_eq!(r.delivered, r.sent);
    assert_eq!((r.totals.lost, r.totals.stats.retransmitted, r.totals.stats.duplicates), (0, 0, 0));
    // One packet per message, each answered by a pure ACK; nothing is relayed (neighbours are
    // one switch away).
    assert_eq!(r.totals.stats.sent, 2560 * 6);
    assert_eq!(r.totals.stats.relayed, 0);
    // Each node's 6 messages leave on 6 ports at once: the exchange takes about one 8 KiB frame
    // time on the wire (66 us) plus host and switch costs, well under a millisecond.
    let us = r.finish.as_us_f64();
    assert!((66.0..1000.0).contains(&us), "finished at {us} us");
    println!(
        "PACS-CS 3-D exchange: {} nodes, {} messages of 8 KiB, simulated {us:.1} us, {} events, wall {wall:?}",
        r.nodes, r.delivered, r.totals.events
    );
}
