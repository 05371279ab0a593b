//! MPI-level bandwidth over HXB (seed 004 §5.4, Table 7): YAMPII2's rendezvous protocol with
//! asynchronous calls and messages of about 1 MB (§5).
//!
//! This is a small rendezvous layer of tca's own above the nodes, not MPI: SMPI over this
//! network model is not done. Each MPI message is announced by a request-to-send; the receiver,
//! whose receives are all posted, answers clear-to-send; the sender then sends the data as one
//! HXB message, which the core cuts into packets. Every packet the layer sends or receives costs
//! the host the MPI processing time of §5.4 (6 us at 3.6 GHz) on top of HXB's own.

use super::LINK_THEORETICAL;
use crate::fabric::Shape;
use crate::platform::Platform;
use crate::world::{Api, App, Totals, World};
use base::{SimTime, Trace};
use hxb_proto::Coord;

const RTS: u8 = 1;
const CTS: u8 = 2;
const DATA: u8 = 3;
/// Bytes of the layer's header: kind, message number, length.
const HEADER: usize = 9;

fn header(kind: u8, seq: u32, len: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER);
    h.push(kind);
    h.extend_from_slice(&seq.to_be_bytes());
    h.extend_from_slice(&len.to_be_bytes());
    h
}

fn parse(data: &[u8]) -> Option<(u8, u32, u32)> {
    if data.len() < HEADER {
        return None;
    }
    let seq = u32::from_be_bytes(data[1..5].try_into().ok()?);
    let len = u32::from_be_bytes(data[5..9].try_into().ok()?);
    Some((data[0], seq, len))
}

/// Rendezvous transfers of `count` messages of `size` bytes on each flow (from, to).
struct Rendezvous {
    flows: Vec<(usize, usize)>,
    count: u32,
    size: u32,
    /// Arrival times of whole messages per flow.
    arrivals: Vec<Vec<SimTime>>,
    errors: u64,
}

impl App for Rendezvous {
    fn start(&mut self, api: &mut Api<'_>) {
        // Asynchronous sends: every request-to-send goes out at once.
        for seq in 0..self.count {
            for &(from, to) in &self.flows {
                api.send(from, to, header(RTS, seq, self.size));
            }
        }
    }

    fn message(&mut self, api: &mut Api<'_>, node: usize, from: usize, data: Vec<u8>) {
        let Some((kind, seq, len)) = parse(&data) else {
            self.errors += 1;
            return;
        };
        match kind {
            RTS => api.send(node, from, header(CTS, seq, len)),
            CTS => {
                let mut msg = header(DATA, seq, len);
                msg.resize(HEADER + len as usize, (seq % 251) as u8);
                api.send(node, from, msg);
            }
            DATA => {
                let Some(f) = self.flows.iter().position(|&fl| fl == (from, node)) else {
                    self.errors += 1;
                    return;
                };
                let intact = data.len() == HEADER + len as usize
                    && len == self.size
                    && seq as usize == self.arrivals[f].len()
                    && data[HEADER..].iter().all(|&b| b == (seq % 251) as u8);
                if !intact {
                    self.errors += 1;
                }
                self.arrivals[f].push(api.now());
            }
            _ => self.errors += 1,
        }
    }
}

/// One cell of Table 7.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MpiPoint {
    /// Links.
    pub links: u8,
    /// Both directions at once.
    pub bidirectional: bool,
    /// Message size [B].
    pub size: u64,
    /// Total bandwidth [B/s] (both directions summed when bidirectional).
    pub bytes_per_second: f64,
    /// Over k x 125 MB/s (twice that bidirectional).
    pub efficiency: f64,
    /// The run's totals.
    pub totals: Totals,
}

/// Messages per flow in an MPI bandwidth run.
const MPI_MESSAGES: u32 = 12;

/// MPI-level bandwidth between (0,0,0) and (1,0,0) over `links` links with messages of `size`.
pub fn mpi_bandwidth(
    p: &Platform,
    links: u8,
    size: u64,
    bidirectional: bool,
    trace: bool,
) -> Result<(MpiPoint, Option<Trace>), String> {
    if size == 0 || size > u64::from(u32::MAX) - HEADER as u64 {
        return Err(format!("MPI message size {size} B is outside 1 B..4 GiB"));
    }
    let shape = Shape { grid: Coord::new(2, 1, 1), links };
    let mut world = World::new(p, shape, p.hxb.with_app(p.mpi_packet), trace)?;
    let flows = if bidirectional { vec![(0, 1), (1, 0)] } else { vec![(0, 1)] };
    let arrivals = flows.iter().map(|_| Vec::new()).collect();
    let mut app = Rendezvous { flows, count: MPI_MESSAGES, size: size as u32, arrivals, errors: 0 };
    let totals = world.run(&mut app)?;
    if app.errors > 0 || app.arrivals.iter().any(|a| a.len() != MPI_MESSAGES as usize) {
        return Err(format!("MPI run over {links} links lost or damaged messages ({} errors)", app.errors));
    }
    let rate: f64 = app
        .arrivals
        .iter()
        .map(|a| f64::from(MPI_MESSAGES - 1) * size as f64 / ((a[a.len() - 1] - a[0]).as_ps() as f64 / 1e12))
        .sum();
    let ways = if bidirectional { 2.0 } else { 1.0 };
    let efficiency = rate / (ways * f64::from(links) * LINK_THEORETICAL);
    Ok((MpiPoint { links, bidirectional, size, bytes_per_second: rate, efficiency, totals }, world.take_trace()))
}
