//! The TCA API inside SimGrid SMPI: a C program compiled with `tca cc` and started with
//! `tca run --fabric sim` runs its MPI ranks as SimGrid actors of one process (SMPI); with
//! `TCA_FABRIC=smpi` its TCA calls go to one simulated TCA job ([`tca_sim::Scheduler`]) on
//! SimGrid's clock, so MPI_Wtime, MPI traffic and TCA traffic share one virtual time (module
//! `job`).
//!
//! Settings, from the environment `tca run` prepares:
//! - `TCA_PLATFORM`: the platform file (TOML) of the simulated TCA hardware;
//! - `TCA_TRACE`: write the hardware's Chrome trace-event JSON there when the job ends;
//! - `TCA_SMPI_MODEL_HOST`: the SimGrid host that runs no rank, for the model actor;
//! - `TCA_SIM_STATS`: print one line of statistics on stderr when the job ends (virtual time,
//!   hardware events, events per wall-clock second); when its value is a file path ending in
//!   `.json`, also write there one JSON object ([`tca_sim::JobStats::to_json`]): `ranks`,
//!   `virtual_time_us`, `hardware_events`, `wall_s`, `events_per_s`, `tlps`, `stalled_tlps`
//!   (TLPs that found a link direction busy and queued), and `links`, one entry per link
//!   direction or throughput limit of the platform,
//!   `{"link": name, "stalled_tlps": n, "busy_us": x, "tlps": n}`.
//!
//! SIGTERM, SIGINT and SIGHUP end the run with the trace and statistics written up to the
//! virtual time reached; so does a rank's crash, which is named (module `stop`).

#![warn(missing_docs)]

mod job;
mod simgrid;
mod stop;

use job::SmpiJob;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tca_model::platform::Platform;
use tca_proto::{FabricError, FabricResult, TcaError};
use tca_sim::{Scheduler, SimRank};

/// The job of this process, created by the first rank that joins.
static JOB: Mutex<Option<Arc<SmpiJob>>> = Mutex::new(None);

fn error(detail: impl Into<String>) -> FabricError {
    FabricError::with_detail(TcaError::NotInitialized, detail)
}

/// Set when SimGrid killed the rank whose TCA call is returning ([`end_if_killed`]). One flag
/// for the process: SimGrid runs one actor at a time, and the killed rank returns from its
/// wait to the edge of the C ABI without handing over to another.
static KILLED: AtomicBool = AtomicBool::new(false);

/// SimGrid killed the calling rank: noted for [`end_if_killed`]; the error its call returns
/// on the way there.
fn killed() -> FabricError {
    KILLED.store(true, Ordering::Relaxed);
    killed_error()
}

fn killed_error() -> FabricError {
    FabricError::with_detail(TcaError::PeerDead, "SimGrid killed this rank (MPI_Abort)")
}

/// The error of any call of a rank SimGrid killed, until it leaves libtca.
fn refuse_if_killed() -> FabricResult<()> {
    if KILLED.load(Ordering::Relaxed) {
        return Err(killed_error());
    }
    Ok(())
}

/// At the edge of the C ABI, after a call returned: if SimGrid killed the calling rank while
/// it waited, ends it as SimGrid does, by throwing SimGrid's kill (a C++ exception) through
/// the caller's frames. The call's own Rust frames have returned by then; none may be between
/// here and the program.
pub fn end_if_killed() {
    // A load first: every call of the C ABI on every fabric passes here.
    if KILLED.load(Ordering::Relaxed) && KILLED.swap(false, Ordering::Relaxed) {
        if let Some(end) = simgrid::simgrid().and_then(|sg| sg.end_killed_rank) {
            // SAFETY: a SimGrid call from the killed actor; it does not return.
            unsafe { end() };
        }
    }
}

/// The calling SimGrid actor's id, if this process runs inside SimGrid.
pub fn caller() -> Option<i64> {
    let sg = simgrid::simgrid()?;
    // SAFETY: a SimGrid call; outside an actor SimGrid answers -1 or 0.
    Some(unsafe { (sg.self_pid)() })
}

/// This actor's MPI rank and the job's size.
fn mpi_rank(sg: &simgrid::SimGrid) -> FabricResult<(u32, u32)> {
    let (mut init, mut rank, mut size): (c_int, c_int, c_int) = (0, -1, 0);
    // SAFETY: SMPI calls with valid out-pointers; MPI_COMM_WORLD is read after MPI_Init.
    unsafe {
        (sg.mpi_initialized)(&mut init);
        if init == 0 {
            return Err(error(
                "a TCA or CUDA call on the simulator needs MPI_Init first (tcaInit, or the first CUDA \
                 call, joins the TCA job, which is the MPI job)",
            ));
        }
        let world = *sg.comm_world;
        (sg.mpi_comm_rank)(world, &mut rank);
        (sg.mpi_comm_size)(world, &mut size);
    }
    match (u32::try_from(rank), u32::try_from(size)) {
        (Ok(r), Ok(n)) if r < n => Ok((r, n)),
        _ => Err(error(format!("MPI gave rank {rank} of {size}"))),
    }
}

fn load_platform() -> FabricResult<Platform> {
    let path = std::env::var("TCA_PLATFORM")
        .map_err(|_| error("TCA_PLATFORM is not set: start the program with `tca run --fabric sim`"))?;
    Platform::load(std::path::Path::new(&path)).map_err(|e| error(format!("TCA_PLATFORM={path}: {e}")))
}

/// What the job does when its last rank finishes: the trace file and the statistics line.
fn on_end(scheduler: &Scheduler, wall: std::time::Duration) {
    if let Ok(path) = std::env::var("TCA_TRACE") {
        let json = scheduler.trace_json().unwrap_or_default();
        if let Err(e) = std::fs::write(&path, json) {
            eprintln!("tca: cannot write the trace {path}: {e}");
        }
        let dropped = scheduler.trace_dropped();
        if dropped > 0 {
            eprintln!(
                "tca: the trace {path} holds the first {} spans; {dropped} later ones were dropped",
                base::Trace::DEFAULT_MAX_SPANS
            );
        }
    }
    if let Some(setting) = std::env::var_os("TCA_SIM_STATS") {
        let stats = scheduler.stats(wall);
        eprintln!("{}", stats.line());
        let path = std::path::Path::new(&setting);
        if path.extension().is_some_and(|e| e == "json") {
            if let Err(e) = std::fs::write(path, stats.to_json()) {
                eprintln!("tca: cannot write the statistics {}: {e}", path.display());
            }
        }
    }
}

/// `tcaInit` of the calling MPI rank inside SMPI: its rank of the process's TCA job (created
/// by the first rank that joins, on `TCA_PLATFORM`, one node per MPI rank).
///
/// # Errors
/// Not inside SimGrid SMPI, MPI not initialised, no or a bad platform, more ranks than the
/// platform has nodes.
pub fn join() -> FabricResult<SimRank> {
    let sg = simgrid::simgrid().ok_or_else(|| {
        error("TCA_FABRIC=smpi needs a program built with `tca cc` and started with `tca run --fabric sim`")
    })?;
    let (rank, size) = mpi_rank(sg)?;
    // Loading the platform and building the model is not the program's computation.
    let _outside = sg.outside_computation().ok_or_else(killed)?;
    // No Rust lock is held across a SimGrid call: SimGrid may run another rank's actor on this
    // thread inside it.
    let existing = JOB.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let job = match existing {
        Some(job) => job,
        None => {
            let platform = load_platform()?;
            let trace = std::env::var_os("TCA_TRACE").is_some();
            let job = SmpiJob::new(sg, Scheduler::new(&platform, size, trace)?, Box::new(on_end));
            let mut slot = JOB.lock().unwrap_or_else(|e| e.into_inner());
            match slot.as_ref() {
                Some(first) => first.clone(),
                None => {
                    *slot = Some(job.clone());
                    drop(slot);
                    // The handlers first: starting the model actor may run other ranks,
                    // which join this job and may crash or spin from then on.
                    stop::watch(job.clone());
                    let host = std::env::var("TCA_SMPI_MODEL_HOST").ok().and_then(|h| std::ffi::CString::new(h).ok());
                    job.start_model(host.as_deref());
                    job
                }
            }
        }
    };
    job.join(rank, caller())?;
    SimRank::new(job, rank)
}

/// SimGrid actor `pid` ended (libtcasmpi's hook): a rank of the job that ends without
/// `tcaFinalize` has returned from `main` or called `exit`, which deadlock reports then say.
pub fn actor_ended(pid: i64) {
    if let Some(job) = JOB.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        job.actor_ended(pid);
    }
}

/// The GPUs of a node of the platform, for `cudaGetDeviceCount` before `MPI_Init` (programs
/// for MVAPICH2-GDR pick their GPU first), when the rank cannot join the job yet; `None`
/// outside SimGrid or once MPI is initialised.
pub fn gpus_before_mpi_init() -> Option<u32> {
    let sg = simgrid::simgrid()?;
    let mut init: c_int = 0;
    // SAFETY: an SMPI call with a valid out-pointer.
    unsafe { (sg.mpi_initialized)(&mut init) };
    if init != 0 {
        return None;
    }
    platform_gpus()
}

/// The GPUs of a node of the platform (every node has the same), inside SimGrid; for
/// `cudaSetDevice` to check its device before the rank joins.
pub fn platform_gpus() -> Option<u32> {
    simgrid::simgrid()?;
    load_platform().ok().and_then(|p| u32::try_from(p.gpu.sockets.len()).ok())
}

/// SimGrid's simulation ended: the job writes its trace and statistics if its ranks did not
/// (nothing outside a job).
pub fn simulation_end() {
    if let Some(job) = JOB.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        job.simulation_end();
    }
}

/// What every rank of the job is doing, for a deadlock that SimGrid detected (MPI and TCA
/// waits together); `None` outside a job.
pub fn deadlock_report() -> Option<String> {
    let job = JOB.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    Some(job.describe())
}
