//! The PM/Ethernet-HXB protocol core (seed 004; shared/systems/hxb.md): reliable, in-order
//! messaging between the nodes of a 3-D hyper-crossbar over several Ethernet links per
//! dimension, with software relaying between dimensions.
//!
//! Contract: this crate is sans-I/O. It owns no clock, socket, thread or buffer pool and is
//! deterministic: time is an argument (`now_ps`, integer picoseconds), inputs are `handle_*`
//! calls and application commands, outputs are taken with `poll_*`. The simulator and a real
//! Ethernet transport drive the same methods.
//!
//! What comes from the seed: per-destination sequence numbers and the per-peer receive array of
//! 32 entries, 0 = empty, else a buffer id, which delivers in order without a queue or lock
//! (§3.3, §4; [`rxarray`]); node coordinates and routing in the fixed order X, then Y, then Z
//! (§3.4; [`coord`]); relays that resend the received buffer with only the header changed
//! (§3.4; [`Transmit::relay`]); receive buffers named by id and read in place (§3.2;
//! [`BufferId`]); ACKs and retransmission of dropped packets (§3.4, §5.4). What is tca's design
//! where the seed is silent (hxb.md §3.6): the header layout ([`header`]), round-robin striping
//! per dimension ([`stripe`]), cumulative ACKs with a 31-bit selective-ACK bitmap taken from
//! the receive array, a fixed retransmission timeout per packet, fast retransmission of a packet
//! that the selective ACKs show lost ([`DUPTHRESH`] later packets held, one sent on the same
//! port; peers one hop away only; see [`node`]), and a window of 32 packets per peer (the
//! receive array's size).
//!
//! # Call order
//!
//! 1. [`Node::new`] once per node; [`Node::send`] whenever the application has a message.
//! 2. When a frame arrives: [`Node::handle_frame`]`(now, port, buffer, bytes)`. The caller owns
//!    the receive buffer; [`Disposition`] says whether the node now holds it.
//! 3. When the deadline of [`Node::poll_timeout`] has passed: [`Node::handle_timeout`]`(now)`
//!    (an early or repeated call is harmless).
//! 4. After any of the above: [`Node::poll_transmit`]`(now, buf)` until `None`, sending each
//!    frame on its port (for a relay: the written header, then the held buffer's payload; the
//!    buffer is then free); [`Node::poll_event`] until `None`, reading each delivered packet in
//!    its buffer, then freeing the buffer; and [`Node::poll_timeout`] for the next deadline.
//!
//! ```
//! use hxb_proto::{BufferId, Config, Coord, Event, Grid, Header, Node, HEADER_LEN};
//!
//! let cfg = |coord| Config { grid: Grid(Coord::new(2, 1, 1)), coord, links_per_dim: 2, mtu: 1000, rto_ps: 1_000_000 };
//! let (a, b) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0));
//! let (mut na, mut nb) = (Node::new(cfg(a))?, Node::new(cfg(b))?);
//! na.send(b, b"hello")?;
//! let mut frame = vec![0u8; na.frame_capacity()];
//! let t = na.poll_transmit(0, &mut frame).expect("one packet");
//! assert_eq!((t.to, t.len, t.relay), (b, HEADER_LEN + 5, None));
//! let buffer = BufferId::new(7).unwrap();
//! nb.handle_frame(10, t.port, buffer, &frame[..t.len])?;
//! assert_eq!(nb.poll_event(), Some(Event::Deliver { from: a, buffer }));
//! let h = Header::parse(&frame[..t.len])?;
//! assert_eq!((&frame[HEADER_LEN..t.len], h.end), (&b"hello"[..], true));
//! # Ok::<(), hxb_proto::HxbError>(())
//! ```
//!
//! Modules: [`coord`] coordinates and routing; [`header`] the wire form; [`rxarray`] the receive
//! array; [`stripe`] link choice; [`node`] the state machine; [`error`] refusals.

#![warn(missing_docs)]

pub mod coord;
pub mod error;
pub mod header;
pub mod node;
pub mod rxarray;
pub mod stripe;

pub use coord::{Coord, Grid, DIMS};
pub use error::HxbError;
pub use header::{Header, HeaderView, Kind, HEADER_LEN, MAX_HOPS};
pub use node::{BufferId, Config, Disposition, Event, Node, Stats, Transmit, DUPTHRESH};
pub use rxarray::{ReceiveArray, Stored, WINDOW};
pub use stripe::Striper;
