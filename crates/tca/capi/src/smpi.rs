//! What libtca offers the SMPI support library (`libtcasmpi.so`, built from
//! `crates/tca/smpi/glue` and `crates/tca/smpi/c`).

use std::io::Write;

/// Writes one line on stderr naming what each rank of the SMPI program's TCA job does, after
/// SimGrid found a deadlock; nothing outside such a job.
#[no_mangle]
pub extern "C" fn tca_smpi_report_deadlock() {
    let line = std::panic::catch_unwind(tca_smpi::deadlock_report).ok().flatten();
    let text = match line {
        Some(ranks) => format!("tca: deadlock across MPI and TCA {ranks}\n"),
        None => "tca: deadlock in MPI (no rank has joined the TCA job)\n".to_string(),
    };
    let _ = std::io::stderr().write_all(text.as_bytes());
}
