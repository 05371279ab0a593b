//! The shm fabric: the TCA API on one host, with real memory and real clocks.
//!
//! Each rank is a process; its view of the job is a [`ShmFabric`], which implements the one
//! fabric interface [`tca_proto::Fabric`]. Memory from `malloc` (`tcaMalloc`) lives in the rank's
//! shared segment, which every peer maps, so a [`tca_proto::Handle`] received from another rank
//! as 32 bytes addresses that rank's memory (the stand-in for the PEACH2 address window shared
//! by all nodes, seed 000 §3.4). The two ways of moving data are those of seed 000 §3.5:
//!
//! - **PIO** ([`pio`]): CPU stores straight into the peer's mapping (`send_pio`) and a store
//!   fence (`send_pio_commit`); the receiver polls its own memory (`wait_pio`).
//! - **DMA** ([`dma`], [`executor`]): a chain set on one of four channels (`desc_set`) is run,
//!   on `start_dma`, by the process's DMA engine thread. The thread is a thin driver of
//!   the sans-I/O [`tca_proto::Engine`]: it takes the engine's actions (descriptor fetches from
//!   a table in the segment in chaining mode, one write per burst of a block-stride transfer,
//!   notifications) and carries them out with `memcpy` into the mapped segments, then reports
//!   completions back. Notifications are entries of a single-producer ring in the
//!   destination's segment, announced by a doorbell word. The copy of a large write is shared
//!   with a thread of the destination spinning in a wait for it ([`shared_copy`]). A short
//!   chain is carried out by the caller ([`inline`]), and a chain of one write kicked again
//!   unchanged is repeated without the engine ([`replay`]).
//!
//! Every handle is checked against its owner's handle table in shared memory before each DMA
//! kick and each PIO store ([`memory`]): a write through a destroyed or freed handle fails on
//! the writer's side with [`tca_proto::TcaError::InvalidHandle`].
//!
//! Every wait ([`wait`]) spins for `TCA_SPIN_US` (default 1 ms; none when the job's ranks
//! outnumber the CPUs they may run on), then sleeps on a futex in slices, checking that the
//! peer it waits for is alive: a dead or finished peer fails the wait with
//! [`tca_proto::TcaError::PeerDead`] within milliseconds, and every wait ends with
//! [`tca_proto::TcaError::Timeout`] after `TCA_TIMEOUT_MS` (default 10 s).
//!
//! Segments are named `/dev/shm/tca-<job>-<rank>` only during [`ShmFabric::init`]: once every
//! rank has mapped every segment, each rank removes its name, so nothing is left in
//! `/dev/shm` however the ranks end (a crash during start-up leaves names that `tca run`
//! removes, and that the next [`ShmFabric::init`] on the host sweeps once their owner is gone).
//!
//! "GPU memory" (`MemoryType::Gpu`) is host memory on this fabric; device memory through CUDA
//! is future work (docs/shm-fabric.md).

#![warn(missing_docs)]

pub mod boot;
pub mod collective;
pub mod config;
pub mod dma;
pub mod executor;
pub mod fabric;
pub mod inline;
pub mod memory;
pub mod pio;
pub mod replay;
pub mod ring;
pub mod segment;
pub mod shared_copy;
pub mod store_lock;
pub mod sys;
pub mod wait;

pub use boot::sweep_stale;
pub use config::{Config, ConfigError};
pub use fabric::ShmFabric;
pub use wait::WaitPolicy;
