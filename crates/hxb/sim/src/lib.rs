//! PM/Ethernet-HXB in virtual time (seed 004): the simulated PACS-CS and its 8-node testbed.
//!
//! The only place that joins the protocol core (`hxb-proto`) with the Ethernet timing model
//! (`ether`). A node is one `hxb_proto::Node`, a single-processor host whose CPU pays per-packet
//! costs ([`host`]), and its NIC ports on PCI-X buses; the nodes hang on one switch per line and
//! link of the hyper-crossbar ([`fabric`]). [`world`] drives the cores at the times the model
//! gives; platforms are data ([`platform`], `platforms/hxb/*.toml`); [`experiments`] are the
//! seed's tables as functions returning plain results.

#![warn(missing_docs)]

pub mod experiments;
pub mod fabric;
pub mod host;
pub mod platform;
pub mod world;

pub use base::params::{Param, ParamError};
pub use fabric::Shape;
pub use host::HostCosts;
pub use platform::Platform;
pub use world::{Api, App, Totals, World};
