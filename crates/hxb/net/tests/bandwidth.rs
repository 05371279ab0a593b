//! A stream of 64 KiB messages from A to B over k = 1 and 2 tbf-limited veth links arrives
//! whole and in order, at more than half of k x the link rate.

mod common;

use std::time::Duration;

use ether_net::{LinkSpec, RateLimit};

/// Per link; 200 Mb/s keeps the test short on a small machine.
const RATE: u64 = 200_000_000;
const LEN: usize = 64 * 1024;

fn run(k: u8) {
    let Some(mut tb) = common::testbed() else { return };
    let spec = LinkSpec::new(k).mtu(common::IF_MTU).rate(RateLimit::new(RATE));
    let (mut a, b, _) = common::pair(&mut tb, &spec, 50_000_000_000, None);
    // About 0.8 s of traffic at full rate.
    let count = 300 * usize::from(k);
    let took = common::stream(&mut a, &b, count, LEN, Duration::from_secs(5));
    let bytes = (count * LEN) as f64;
    let rate = bytes * 8.0 / took.as_secs_f64();
    let pct = 100.0 * rate / (f64::from(k) * RATE as f64);
    let (sa, sb) = (a.stats(), b.stats());
    eprintln!(
        "HXB k={k} x {} Mb/s: {count} x {LEN} B in {took:.2?}: {:.1} Mb/s = {pct:.1} % of {} Mb/s \
         (sent {}, retransmitted {}, duplicates {}, ring drops {})",
        RATE / 1_000_000,
        rate / 1e6,
        u64::from(k) * RATE / 1_000_000,
        sa.sent,
        sa.retransmitted,
        sb.duplicates,
        b.ring_drops()
    );
    assert!(pct > 50.0, "{pct:.1} % of {k} x {} Mb/s", RATE / 1_000_000);
    assert!(pct < 105.0, "{pct:.1} %: faster than the links allow");
}

#[test]
fn one_link() {
    run(1);
}

#[test]
fn two_links() {
    run(2);
}
