//! Driving a network event by event: a host model runs it to its next event, takes the new
//! deliveries and injects replies at their times; and the slower device reads of a bus.

use base::SimTime;
use ether::{Endpoint, Frame, IoBusSpec, LinkSpec, NetworkBuilder, NicSpec};

#[test]
fn stepping_hands_over_each_delivery_once_and_accepts_replies() {
    let mut b = NetworkBuilder::new();
    let a = b.nic(NicSpec::IDEAL, None).unwrap();
    let z = b.nic(NicSpec::IDEAL, None).unwrap();
    b.connect(Endpoint::Nic(a), Endpoint::Nic(z), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    let mut net = b.build();
    net.inject(SimTime::ZERO, Frame { id: 0, payload: 1000, src: a, dst: z }).unwrap();
    // Ping-pong of 5 round trips: every delivery is answered at once from the other end.
    let mut seen = vec![];
    while let Some(t) = net.next_time() {
        net.run_until(t);
        for d in net.take_deliveries() {
            assert_eq!(d.at, t);
            seen.push((d.frame.id, d.at));
            if d.frame.id < 9 {
                let reply = Frame { id: d.frame.id + 1, payload: 1000, src: d.frame.dst, dst: d.frame.src };
                net.inject(d.at, reply).unwrap();
            }
        }
    }
    // 1000 B: 1026 B to the last bit = 8.208 us per crossing.
    let ids: Vec<u64> = seen.iter().map(|s| s.0).collect();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
    assert!(seen.iter().enumerate().all(|(i, s)| s.1 == SimTime::from_ns(8_208 * (i as u64 + 1))));
    assert!(net.take_deliveries().is_empty() && net.deliveries().is_empty());
    assert!(net.take_drops().is_empty());
    assert_eq!(net.next_time(), None);
}

#[test]
fn device_reads_run_at_the_read_rate_and_writes_at_the_peak() {
    // Reads at half the peak: a sending port's DMA takes twice the receiving port's.
    let spec = IoBusSpec {
        bytes_per_second: 1_000_000_000,
        per_transfer: SimTime::ZERO,
        read_bytes_per_second: Some(500_000_000),
    };
    let mut b = NetworkBuilder::new();
    let (bus_a, bus_z) = (b.bus(spec).unwrap(), b.bus(spec).unwrap());
    let a = b.nic(NicSpec::IDEAL, Some(bus_a)).unwrap();
    let z = b.nic(NicSpec::IDEAL, Some(bus_z)).unwrap();
    b.connect(Endpoint::Nic(a), Endpoint::Nic(z), LinkSpec::gbe(SimTime::ZERO)).unwrap();
    let mut net = b.build();
    net.inject(SimTime::ZERO, Frame { id: 0, payload: 982, src: a, dst: z }).unwrap();
    net.run();
    // 1000 B frame: read 2 us, 1008 B to the last bit 8.064 us, write 1 us.
    assert_eq!(net.deliveries()[0].at, SimTime::from_ns(2_000 + 8_064 + 1_000));
    assert_eq!(net.bus_busy(bus_a), SimTime::from_us(2));
    assert_eq!(net.bus_busy(bus_z), SimTime::from_us(1));
}
