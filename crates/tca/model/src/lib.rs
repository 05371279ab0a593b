//! Timing models of TCA hardware, driven by the `base` event kernel.
//!
//! - [`platform`]: platform files (`platforms/*.toml`), every parameter with its source;
//! - [`router`]: the PEACH2 address-window router and the shared address map;
//! - [`node`]: one node (host, GPUs, PEACH2) executing DMA chains in virtual time.

pub mod cluster;
pub mod node;
pub mod platform;
pub mod router;
