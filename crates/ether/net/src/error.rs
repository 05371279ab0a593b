//! The one error type of real links: every variant prints as one line naming what failed.

use std::io;

/// Why a real-link operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// An `ip` or `tc` command exited with an error; `stderr` is its first line.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line as run.
        command: String,
        /// The first line of what it printed on stderr (or its exit status).
        stderr: String,
    },
    /// A program that could not be started at all (not installed, not on PATH).
    #[error("cannot run `{program}`: {source} (is iproute2 installed?)")]
    Spawn {
        /// The program.
        program: String,
        /// The error from exec.
        source: io::Error,
    },
    /// The operation needs root (CAP_NET_ADMIN for namespaces and links, CAP_NET_RAW for sockets).
    #[error("{what}: operation not permitted (needs root or {capability})")]
    NotPermitted {
        /// What was attempted.
        what: String,
        /// The capability it needs.
        capability: &'static str,
    },
    /// A system call that failed.
    #[error("{what}: {source}")]
    Os {
        /// What was attempted, with the interface or namespace it concerned.
        what: String,
        /// The error number from the kernel.
        source: io::Error,
    },
    /// An argument out of range (a name too long, a ring size that is not a page multiple, ...).
    #[error("{0}")]
    Invalid(String),
}

impl NetError {
    /// Whether this is a send refused because the interface's queue (e.g. a tbf's) was full
    /// (ENOBUFS): back-pressure, not a broken socket.
    pub fn is_queue_full(&self) -> bool {
        matches!(self, Self::Os { source, .. } if source.raw_os_error() == Some(libc::ENOBUFS))
    }

    /// The error of the last system call: `NotPermitted` for EPERM/EACCES, else `Os`.
    pub(crate) fn last_os(what: impl Into<String>, capability: &'static str) -> Self {
        Self::from_io(what, capability, io::Error::last_os_error())
    }

    pub(crate) fn from_io(what: impl Into<String>, capability: &'static str, e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => Self::NotPermitted { what: what.into(), capability },
            _ => Self::Os { what: what.into(), source: e },
        }
    }
}
