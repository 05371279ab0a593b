//! NIC numbers: per-packet host costs and the cap of a shared I/O bus.

use base::SimTime;
use ether::{Endpoint, Frame, IoBusSpec, LinkSpec, NetworkBuilder, NicSpec};

#[test]
fn host_costs_add_to_latency_and_bound_the_packet_rate() {
    let bus =
        IoBusSpec { bytes_per_second: 1_000_000_000, per_transfer: SimTime::from_ns(200), read_bytes_per_second: None };
    let run = |spec: NicSpec, n: u64| {
        let mut b = NetworkBuilder::new();
        let (ba, bz) = (b.bus(bus).unwrap(), b.bus(bus).unwrap());
        let a = b.nic(spec, Some(ba)).unwrap();
        let z = b.nic(spec, Some(bz)).unwrap();
        b.connect(Endpoint::Nic(a), Endpoint::Nic(z), LinkSpec::gbe(SimTime::from_ns(10))).unwrap();
        let mut net = b.build();
        for id in 0..n {
            net.inject(SimTime::ZERO, Frame { id, payload: 1500, src: a, dst: z }).unwrap();
        }
        net.run();
        net.deliveries().iter().map(|d| d.at).collect::<Vec<_>>()
    };
    let spec = NicSpec { send_cost: SimTime::from_us(3), recv_cost: SimTime::from_us(2) };
    // One frame: send cost, DMA of 1518 B (0.2 + 1.518 us), 1526 B to the last bit (12.208 us),
    // 10 ns of cable, DMA again, receive cost.
    let one = run(spec, 1);
    assert_eq!(one, [SimTime::from_ps(3_000_000 + 1_718_000 + 12_208_000 + 10_000 + 1_718_000 + 2_000_000)]);
    // Back to back, the slowest stage sets the pace: the wire (12.304 us) ...
    let at = run(spec, 50);
    assert!(at.windows(2).all(|w| w[1] - w[0] == SimTime::from_ps(12_304_000)));
    // ... or a send cost of 20 us ...
    let at = run(NicSpec { send_cost: SimTime::from_us(20), ..spec }, 50);
    assert!(at.windows(2).all(|w| w[1] - w[0] == SimTime::from_us(20)));
    // ... or a receive cost of 30 us.
    let at = run(NicSpec { recv_cost: SimTime::from_us(30), ..spec }, 50);
    assert!(at.windows(2).all(|w| w[1] - w[0] == SimTime::from_us(30)));
}

/// Aggregate payload rate (B/s) of `k` GbE ports on one PCI-X bus, each sending `n` jumbo frames
/// to a peer of its own, and optionally receiving as many from it.
fn ports_on_one_bus(k: u32, n: u64, both_ways: bool) -> f64 {
    let mut b = NetworkBuilder::new();
    let bus = b.bus(IoBusSpec::PCI_X_133).unwrap();
    let mut pairs = vec![];
    for _ in 0..k {
        let port = b.nic(NicSpec::IDEAL, Some(bus)).unwrap();
        let peer = b.nic(NicSpec::IDEAL, None).unwrap();
        b.connect(Endpoint::Nic(port), Endpoint::Nic(peer), LinkSpec::gbe(SimTime::ZERO)).unwrap();
        pairs.push((port, peer));
    }
    let mut net = b.build();
    let mut id = 0;
    for _ in 0..n {
        for &(port, peer) in &pairs {
            net.inject(SimTime::ZERO, Frame { id, payload: 9000, src: port, dst: peer }).unwrap();
            id += 1;
            if both_ways {
                net.inject(SimTime::ZERO, Frame { id, payload: 9000, src: peer, dst: port }).unwrap();
                id += 1;
            }
        }
    }
    let end = net.run();
    assert_eq!(net.deliveries().len() as u64, id);
    let busy = net.bus_busy(bus);
    assert!(busy <= end);
    id as f64 * 9000.0 / (end.as_ps() as f64 / 1e12)
}

#[test]
fn ports_on_one_bus_are_capped_by_the_bus() {
    let link = 125e6 * 9000.0 / 9038.0; // 124.47 MB/s per GbE port
    let bus = 1_064e6 * 9000.0 / 9018.0; // 1,061.9 MB/s of payload through PCI-X
    for k in [1, 2, 3, 4, 8, 9, 10, 12] {
        let got = ports_on_one_bus(k, 200, false);
        let expected = (f64::from(k) * link).min(bus);
        assert!((got / expected - 1.0).abs() < 0.01, "k={k}: {got} vs {expected}");
    }
    // 8 ports fit (995.8 MB/s), 9 do not (1,120 MB/s asked, 1,061.9 given).
    assert!(ports_on_one_bus(9, 200, false) < 9.0 * link * 0.95);
    // Seed 004's 3 E1000 ports per bus at 9 links: even both ways (746.8 MB/s) the bus keeps up.
    let got = ports_on_one_bus(3, 200, true);
    assert!((got / (6.0 * link) - 1.0).abs() < 0.01, "{got}");
    // 5 ports both ways would want 1,244.7 MB/s: the bus caps them.
    let got = ports_on_one_bus(5, 200, true);
    assert!((got / bus - 1.0).abs() < 0.01, "{got}");
}
