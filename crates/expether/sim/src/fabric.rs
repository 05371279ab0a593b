//! What joins the host and the device: a PCIe slot in the host (the local baseline) or an
//! ExpEther path ([`crate::ethpath`]). Both take TLPs from one side and hand them to the other
//! at virtual times, in order, and both give PCIe back-pressure: a side may have at most
//! [`LINK_CREDITS`] TLPs on its way into the fabric before it must wait.

use crate::ethpath::EtherPath;
use crate::tlp::Tlp;
use base::{EventQueue, SimTime};
use pcie::Server;

/// The host side (0) or the device side (1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The host: CPU, root complex, memory.
    Host = 0,
    /// The device.
    Device = 1,
}

impl Side {
    /// The other side.
    pub fn peer(self) -> Side {
        match self {
            Side::Host => Side::Device,
            Side::Device => Side::Host,
        }
    }

    /// 0 or 1.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// TLPs one side may have on their way into the fabric (PCIe flow-control credits of the link
/// to the bridge or slot; an assumption: 32 headers, a common credit count).
pub const LINK_CREDITS: usize = 32;

/// A TLP handed to a side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// When it reached that side.
    pub at: SimTime,
    /// The side it reached.
    pub to: Side,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A span for a trace: a track index (0: host to device, 1: device to host, 2..: Ethernet
/// ports), a name and a time range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Which track.
    pub track: usize,
    /// What it shows.
    pub name: String,
    /// From.
    pub start: SimTime,
    /// To.
    pub end: SimTime,
}

/// A device in a host slot: one PCIe link, a FIFO each way.
pub struct Local {
    links: [Server; 2],
    arrivals: EventQueue<(Side, Vec<u8>)>,
    in_link: [usize; 2],
    spec: pcie::LinkSpec,
}

impl Local {
    /// A slot with link `spec`.
    pub fn new(spec: &pcie::LinkSpec) -> Local {
        Local {
            links: [Server::for_link(spec), Server::for_link(spec)],
            arrivals: EventQueue::new(),
            in_link: [0, 0],
            spec: spec.clone(),
        }
    }
}

/// The local slot or the ExpEther path.
pub enum Fabric {
    /// The device in the host's slot.
    Local(Box<Local>),
    /// The device behind two ExpEther bridges and Ethernet.
    Ether(Box<EtherPath>),
}

impl Fabric {
    /// `from` puts `tlp` on its link at `now`.
    pub fn push(&mut self, now: SimTime, from: Side, tlp: &Tlp, bytes: Vec<u8>) {
        match self {
            Fabric::Local(l) => {
                let (kind, addr, payload) = tlp.pcie();
                let wire = l.spec.wire_bytes(kind, addr, payload);
                let out = l.links[from.index()].transmit(now, wire).out;
                l.in_link[from.index()] += 1;
                l.arrivals.push(out, (from.peer(), bytes));
            }
            Fabric::Ether(e) => e.push(now, from, tlp, bytes),
        }
    }

    /// How many more TLPs `side` may put on its link now.
    pub fn room(&self, side: Side) -> usize {
        let used = match self {
            Fabric::Local(l) => l.in_link[side.index()],
            Fabric::Ether(e) => e.entering(side),
        };
        LINK_CREDITS.saturating_sub(used)
    }

    /// When the fabric next has something to do.
    pub fn next_time(&self) -> Option<SimTime> {
        match self {
            Fabric::Local(l) => l.arrivals.peek_time(),
            Fabric::Ether(e) => e.next_time(),
        }
    }

    /// Does what is due at `now` (the time [`Fabric::next_time`] gave), appending what reaches
    /// a side to `out`.
    pub fn step(&mut self, now: SimTime, out: &mut Vec<Arrival>) {
        match self {
            Fabric::Local(l) => {
                while l.arrivals.peek_time() == Some(now) {
                    let (_, (to, bytes)) = l.arrivals.pop().expect("peeked");
                    l.in_link[to.peer().index()] -= 1;
                    out.push(Arrival { at: now, to, bytes });
                }
            }
            Fabric::Ether(e) => e.step(now, out),
        }
    }

    /// The ExpEther path, if this is one.
    pub fn ether(&self) -> Option<&EtherPath> {
        match self {
            Fabric::Local(_) => None,
            Fabric::Ether(e) => Some(e),
        }
    }

    /// Trace spans collected since the last call (ExpEther paths with tracing on).
    pub fn take_spans(&mut self) -> Vec<Span> {
        match self {
            Fabric::Local(_) => Vec::new(),
            Fabric::Ether(e) => e.take_spans(),
        }
    }
}
