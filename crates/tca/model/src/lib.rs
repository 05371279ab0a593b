//! Timing models of TCA hardware, driven by the `base` event kernel: they say when things
//! happen; what happens is the TCA protocol core's (crate `tca-proto`), joined to these models by
//! the simulated fabric (crate `tca-sim`).
//!
//! - [`platform`]: platform files (`platforms/*.toml`), every parameter with its source;
//! - [`router`]: the PEACH2 address-window router and the shared address map;
//! - [`cluster`]: a sub-cluster in virtual time, and its inputs and outputs;
//! - [`peach2`]: the timing of a PEACH2 DMA channel;
//! - `topology` and `transport`: the hardware as FIFO resources, and TLPs moving through them;
//! - `departures`: the TLPs leaving a FIFO, one event for all of them;
//! - `lookahead`: several TLPs of one feeder in one event where no other feeder can come first;
//! - [`train`]: the completions of a read request, and their writes, moved as one.

#![warn(missing_docs)]

pub mod cluster;
mod departures;
mod lookahead;
pub mod peach2;
pub mod platform;
pub mod router;
mod topology;
pub mod train;
mod transport;

pub use cluster::{Cluster, ClusterError, LinkStats, Output};
pub use peach2::{DescriptorSource, Work};
