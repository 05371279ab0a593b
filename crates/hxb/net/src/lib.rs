//! PM/Ethernet-HXB over real Linux links (seed 004; shared/systems/hxb.md): one
//! [`hxb_proto::Node`] driven over AF_PACKET sockets, k per dimension, in real time.
//!
//! An [`Endpoint`] owns a thread that owns the node and one [`ether_net::FrameSocket`] per
//! port (port `dim * k + link`, as hxb-proto numbers them). Time is [`std::time::Instant`]
//! since the endpoint started, in picoseconds; retransmission follows
//! [`hxb_proto::Node::poll_timeout`]. Receive is zero-copy as in the seed's skbuf pre-map
//! (§3.2): the receive buffers are the slots of each socket's TPACKET_V2 ring
//! ([`ether_net::FrameSocket`]), mapped once; the kernel passes a slot index, the node holds
//! the slot's id in its receive array until its turn, the packet is read in place and the slot
//! is released. A relay rewrites the headers in the slot the frame arrived in and sends the
//! slot's bytes on another link.
//!
//! ```no_run
//! use hxb_net::{Endpoint, EndpointConfig, PortSpec};
//! use hxb_proto::{Config, Coord, Grid};
//! # fn mac() -> ether_net::MacAddr { ether_net::MacAddr([2, 0, 0, 0, 0, 1]) }
//! let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
//! let node = Config { grid: Grid(Coord::new(2, 1, 1)), coord: a, links_per_dim: 1, mtu: 8964, rto_ps: 20_000_000_000 };
//! let port = PortSpec { port: 0, ifname: "l0p0".into(), neighbours: vec![(b, mac())] };
//! let mut ep = Endpoint::start(EndpointConfig::new(node, "tca-1-0-a", vec![port]))?;
//! ep.send(b, &[7u8; 65536])?;
//! let reply = ep.recv(std::time::Duration::from_secs(1))?;
//! # Ok::<(), hxb_net::HxbNetError>(())
//! ```

#![warn(missing_docs)]

mod buffers;
mod driver;
pub mod endpoint;
pub mod error;
mod wake;

pub use endpoint::{Endpoint, EndpointConfig, PortSpec};
pub use error::HxbNetError;
pub use ether_net::RxFaults;
