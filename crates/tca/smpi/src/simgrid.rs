//! The few SimGrid and SMPI functions the bridge calls, found at run time in the process
//! (`dlsym`): libtca does not link SimGrid, it only uses it when an SMPI program loaded both.
//! Signatures from SimGrid 3.32's `simgrid/actor.h`, `semaphore.h`, `host.h`,
//! `engine.h` and `smpi/smpi.h`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// `sg_sem_t`, `sg_host_t`, `sg_actor_t`, `MPI_Comm`: opaque pointers.
pub type Opaque = *mut c_void;

/// `xbt_main_func_t`.
pub type ActorMain = extern "C-unwind" fn(c_int, *mut *mut c_char);

/// `tca_smpi_killable`: C-unwind, as an exception other than SimGrid's kill passes through.
pub type Killable = unsafe extern "C-unwind" fn(extern "C-unwind" fn(*mut c_void), *mut c_void) -> c_int;

fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Declares [`SimGrid`] with one field per function and its loader.
macro_rules! functions {
    ($($(#[$doc:meta])* $field:ident = $symbol:literal: $ty:ty,)*) => {
        /// The resolved functions (see the module documentation).
        pub struct SimGrid {
            $($(#[$doc])* pub $field: $ty,)*
            /// `MPI_COMM_WORLD`, a variable of libsimgrid.
            pub comm_world: *const Opaque,
            /// `tca_smpi_killable` of libtcasmpi (`crates/tca/smpi/glue/hooks.cpp`): runs a
            /// function, 1 when SimGrid killed the actor during it, instead of a C++ exception.
            pub killable: Option<Killable>,
            /// `tca_smpi_end_killed_rank` of libtcasmpi: throws SimGrid's kill again.
            pub end_killed_rank: Option<unsafe extern "C-unwind" fn()>,
            /// SMPI times the ranks' computation (`smpi/simulate-computation`, `tca run
            /// --compute measured`); read once, the first time a rank calls libtca.
            pub measured: OnceLock<bool>,
        }

        fn load() -> Option<SimGrid> {
            Some(SimGrid {
                // SAFETY: each symbol has the C signature of its field (module documentation).
                $($field: unsafe { std::mem::transmute::<*mut c_void, $ty>(symbol($symbol)?) },)*
                comm_world: symbol(c"MPI_COMM_WORLD")?.cast(),
                // SAFETY: as above, the signatures of hooks.cpp.
                killable: symbol(c"tca_smpi_killable").map(|p| unsafe {
                    std::mem::transmute::<*mut c_void, Killable>(p)
                }),
                end_killed_rank: symbol(c"tca_smpi_end_killed_rank").map(|p| unsafe {
                    std::mem::transmute::<*mut c_void, unsafe extern "C-unwind" fn()>(p)
                }),
                measured: OnceLock::new(),
            })
        }
    };
}

functions! {
    get_clock = c"simgrid_get_clock": unsafe extern "C" fn() -> f64,
    self_pid = c"sg_actor_self_get_pid": unsafe extern "C" fn() -> i64,
    sem_init = c"sg_sem_init": unsafe extern "C" fn(c_int) -> Opaque,
    /// Blocking calls may unwind: SimGrid ends a blocked actor (a daemon at the end of the
    /// simulation) by throwing through its stack.
    sem_acquire = c"sg_sem_acquire": unsafe extern "C-unwind" fn(Opaque),
    sem_acquire_timeout = c"sg_sem_acquire_timeout": unsafe extern "C-unwind" fn(Opaque, f64) -> c_int,
    sem_release = c"sg_sem_release": unsafe extern "C-unwind" fn(Opaque),
    host_self = c"sg_host_self": unsafe extern "C" fn() -> Opaque,
    host_by_name = c"sg_host_by_name": unsafe extern "C" fn(*const c_char) -> Opaque,
    actor_create = c"sg_actor_create_":
        unsafe extern "C-unwind" fn(*const c_char, Opaque, ActorMain, c_int, *const *const c_char) -> Opaque,
    actor_daemonize = c"sg_actor_daemonize": unsafe extern "C" fn(Opaque),
    mpi_initialized = c"MPI_Initialized": unsafe extern "C" fn(*mut c_int) -> c_int,
    mpi_comm_rank = c"MPI_Comm_rank": unsafe extern "C" fn(Opaque, *mut c_int) -> c_int,
    mpi_comm_size = c"MPI_Comm_size": unsafe extern "C" fn(Opaque, *mut c_int) -> c_int,
    /// SMPI's timer of the calling rank's computation (`smpi/simulate-computation`): ends it,
    /// charging the time since it began (a blocking simulated execution), and begins it again.
    bench_end = c"smpi_bench_end": unsafe extern "C-unwind" fn(),
    bench_begin = c"smpi_bench_begin": unsafe extern "C" fn(),
    cfg_get_boolean = c"sg_cfg_get_boolean": unsafe extern "C" fn(*const c_char) -> c_int,
}

impl SimGrid {
    /// Runs `f`, SimGrid calls of a rank; false when SimGrid killed the rank during them (where
    /// libtcasmpi is loaded; without it the kill unwinds from here).
    pub fn rank_calls(&self, f: impl FnOnce()) -> bool {
        let Some(killable) = self.killable else {
            f();
            return true;
        };
        let mut f = Some(f);
        // SAFETY: `run_once` is given a pointer to `f`'s Option, which outlives the call.
        unsafe { killable(run_once::<_>(&f), (&raw mut f).cast()) == 0 }
    }
}

impl SimGrid {
    /// Stops the calling rank's computation timer until the returned guard is dropped: the
    /// time a rank spends inside libtca (the model's work done on its thread included) is the
    /// TCA hardware's, which the model times, not the program's computation, which
    /// `--compute measured` charges. SMPI's own MPI calls do the same. `None` when SimGrid
    /// killed the rank meanwhile (the computation before the call is charged here).
    ///
    /// Without `--compute measured` SMPI drops what its timer measures: the timer is left
    /// alone, which saves the two thread-CPU-clock reads a call would cost.
    pub fn outside_computation(&'static self) -> Option<OutsideComputation> {
        // SAFETY: the option is one SMPI registers (and `tca run` sets) before any rank runs.
        let measured = *self
            .measured
            .get_or_init(|| unsafe { (self.cfg_get_boolean)(c"smpi/simulate-computation".as_ptr()) } != 0);
        if !measured {
            return Some(OutsideComputation(None));
        }
        // SAFETY: SMPI calls of a rank's actor, which is in the program's code (its timer runs).
        self.rank_calls(|| unsafe { (self.bench_end)() }).then_some(OutsideComputation(Some(self)))
    }
}

/// While it lives, the calling rank's computation timer is stopped ([`SimGrid::outside_computation`]).
pub struct OutsideComputation(Option<&'static SimGrid>);

impl Drop for OutsideComputation {
    fn drop(&mut self) {
        // A killed rank runs no more computation.
        if let (Some(sg), false) = (self.0, crate::KILLED.load(std::sync::atomic::Ordering::Relaxed)) {
            // SAFETY: the rank's actor, back on its way to the program's code.
            unsafe { (sg.bench_begin)() }
        }
    }
}

/// The trampoline of [`SimGrid::rank_calls`] for the closure type of `_f`.
fn run_once<F: FnOnce()>(_f: &Option<F>) -> extern "C-unwind" fn(*mut c_void) {
    extern "C-unwind" fn call<F: FnOnce()>(arg: *mut c_void) {
        // SAFETY: `arg` points to the `Option<F>` of `rank_calls`, alive during the call.
        if let Some(f) = unsafe { &mut *arg.cast::<Option<F>>() }.take() {
            f();
        }
    }
    call::<F>
}

// SAFETY: function pointers and the address of a process-wide variable.
unsafe impl Send for SimGrid {}
unsafe impl Sync for SimGrid {}

/// SimGrid's functions if this process runs inside SimGrid SMPI.
pub fn simgrid() -> Option<&'static SimGrid> {
    static SG: OnceLock<Option<SimGrid>> = OnceLock::new();
    SG.get_or_init(load).as_ref()
}
