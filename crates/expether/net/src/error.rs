//! The one error type of software ExpEther: every variant prints as one line.

/// Why a software-ExpEther operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ExpNetError {
    /// Real links are unusable here (not root, no namespaces, an interface missing, ...).
    #[error("{0}")]
    Net(#[from] ether_net::NetError),
    /// The protocol core refused a configuration or an input.
    #[error("{0}")]
    Proto(#[from] expether_proto::ExpError),
    /// A TLP that does not follow the format of [`crate::tlp`].
    #[error("bad TLP: {0}")]
    Tlp(String),
    /// The go-back-N path to the peer bridge was declared failed (seed 002 §4.2.1).
    #[error("the Ethernet path to bridge {0} failed (consecutive losses)")]
    PathFailed(expether_proto::Mac),
    /// A request that got no answer in time.
    #[error("{0}")]
    Timeout(String),
    /// The backing file or a socket of the TCP baseline failed.
    #[error("{what}: {source}")]
    Io {
        /// What was attempted.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A bad argument or configuration.
    #[error("{0}")]
    Config(String),
}

impl ExpNetError {
    /// An I/O error with what was attempted.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        ExpNetError::Io { what: what.into(), source }
    }
}
