//! The driver of the protocol cores: frames lost in the network are recovered by the core's
//! retransmission, at the times its timers give.

use ether::QueueLimit;
use hxb_proto::Coord;
use hxb_sim::experiments::Streams;
use hxb_sim::platform::find;
use hxb_sim::{Shape, World};

#[test]
fn switch_drops_are_recovered_by_retransmission() {
    let mut p = find("hxb-testbed-2006").unwrap();
    // Nodes 1 and 2 of a line of 3 both stream to node 0 over one link with a one-frame
    // switch buffer: their frames meet at node 0's switch port and many are lost.
    p.switch.queue = QueueLimit::Frames(1);
    let shape = Shape { grid: Coord::new(3, 1, 1), links: 1 };
    let mut world = World::new(&p, shape, p.hxb, false).unwrap();
    let mut app = Streams::new(vec![(1, 0, 16, 64 << 10), (2, 0, 16, 64 << 10)]);
    let totals = world.run(&mut app).unwrap();
    app.check().unwrap();
    assert!(totals.lost > 0 && totals.stats.retransmitted > 0, "{totals:?}");
    assert_eq!(totals.stats.delivered, totals.stats.sent);
    // Recovery waited for the 5 ms retransmission timeout (hxb.rto) at least once.
    let last = app.arrivals.iter().flat_map(|a| a.last()).max().unwrap();
    assert!(last.as_us_f64() > 5000.0, "{last} {totals:?}");
    // With ample buffers nothing is lost and nothing is sent twice.
    p.switch.queue = QueueLimit::Frames(128);
    let mut world = World::new(&p, shape, p.hxb, false).unwrap();
    let mut app = Streams::new(vec![(1, 0, 16, 64 << 10), (2, 0, 16, 64 << 10)]);
    let clean = world.run(&mut app).unwrap();
    app.check().unwrap();
    assert_eq!((clean.lost, clean.stats.retransmitted), (0, 0));
}
