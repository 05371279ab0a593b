//! Software ExpEther on Linux links (seed 002 ch. 3; shared/systems/expether.md): the protocol
//! core [`expether_proto::Bridge`] between a host-side and a device-side bridge in two network
//! namespaces, over k veth pairs (one AF_PACKET socket per path), carrying the TLPs of devices
//! emulated on the device side.
//!
//! Pieces, one idea per file:
//! - [`port`]: one bridge over k [`ether_net::FrameSocket`]s in real time, with back-pressure
//!   and the seeded receive fault injector of `ether_net`;
//! - [`tlp`]: the TLP wire form (memory read and write requests, completions), tca's design;
//! - [`nvme`]: the address map and the NVMe-like submission and completion entries;
//! - [`device`]: the device side: a block device backed by a file ([`store`]) behind an
//!   NVMe-like queue, and a memory-region device;
//! - [`host`]: the host side: host memory served to the device, the block driver, the
//!   memory-region accesses;
//! - [`blockio`], [`bench`]: the block-I/O benchmark with per-block verification;
//! - [`tcp`]: the baseline, the same device over one TCP connection;
//! - [`run`]: a whole measurement in namespaces built and removed by an [`ether_net::Testbed`];
//! - [`pooled`], [`system`], [`control`]: a long-running system of N hosts and M pooled devices
//!   whose VLANs a pool manager sets over a Unix socket (program `expether-system`).
//!
//! Everything needs root (CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN for `setns`).

#![warn(missing_docs)]

pub mod bench;
pub mod blockio;
pub mod control;
pub mod device;
pub mod error;
pub mod host;
pub mod nvme;
pub mod pooled;
pub mod port;
pub mod run;
pub mod store;
pub mod system;
pub mod tcp;
pub mod tlp;

pub use error::ExpNetError;
