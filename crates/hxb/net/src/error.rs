//! The one error type of the real transport: every variant prints as one line.

use hxb_proto::{Coord, HxbError};

/// Why an endpoint could not start, send or receive.
#[derive(Debug, thiserror::Error)]
pub enum HxbNetError {
    /// Opening a socket or entering a namespace failed.
    #[error("{0}")]
    Net(#[from] ether_net::NetError),
    /// The protocol core refused the configuration or a message.
    #[error("{0}")]
    Proto(#[from] HxbError),
    /// The endpoint's configuration is unusable.
    #[error("endpoint configuration: {0}")]
    Config(String),
    /// A message was addressed to no usable node.
    #[error("cannot send to {0}: {1}")]
    Destination(Coord, &'static str),
    /// The endpoint's thread has stopped (after an I/O error, which is given, or on drop).
    #[error("the endpoint has stopped: {0}")]
    Stopped(String),
}
