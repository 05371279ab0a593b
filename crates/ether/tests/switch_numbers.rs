//! Switch numbers: store-and-forward plus stage latency, and exact drop counts of a full queue.

use base::SimTime;
use ether::switch::SEED004_STAGE_LATENCY;
use ether::{DropCause, Endpoint, Frame, LinkSpec, NetworkBuilder, NicId, NicSpec, QueueLimit, SwitchId, SwitchSpec};

const PROP: SimTime = SimTime::from_ns(25);

/// Time of the one delivery of a frame of `payload` bytes from the first NIC to the second.
fn one_frame(through_switch: bool, payload: u32) -> SimTime {
    let mut b = NetworkBuilder::new();
    let a = b.nic(NicSpec::IDEAL, None).unwrap();
    let z = b.nic(NicSpec::IDEAL, None).unwrap();
    if through_switch {
        let sw = b.switch(SwitchSpec::seed004(2));
        b.connect(Endpoint::Nic(a), Endpoint::Switch(sw, 0), LinkSpec::gbe(PROP)).unwrap();
        b.connect(Endpoint::Switch(sw, 1), Endpoint::Nic(z), LinkSpec::gbe(PROP)).unwrap();
        b.route(sw, z, 1).unwrap();
    } else {
        b.connect(Endpoint::Nic(a), Endpoint::Nic(z), LinkSpec::gbe(PROP)).unwrap();
    }
    let mut net = b.build();
    net.inject(SimTime::ZERO, Frame { id: 1, payload, src: a, dst: z }).unwrap();
    net.run();
    assert_eq!(net.deliveries().len(), 1);
    net.deliveries()[0].at
}

#[test]
fn a_switch_adds_a_store_and_forward_hop_and_its_stage_latency() {
    for payload in [46, 1500, 9000] {
        let direct = one_frame(false, payload);
        let to_last_bit = SimTime::from_ns(u64::from((payload + 26).max(72)) * 8);
        assert_eq!(direct, to_last_bit + PROP);
        // The whole frame is received before it is sent on: one more serialization and
        // propagation, plus 5.1 us.
        let switched = one_frame(true, payload);
        assert_eq!(switched - direct, to_last_bit + PROP + SEED004_STAGE_LATENCY, "payload {payload}");
    }
    // 1500 B: 12.233 us direct, 29.566 us through the seed's switch.
    assert_eq!(one_frame(true, 1500), SimTime::from_ps(29_566_000));
}

/// Two senders blast 10 jumbo frames each into one receiver through a switch whose output
/// queues hold `limit`.
fn incast(limit: QueueLimit) -> ether::Network {
    let mut b = NetworkBuilder::new();
    let senders = [b.nic(NicSpec::IDEAL, None).unwrap(), b.nic(NicSpec::IDEAL, None).unwrap()];
    let rx = b.nic(NicSpec::IDEAL, None).unwrap();
    let sw = b.switch(SwitchSpec { ports: 3, stage_latency: SEED004_STAGE_LATENCY, queue: limit });
    for (p, s) in senders.iter().enumerate() {
        b.connect(Endpoint::Nic(*s), Endpoint::Switch(sw, p as u16), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    }
    b.connect(Endpoint::Switch(sw, 2), Endpoint::Nic(rx), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    b.route(sw, rx, 2).unwrap();
    let mut net = b.build();
    for i in 0..10 {
        for (n, s) in senders.iter().enumerate() {
            net.inject(SimTime::ZERO, Frame { id: 100 * n as u64 + i, payload: 9000, src: *s, dst: rx }).unwrap();
        }
    }
    net.run();
    net
}

#[test]
fn a_full_output_queue_drops_an_exact_count() {
    // Both inputs deliver a frame to the output queue every wire time P; the output drains one per
    // P. A frame is held until its last bit has left (before the next pair comes), so before step
    // k the queue holds min(k, Q - 1): two admitted while k <= Q - 2, then one admitted and one
    // dropped. Drops = 10 - (Q - 1) = 11 - Q, always the second sender's frame.
    for q in 2..=10u32 {
        for limit in [QueueLimit::Frames(q), QueueLimit::Bytes(u64::from(q) * 9018)] {
            let net = incast(limit);
            let drops = net.drops();
            assert_eq!(drops.len() as u32, 11 - q, "{limit:?}");
            assert_eq!(net.queue_drops(SwitchId(0), 2), u64::from(11 - q));
            assert_eq!(net.queue_peak(SwitchId(0), 2), q.min(11) as usize);
            assert!(drops.iter().all(|d| d.cause == DropCause::QueueFull(SwitchId(0), 2)));
            let dropped: Vec<u64> = drops.iter().map(|d| d.frame.id).collect();
            let expected: Vec<u64> = (q as u64 - 1..10).map(|i| 100 + i).collect();
            assert_eq!(dropped, expected, "{limit:?}");
            assert_eq!(net.deliveries().len() as u32, 20 - (11 - q));
        }
    }
    // A queue of 11 frames or more loses nothing.
    assert!(incast(QueueLimit::Frames(11)).drops().is_empty());
}

#[test]
fn frames_without_a_route_or_to_the_wrong_nic_are_dropped() {
    let mut b = NetworkBuilder::new();
    let a = b.nic(NicSpec::IDEAL, None).unwrap();
    let z = b.nic(NicSpec::IDEAL, None).unwrap();
    let sw = b.switch(SwitchSpec::seed004(2));
    b.connect(Endpoint::Nic(a), Endpoint::Switch(sw, 0), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    b.connect(Endpoint::Switch(sw, 1), Endpoint::Nic(z), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    assert_eq!(b.route(sw, NicId(9), 1).unwrap_err().to_string(), "no such NIC");
    assert_eq!(b.route(sw, z, 2).unwrap_err().to_string(), "no such switch port");
    let err = b.connect(Endpoint::Nic(a), Endpoint::Switch(sw, 1), LinkSpec::gbe(SimTime::ZERO)).unwrap_err();
    assert_eq!(err.to_string(), "NIC is already connected");
    b.route(sw, a, 1).unwrap(); // wrong on purpose: frames for `a` go to `z`
    let mut net = b.build();
    net.inject(SimTime::ZERO, Frame { id: 1, payload: 100, src: a, dst: z }).unwrap();
    net.inject(SimTime::ZERO, Frame { id: 2, payload: 100, src: a, dst: a }).unwrap();
    net.run();
    let causes: Vec<_> = net.drops().iter().map(|d| (d.frame.id, d.cause)).collect();
    assert_eq!(causes, [(1, DropCause::NoRoute(sw)), (2, DropCause::Misdelivered(z))]);
    assert!(net.deliveries().is_empty());
}
