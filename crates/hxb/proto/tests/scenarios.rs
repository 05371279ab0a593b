//! Harness scenarios: the HXB core between nodes of a small hyper-crossbar in virtual time.

mod common;

use base::harness::{Fault, LinkConfig};
use base::SimTime;
use common::{message, Net};
use hxb_proto::{Coord, Grid, DUPTHRESH};

/// Gigabit Ethernet: 125 MB/s per link and direction (hxb.md, "theoretical performance").
const GBE: u64 = 125_000_000;
const MTU: u16 = 8192;
/// Above the 2.1 ms a full window of 32 jumbo packets takes to leave on one link.
const RTO_PS: u64 = 5_000_000_000; // 5 ms

fn gbe(latency_us: u64) -> LinkConfig {
    LinkConfig::new(SimTime::from_us(latency_us), GBE)
}

#[test]
fn cross_link_reordering_still_delivers_in_order() {
    // Link 1 is 100 us slower than link 0, so striped packets overtake each other.
    let grid = Grid(Coord::new(2, 1, 1));
    let mut net = Net::new(1, grid, 2, MTU, RTO_PS, |_, l| gbe(5 + 100 * u64::from(l)));
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
    let sent: Vec<Vec<u8>> = (0..6).map(|i| message(i, 20_000 + 3_000 * i as usize)).collect();
    for m in &sent {
        net.send(a, b, m);
    }
    net.run_to_idle(SimTime::from_us(100_000));
    assert_eq!(net.host(b).from(a), sent);
    let seqs = &net.host(b).arrivals[&a];
    assert!(seqs.windows(2).any(|w| w[1] < w[0]), "packets arrived out of order: {seqs:?}");
    let s = net.host(a).node.stats();
    assert_eq!((s.retransmitted, net.host(b).node.stats().duplicates), (0, 0), "{s:?}");
    // Both links carried half of the packets (round robin).
    let used: Vec<u64> = (0..2).map(|l| net.h.links()[net.links[&(0, 0, l)]].stats().sent).collect();
    assert!(used[0].abs_diff(used[1]) <= 2 && used[0] > 0, "{used:?}");
}

#[test]
fn lost_packets_and_acks_are_recovered_by_retransmission() {
    let grid = Grid(Coord::new(2, 1, 1));
    let mut net = Net::new(2, grid, 2, MTU, RTO_PS, |_, _| gbe(5));
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
    // On link 0: lose frames 0, 3 and 4 (data from a), on link 1 every frame from 5 to 8
    // (data and the ACKs coming back).
    let l0 = net.links[&(0, 0, 0)];
    let l1 = net.links[&(0, 0, 1)];
    net.h.set_injector(l0, Box::new(|f| if [0, 3, 4].contains(&f.index) { Fault::Drop } else { Fault::Pass }));
    net.h.set_injector(l1, Box::new(|f| if (5..=8).contains(&f.index) { Fault::Drop } else { Fault::Pass }));
    let sent: Vec<Vec<u8>> = (0..4).map(|i| message(i, 50_000)).collect();
    for m in &sent {
        net.send(a, b, m);
        net.send(b, a, &m[..1000]);
    }
    net.run_to_idle(SimTime::from_us(1_000_000));
    let end = net.host(b).last_delivery;
    assert_eq!(net.host(b).from(a), sent);
    assert_eq!(net.host(a).from(b), sent.iter().map(|m| m[..1000].to_vec()).collect::<Vec<_>>());
    let dropped: u64 = net.h.links().iter().map(|l| l.stats().dropped).sum();
    assert_eq!(dropped, 7);
    let retx = net.host(a).node.stats().retransmitted + net.host(b).node.stats().retransmitted;
    assert!(retx >= 3, "at least the lost data went again: {retx}");
    // a's 50 KB messages (7 packets each): every lost packet had later ones held by b, and went
    // again without waiting for its timeout; nothing arrived twice.
    let (sa, sb) = (net.host(a).node.stats(), net.host(b).node.stats());
    assert_eq!((sa.retransmitted, sa.fast_retransmitted, sb.duplicates), (5, 5, 0), "{sa:?} {sb:?}");
    assert!(end < SimTime::from_ps(RTO_PS / 4), "a's data did not wait for the timeout: {end}");
    // b's one-packet messages have no later packets to show a loss: the timeout recovers them.
    assert_eq!((sb.retransmitted, sb.fast_retransmitted, sa.duplicates), (2, 0, 0), "{sb:?} {sa:?}");
    assert!(net.host(a).last_delivery >= SimTime::from_ps(RTO_PS), "b's data waited for the timeout");
}

#[test]
fn relays_route_x_then_y_in_two_dimensions() {
    let grid = Grid(Coord::new(3, 3, 1));
    let mut net = Net::new(3, grid, 2, MTU, RTO_PS, |_, _| gbe(5));
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(2, 2, 0));
    let there: Vec<Vec<u8>> = (0..3).map(|i| message(i, 30_000)).collect();
    let back: Vec<Vec<u8>> = (0..3).map(|i| message(i + 10, 12_345)).collect();
    for (t, r) in there.iter().zip(&back) {
        net.send(a, b, t);
        net.send(b, a, r);
    }
    net.run_to_idle(SimTime::from_us(100_000));
    assert_eq!(net.host(b).from(a), there);
    assert_eq!(net.host(a).from(b), back);
    // a -> b corrects X first: relay (2,0,0); b -> a likewise: relay (0,2,0). No other node relays.
    for i in 0..grid.nodes() {
        let c = grid.coord(i).unwrap();
        let relayed = net.host(c).node.stats().relayed;
        if c == Coord::new(2, 0, 0) || c == Coord::new(0, 2, 0) {
            assert!(relayed > 0, "{c} relayed nothing");
        } else {
            assert_eq!(relayed, 0, "{c} relayed");
        }
    }
}

#[test]
fn two_relays_in_three_dimensions_under_loss() {
    let grid = Grid(Coord::new(2, 2, 2));
    let mut net = Net::new(4, grid, 2, MTU, RTO_PS, |_, _| LinkConfig { loss: 0.05, ..gbe(5) });
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 1, 1));
    let sent: Vec<Vec<u8>> = (0..5).map(|i| message(i, 40_000)).collect();
    for m in &sent {
        net.send(a, b, m);
    }
    net.run_to_idle(SimTime::from_us(1_000_000));
    assert_eq!(net.host(b).from(a), sent);
    assert!(net.host(Coord::new(1, 0, 0)).node.stats().relayed > 0);
    assert!(net.host(Coord::new(1, 1, 0)).node.stats().relayed > 0);
    assert_eq!(net.host(Coord::new(0, 1, 0)).node.stats().relayed, 0);
}

/// Virtual time until one 4 MiB message is delivered over k GbE links.
fn transfer_time(k: u8) -> SimTime {
    let grid = Grid(Coord::new(2, 1, 1));
    let mut net = Net::new(5, grid, k, MTU, RTO_PS, |_, _| gbe(5));
    net.send(Coord::new(0, 0, 0), Coord::new(1, 0, 0), &message(0, 4 << 20));
    net.run_to_idle(SimTime::from_us(1_000_000));
    assert_eq!(net.host(Coord::new(0, 0, 0)).node.stats().retransmitted, 0);
    net.host(Coord::new(1, 0, 0)).last_delivery
}

#[test]
fn striping_scales_bandwidth_with_the_link_count() {
    let bytes = (4u64 << 20) as f64;
    let rate = |k: u8| bytes / (transfer_time(k).as_ps() as f64 * 1e-12) / (f64::from(k) * GBE as f64);
    // Per packet: 8192 payload + 36 header + 38 Ethernet bytes: at most 99.1 % of the link rate.
    for k in [1, 2, 4, 6] {
        let eff = rate(k);
        assert!((0.95..=0.992).contains(&eff), "k = {k}: {:.1} % of k x 125 MB/s", eff * 100.0);
    }
}

/// One message of `packets` full packets from (0,0,0) to (1,0,0) over k links, frames of a
/// dropped where `drop(n)` is true for a's n-th data frame (first sends and repeats, in order).
fn with_drops(k: u8, packets: usize, drop: impl Fn(u64) -> bool + 'static) -> (Net, Vec<u8>) {
    let grid = Grid(Coord::new(2, 1, 1));
    let mut net = Net::new(6, grid, k, MTU, RTO_PS, |_, _| gbe(5));
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
    let from = net.idx(a);
    let drop = std::rc::Rc::new(drop);
    let count = std::rc::Rc::new(std::cell::Cell::new(0u64));
    for l in 0..k {
        let (drop, count) = (drop.clone(), count.clone());
        let link = net.links[&(0, 0, l)];
        net.h.set_injector(
            link,
            Box::new(move |f| {
                if f.from != from {
                    return Fault::Pass;
                }
                let n = count.get();
                count.set(n + 1);
                if drop(n) {
                    Fault::Drop
                } else {
                    Fault::Pass
                }
            }),
        );
    }
    let msg = message(0, packets * usize::from(MTU));
    net.send(a, b, &msg);
    net.run_to_idle(SimTime::from_us(1_000_000));
    (net, msg)
}

#[test]
fn a_lost_packet_goes_again_before_its_timeout() {
    let (lossless, _) = with_drops(2, 40, |_| false);
    let (net, msg) = with_drops(2, 40, |n| n == 5);
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
    assert_eq!(net.host(b).from(a), vec![msg]);
    let (sa, sb) = (net.host(a).node.stats(), net.host(b).node.stats());
    assert_eq!((sa.sent, sa.retransmitted, sa.fast_retransmitted, sb.duplicates), (40, 1, 1, 0), "{sa:?}");
    // The repair costs about a round trip and the packets behind it, not the 5 ms timeout.
    let (t0, t1) = (lossless.host(b).last_delivery, net.host(b).last_delivery);
    assert!(t1 < t0 + SimTime::from_us(300), "lossless {t0}, one loss {t1}");
    assert_eq!(lossless.host(a).node.stats().retransmitted, 0);
}

#[test]
fn a_lost_fast_retransmission_falls_back_to_the_timeout() {
    // One link, 20 packets: all leave at once (window 32); data frame 3 is lost, and so is its
    // fast retransmission, a's 21st data frame.
    let (net, msg) = with_drops(1, 20, |n| n == 3 || n == 20);
    let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
    assert_eq!(net.host(b).from(a), vec![msg]);
    let (sa, sb) = (net.host(a).node.stats(), net.host(b).node.stats());
    assert_eq!((sa.retransmitted, sa.fast_retransmitted, sb.duplicates), (2, 1, 0), "{sa:?}");
    assert!(net.host(b).last_delivery >= SimTime::from_ps(RTO_PS), "the second repeat waited for the timeout");
}

/// The most packets that arrived before one with a lower sequence number (reordering depth).
fn depth(arrivals: &[u32]) -> usize {
    (0..arrivals.len()).map(|i| arrivals[..i].iter().filter(|&&s| s > arrivals[i]).count()).max().unwrap_or(0)
}

#[test]
fn reordering_across_links_without_loss_sends_nothing_twice() {
    // Link l is 150 us (more than two packet times) slower than link l - 1: packets on faster
    // links overtake up to 9 earlier ones. Directly, only a later packet of the same link shows
    // a loss; through a relay (which stripes the next hop anew) only the timeout does. So no
    // packet goes twice, either way, with mixed sizes.
    for (grid, b) in
        [(Grid(Coord::new(2, 1, 1)), Coord::new(1, 0, 0)), (Grid(Coord::new(2, 2, 1)), Coord::new(1, 1, 0))]
    {
        let mut net = Net::new(7, grid, 4, MTU, RTO_PS, |_, l| gbe(5 + 150 * u64::from(l)));
        let a = Coord::new(0, 0, 0);
        let there: Vec<Vec<u8>> = (0..8).map(|i| message(i, 3_000 + 11_000 * i as usize)).collect();
        let back: Vec<Vec<u8>> = (0..5).map(|i| message(50 + i, 20_000 * i as usize + 1)).collect();
        for m in &there {
            net.send(a, b, m);
        }
        for m in &back {
            net.send(b, a, m);
        }
        net.run_to_idle(SimTime::from_us(1_000_000));
        assert_eq!(net.host(b).from(a), there);
        assert_eq!(net.host(a).from(b), back);
        let d = depth(&net.host(b).arrivals[&a]);
        assert!(d >= DUPTHRESH, "packets overtook {d} earlier ones");
        for i in 0..grid.nodes() {
            let s = net.h.endpoint(i).node.stats();
            assert_eq!((s.retransmitted, s.duplicates), (0, 0), "node {i}: {s:?}");
        }
    }
}
