//! The TCA API on a simulated cluster, in virtual time.
//!
//! Rank programs act on a [`SimRank`] (a [`tca_proto::Fabric`]), one thread per rank against
//! one virtual clock ([`SimJob`]). Each node's TCA protocol core (`tca_proto::Engine`) decides
//! what happens; its actions are timed by the hardware model (`tca_model::Cluster`) and its
//! inputs come back at the virtual times the model gives (module `actions`). The same engine
//! drives the shared-memory fabric, so chain execution, block-stride expansion, notification
//! order, proxy reads and `tcaDMAContinue` fences are written once.
//!
//! [`run`] starts a job of rank programs; [`experiment::run_dma`] runs seed 000's intra-node
//! DMA experiments.

#![warn(missing_docs)]

mod actions;
mod arena;
mod copy_time;
mod cuda;
pub mod experiment;
mod job;
mod memory;
mod rank;
mod scheduler;
mod stats;
mod world;

pub use job::SimJob;
pub use rank::SimRank;
pub use scheduler::Scheduler;
pub use stats::JobStats;
use std::sync::Arc;
use tca_model::platform::Platform;
use tca_proto::FabricError;
pub use world::{Op, Reply};

/// What carries out the requests of a job's ranks on its [`Scheduler`] against a clock: one
/// thread per rank ([`SimJob`]) or the actors of another simulator (crate `tca-smpi`).
pub trait Driver: Send + Sync {
    /// Ranks of the job.
    fn ranks(&self) -> u32;

    /// Rank `rank` makes request `op` and blocks until the world answers it.
    ///
    /// # Errors
    /// The answer's error, or the rank is not running.
    fn call(&self, rank: u32, op: Op) -> Result<Reply, FabricError>;

    /// Rank `rank`'s program has returned (or failed); later calls of it fail.
    fn finish(&self, rank: u32);

    /// Rank `rank`'s requests from now on are made inside the program's call `within`
    /// ([`Scheduler::call_within`]).
    fn call_within(&self, rank: u32, within: Option<&'static str>);
}

/// Runs `program(rank)` for every rank of a new job on `platform`, each in its own thread
/// against the job's virtual clock, and returns the programs' results by rank.
///
/// # Errors
/// No rank, or more ranks than the platform has nodes.
///
/// # Panics
/// If a rank's program panics (the panic is resumed on the calling thread).
pub fn run<T, F>(platform: &Platform, ranks: u32, program: F) -> Result<Vec<T>, FabricError>
where
    T: Send + 'static,
    F: Fn(&SimRank) -> T + Send + Sync + 'static,
{
    let job = SimJob::new(platform, ranks, false)?;
    let program = Arc::new(program);
    let threads: Vec<_> = (0..ranks)
        .map(|rank| {
            let rank = SimRank::new(job.clone(), rank);
            let program = program.clone();
            std::thread::spawn(move || {
                let rank = rank.expect("a rank of the job");
                // Finish the rank even if its program panics, so the others' waits end (on it:
                // PeerDead; otherwise a deadlock) instead of waiting forever.
                struct Finish(SimRank);
                impl Drop for Finish {
                    fn drop(&mut self) {
                        self.0.job().finish(self.0.rank());
                    }
                }
                let finish = Finish(rank);
                program(&finish.0)
            })
        })
        .collect();
    Ok(threads.into_iter().map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect())
}
