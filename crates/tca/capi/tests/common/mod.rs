//! The C ABI on a simulated job, one thread per rank: what the `*_sim` tests share.

use std::cell::RefCell;
use std::path::Path;
use std::sync::{Arc, Once};
use tca_model::platform::Platform;
use tca_proto::{Fabric, FabricResult};
use tca_sim::{SimJob, SimRank};

thread_local! {
    /// The job and rank this thread plays.
    static PART: RefCell<Option<(Arc<SimJob>, u32)>> = const { RefCell::new(None) };
}

/// Simulated HA-PACS/TCA (16 nodes).
fn platform() -> Platform {
    Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml")).unwrap()
}

/// The job the calling rank thread plays in.
#[allow(dead_code)] // not every test file needs it
pub fn this_job() -> Arc<SimJob> {
    PART.with(|p| p.borrow().as_ref().map(|(job, _)| job.clone())).expect("the thread plays a rank")
}

/// Registers the simulated fabric once: each thread's rank is the one `PART` names.
fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tca::set_fabric_factory("sim", || -> FabricResult<Box<dyn Fabric>> {
            let (job, rank) = PART.with(|p| p.borrow().clone()).expect("the thread plays a rank");
            Ok(Box::new(SimRank::new(job, rank)?))
        })
        .unwrap();
        // SAFETY: set before any rank thread starts; nothing else reads the environment then.
        unsafe { std::env::set_var("TCA_FABRIC", "sim") };
    });
}

/// Runs `program(rank, job)` on every rank of a new job on [`platform`], one thread each; a
/// rank leaves the job when its program returns.
pub fn run<T, F>(ranks: u32, program: F) -> (Vec<T>, Arc<SimJob>)
where
    T: Send + 'static,
    F: Fn(u32, &SimJob) -> T + Send + Sync + 'static,
{
    register();
    let job = SimJob::new(&platform(), ranks, false).unwrap();
    let program = Arc::new(program);
    let threads: Vec<_> = (0..ranks)
        .map(|r| {
            let (job, program) = (job.clone(), program.clone());
            std::thread::spawn(move || {
                PART.with(|p| *p.borrow_mut() = Some((job.clone(), r)));
                let out = program(r, &job);
                job.finish(r);
                out
            })
        })
        .collect();
    (threads.into_iter().map(|t| t.join().expect("rank thread")).collect(), job)
}
