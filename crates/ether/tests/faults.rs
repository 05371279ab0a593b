//! Fault injection on links: scripted decisions land on the right frames; seeded ones repeat.

use base::SimTime;
use ether::{DropCause, Endpoint, Fault, Frame, LinkSpec, Network, NetworkBuilder, NicSpec, RandomFaults, SwitchSpec};

/// NIC 0 -> switch -> NIC 1 with 8 jumbo frames (ids 0..8) ready at time zero.
fn through_switch(hook: ether::FaultHook) -> Network {
    let mut b = NetworkBuilder::new();
    let a = b.nic(NicSpec::IDEAL, None).unwrap();
    let z = b.nic(NicSpec::IDEAL, None).unwrap();
    let sw = b.switch(SwitchSpec::seed004(2));
    b.connect(Endpoint::Nic(a), Endpoint::Switch(sw, 0), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    b.connect(Endpoint::Switch(sw, 1), Endpoint::Nic(z), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    b.route(sw, z, 1).unwrap();
    b.faults(hook);
    let mut net = b.build();
    for id in 0..8 {
        net.inject(SimTime::ZERO, Frame { id, payload: 9000, src: a, dst: z }).unwrap();
    }
    net.run();
    net
}

#[test]
fn scripted_faults_hit_the_named_frames() {
    let net = through_switch(Box::new(|c| match (c.link, c.direction, c.index) {
        (0, 0, 2) => Fault::Drop,
        (0, 0, 3) => Fault::Duplicate,
        // On the second link (frames 0, 1, 3, 3, 4, ...) frame 4 is two wire times and 1 ps late:
        // frames 5 and 6 overtake it.
        (1, 0, 4) => Fault::Delay(SimTime::from_ns(2 * 9038 * 8 + 1)),
        _ => Fault::Pass,
    }));
    let ids: Vec<u64> = net.deliveries().iter().map(|d| d.frame.id).collect();
    // Frame 2 lost on link 0; frame 3 doubled; frame 4 overtaken.
    assert_eq!(ids, [0, 1, 3, 3, 5, 6, 4, 7]);
    assert_eq!(net.drops().len(), 1);
    assert_eq!(net.drops()[0].cause, DropCause::Injected(0));
    assert_eq!(net.drops()[0].frame.id, 2);
}

#[test]
fn seeded_random_faults_repeat_and_account_for_every_frame() {
    let run = |seed| {
        let mut f = RandomFaults::new(seed);
        f.loss = 0.2;
        f.duplicate = 0.2;
        f.reorder = 0.3;
        f.max_delay = SimTime::from_us(300);
        through_switch(f.into_hook())
    };
    let a = run(11);
    let b = run(11);
    assert_eq!(a.deliveries(), b.deliveries());
    assert_eq!(a.drops(), b.drops());
    // Every delivered id was sent, and each id is delivered at most 4 times (duplicated twice).
    for d in a.deliveries() {
        assert!(d.frame.id < 8);
        assert!(a.deliveries().iter().filter(|e| e.frame.id == d.frame.id).count() <= 4);
    }
    // With no faults everything arrives once, in order.
    let clean = through_switch(RandomFaults::new(11).into_hook());
    let ids: Vec<u64> = clean.deliveries().iter().map(|d| d.frame.id).collect();
    assert_eq!(ids, (0..8).collect::<Vec<_>>());
}
