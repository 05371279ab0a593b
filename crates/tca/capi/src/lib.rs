//! The C ABI of tca: `libtca.so` with the functions of `include/tca-api.h`, written once
//! against the fabric interface [`tca_proto::Fabric`].
//!
//! `tcaInit` picks the fabric by `TCA_FABRIC` ([`registry`]): the shared-memory fabric
//! (`shm`, the default), the simulator inside SimGrid SMPI (`smpi`, for programs built with
//! `tca cc`; [`smpi`] has what its support library calls), or one the embedding program
//! registered with [`set_fabric_factory`]. Every exported function ([`api`]) checks its pointers,
//! converts its arguments, calls the calling thread's fabric and returns a `tcaresult`:
//! `TCA_SUCCESS`, the stable code of a [`tca_proto::TcaError`], or a code of the ABI itself
//! ([`results`]). A panic never crosses the boundary: it becomes `TCA_ERROR_INTERNAL`.
//!
//! The header's result codes, DMA flags, memory types and modes are checked against the Rust
//! tables ([`results::c_errors`], [`tca_proto::DmaFlags::NAMES`], [`api::MEMORY_TYPES`],
//! [`api::DMA_MODES`]) by `tests/header.rs`, so they cannot drift apart.

#![warn(missing_docs)]

pub mod api;
pub mod coll;
mod coll_guard;
pub mod cuda;
pub mod desc_table;
pub mod dma_direct;
pub mod pio_direct;
pub mod registry;
pub mod results;
pub mod smpi;

pub use registry::{fabric_names, set_fabric_factory, FabricFactory, RegisterError};
pub use results::{c_errors, TCA_ERROR_INTERNAL, TCA_ERROR_INVALID_ARGUMENT, TCA_ERROR_UNKNOWN_FABRIC};

/// Where the C header lies in the source tree.
pub const HEADER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include/tca-api.h");
