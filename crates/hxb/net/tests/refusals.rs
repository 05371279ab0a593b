//! Refusals of an endpoint print one line: bad ports, coordinates outside the grid, messages
//! to this node or outside the grid.

mod common;

use std::time::Duration;

use ether_net::LinkSpec;
use hxb_net::{Endpoint, EndpointConfig, HxbNetError, PortSpec};
use hxb_proto::{Config, Coord, Grid};

#[test]
fn refusals_are_one_line_errors() {
    let node =
        Config { grid: Grid(Coord::new(2, 1, 1)), coord: common::A, links_per_dim: 1, mtu: 1000, rto_ps: 1_000_000 };
    let port = |p| PortSpec { port: p, ifname: "l0p0".into(), neighbours: vec![] };
    let e = Endpoint::start(EndpointConfig::new(node.clone(), "none", vec![port(0), port(0)])).unwrap_err();
    assert_eq!(e.to_string(), "endpoint configuration: port 0 is repeated or not below 3 x 1");
    let e = Endpoint::start(EndpointConfig::new(node.clone(), "none", vec![port(3)])).unwrap_err();
    assert!(matches!(e, HxbNetError::Config(_)));
    let bad = Config { coord: Coord::new(2, 0, 0), ..node };
    let e = Endpoint::start(EndpointConfig::new(bad, "none", vec![])).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");

    let Some(mut tb) = common::testbed() else { return };
    let (mut a, _b, _) = common::pair(&mut tb, &LinkSpec::new(1).mtu(common::IF_MTU), 1_000_000_000, None);
    assert_eq!(a.send(common::A, b"x").unwrap_err().to_string(), "cannot send to (0,0,0): this node itself");
    assert_eq!(a.send(Coord::new(0, 1, 0), b"x").unwrap_err().to_string(), "cannot send to (0,1,0): outside the grid");
    assert!(a.flush(Duration::from_millis(100)).unwrap());
}
