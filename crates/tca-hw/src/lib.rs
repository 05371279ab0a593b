//! Hardware models of TCA systems, driven by the `tca-sim` event kernel.
//!
//! - [`units`]: quantities with units as written in platform files;
//! - [`platform`]: platform files (`platforms/*.toml`), every parameter with its source;
//! - [`pcie`]: links, TLP overheads, request and completion splitting, FIFO servers;
//! - [`router`]: the PEACH2 address-window router and the shared address map;
//! - [`descriptor`]: DMA descriptors and block-stride expansion;
//! - [`node`]: one node (host, GPUs, PEACH2) executing DMA chains in virtual time.

pub mod cluster;
pub mod descriptor;
pub mod node;
pub mod pcie;
pub mod platform;
pub mod router;
pub mod units;
