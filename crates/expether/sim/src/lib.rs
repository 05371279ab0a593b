//! Simulated ExpEther systems (seed 002 ch. 4; shared/systems/expether.md): a host and a device
//! joined by two ExpEther bridges and Ethernet, in virtual time, or by a PCIe slot for the
//! baseline. The only crate that joins the protocol core (`expether-proto`: the bridges really
//! carry every TLP, frame by frame) with the timing models (`expether-model`, `ether`, `pcie`).
//!
//! One idea per module:
//! - [`platform`]: platform files (`platforms/expether/*.toml`, read by `base::params`);
//! - [`tlp`]: the TLPs as bytes; [`fabric`]: slot or ExpEther path; [`ethpath`]: the path with
//!   its bridges, Ethernet links, switch and loss;
//! - [`system`]: a host, a device and a fabric in one event loop;
//! - [`block`]: fio-like block I/O on an NVMe-like device; [`gpu`]: the SSSP loop on a GPU;
//! - [`run`]: one run; [`experiments`]: the §4.2 experiments and their seed numbers.

#![warn(missing_docs)]

pub mod block;
pub mod ethpath;
pub mod experiments;
pub mod fabric;
pub mod gpu;
pub mod platform;
pub mod run;
pub mod system;
pub mod tlp;

pub use base::params::{Param, ParamError};
pub use platform::{find, Platform};
pub use run::{Attach, BlockResult, RunOptions};

/// Why a simulation could not run or finish (one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// A configuration the models refuse.
    #[error("bad configuration: {0}")]
    Config(String),
    /// Bytes that are not one of the simulator's TLPs.
    #[error("malformed TLP: {0}")]
    Tlp(String),
    /// Nothing left to do before the workload finished (a device lost to a failed path).
    #[error("stalled at {0}: nothing left to do before the workload finished")]
    Stalled(base::SimTime),
    /// Virtual time ran past the limit.
    #[error("virtual time passed the limit of {0}")]
    TimeLimit(base::SimTime),
    /// A platform file.
    #[error("{0}")]
    Load(#[from] ParamError),
}
