//! What the benchmark drives: a block device with a queue of outstanding commands, reached over
//! ExpEther ([`crate::host::Host`]) or over TCP ([`crate::tcp::TcpClient`]).

use std::time::Duration;

use crate::ExpNetError;

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Write (`data` holds the blocks) or read (`blocks` blocks).
    pub write: bool,
    /// First logical block.
    pub lba: u64,
    /// Blocks to move.
    pub blocks: u32,
    /// For a write: `blocks` x 4,096 bytes.
    pub data: Vec<u8>,
}

/// A finished command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// The id [`BlockIo::submit`] returned.
    pub id: u16,
    /// Whether the device reported success.
    pub ok: bool,
    /// For a read that succeeded: the blocks.
    pub data: Vec<u8>,
}

/// A block device with up to [`BlockIo::depth`] commands outstanding.
pub trait BlockIo {
    /// Most commands outstanding at once.
    fn depth(&self) -> usize;
    /// Starts a command; returns its id. At most [`BlockIo::depth`] may be outstanding.
    fn submit(&mut self, req: &Request) -> Result<u16, ExpNetError>;
    /// The next finished command, waiting up to `timeout`; `None` if none finished in time.
    fn wait(&mut self, timeout: Duration) -> Result<Option<Done>, ExpNetError>;
}
