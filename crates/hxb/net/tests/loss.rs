//! Under 1 % loss and 1 % duplication of the frames received on one of two links (both
//! directions: DATA and ACKs), every message arrives once, whole and in order. The faults are
//! injected on receipt ([`hxb_net::RxFaults`]) because this host's kernel has no netem.

mod common;

use std::time::Duration;

use ether_net::{LinkSpec, RateLimit};
use hxb_net::RxFaults;

const RATE: u64 = 200_000_000;
const LEN: usize = 64 * 1024;

#[test]
fn one_percent_loss_on_one_link_loses_and_duplicates_nothing() {
    let Some(mut tb) = common::testbed() else { return };
    let spec = LinkSpec::new(2).mtu(common::IF_MTU).rate(RateLimit::new(RATE));
    let faults = RxFaults { port: Some(0), loss: 0.01, duplicate: 0.01, seed: 2006 };
    // 20 ms: above the round trip of a full window (32 jumbo frames: 12 ms at 200 Mb/s).
    let (mut a, b, _) = common::pair(&mut tb, &spec, 20_000_000_000, Some(faults));
    let count = 160;
    let took = common::stream(&mut a, &b, count, LEN, Duration::from_secs(10));
    let (sa, sb) = (a.stats(), b.stats());
    let rate = (count * LEN) as f64 * 8.0 / took.as_secs_f64();
    eprintln!(
        "HXB k=2 x 200 Mb/s, 1 % loss + 1 % duplication on link 0: {count} x {LEN} B in {took:.2?}: \
         {:.1} Mb/s = {:.1} % (sent {}, retransmitted {}, duplicates dropped {}, delivered {})",
        rate / 1e6,
        100.0 * rate / (2.0 * RATE as f64),
        sa.sent,
        sa.retransmitted,
        sb.duplicates,
        sb.delivered
    );
    assert!(sa.retransmitted > 0, "1 % loss of {} packets and no retransmission", sa.sent);
    assert!(sb.duplicates > 0, "1 % duplication and no duplicate seen");
    assert_eq!(sb.delivered, sa.sent, "each packet delivered exactly once");
}
