//! Waking the endpoint's thread from the application: an eventfd it sleeps on beside its
//! sockets, written only while the thread is (about to be) asleep, so a busy endpoint costs the
//! application no system call per message.

use std::sync::atomic::{AtomicBool, Ordering};

/// The descriptor and whether the thread sleeps.
#[derive(Debug)]
pub(crate) struct Wake {
    fd: libc::c_int,
    sleeping: AtomicBool,
}

impl Wake {
    pub(crate) fn new() -> Result<Wake, String> {
        // SAFETY: plain eventfd creation; checked below.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!("eventfd: {}", std::io::Error::last_os_error()));
        }
        Ok(Wake { fd, sleeping: AtomicBool::new(false) })
    }

    pub(crate) fn fd(&self) -> libc::c_int {
        self.fd
    }

    /// The thread is going to sleep: signals from now on write the descriptor. The thread
    /// must look for work once more after arming.
    pub(crate) fn arm(&self) {
        self.sleeping.store(true, Ordering::SeqCst);
    }

    /// The thread is awake; `signalled`: the descriptor was reported readable (drain it).
    pub(crate) fn disarm(&self, signalled: bool) {
        self.sleeping.store(false, Ordering::SeqCst);
        if signalled {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into `v` from the eventfd owned here (non-blocking).
            unsafe { libc::read(self.fd, (&mut v as *mut u64).cast(), 8) };
        }
    }

    /// Called after queueing work: wakes the thread if it sleeps.
    pub(crate) fn signal(&self) {
        if self.sleeping.load(Ordering::SeqCst) {
            self.force();
        }
    }

    /// Wakes the thread whatever it is doing (to stop it).
    pub(crate) fn force(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes to the eventfd owned here.
        unsafe { libc::write(self.fd, (&one as *const u64).cast(), 8) };
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        // SAFETY: the descriptor is owned here.
        unsafe { libc::close(self.fd) };
    }
}
