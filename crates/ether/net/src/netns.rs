//! Running code inside a network namespace.
//!
//! The network namespace belongs to a thread, not to a process, so [`run_in`] runs a closure on
//! a fresh thread that first joins the namespace with `setns(2)` and ends when the closure
//! returns: the caller's threads never change namespace. A socket keeps the namespace it was
//! created in, so the usual pattern is to create sockets (or bind listeners) inside `run_in` and
//! use them from any thread afterwards. Whole programs (relays, baselines) run in a namespace
//! with [`command`], which wraps them in `ip netns exec`.

use std::ffi::CString;
use std::process::Command;

use crate::NetError;

/// Runs `f` on a new thread inside the network namespace `name` (as listed by `ip netns list`)
/// and returns its result. A panic in `f` is resumed on the calling thread.
pub fn run_in<T, F>(name: &str, f: F) -> Result<T, NetError>
where
    T: Send,
    F: FnOnce() -> T + Send,
{
    let path = format!("/run/netns/{name}");
    let c_path =
        CString::new(path.clone()).map_err(|_| NetError::Invalid(format!("namespace name {name:?} contains NUL")))?;
    std::thread::scope(|s| {
        let handle = s.spawn(move || {
            // SAFETY: a valid NUL-terminated path; the descriptor is closed below.
            let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
            if fd < 0 {
                return Err(NetError::last_os(format!("open {path}"), "CAP_SYS_ADMIN"));
            }
            // SAFETY: fd is an open namespace file; setns affects only this thread.
            let rc = unsafe { libc::setns(fd, libc::CLONE_NEWNET) };
            let err = (rc != 0).then(std::io::Error::last_os_error);
            // SAFETY: fd was opened above and is not used afterwards.
            unsafe { libc::close(fd) };
            if let Some(e) = err {
                return Err(NetError::from_io(format!("setns into {name}"), "CAP_SYS_ADMIN", e));
            }
            Ok(f())
        });
        match handle.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// A command that runs `program` inside the network namespace `name` (`ip netns exec`).
pub fn command(name: &str, program: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", name, program]);
    c
}
