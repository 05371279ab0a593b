//! Bandwidth and half round-trip time through relays (seed 004 §5.3, Table 6, Fig. 5).
//!
//! 0 relays: (0,0,0) to (1,0,0) in a 1-D pair; 1 relay: to (1,1,0) in a 2 x 2 plane, relayed
//! by (1,0,0); 2 relays: to (1,1,1) in a 2 x 2 x 2 cube, relayed by (1,0,0) and (1,1,0)
//! (dimension order X, Y, Z, §3.4). Table 6's rows 1-D, 2-D, 3-D.

use super::{messages_for, Streams};
use crate::fabric::Shape;
use crate::platform::Platform;
use crate::world::{Api, App, Totals, World};
use base::{SimTime, Trace};
use hxb_proto::Coord;

/// The shape and destination for `relays` relays.
fn route(relays: u8, links: u8) -> Result<(Shape, Coord), String> {
    let (grid, dst) = match relays {
        0 => (Coord::new(2, 1, 1), Coord::new(1, 0, 0)),
        1 => (Coord::new(2, 2, 1), Coord::new(1, 1, 0)),
        2 => (Coord::new(2, 2, 2), Coord::new(1, 1, 1)),
        r => return Err(format!("relays must be 0, 1 or 2 (a 3-D route has at most 2), not {r}")),
    };
    Ok((Shape { grid, links }, dst))
}

/// One bandwidth point through relays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoutedPoint {
    /// Relays on the route.
    pub relays: u8,
    /// Links per dimension.
    pub links: u8,
    /// Message size [B].
    pub size: u64,
    /// Steady-state bandwidth [B/s].
    pub bytes_per_second: f64,
    /// The run's totals.
    pub totals: Totals,
}

/// Streams messages of `size` bytes through `relays` relays.
pub fn routed_bandwidth(
    p: &Platform,
    relays: u8,
    links: u8,
    size: u64,
    trace: bool,
) -> Result<(RoutedPoint, Option<Trace>), String> {
    if size == 0 {
        return Err("message size must be at least 1 B".into());
    }
    let (shape, dst) = route(relays, links)?;
    let mut world = World::new(p, shape, p.hxb, trace)?;
    let to = world.grid().index(dst).expect("in grid");
    let mut app = Streams::new(vec![(0, to, messages_for(size), size)]);
    let totals = world.run(&mut app)?;
    let rate = app.total_rate()?;
    Ok((RoutedPoint { relays, links, size, bytes_per_second: rate, totals }, world.take_trace()))
}

/// Ping-pong between node 0 and `peer`: `left` round trips still to go.
struct PingPong {
    peer: usize,
    size: usize,
    left: u32,
    end: SimTime,
    damaged: bool,
}

impl App for PingPong {
    fn start(&mut self, api: &mut Api<'_>) {
        api.send(0, self.peer, vec![1; self.size]);
    }

    fn message(&mut self, api: &mut Api<'_>, node: usize, from: usize, data: Vec<u8>) {
        self.damaged |= data.len() != self.size;
        if node == self.peer {
            api.send(node, from, data);
            return;
        }
        self.left -= 1;
        if self.left == 0 {
            self.end = api.now();
            api.stop();
        } else {
            api.send(0, self.peer, data);
        }
    }
}

/// Half round-trip time [us] of `size`-byte messages through `relays` relays, averaged over
/// `round_trips` ping-pongs.
pub fn half_rtt(
    p: &Platform,
    relays: u8,
    links: u8,
    size: u64,
    round_trips: u32,
    trace: bool,
) -> Result<(f64, Option<Trace>), String> {
    if round_trips == 0 {
        return Err("at least one round trip".into());
    }
    let (shape, dst) = route(relays, links)?;
    let mut world = World::new(p, shape, p.hxb, trace)?;
    let peer = world.grid().index(dst).expect("in grid");
    let mut app = PingPong { peer, size: size as usize, left: round_trips, end: SimTime::ZERO, damaged: false };
    world.run(&mut app)?;
    if app.left != 0 || app.damaged {
        return Err(format!("ping-pong through {relays} relays did not complete intact"));
    }
    Ok((app.end.as_ps() as f64 / 1e6 / (2.0 * f64::from(round_trips)), world.take_trace()))
}
