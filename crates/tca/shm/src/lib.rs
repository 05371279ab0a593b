//! The shm fabric: the TCA API on one host, with real memory and real clocks.
//!
//! Each rank is a process. Memory from [`Fabric::malloc`] (`tcaMalloc`) lives in the rank's
//! shared segment, which every peer maps, so a [`tca_proto::Handle`] received from another rank
//! as 32 bytes addresses that rank's memory (the stand-in for the PEACH2 address window shared
//! by all nodes, seed 000 §3.4). The two ways of moving data are those of seed 000 §3.5:
//!
//! - **PIO**: CPU stores straight into the peer's mapping ([`Fabric::send_pio`]) and a store
//!   fence ([`Fabric::pio_commit`]); the receiver polls its own memory
//!   ([`Fabric::wait_pio_u32`]).
//! - **DMA**: a chain set on one of four channels ([`Fabric::set_chain`]) is run, on
//!   [`Fabric::start_dma`], by the process's DMA engine thread. The thread is a thin driver of
//!   the sans-I/O [`tca_proto::Engine`]: it takes the engine's actions (descriptor fetches from
//!   a table in the segment in chaining mode, one write per burst of a block-stride transfer,
//!   notifications) and carries them out with `memcpy` into the mapped segments, then reports
//!   completions back. Notifications are entries of a single-producer ring in the
//!   destination's segment, announced by a doorbell word.
//!
//! Every wait spins for `TCA_SPIN_US` (default 50 us), then sleeps on a futex in slices,
//! checking that the peer it waits for is alive: a dead or finished peer fails the wait with
//! [`tca_proto::TcaError::PeerDead`] within milliseconds, and every wait ends with
//! [`tca_proto::TcaError::Timeout`] after `TCA_TIMEOUT_MS` (default 10 s).
//!
//! Segments are named `/dev/shm/tca-<job>-<rank>` only during [`Fabric::init`]: once every
//! rank has mapped every segment, each rank removes its name, so nothing is left in
//! `/dev/shm` however the ranks end (a crash during start-up leaves names that `tca run`
//! removes, and that the next [`Fabric::init`] on the host sweeps once their owner is gone).
//!
//! "GPU memory" (`MemoryType::Gpu`) is host memory on this fabric; device memory through CUDA
//! is future work (docs/shm-fabric.md).

pub mod config;
pub mod fabric;
pub mod heap;
pub mod msg;
pub mod segment;
pub mod sys;

pub use config::{Config, ConfigError};
pub use fabric::{Fabric, PioRegion};
