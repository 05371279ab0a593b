//! Nearest-neighbour bandwidth in 1-3 dimensions (seed 004 §5.2, Table 5, Fig. 4), and the
//! 3-D neighbour exchange of a whole machine (PACS-CS's QCD pattern, §2.1).
//!
//! Table 5: node (0,0,0) and its neighbour in each of the first `dims` dimensions of a
//! 2 x 2 x 2 hyper-crossbar (1-D = 2 nodes, 2-D = 3, 3-D = 4: the table's footnote), 2 links
//! per dimension. Send: the node streams to every neighbour; receive: every neighbour streams
//! to it; bidirectional: both. The bandwidth is the node's total.

use super::{messages_for, Streams, LINK_THEORETICAL};
use crate::fabric::Shape;
use crate::platform::Platform;
use crate::world::{Api, App, Totals, World};
use base::{SimTime, Trace};
use hxb_proto::Coord;

/// Table 5's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// The node sends to each neighbour.
    Send,
    /// Each neighbour sends to the node.
    Receive,
    /// Both at once.
    Bidirectional,
}

/// One cell of Table 5.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NeighbourPoint {
    /// Dimensions, 1-3.
    pub dims: u8,
    /// The column.
    pub pattern: Pattern,
    /// Links per dimension.
    pub links: u8,
    /// Message size [B].
    pub size: u64,
    /// The node's total bandwidth [B/s].
    pub bytes_per_second: f64,
    /// Over dims x k x 125 MB/s (twice that for bidirectional).
    pub efficiency: f64,
    /// The run's totals.
    pub totals: Totals,
}

/// Runs one cell of Table 5.
pub fn neighbour(
    p: &Platform,
    dims: u8,
    pattern: Pattern,
    links: u8,
    size: u64,
    trace: bool,
) -> Result<(NeighbourPoint, Option<Trace>), String> {
    if !(1..=3).contains(&dims) {
        return Err(format!("dimensions must be 1, 2 or 3, not {dims}"));
    }
    if size == 0 {
        return Err("message size must be at least 1 B".into());
    }
    let mut grid = Coord::new(1, 1, 1);
    for d in 0..usize::from(dims) {
        grid.0[d] = 2;
    }
    let shape = Shape { grid, links };
    let mut world = World::new(p, shape, p.hxb, trace)?;
    let n = messages_for(size);
    let mut streams = vec![];
    for d in 0..usize::from(dims) {
        let mut c = Coord::new(0, 0, 0);
        c.0[d] = 1;
        let peer = world.grid().index(c).expect("in grid");
        if pattern != Pattern::Receive {
            streams.push((0, peer, n, size));
        }
        if pattern != Pattern::Send {
            streams.push((peer, 0, n, size));
        }
    }
    let mut app = Streams::new(streams);
    let totals = world.run(&mut app)?;
    let rate = app.total_rate()?;
    let ways = if pattern == Pattern::Bidirectional { 2.0 } else { 1.0 };
    let efficiency = rate / (ways * f64::from(dims) * f64::from(links) * LINK_THEORETICAL);
    Ok((NeighbourPoint { dims, pattern, links, size, bytes_per_second: rate, efficiency, totals }, world.take_trace()))
}

/// The outcome of a whole-machine exchange.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExchangeResult {
    /// Nodes.
    pub nodes: usize,
    /// Messages sent (6 per node in 3-D).
    pub sent: u64,
    /// Messages that arrived intact.
    pub delivered: u64,
    /// When the last one arrived.
    pub finish: SimTime,
    /// The run's totals.
    pub totals: Totals,
}

/// Every node sends one message of `size` bytes to its two neighbours (x - 1 and x + 1,
/// wrapping) in every dimension of more than one node.
struct Exchange {
    size: usize,
    sent: u64,
    delivered: u64,
    damaged: u64,
    last: SimTime,
}

impl App for Exchange {
    fn start(&mut self, api: &mut Api<'_>) {
        let grid = api.grid();
        for i in 0..grid.nodes() {
            let c = grid.coord(i).expect("in grid");
            for d in 0..3 {
                let n = grid.0 .0[d];
                if n < 2 {
                    continue;
                }
                for step in [1, n - 1] {
                    let mut to = c;
                    to.0[d] = ((u16::from(c.0[d]) + u16::from(step)) % u16::from(n)) as u8;
                    let tag = (i % 251) as u8;
                    api.send(i, grid.index(to).expect("in grid"), vec![tag; self.size]);
                    self.sent += 1;
                }
            }
        }
    }

    fn message(&mut self, api: &mut Api<'_>, _node: usize, from: usize, data: Vec<u8>) {
        let tag = (from % 251) as u8;
        if data.len() == self.size && data.iter().all(|&b| b == tag) {
            self.delivered += 1;
        } else {
            self.damaged += 1;
        }
        self.last = api.now();
    }
}

/// The 3-D neighbour exchange on the platform's whole hyper-crossbar with its links per
/// dimension (PACS-CS: 2,560 nodes, 2 links).
pub fn exchange(p: &Platform, size: u64) -> Result<ExchangeResult, String> {
    if size == 0 {
        return Err("message size must be at least 1 B".into());
    }
    let shape = Shape { grid: p.grid, links: p.max_links_per_dim.min(2) };
    let mut world = World::new(p, shape, p.hxb, false)?;
    let mut app = Exchange { size: size as usize, sent: 0, delivered: 0, damaged: 0, last: SimTime::ZERO };
    let totals = world.run(&mut app)?;
    if app.damaged > 0 {
        return Err(format!("{} messages arrived damaged", app.damaged));
    }
    Ok(ExchangeResult {
        nodes: world.grid().nodes(),
        sent: app.sent,
        delivered: app.delivered,
        finish: app.last,
        totals,
    })
}
