//! The HXB core on the virtual-time harness: a host adapter (the "driver": receive buffers by
//! id, frames as byte vectors) and a hyper-crossbar builder (one link per line, dimension and
//! link index, like the seed's one switch per line, §2.1).

#![allow(dead_code)]

use base::harness::{Endpoint, Harness, LinkConfig, Transmit};
use base::SimTime;
use hxb_proto::{
    BufferId, Config, Coord, Disposition, Event, Grid, Header, HeaderView, HxbError, Kind, Node, HEADER_LEN,
};
use std::collections::HashMap;

/// Ethernet framing around the HXB frame: MAC header 14, FCS 4, preamble 8, inter-frame gap 12.
pub const ETHERNET_OVERHEAD: u64 = 38;

/// One node with its receive buffers and what the application received.
pub struct Host {
    pub node: Node,
    grid: Grid,
    buffers: HashMap<u32, Vec<u8>>,
    next_buffer: u32,
    tx: Vec<u8>,
    partial: HashMap<Coord, Vec<u8>>,
    /// Completed messages, in delivery order.
    pub messages: Vec<(Coord, Vec<u8>)>,
    /// Sequence numbers of DATA frames addressed here, in arrival order, per source.
    pub arrivals: HashMap<Coord, Vec<u32>>,
    /// Refused frames.
    pub errors: Vec<HxbError>,
    /// When the last message was completed.
    pub last_delivery: SimTime,
}

impl Host {
    pub fn new(cfg: Config) -> Host {
        let grid = cfg.grid;
        let node = Node::new(cfg).expect("valid configuration");
        let tx = vec![0; node.frame_capacity()];
        Host {
            node,
            grid,
            buffers: HashMap::new(),
            next_buffer: 0,
            tx,
            partial: HashMap::new(),
            messages: vec![],
            arrivals: HashMap::new(),
            errors: vec![],
            last_delivery: SimTime::ZERO,
        }
    }

    /// Messages received from `from`, in order.
    pub fn from(&self, from: Coord) -> Vec<Vec<u8>> {
        self.messages.iter().filter(|m| m.0 == from).map(|m| m.1.clone()).collect()
    }

    /// Receive buffers the node still holds.
    pub fn held(&self) -> usize {
        self.buffers.len()
    }
}

impl Endpoint for Host {
    type Frame = Vec<u8>;

    fn handle_frame(&mut self, now: SimTime, port: usize, mut frame: Vec<u8>) {
        self.next_buffer = self.next_buffer.checked_add(1).unwrap_or(1);
        let id = BufferId::new(self.next_buffer).expect("non-zero");
        if let Ok(mut v) = HeaderView::new_checked(&mut frame[..]) {
            v.set_buffer_id(id.get()); // the driver names the buffer (seed 004 §3.2)
        }
        if let Ok(h) = Header::parse(&frame) {
            if h.kind == Kind::Data && h.dst == self.node.coord() {
                self.arrivals.entry(h.src).or_default().push(h.seq);
            }
        }
        match self.node.handle_frame(now.as_ps(), port as u16, id, &frame) {
            Ok(Disposition::Held) => {
                self.buffers.insert(id.get(), frame);
            }
            Ok(Disposition::Free) => {}
            Err(e) => self.errors.push(e),
        }
        while let Some(Event::Deliver { from, buffer }) = self.node.poll_event() {
            let frame = self.buffers.remove(&buffer.get()).expect("a delivered buffer is held");
            let h = Header::parse(&frame).expect("held frames parsed");
            assert_eq!(h.buffer, buffer.get(), "the buffer names itself");
            let acc = self.partial.entry(from).or_default();
            acc.extend_from_slice(&frame[HEADER_LEN..]);
            if h.end {
                let msg = std::mem::take(acc);
                self.messages.push((from, msg));
                self.last_delivery = now;
            }
        }
    }

    fn handle_timeout(&mut self, now: SimTime) {
        self.node.handle_timeout(now.as_ps());
    }

    fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit<Vec<u8>>> {
        let t = self.node.poll_transmit(now.as_ps(), &mut self.tx)?;
        let mut frame = self.tx[..t.len].to_vec();
        if let Some(b) = t.relay {
            // Same buffer, new header: only the header bytes differ (seed 004 §3.4).
            let held = self.buffers.remove(&b.get()).expect("a relayed buffer is held");
            frame.extend_from_slice(&held[HEADER_LEN..]);
        }
        let to = self.grid.index(t.to).expect("next hop in the grid");
        Some(Transmit { port: usize::from(t.port), to, bytes: frame.len() as u64 + ETHERNET_OVERHEAD, frame })
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.node.poll_timeout().map(SimTime::from_ps)
    }
}

/// A hyper-crossbar on the harness: endpoint `i` is the node at `grid.coord(i)`.
pub struct Net {
    pub h: Harness<Host>,
    pub grid: Grid,
    /// `links[(dim, line, link)]`: harness link id; `line` is the linear index of the line's
    /// first node.
    pub links: HashMap<(usize, usize, u8), usize>,
}

impl Net {
    /// Builds the grid with `k` links per dimension, each configured by `link(dim, link)`.
    pub fn new(seed: u64, grid: Grid, k: u8, mtu: u16, rto_ps: u64, link: impl Fn(usize, u8) -> LinkConfig) -> Net {
        let mut h = Harness::new(seed);
        for i in 0..grid.nodes() {
            let coord = grid.coord(i).unwrap();
            h.add_endpoint(Host::new(Config { grid, coord, links_per_dim: k, mtu, rto_ps }));
        }
        let mut links = HashMap::new();
        for dim in 0..3 {
            let n = grid.0 .0[dim];
            if n < 2 {
                continue;
            }
            for first in 0..grid.nodes() {
                let c = grid.coord(first).unwrap();
                if c.0[dim] != 0 {
                    continue;
                }
                let line: Vec<usize> = (0..n)
                    .map(|v| {
                        let mut m = c;
                        m.0[dim] = v;
                        grid.index(m).unwrap()
                    })
                    .collect();
                for l in 0..k {
                    let port = dim * usize::from(k) + usize::from(l);
                    let members: Vec<(usize, usize)> = line.iter().map(|&e| (e, port)).collect();
                    links.insert((dim, first, l), h.add_link(link(dim, l), &members));
                }
            }
        }
        Net { h, grid, links }
    }

    pub fn idx(&self, c: Coord) -> usize {
        self.grid.index(c).unwrap()
    }

    pub fn host(&self, c: Coord) -> &Host {
        self.h.endpoint(self.idx(c))
    }

    pub fn send(&mut self, from: Coord, to: Coord, data: &[u8]) {
        let i = self.idx(from);
        self.h.act(i, |host, _| host.node.send(to, data)).expect("valid send");
    }

    /// Runs until idle or `limit`; panics if the network did not go idle or a node kept state.
    /// Returns the time of the last event (stale timer events included).
    pub fn run_to_idle(&mut self, limit: SimTime) -> SimTime {
        assert!(self.h.run(limit), "not idle by {limit}");
        for i in 0..self.grid.nodes() {
            let host = self.h.endpoint(i);
            assert!(host.node.is_idle(), "node {} not idle", host.node.coord());
            assert_eq!(host.held(), 0, "node {} still holds buffers", host.node.coord());
            assert!(host.errors.is_empty(), "node {}: {:?}", host.node.coord(), host.errors);
        }
        self.h.now()
    }
}

/// A message of `len` bytes whose content names its index and position.
pub fn message(index: u32, len: usize) -> Vec<u8> {
    (0..len).map(|i| (index as usize * 31 + i * 7 + i / 251) as u8).collect()
}
