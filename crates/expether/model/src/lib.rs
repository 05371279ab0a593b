//! ExpEther timing models (seed 002 ch. 4; shared/systems/expether.md §8-§9): what each piece
//! of hardware takes, never what the protocol does. The protocol is `expether-proto`; the crate
//! that joins the two in virtual time is `expether-sim`.
//!
//! One idea per module:
//! - [`bridge`]: the latency of one traversal of an ExpEther bridge, split into user logic (47 %
//!   in the FPGA prototype, §4.2.1) and hard IP, and what an ASIC clock does to it;
//! - [`host`]: the host's per-I/O software costs and its root complex;
//! - [`block`]: a block device behind a DMA engine: an Intel-910-class PCIe SSD, or SATA SSDs in
//!   RAID-0 behind a RAID controller (media units, command stages, DMA read tags);
//! - [`gpu`]: a K20-class GPU running an SSSP-like loop with CPU-GPU traffic per iteration;
//! - [`loss`]: when a device stops working under frame loss (an explicit tolerance model).
//!
//! Numbers live in platform files (`platforms/expether/*.toml`); the defaults here exist only
//! for tests and name their source.

#![warn(missing_docs)]

pub mod block;
pub mod bridge;
pub mod gpu;
pub mod host;
pub mod loss;

pub use block::{BlockTiming, Chunk};
pub use bridge::BridgeTiming;
pub use gpu::{GpuTiming, SsspGraph};
pub use host::HostTiming;
pub use loss::{LossTolerance, Verdict};

/// A model parameter outside the range the model accepts (one line, naming the parameter).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: {1}")]
pub struct ModelError(pub &'static str, pub String);

/// `bytes` at `rate` bytes/s, rounded up to a whole picosecond.
pub fn transfer_time(bytes: u64, rate: u64) -> base::SimTime {
    base::SimTime::from_ps((bytes as u128 * 1_000_000_000_000).div_ceil(rate.max(1) as u128) as u64)
}
