//! Over real links, a 2 x 2 x 1 hyper-crossbar (four namespaces, one veth pair per neighbour):
//! messages from (0,0,0) to (1,1,0) cross relay (1,0,0) (X first, seed 004 §3.4) and the ACKs
//! come back through (0,1,0); every byte arrives in order, each relay resends frames, and a
//! small message makes a round trip through both relays.

mod common;

use std::time::{Duration, Instant};

use ether_net::{LinkSpec, RateLimit, SlotSpec};
use hxb_net::{Endpoint, EndpointConfig, PortSpec};
use hxb_proto::{Config, Coord, Grid, HEADER_LEN};

#[test]
fn messages_cross_a_relay_whole_and_in_order() {
    let Some(mut tb) = common::testbed() else { return };
    let coords = [Coord::new(0, 0, 0), Coord::new(1, 0, 0), Coord::new(0, 1, 0), Coord::new(1, 1, 0)];
    let ns: Vec<String> = (0..4).map(|i| tb.add_namespace(&format!("n{i}")).unwrap()).collect();
    let spec = LinkSpec::new(1).mtu(common::IF_MTU).rate(RateLimit::new(1_000_000_000));
    let mut ports: Vec<Vec<PortSpec>> = vec![Vec::new(); 4];
    // Index bit 0 is x, bit 1 is y; port = dimension (k = 1).
    for i in 0..4 {
        for d in 0..2 {
            let j = i | 1 << d;
            if j == i {
                continue;
            }
            let link = tb.add_link(&ns[i], &ns[j], &spec).unwrap();
            let p = &link.pairs[0];
            ports[i].push(PortSpec {
                port: d as u16,
                ifname: p.a.ifname.clone(),
                neighbours: vec![(coords[j], p.b.mac)],
            });
            ports[j].push(PortSpec {
                port: d as u16,
                ifname: p.b.ifname.clone(),
                neighbours: vec![(coords[i], p.a.mac)],
            });
        }
    }
    let mut eps: Vec<Endpoint> = (0..4)
        .map(|i| {
            let node = Config {
                grid: Grid(Coord::new(2, 2, 1)),
                coord: coords[i],
                links_per_dim: 1,
                mtu: (common::IF_MTU as usize - HEADER_LEN) as u16,
                rto_ps: 20_000_000_000,
            };
            let mut cfg = EndpointConfig::new(node, &ns[i], ports[i].clone());
            cfg.ring = SlotSpec { slot_size: 12 * 1024, slots: 128 };
            Endpoint::start(cfg).unwrap()
        })
        .collect();
    let (count, len) = (60, 64 * 1024);
    for i in 0..count {
        eps[0].send(coords[3], &common::message(i, len)).unwrap();
    }
    let start = Instant::now();
    for i in 0..count {
        let left = Duration::from_secs(10).saturating_sub(start.elapsed());
        let (from, m) = eps[3].recv(left).unwrap().unwrap_or_else(|| panic!("message {i} not received"));
        assert_eq!(from, coords[0]);
        assert_eq!(m, common::message(i, len), "message {i}");
    }
    assert!(eps[0].flush(Duration::from_secs(2)).unwrap(), "sender not idle: {:?}", eps[0].stats());
    let packets = eps[0].stats().sent;
    // Counters are published by each endpoint's thread every 10 ms: wait for the last ones.
    let deadline = Instant::now() + Duration::from_secs(1);
    while (eps[3].stats().delivered < packets || eps[1].stats().relayed < packets) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(eps[1].stats().relayed >= packets, "relay (1,0,0) passed on {} of {packets}", eps[1].stats().relayed);
    assert!(eps[2].stats().relayed > 0, "the ACKs come back through (0,1,0)");
    assert_eq!(eps[3].stats().delivered, packets);

    // A round trip of a small message: out through (1,0,0), back through (0,1,0).
    let (a, rest) = eps.split_at_mut(1);
    a[0].send(coords[3], b"ping").unwrap();
    let (_, m) = rest[2].recv(Duration::from_secs(2)).unwrap().expect("ping");
    rest[2].send(coords[0], &m).unwrap();
    let (from, m) = a[0].recv(Duration::from_secs(2)).unwrap().expect("pong");
    assert_eq!((from, &m[..]), (coords[3], &b"ping"[..]));
}
