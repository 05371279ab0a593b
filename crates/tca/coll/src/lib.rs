//! TCA collectives on the basic API (seed 001: "a collective library on the basic API:
//! Allreduce, Allgather, Barrier"): barrier, allgather, allreduce, reduce and broadcast for any
//! [`tca_proto::Fabric`], so they run unchanged on the thread simulator (`tca-sim`), inside
//! SimGrid SMPI (`tca-smpi`) and on the shared-memory fabric (`tca-shm`). The C ABI
//! (`tcaCollBarrier`, `tcaCollAllgather`, `tcaCollAllreduce`, `tcaCollReduce`, `tcaCollBcast`
//! in `tca-api.h`) and the Python rank context call [`Coll`].
//!
//! Every collective is carried out with the basic API only: PIO stores with
//! `tcaSendPIOCommit` and `tcaWaitPIO`, and DMA chains with `tcaDMANotify` waited for with
//! `tcaWaitDMARecvDesc`, so the simulator times them through the PEACH2 model. Set-up
//! ([`Coll::new`], and growing the DMA work area) exchanges handles once with the fabric's
//! bootstrap allgather, which costs no simulated time.
//!
//! # Algorithms, and why
//!
//! | collective | small payload (PIO)                           | large payload (DMA)                          |
//! |------------|-----------------------------------------------|----------------------------------------------|
//! | barrier    | direct: one round of flags to every rank      | -                                            |
//! | allgather  | direct (one round); Bruck above `direct_limit`| direct: every block to every rank at once    |
//! | allreduce  | direct allgather + fold in rank order         | reduce-scatter + allgather, direct           |
//! | reduce     | direct allgather + fold at the root           | reduce-scatter + gather to the root          |
//! | bcast      | dissemination of the root's block             | binomial tree, largest subtree first         |
//!
//! - **PIO for small payloads, in one round.** A PIO store reaches the peer in about a
//!   microsecond with no descriptor to set up or fetch (seed 000 §4.2.3, Fig. 7), and the CPU
//!   does not wait for a posted store, so a rank stores its block into every peer's box
//!   ([`mailbox`]) at once and waits for theirs: one latency to the farthest node, not
//!   `ceil(log2 n)` latencies (8-byte allreduce on 16 nodes: 1.9 us, against 4.7 us by
//!   dissemination). A small reduction gathers the raw contributions instead of halving partial
//!   results: the data is too short for halving to pay, and folding the same inputs in rank
//!   order on every rank gives the same bits everywhere (floating point included) and equals a
//!   serial left fold. Where a rank would store more than [`Config::direct_limit`] bytes in that
//!   round (32 KiB, [`DIRECT_LIMIT`], measured), Bruck's dissemination allgather takes over while
//!   its messages fit [`Config::pio_limit`]; the broadcast disseminates the root's block.
//! - **DMA for large payloads.** Beyond those limits data moves by DMA chains with
//!   notifications, after a PIO handshake that checks the arguments and tells every rank that
//!   the others are done with their work areas. Allgather and the two phases of the reductions
//!   send to all peers in one phase, spread over all four DMA channels of a PEACH2 (seed 000
//!   §3.5.2) so that transfers to different peers overlap; on the two-ring topology these
//!   transfers share links, which is the contention seed 001 reports for Allgather at 16
//!   nodes. Reductions reduce-scatter first (each rank folds one chunk of every rank's data in
//!   rank order, again giving identical bits everywhere), so each rank sends and receives about
//!   twice the payload instead of `n` times. Broadcast follows a binomial tree (`ceil(log2 n)`
//!   steps); each rank sends to its largest subtree first, in order on one channel.
//!
//! # Costs on the simulator
//!
//! PIO stores, DMA transfers, notifications and `cudaMemcpy` of device buffers take the
//! simulated time the PEACH2 and PCIe models give them. The reduction arithmetic and the CPU's
//! copies between host buffers take none (as SMPI with `--cfg=smpi/cpu-threshold:-1` charges
//! nothing for MPI's reductions).
//!
//! # Buffers
//!
//! Buffers may be host memory (pageable or the fabric's) or device memory. In the small
//! exchanges a device buffer is read by PEACH2's DMA and results are PIO stores into it
//! (`device.rs`); elsewhere the library stages buffers through its own (device memory with the
//! fabric's `cudaMemcpy`). `send == recv` means in place (for allgather: this rank's block is
//! already at its place in `recv`).
//!
//! # Resources
//!
//! Per rank: a control buffer of `128 + n * 2 * 4112` bytes (PIO boxes), and a DMA work area of
//! up to [`Config::max_area`] bytes (allocated on the first DMA collective, grown by doubling,
//! payloads beyond it go in pieces). DMA collectives register their own chains on the
//! configured channels (all four by default): a chain of the program registered on one of them
//! must be registered again after a DMA collective. They use notification slots
//! [`SLOT_FIRST`] and [`SLOT_SECOND`]. PIO-only collectives touch no channel, except on device
//! buffers, whose blocks go by DMA on the same channels with slot [`mailbox::SLOT_BOX`]; storing
//! a result into a GPU allocates a 64-byte flag buffer on that GPU.
//!
//! # Errors
//!
//! Ranks that pass different arguments all fail with [`CollError::Mismatch`] (the signature of
//! the arguments travels in every PIO header); a bitwise operator on floating point is
//! [`CollError::InvalidOp`]; a failed fabric call is [`CollError::Fabric`].
//!
//! # Measured
//!
//! See `docs/collectives.md`.

#![warn(missing_docs)]

pub mod arith;
mod coll;
mod device;
mod dma;
mod error;
mod large;
mod large_device;
mod local;
pub mod mailbox;
mod recording;
mod small;
pub mod types;
mod user;

pub use arith::{fold, long_double_from_f64, long_double_to_f64};
pub use coll::{Coll, Config, Kind, DIRECT_LIMIT, MAX_AREA, PIO_LIMIT};
pub use dma::{SLOT_FIRST, SLOT_SECOND};
pub use error::{CollError, CollResult};
pub use local::{PUT_DMA_MIN, SLOT_LOCAL};
pub use recording::Recording;
pub use types::{DataType, Op, OP_NOOP};
