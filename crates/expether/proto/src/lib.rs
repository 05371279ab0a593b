//! The ExpEther bridge protocol core (seed 002; shared/systems/expether.md): PCIe TLPs carried
//! between ExpEther bridges over standard Ethernet, reliably and in order, several TLPs to a
//! frame when the link is the bottleneck.
//!
//! Contract: this crate is sans-I/O. It owns no clock, socket or thread and is deterministic:
//! time is an argument (`now`, integer picoseconds), inputs are `handle_*` calls and
//! application commands, outputs are taken with `poll_*` into the caller's buffers. A
//! simulator and a real Ethernet transport drive the same methods.
//!
//! What comes from the seed: standard Ethernet frames with a VLAN tag naming the host's
//! virtual computer and an ExpEther header, several TLPs sharing one header (§3.3, Fig. 3.4);
//! bridge-to-bridge reliable delivery that resends the unacknowledged frame and every frame
//! after it, triggered by a repeated ACK or a timeout (go-back-N, §3.3.1); a path-failure event
//! after consecutive losses, threshold configurable, 3 in the seed (§4.2.1); one transmission
//! queue per destination bridge, served first-in first-served, visited by deficit round robin
//! that spends credit by the bytes taken; every queued TLP for the destination taken when it
//! gets its turn, up to a maximum, with no added wait (adaptive aggregation, §3.4.2-§3.4.3);
//! back-pressure when a queue is full (§3.4.4). What is tca's design where the seed is silent
//! (expether.md §11): the header layout ([`header`]), TLPs delimited by a 2-byte length,
//! 32-bit sequence numbers, an ACK for every DATA frame and the ACK carried by DATA frames too,
//! the repeated ACK made explicit as a NAK ([`gbn::Receiver`]), one NAK starting a round
//! (configurable), one round per gap, a fixed retransmission
//! timeout, the DRR quantum and its refill ([`bridge`]), and what a failed path does (its TLPs
//! are dropped and counted, new ones refused).
//!
//! Delay-based rate control per destination, fed by the ACKs (§3.3.1, §3.4.3), is optional
//! ([`Config::rate_control`]); its law is tca's design, since the seed defers it to its ref.
//! [55] ([`rate`]).
//!
//! The distributed virtual PCIe switch (§3.3.1, Fig. 3.3, Table 3.1): which device belongs to
//! which host by VLAN id, the hot-plug and hot-remove events a host sees when the system manager
//! moves a device, and the limits of 4096 hosts and 32 devices per host ([`vswitch`]).
//!
//! Multipath (§3.3.1, §4.1): with [`Config::paths`] > 1 frames go round robin over the ports
//! and the receiver puts them back in order in a reorder buffer ([`gbn::Receiver`]). A
//! loss-based controller ([`Law::Loss`]) is there for comparison.
//!
//! Not here yet: recovery of a failed path, and management frames (§3.3.1 "system
//! management").
//!
//! # Call order
//!
//! 1. [`Bridge::new`] once per bridge; [`Bridge::send_tlp`] whenever PCIe hands over a TLP
//!    ([`ExpError::QueueFull`] is back-pressure: offer it again after step 4).
//! 2. When a frame arrives: [`Bridge::handle_frame`]`(now, frame)`.
//! 3. When the deadline of [`Bridge::poll_timeout`] has passed: [`Bridge::handle_timeout`]`(now)`
//!    (an early or repeated call is harmless).
//! 4. After any of the above: [`Bridge::poll_transmit`]`(now, buf)` until `None`, sending each
//!    frame; [`Bridge::poll_tlp`]`(buf)` until `None`, handing each TLP to PCIe;
//!    [`Bridge::poll_event`] until `None`; and [`Bridge::poll_timeout`] for the next deadline.
//!
//! ```
//! use expether_proto::{Bridge, Config, Delivered, Mac};
//!
//! let (host, dev) = (Mac([2, 0, 0, 0, 0, 1]), Mac([2, 0, 0, 0, 0, 2]));
//! let (mut a, mut b) = (Bridge::new(Config::new(host, 7))?, Bridge::new(Config::new(dev, 7))?);
//! a.send_tlp(dev, b"read request")?;
//! a.send_tlp(dev, b"another")?;
//! let mut frame = vec![0u8; a.config().max_frame];
//! let t = a.poll_transmit(0, &mut frame).expect("one frame with both TLPs");
//! assert_eq!((t.to, t.len), (dev, 34 + 2 + 12 + 2 + 7));
//! b.handle_frame(1_000_000, &frame[..t.len])?;
//! let mut tlp = [0u8; 64];
//! assert_eq!(b.poll_tlp(&mut tlp)?, Some(Delivered { from: host, len: 12 }));
//! assert_eq!(&tlp[..12], b"read request");
//! let ack = b.poll_transmit(1_000_000, &mut frame).expect("an ACK");
//! a.handle_frame(2_000_000, &frame[..ack.len])?;
//! assert_eq!((a.in_flight(dev), a.poll_timeout()), (0, None));
//! # Ok::<(), expether_proto::ExpError>(())
//! ```
//!
//! Modules: [`header`] the wire form; [`outbox`] a destination's queue; [`gbn`] go-back-N;
//! [`rate`] rate control; [`bridge`] the state machine; [`vswitch`] the virtual PCIe switch;
//! [`error`] refusals.

#![warn(missing_docs)]

pub mod bridge;
pub mod error;
pub mod gbn;
pub mod header;
pub mod outbox;
pub mod rate;
pub mod vswitch;

pub use bridge::{Bridge, Config, Delivered, Event, Stats, Transmit, WIRE_OVERHEAD};
pub use error::ExpError;
pub use header::{FrameView, Header, Kind, Mac, HEADER_LEN, MIN_FRAME};
pub use rate::{Law, RateConfig, RateControl};
pub use vswitch::{SwitchEvent, VirtualSwitch, MAX_HOSTS, MAX_PORTS};
