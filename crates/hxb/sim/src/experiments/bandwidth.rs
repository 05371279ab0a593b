//! Low-level 1-D unidirectional bandwidth (seed 004 §5.1, Fig. 3, Table 4): node (0,0,0)
//! streams messages of one size to (1,0,0) over k links; the "processing latency" is 4 B over
//! the bandwidth at 4-byte messages.
//!
//! Two host-cost sets: PM/Ethernet-HXB (zero-copy receive, lock-free receive array) and
//! PM/Ethernet Network Trunking, the earlier multi-link PM (§3.3, §5.1: 15.7 us of processing
//! per packet and a 5 us copy with a locked queue), a different cost set on the same network.

use super::{messages_for, Streams, LINK_THEORETICAL};
use crate::fabric::Shape;
use crate::platform::Platform;
use crate::world::{Totals, World};
use base::Trace;
use hxb_proto::Coord;

/// Which messaging layer's host costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// PM/Ethernet-HXB.
    Hxb,
    /// PM/Ethernet Network Trunking.
    Nt,
}

/// One point of Fig. 3.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthPoint {
    /// Links, k.
    pub links: u8,
    /// Message size [B].
    pub size: u64,
    /// Steady-state bandwidth [B/s].
    pub bytes_per_second: f64,
    /// Size over bandwidth [us]: Table 4's processing latency at 4 B.
    pub per_message_us: f64,
    /// Bandwidth over k x 125 MB/s.
    pub efficiency: f64,
    /// The run's totals.
    pub totals: Totals,
}

/// Streams messages of `size` bytes from (0,0,0) to (1,0,0) over `links` links.
pub fn bandwidth(
    p: &Platform,
    stack: Stack,
    links: u8,
    size: u64,
    trace: bool,
) -> Result<(BandwidthPoint, Option<Trace>), String> {
    if size == 0 {
        return Err("message size must be at least 1 B".into());
    }
    let costs = match stack {
        Stack::Hxb => p.hxb,
        Stack::Nt => p.nt,
    };
    let shape = Shape { grid: Coord::new(2, 1, 1), links };
    let mut world = World::new(p, shape, costs, trace)?;
    let mut app = Streams::new(vec![(0, 1, messages_for(size), size)]);
    let totals = world.run(&mut app)?;
    let rate = app.total_rate()?;
    let point = BandwidthPoint {
        links,
        size,
        bytes_per_second: rate,
        per_message_us: size as f64 / rate * 1e6,
        efficiency: rate / (f64::from(links) * LINK_THEORETICAL),
        totals,
    };
    Ok((point, world.take_trace()))
}
