//! Which fabric the C ABI drives, chosen at `tcaInit` by `TCA_FABRIC`.
//!
//! - `shm` (the default, also when `TCA_FABRIC` is unset or empty): the shared-memory fabric,
//!   one rank per process ([`tca_shm::ShmFabric`]); it is kept for the whole process.
//! - `smpi`: the simulator inside SimGrid SMPI (a C program built with `tca cc` and started
//!   with `tca run --fabric sim`): every MPI rank is a SimGrid actor of this one process, and
//!   `tcaInit` gives the calling actor its rank of the simulated job ([`tca_smpi::join`]);
//!   later calls of that actor use it.
//! - any other name: a fabric that the program embedding this library registered under that
//!   name with [`set_fabric_factory`] before `tcaInit`. Its factory is called on the thread
//!   that calls `tcaInit` and builds that thread's rank (the simulator runs each rank of a C
//!   program as a thread of one process); later calls of that thread use it, and
//!   `tcaFinalize` releases it, so the thread may start another rank afterwards.
//!
//! A name that is neither gives [`TCA_ERROR_UNKNOWN_FABRIC`] from `tcaInit`, with a line on
//! stderr saying which names this process has.

use crate::results::{CErr, TCA_ERROR_UNKNOWN_FABRIC};
use std::cell::RefCell;
use std::sync::{Arc, Mutex, OnceLock};
use tca_proto::{Fabric, FabricResult, TcaError};
use tca_shm::ShmFabric;

/// Builds the fabric of the calling thread's rank at `tcaInit` (see the module documentation).
pub type FabricFactory = dyn Fn() -> FabricResult<Box<dyn Fabric>> + Send + Sync;

/// The name of the built-in shared-memory fabric (and the default of `TCA_FABRIC`).
pub const SHM: &str = "shm";
/// The name of the built-in simulator inside SimGrid SMPI.
pub const SMPI: &str = "smpi";

/// The process's shm fabric, once `tcaInit` built it. Its type is known here, so that calls
/// through [`with_fabric`] reach it without a virtual call.
static PROCESS: OnceLock<ShmFabric> = OnceLock::new();
/// Serialises `tcaInit` of the process fabric.
static INIT: Mutex<()> = Mutex::new(());
static FACTORIES: Mutex<Vec<(String, Arc<FabricFactory>)>> = Mutex::new(Vec::new());
/// The ranks of an SMPI program by SimGrid actor. A rank's fabric is cloned out before it is
/// used: a call may block in SimGrid, which then runs other actors on this same thread.
static ACTORS: Mutex<Vec<(i64, Arc<dyn Fabric>)>> = Mutex::new(Vec::new());

thread_local! {
    /// The rank of this thread, on a registered fabric.
    static THREAD: RefCell<Option<Box<dyn Fabric>>> = const { RefCell::new(None) };
}

/// A name [`set_fabric_factory`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterError(pub String);

impl std::fmt::Display for RegisterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RegisterError {}

/// Registers the fabric `name` of this process: when `TCA_FABRIC=name`, `tcaInit` calls
/// `factory` on the calling thread and that thread's C calls go to the fabric it returns.
/// Registering a name again replaces its factory (threads that already called `tcaInit` keep
/// their fabric).
///
/// ```
/// # use tca_proto::{Fabric, FabricResult, TcaError};
/// // A program embedding libtca (the simulator) plugs its fabric in:
/// tca::set_fabric_factory("sim", || -> FabricResult<Box<dyn Fabric>> {
///     Err(TcaError::NotInitialized.into()) // would build this thread's simulated rank
/// })
/// .unwrap();
/// assert!(tca::fabric_names().contains(&"sim".to_string()));
/// ```
///
/// # Errors
/// [`RegisterError`] for `shm` (built in) and for an empty name.
pub fn set_fabric_factory(
    name: &str,
    factory: impl Fn() -> FabricResult<Box<dyn Fabric>> + Send + Sync + 'static,
) -> Result<(), RegisterError> {
    if name == SHM || name == SMPI || name.trim().is_empty() {
        return Err(RegisterError(format!("fabric name {name:?} is reserved or empty")));
    }
    let mut all = FACTORIES.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|(n, _)| n != name);
    all.push((name.to_string(), Arc::new(factory)));
    Ok(())
}

/// Writes one line on stderr in one write, so that the lines of ranks sharing a terminal do
/// not interleave.
fn say(line: String) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// The fabric names `TCA_FABRIC` may take in this process: `shm`, `smpi`, then the registered
/// ones.
pub fn fabric_names() -> Vec<String> {
    let all = FACTORIES.lock().unwrap_or_else(|e| e.into_inner());
    [SHM, SMPI].into_iter().map(String::from).chain(all.iter().map(|(n, _)| n.clone())).collect()
}

/// Who is calling, for state kept per rank of a process (the CUDA runtime's current device,
/// last error, peer access): the SimGrid actor inside SMPI (every rank runs on one thread
/// there), else the thread.
pub fn caller_key() -> u64 {
    thread_local! {
        static THREAD_KEY: u64 = {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        };
    }
    match tca_smpi::caller() {
        Some(pid) => (1 << 63) | pid as u64,
        None => THREAD_KEY.with(|k| *k),
    }
}

/// The calling SMPI rank's fabric, if it joined.
fn actor_fabric() -> Option<Arc<dyn Fabric>> {
    let actors = ACTORS.lock().unwrap_or_else(|e| e.into_inner());
    if actors.is_empty() {
        return None;
    }
    let me = tca_smpi::caller()?;
    actors.iter().find(|(pid, _)| *pid == me).map(|(_, f)| Arc::clone(f))
}

/// `tcaInit` on the `smpi` fabric; errors are said as `who`'s.
fn init_smpi(who: &str) -> Result<(), CErr> {
    if actor_fabric().is_some() {
        return Ok(());
    }
    let rank = tca_smpi::join().map_err(|e| {
        say(format!("{who}: {e}"));
        CErr::from(e)
    })?;
    let me = tca_smpi::caller().ok_or(CErr::Tca(TcaError::NotInitialized))?;
    ACTORS.lock().unwrap_or_else(|e| e.into_inner()).push((me, Arc::new(rank)));
    Ok(())
}

fn factory(name: &str) -> Option<Arc<FabricFactory>> {
    let all = FACTORIES.lock().unwrap_or_else(|e| e.into_inner());
    all.iter().find(|(n, _)| n == name).map(|(_, f)| Arc::clone(f))
}

/// `tcaInit` for the fabric `name` (`TCA_FABRIC`, or `shm` when unset). A second call while
/// the rank is in the job does nothing. `who` joins: the line on stderr that explains an
/// error starts with it (`tcaInit`, or the CUDA runtime's call that joins first).
pub(crate) fn init(name: &str, who: &str) -> Result<(), CErr> {
    if name == SMPI {
        return init_smpi(who);
    }
    if PROCESS.get().is_some() || THREAD.with(|t| t.borrow().is_some()) {
        // A second tcaInit is harmless while the job runs; after tcaFinalize the shm rank
        // cannot join again (its job's segments are gone).
        return with_fabric(|f| Ok(f.node_id().map(|_| ())?));
    }
    if name == SHM {
        let _g = INIT.lock().unwrap_or_else(|e| e.into_inner());
        if PROCESS.get().is_some() {
            return Ok(());
        }
        let fabric = ShmFabric::init().map_err(|e| {
            say(format!("{who}: {e}"));
            CErr::Tca(e.error)
        })?;
        let _ = PROCESS.set(fabric);
        crate::pio_direct::open();
        return Ok(());
    }
    let Some(make) = factory(name) else {
        say(format!(
            "{who}: TCA_FABRIC={name:?} is not a fabric of this process (it has: {})",
            fabric_names().join(", ")
        ));
        return Err(CErr::Abi(TCA_ERROR_UNKNOWN_FABRIC));
    };
    let fabric = make().map_err(|e| {
        say(format!("{who}: fabric {name}: {e}"));
        CErr::from(e)
    })?;
    THREAD.with(|t| *t.borrow_mut() = Some(fabric));
    Ok(())
}

/// The fabric name `tcaInit` uses: `TCA_FABRIC`, `shm` when unset or empty.
pub(crate) fn chosen_name() -> String {
    match std::env::var("TCA_FABRIC") {
        Ok(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => SHM.to_string(),
    }
}

/// Calls `f` with the calling thread's fabric: the process's shm fabric, else this thread's
/// registered one.
///
/// # Errors
/// [`TcaError::NotInitialized`] before `tcaInit` (and after `tcaFinalize` on a registered
/// fabric).
#[inline]
pub(crate) fn with_fabric<T>(f: impl FnOnce(&dyn Fabric) -> Result<T, CErr>) -> Result<T, CErr> {
    if let Some(p) = PROCESS.get() {
        return f(p);
    }
    if let Some(rank) = actor_fabric() {
        return f(rank.as_ref());
    }
    THREAD.with(|t| match t.borrow().as_deref() {
        Some(fabric) => f(fabric),
        None => Err(CErr::Tca(TcaError::NotInitialized)),
    })
}

/// The process's shm fabric (`tca run`, mpirun), if it joined a job.
pub(crate) fn process_fabric() -> Option<&'static ShmFabric> {
    PROCESS.get()
}

/// `tcaFinalize`: the fabric leaves the job; a thread's registered fabric is released.
pub(crate) fn finalize() -> Result<(), CErr> {
    if let Some(p) = PROCESS.get() {
        crate::pio_direct::close();
        return Ok(Fabric::finalize(p)?);
    }
    if let Some(rank) = actor_fabric() {
        let me = tca_smpi::caller();
        ACTORS.lock().unwrap_or_else(|e| e.into_inner()).retain(|(pid, _)| Some(*pid) != me);
        return Ok(rank.finalize()?);
    }
    let fabric = THREAD.with(|t| t.borrow_mut().take()).ok_or(CErr::Tca(TcaError::NotInitialized))?;
    Ok(fabric.finalize()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{tcaBarrier, tcaFinalize, tcaGetNodeCount, tcaGetNodeId, tcaMalloc};
    use crate::results::TCA_ERROR_INTERNAL;
    use std::ffi::c_void;
    use tca_proto::{Desc, FabricError, Handle, MemoryType, PioRegion, TCA_SUCCESS};

    /// A fabric of one rank that answers the set-up calls and refuses the rest; node 7 of 9,
    /// and a panic in `barrier` to show that none crosses the ABI.
    struct Mock;

    fn no<T>() -> FabricResult<T> {
        Err(FabricError::with_detail(TcaError::InvalidNode, "mock"))
    }

    impl Fabric for Mock {
        fn node_id(&self) -> FabricResult<u16> {
            Ok(7)
        }
        fn node_count(&self) -> FabricResult<u16> {
            Ok(9)
        }
        fn malloc(&self, _: u64, _: MemoryType) -> FabricResult<u64> {
            Ok(0x1000)
        }
        fn free(&self, _: u64) -> FabricResult<()> {
            no()
        }
        fn create_handle(&self, _: u64, _: u64, _: MemoryType) -> FabricResult<Handle> {
            no()
        }
        fn destroy_handle(&self, _: &Handle) -> FabricResult<()> {
            no()
        }
        fn write(&self, _: &Handle, _: u64, _: &[u8]) -> FabricResult<()> {
            no()
        }
        fn read(&self, _: &Handle, _: u64, _: &mut [u8]) -> FabricResult<()> {
            no()
        }
        fn desc_set(&self, _: u8, _: &Desc) -> FabricResult<()> {
            no()
        }
        fn start_dma(&self, _: u8) -> FabricResult<()> {
            no()
        }
        fn wait_dmac(&self, _: u8) -> FabricResult<()> {
            no()
        }
        fn wait_dma_recv(&self, _: &Handle, _: u32, _: u32) -> FabricResult<()> {
            no()
        }
        fn set_pio_region(&self, _: &Handle, _: u64, _: u64) -> FabricResult<PioRegion> {
            no()
        }
        fn send_pio(&self, _: &PioRegion, _: u64, _: &[u8]) -> FabricResult<()> {
            no()
        }
        fn send_pio_commit(&self) -> FabricResult<()> {
            no()
        }
        fn wait_pio(&self, _: &Handle, _: u64, _: &[u8], _: Option<u16>) -> FabricResult<()> {
            no()
        }
        fn barrier(&self) -> FabricResult<()> {
            panic!("a bug in a fabric")
        }
        fn allgather(&self, _: &[u8]) -> FabricResult<Vec<u8>> {
            no()
        }
        fn wtime(&self) -> FabricResult<f64> {
            Ok(0.0)
        }
        fn compute(&self, _: f64) -> FabricResult<()> {
            Ok(())
        }
        fn finalize(&self) -> FabricResult<()> {
            Ok(())
        }
    }

    #[test]
    fn a_registered_fabric_serves_the_thread_that_initialised_it() {
        set_fabric_factory("mock", || Ok(Box::new(Mock) as Box<dyn Fabric>)).unwrap();
        assert!(fabric_names().contains(&"mock".to_string()));
        std::thread::spawn(|| {
            let (mut id, mut n) = (0, 0);
            // SAFETY: valid out-pointers.
            assert_eq!(unsafe { tcaGetNodeId(&mut id) }, TcaError::NotInitialized.code());
            assert!(init("mock", "tcaInit").is_ok());
            assert!(init("mock", "tcaInit").is_ok(), "a second tcaInit is harmless");
            // SAFETY: as above.
            unsafe {
                assert_eq!((tcaGetNodeId(&mut id), tcaGetNodeCount(&mut n)), (TCA_SUCCESS, TCA_SUCCESS));
                let mut p: *mut c_void = std::ptr::null_mut();
                assert_eq!(tcaMalloc(&mut p, 64, 0), TCA_SUCCESS);
                assert_eq!(p as usize, 0x1000);
            }
            assert_eq!((id, n), (7, 9));
            assert_eq!(tcaBarrier(), TCA_ERROR_INTERNAL, "a panic became a code");
            // Another thread has no rank.
            std::thread::spawn(|| assert_eq!(tcaBarrier(), TcaError::NotInitialized.code())).join().unwrap();
            assert_eq!(tcaFinalize(), TCA_SUCCESS);
            // SAFETY: as above.
            assert_eq!(unsafe { tcaGetNodeId(&mut id) }, TcaError::NotInitialized.code());
            assert_eq!(tcaFinalize(), TcaError::NotInitialized.code());
            // The thread may join again.
            assert!(init("mock", "tcaInit").is_ok());
            assert_eq!(tcaFinalize(), TCA_SUCCESS);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn an_unknown_fabric_name_is_its_own_error() {
        std::thread::spawn(|| {
            assert!(matches!(init("no-such-fabric", "tcaInit"), Err(CErr::Abi(TCA_ERROR_UNKNOWN_FABRIC))));
            set_fabric_factory("refuses", || Err(TcaError::TooManyNodes.into())).unwrap();
            assert!(matches!(init("refuses", "tcaInit"), Err(CErr::Tca(TcaError::TooManyNodes))));
            assert_eq!(tcaBarrier(), TcaError::NotInitialized.code());
        })
        .join()
        .unwrap();
        assert!(set_fabric_factory("shm", || Err(TcaError::NotInitialized.into())).is_err());
        assert!(set_fabric_factory(" ", || Err(TcaError::NotInitialized.into())).is_err());
    }
}
