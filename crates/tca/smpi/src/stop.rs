//! A simulation stopped by SIGTERM, SIGINT or SIGHUP (`tca run --timeout`, Ctrl-C, a batch
//! system's stop) still writes the TCA job's trace and statistics, up to the virtual time the
//! hardware reached, then ends with status 128 + the signal, as the signal would have. A rank
//! that crashes (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: all ranks are actors of one process)
//! is named, the files are written as well, and the process then ends by that signal.
//!
//! The handler only writes the signal's number (and the crashing rank) into a pipe (all a
//! handler may safely do). A thread of its own reads it, takes the job's lock, which SimGrid's
//! thread holds only between hardware events, never across a SimGrid call, and writes the
//! files there: whatever the ranks are doing (waiting in TCA, in MPI, or computing with no
//! call at all). A crashing thread waits for that thread to end the process. A crash with the
//! lock held by the crashing thread (inside a TCA or CUDA call, copying from a bad pointer the
//! program passed, say) is named at once without the files, as the state may be half changed.
//! If the watcher has not taken the lock within [`CRASH_GRACE_S`] (another thread's hold), the
//! crashing thread dies by its signal.

use crate::job::SmpiJob;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

/// The signals that stop a run: those `tca run` forwards, and with which it stops a job.
const STOPPING: [c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The signals of a crash of the code running on SimGrid's thread: a rank's, or the model's.
const CRASHING: [c_int; 5] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGABRT];

/// How long a crashing thread waits for the watcher to take the job's lock before it dies, in
/// seconds; once the watcher holds it (it is writing the files), as long as that takes.
const CRASH_GRACE_S: u32 = 10;

/// The watcher holds the job's lock to end the process ([`writing`]).
static WRITING: AtomicBool = AtomicBool::new(false);

/// The watcher is handling a stop or a crash: SimGrid's thread leaves a long run of hardware
/// events (one DMA chain of a GiB takes seconds) at its next event, and takes the job's lock
/// no more ([`give_way`]), so that the watcher gets it at once.
static STOPPING_NOW: AtomicBool = AtomicBool::new(false);

thread_local! {
    static WATCHER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A stop or a crash is being handled ([`STOPPING_NOW`]).
pub(crate) fn stopping() -> bool {
    STOPPING_NOW.load(Ordering::Relaxed)
}

/// Before taking the job's lock: while a stop is handled, any thread but the watcher waits
/// here for the end of the process.
pub(crate) fn give_way() {
    if stopping() && !WATCHER.with(std::cell::Cell::get) {
        wait_for_the_end();
    }
}

/// Waits for the watcher to end the process.
pub(crate) fn wait_for_the_end() -> ! {
    loop {
        std::thread::park();
    }
}

/// The thread that holds the job's lock ([`held`]; 0: none), which a crash handler compares
/// with its own.
static HOLDER: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// A thread's identity, as its address: a plain TLS access, which a handler may make.
    static ME: u8 = const { 0 };
}

fn me() -> usize {
    ME.with(|m| m as *const u8 as usize)
}

/// This thread took the job's lock.
pub(crate) fn held() {
    HOLDER.store(me(), Ordering::Relaxed);
}

/// The thread holding the job's lock gives it back.
pub(crate) fn released() {
    HOLDER.store(0, Ordering::Relaxed);
}

/// In the pipe, a crash's signal with this bit: the crashing thread held the job's lock.
const IN_LOCK: u8 = 0x80;

/// The pipe's end the handler writes to (-1 before [`watch`]).
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// The SimGrid actor of each rank that joined (0: none), which a crash handler may read: ranks
/// 0-254, as a byte tells them ([`NO_RANK`] is 255).
static RANK_ACTORS: [AtomicI64; 255] = [const { AtomicI64::new(0) }; 255];

/// In the pipe, after a signal: no rank crashed (a stopping signal, or a crash outside a rank).
const NO_RANK: u8 = u8::MAX;

/// Rank `rank` runs as SimGrid actor `pid`, as a crash report names it.
pub(crate) fn note_rank_actor(rank: u32, pid: i64) {
    if let Some(slot) = RANK_ACTORS.get(rank as usize) {
        slot.store(pid, Ordering::Relaxed);
    }
}

/// Writes the signal and the rank into the pipe. write(2) is async-signal-safe; a full pipe (a
/// signal repeated many times) only loses the repeats. errno is the interrupted code's, so it
/// is given back.
fn tell(signal: c_int, rank: u8) {
    let bytes = [signal as u8, rank];
    // SAFETY: as above; the bytes are a local array.
    unsafe {
        let errno = *libc::__errno_location();
        libc::write(WAKE.load(Ordering::Relaxed), bytes.as_ptr().cast(), 2);
        *libc::__errno_location() = errno;
    }
}

extern "C" fn on_signal(signal: c_int) {
    tell(signal, NO_RANK);
}

extern "C" fn on_crash(signal: c_int) {
    // The actor SimGrid runs now: one at a time, on this thread (SA_RESETHAND: a fault in
    // here ends the process by the signal at once).
    let pid = crate::caller().unwrap_or(0);
    let rank = RANK_ACTORS.iter().position(|a| pid > 0 && a.load(Ordering::Relaxed) == pid);
    // With the lock held here the watcher could never take it: it names the crash without.
    let in_lock = if HOLDER.load(Ordering::Relaxed) == me() { IN_LOCK } else { 0 };
    tell(signal | c_int::from(in_lock), rank.map_or(NO_RANK, |r| r as u8));
    let second = libc::timespec { tv_sec: 1, tv_nsec: 0 };
    let mut waited = 0;
    // SAFETY: async-signal-safe calls; the watcher ends the process meanwhile, or the default
    // action of the signal, raised again, does (a sleep cut short by another signal counts).
    unsafe {
        while waited < CRASH_GRACE_S || WRITING.load(Ordering::Relaxed) {
            libc::nanosleep(&second, std::ptr::null_mut());
            waited += 1;
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

/// The watcher holds the job's lock and writes the files: a crashing thread waits for it.
pub(crate) fn writing() {
    WRITING.store(true, Ordering::Relaxed);
}

/// The watcher's loop: reads each signal the handlers write into the pipe and ends `job`.
fn watch_pipe(job: &SmpiJob, read_end: c_int) {
    loop {
        let mut bytes = [0u8; 2];
        // SAFETY: reads two bytes into a local array (a pipe's writes of up to PIPE_BUF
        // bytes are not split).
        let read = unsafe { libc::read(read_end, bytes.as_mut_ptr().cast(), 2) };
        if read == 2 {
            STOPPING_NOW.store(true, Ordering::Relaxed);
        }
        match read {
            2 if CRASHING.contains(&c_int::from(bytes[0] & !IN_LOCK)) => {
                let (signal, rank) =
                    (c_int::from(bytes[0] & !IN_LOCK), (bytes[1] != NO_RANK).then_some(u32::from(bytes[1])));
                if bytes[0] & IN_LOCK != 0 {
                    job.crash_in_call(signal, rank)
                } else {
                    job.crash(signal, rank)
                }
            }
            2 => job.stop(c_int::from(bytes[0])),
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
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
        let watcher = std::thread::Builder::new().name("tca-stop".into()).spawn(move || {
            WATCHER.with(|w| w.set(true));
            watch_pipe(&job, read_end);
        });
        if watcher.is_err() {
            return;
        }
        WAKE.store(fds[1], Ordering::Relaxed);
        for signal in CRASHING {
            // SAFETY: as below; on the alternate stack SimGrid gives its threads, where there
            // is one (a rank's stack overflow), once.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_crash as extern "C" fn(c_int) as usize;
                action.sa_flags = libc::SA_ONSTACK | libc::SA_RESETHAND;
                libc::sigemptyset(&raw mut action.sa_mask);
                libc::sigaction(signal, &raw const action, std::ptr::null_mut());
            }
        }
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
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGABRT => "SIGABRT".into(),
        n => format!("signal {n}"),
    }
}
