//! Shared by the real-link tests: two nodes of a 2 x 1 x 1 grid joined by k veth pairs.

// Each test binary uses only part of this module.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use ether_net::{LinkSpec, Testbed};
use hxb_net::{Endpoint, EndpointConfig, PortSpec, RxFaults};
use hxb_proto::{Config, Coord, Grid, HEADER_LEN};

pub const A: Coord = Coord::new(0, 0, 0);
pub const B: Coord = Coord::new(1, 0, 0);
/// Interface MTU: jumbo frames, as PACS-CS uses (seed 004 Table 1).
pub const IF_MTU: u32 = 9000;

/// A fresh testbed, or `None` after printing why real links are unavailable here.
pub fn testbed() -> Option<Testbed> {
    if let Some(why) = ether_net::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(Testbed::new().expect("testbed"))
}

/// Namespaces a and b joined by `spec`, and the endpoints of A (in a) and B (in b), each with
/// receive faults `faults` if given.
pub fn pair(
    tb: &mut Testbed,
    spec: &LinkSpec,
    rto_ps: u64,
    faults: Option<RxFaults>,
) -> (Endpoint, Endpoint, Vec<(String, String)>) {
    let na = tb.add_namespace("a").unwrap();
    let nb = tb.add_namespace("b").unwrap();
    let link = tb.add_link(&na, &nb, spec).unwrap();
    let k = spec.pairs;
    let cfg = |coord| Config {
        grid: Grid(Coord::new(2, 1, 1)),
        coord,
        links_per_dim: k,
        mtu: (IF_MTU as usize - HEADER_LEN) as u16,
        rto_ps,
    };
    // Dimension X: ports 0..k are the k pairs.
    let ports_a = link.pairs.iter().enumerate();
    let ports_a =
        ports_a.map(|(i, p)| PortSpec { port: i as u16, ifname: p.a.ifname.clone(), neighbours: vec![(B, p.b.mac)] });
    let ports_b = link.pairs.iter().enumerate();
    let ports_b =
        ports_b.map(|(i, p)| PortSpec { port: i as u16, ifname: p.b.ifname.clone(), neighbours: vec![(A, p.a.mac)] });
    let mut ca = EndpointConfig::new(cfg(A), &na, ports_a.collect());
    let mut cb = EndpointConfig::new(cfg(B), &nb, ports_b.collect());
    // The same probabilities at both ends (DATA lost on the way out, ACKs on the way back),
    // different draws.
    ca.faults = faults.clone();
    cb.faults = faults.map(|f| RxFaults { seed: f.seed + 1, ..f });
    let ea = Endpoint::start(ca).unwrap();
    let eb = Endpoint::start(cb).unwrap();
    let names = link.pairs.iter().map(|p| (na.clone(), p.a.ifname.clone())).collect();
    (ea, eb, names)
}

/// Byte `j` of message `i`: differs between messages and is not periodic within one.
pub fn byte(i: usize, j: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) ^ j.wrapping_mul(40_503) ^ (j >> 8)) as u8
}

pub fn message(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|j| byte(i, j)).collect()
}

/// Sends `count` messages of `len` bytes from `a` to `b` and checks every byte on arrival, in
/// order. Returns the time from the first send to the last message received.
pub fn stream(a: &mut Endpoint, b: &Endpoint, count: usize, len: usize, limit: Duration) -> Duration {
    let start = Instant::now();
    for i in 0..count {
        a.send(B, &message(i, len)).unwrap();
    }
    for i in 0..count {
        let left = limit.saturating_sub(start.elapsed());
        let Some((from, m)) = b.recv(left).unwrap() else {
            panic!("message {i} of {count} not received within {limit:?}; sender {:?}", a.stats())
        };
        assert_eq!(from, A);
        assert_eq!(m.len(), len, "message {i}");
        if let Some(j) = (0..len).find(|&j| m[j] != byte(i, j)) {
            panic!("message {i} differs at byte {j}");
        }
    }
    let took = start.elapsed();
    assert!(b.recv(Duration::from_millis(50)).unwrap().is_none(), "a message beyond the stream");
    assert!(a.flush(Duration::from_secs(2)).unwrap(), "sender not idle: {:?}", a.stats());
    took
}
