//! What libtca offers the SMPI support library (`libtcasmpi.so`, built from
//! `crates/tca/smpi/glue` and `crates/tca/smpi/c`).

use std::ffi::{c_int, c_void};
use std::io::Write;
use tca_proto::fabric::MemorySpace;

/// Whether `ptr` is GPU memory of the calling rank's TCA job: the question the MPI wrappers of
/// `libtcasmpi.so` ask of every buffer. Asked here rather than through the CUDA runtime, it
/// leaves the program's last CUDA error alone and joins no job: a rank outside one (an
/// MPI-only program, or after `tcaFinalize`) has no GPU memory.
#[no_mangle]
pub extern "C-unwind" fn tca_smpi_on_gpu(ptr: *const c_void) -> c_int {
    let on_gpu = || {
        crate::registry::with_fabric(|f| Ok(f.pointer_info(ptr as usize as u64)?))
            .is_ok_and(|info| matches!(info.space, MemorySpace::Device(_)))
    };
    let answer = std::panic::catch_unwind(on_gpu).map_or(0, c_int::from);
    // The question may call into SimGrid, which may kill the rank there.
    tca_smpi::end_if_killed();
    answer
}

/// Ends the calling rank if SimGrid killed it during the libtca call that just returned: for
/// libtcacudart, which calls libtca inside a `catch_unwind` of its own and ends the rank at
/// its own C ABI edge (`crates/tca/cuda/src/errors.rs`).
#[no_mangle]
pub extern "C-unwind" fn tca_smpi_end_if_killed() {
    tca_smpi::end_if_killed();
}

/// SimGrid actor `pid` ended (deadlock reports name a rank that returned from `main`).
#[no_mangle]
pub extern "C-unwind" fn tca_smpi_actor_ended(pid: i64) {
    let _ = std::panic::catch_unwind(|| tca_smpi::actor_ended(pid));
}

/// The end of SimGrid's simulation: the TCA job writes its trace and statistics if no
/// `tcaFinalize` of its last rank did.
#[no_mangle]
pub extern "C-unwind" fn tca_smpi_simulation_end() {
    let _ = std::panic::catch_unwind(tca_smpi::simulation_end);
}

/// Writes one line on stderr naming what each rank of the SMPI program's TCA job does, after
/// SimGrid found a deadlock; nothing outside such a job.
#[no_mangle]
pub extern "C-unwind" fn tca_smpi_report_deadlock() {
    let line = std::panic::catch_unwind(tca_smpi::deadlock_report).ok().flatten();
    let text = match line {
        Some(ranks) => format!("tca: deadlock across MPI and TCA {ranks}\n"),
        None => "tca: deadlock in MPI (no rank has joined the TCA job)\n".to_string(),
    };
    let _ = std::io::stderr().write_all(text.as_bytes());
}
