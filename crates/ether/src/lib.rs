//! Ethernet in virtual time, shared by the PM/Ethernet-HXB and ExpEther simulations.
//!
//! Timing only: a frame is an opaque id with a payload length and a source and destination NIC
//! port; nothing here knows a protocol. The pieces, one per file:
//! - [`framing`]: the bytes a frame occupies on the wire (IEEE 802.3 preamble, header, FCS,
//!   padding, inter-frame gap) and the payload limit of jumbo frames;
//! - [`link`]: a full-duplex link at a bit rate with a propagation delay, one FIFO per direction;
//! - [`fifo`]: the FIFO resource every stage is built from;
//! - [`outq`]: a finite output queue that drops when full;
//! - [`switch`]: a store-and-forward switch with a per-stage latency and a forwarding table;
//! - [`nic`]: per-packet host costs of a NIC port and the I/O bus several ports share;
//! - [`faults`]: a hook that loses, duplicates or delays frames on links, and a seeded one;
//! - [`network`]: a builder joining NIC ports, links and switches, run on the `base` kernel.
//!
//! Everything is integer picoseconds and deterministic: the same injections give the same
//! deliveries, in the same order, every run.

#![warn(missing_docs)]

pub mod faults;
pub mod fifo;
pub mod framing;
pub mod link;
pub mod network;
pub mod nic;
pub mod outq;
pub mod switch;

pub use faults::{Crossing, Fault, FaultHook, RandomFaults};
pub use fifo::Fifo;
pub use framing::{Framing, MAX_JUMBO_PAYLOAD};
pub use link::{Channel, LinkSpec};
pub use network::{Delivery, DropCause, Endpoint, Frame, Lost, Network, NetworkBuilder, NicId, SwitchId};
pub use nic::{BusId, IoBusSpec, NicSpec};
pub use outq::{OutputQueue, QueueLimit};
pub use switch::SwitchSpec;

/// What is wrong with a network description or an injected frame (one line each).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtherError {
    /// A payload larger than the link's MTU (at most 9,000 B with jumbo frames).
    #[error("payload of {payload} B exceeds the MTU of {mtu} B")]
    PayloadTooLarge {
        /// The payload asked for.
        payload: u32,
        /// The largest payload the link carries.
        mtu: u32,
    },
    /// An MTU above the jumbo limit or below the Ethernet minimum.
    #[error("MTU of {0} B is outside 46..=9000 B")]
    BadMtu(u32),
    /// A link, bus or host rate of zero.
    #[error("{0} must be greater than zero")]
    Zero(&'static str),
    /// A NIC, switch, switch port or bus that was never created.
    #[error("no such {0}")]
    Unknown(&'static str),
    /// A NIC port or switch port connected twice.
    #[error("{0} is already connected")]
    AlreadyConnected(&'static str),
    /// A frame injected at a NIC port with no link.
    #[error("NIC {0} has no link")]
    Unconnected(u32),
    /// A frame injected before the time the network has already reached.
    #[error("injection at {at} is before the current time {now}")]
    InThePast {
        /// The injection time asked for.
        at: base::SimTime,
        /// The network's current time.
        now: base::SimTime,
    },
}
