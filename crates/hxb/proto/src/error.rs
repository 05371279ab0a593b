//! What the core refuses, as one-line messages.

use crate::coord::Coord;

/// An input the core does not accept. The node's state is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HxbError {
    /// A frame shorter than the header.
    #[error("frame of {0} bytes is shorter than the {hdr}-byte HXB header", hdr = crate::header::HEADER_LEN)]
    Truncated(usize),
    /// A header field holds a value the format does not define.
    #[error("bad HXB header: {0}")]
    BadHeader(&'static str),
    /// The header's payload length disagrees with the frame length.
    #[error("HXB header says {said} payload bytes, the frame carries {got}")]
    LengthMismatch {
        /// Payload bytes in the header.
        said: usize,
        /// Payload bytes in the frame.
        got: usize,
    },
    /// A coordinate outside the grid.
    #[error("node {0} is outside the {1} grid")]
    OutsideGrid(Coord, Coord),
    /// A frame whose next hop is another node.
    #[error("frame for next hop {0} arrived at node {1}")]
    Misaddressed(Coord, Coord),
    /// A message to this node itself.
    #[error("node {0} cannot send a message to itself")]
    SelfSend(Coord),
    /// A frame that has already crossed the most relays a route can need.
    #[error("frame from {0} to {1} has crossed {2} relays, more than a 3-D route needs")]
    TooManyHops(Coord, Coord, u8),
    /// An invalid configuration.
    #[error("bad HXB configuration: {0}")]
    Config(&'static str),
}
