//! A simulation stopped by SIGTERM, SIGINT or SIGHUP (`tca run --timeout`, Ctrl-C, a batch
//! system's stop) still writes the TCA job's trace and statistics, up to the virtual time the
//! hardware reached, then ends with status 128 + the signal, as the signal would have.
//!
//! The handler only writes the signal's number into a pipe (all a handler may safely do). A
//! thread of its own reads it, takes the job's lock, which SimGrid's thread holds only between
//! hardware events, never across a SimGrid call, and writes the files there: whatever the ranks
//! are doing (waiting in TCA, in MPI, or computing with no call at all).

use crate::job::SmpiJob;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Once};

/// The signals that stop a run: those `tca run` forwards, and with which it stops a job.
const STOPPING: [c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The pipe's end the handler writes to (-1 before [`watch`]).
static WAKE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: c_int) {
    let byte = signal as u8;
    // SAFETY: write(2) is async-signal-safe; a full pipe (a signal repeated many times) only
    // loses the repeats. errno is the interrupted code's, so it is given back.
    unsafe {
        let errno = *libc::__errno_location();
        libc::write(WAKE.load(Ordering::Relaxed), (&raw const byte).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

/// Once per process: the stopping signals end `job` as the module documentation says. If the
/// pipe, the thread or a handler cannot be had, the signals keep their previous effect.
pub(crate) fn watch(job: Arc<SmpiJob>) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut fds = [0 as c_int; 2];
        // SAFETY: pipe2 with a valid array of two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let read_end = fds[0];
        let watcher = std::thread::Builder::new().name("tca-stop".into()).spawn(move || loop {
            let mut byte = 0u8;
            // SAFETY: reads one byte into a local.
            match unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) } {
                1 => job.stop(c_int::from(byte)),
                _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
                _ => return,
            }
        });
        if watcher.is_err() {
            return;
        }
        WAKE.store(fds[1], Ordering::Relaxed);
        for signal in STOPPING {
            // SAFETY: reads the signal's action, then sets a zeroed one with a handler of the
            // right type and an empty mask; SA_RESTART so that SimGrid's and the program's
            // system calls are not interrupted. A signal ignored on the way in (nohup, a
            // shell's `&`) stays ignored.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &raw mut old) != 0 || old.sa_sigaction == libc::SIG_IGN {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&raw mut action.sa_mask);
                libc::sigaction(signal, &raw const action, std::ptr::null_mut());
            }
        }
    });
}

/// A signal's name, as messages give it.
pub(crate) fn signal_name(signal: c_int) -> String {
    match signal {
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        n => format!("signal {n}"),
    }
}
