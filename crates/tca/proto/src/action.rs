//! What a node's [`crate::Engine`] asks its fabric to do ([`Action`]), the messages its fabric
//! carries between engines ([`Write`], [`Notify`], [`ProxyRequest`], [`ProxyDone`]), the
//! [`Token`] that names an outstanding write or proxy request, and what waits report.

use crate::descriptor::Descriptor;
use crate::error::{TcaError, TcaResult};
use crate::handle::{Handle, MemoryType};
use crate::wire::{get_u16, get_u32, get_u8, put_u16, put_u32, put_u8};

/// Names one outstanding write or proxy request of an engine; the fabric hands it back in
/// [`Engine::handle_write_done`] or inside [`ProxyDone`]. Opaque.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token {
    /// The engine that issued it.
    pub(crate) node: u16,
    pub(crate) owner: Owner,
    /// Run of the channel (or use of the proxy table entry) it belongs to.
    pub(crate) generation: u32,
    /// Chain entry (channel owner) or 0 (proxy owner).
    pub(crate) entry: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Owner {
    Channel(u8),
    Proxy(u16),
}

/// Size of a [`Token`]'s wire form \[bytes\].
pub const TOKEN_BYTES: usize = 16;

impl Token {
    /// The wire form, for a fabric that carries [`ProxyRequest`]s and [`ProxyDone`]s between
    /// processes; little-endian: node `u16`, owner kind `u8` (0 channel, 1 proxy table),
    /// reserved `u8`, owner index `u16`, reserved `u16`, generation `u32`, entry `u32`. The
    /// token stays opaque: the engine that issued it checks it when it comes back.
    pub fn to_bytes(&self) -> [u8; TOKEN_BYTES] {
        let (kind, index) = match self.owner {
            Owner::Channel(c) => (0u8, u16::from(c)),
            Owner::Proxy(i) => (1u8, i),
        };
        let mut b = [0u8; TOKEN_BYTES];
        put_u16::<{ token_at::NODE }, TOKEN_BYTES>(&mut b, self.node);
        put_u8::<{ token_at::KIND }, TOKEN_BYTES>(&mut b, kind);
        put_u16::<{ token_at::INDEX }, TOKEN_BYTES>(&mut b, index);
        put_u32::<{ token_at::GENERATION }, TOKEN_BYTES>(&mut b, self.generation);
        put_u32::<{ token_at::ENTRY }, TOKEN_BYTES>(&mut b, self.entry);
        b
    }

    /// Decodes [`Token::to_bytes`]; any byte pattern gives a token or an error.
    ///
    /// # Errors
    /// [`TcaError::UnexpectedCompletion`] for an unknown owner kind, a channel index over 255
    /// or non-zero reserved bytes.
    pub fn from_bytes(b: &[u8; TOKEN_BYTES]) -> TcaResult<Token> {
        let reserved = get_u8::<{ token_at::RESERVED_1 }, TOKEN_BYTES>(b) != 0
            || get_u16::<{ token_at::RESERVED_2 }, TOKEN_BYTES>(b) != 0;
        if reserved {
            return Err(TcaError::UnexpectedCompletion);
        }
        let index = get_u16::<{ token_at::INDEX }, TOKEN_BYTES>(b);
        let owner = match get_u8::<{ token_at::KIND }, TOKEN_BYTES>(b) {
            0 => Owner::Channel(u8::try_from(index).map_err(|_| TcaError::UnexpectedCompletion)?),
            1 => Owner::Proxy(index),
            _ => return Err(TcaError::UnexpectedCompletion),
        };
        Ok(Token {
            node: get_u16::<{ token_at::NODE }, TOKEN_BYTES>(b),
            owner,
            generation: get_u32::<{ token_at::GENERATION }, TOKEN_BYTES>(b),
            entry: get_u32::<{ token_at::ENTRY }, TOKEN_BYTES>(b),
        })
    }
}

/// Byte offsets of a token's wire form.
mod token_at {
    pub const NODE: usize = 0;
    pub const KIND: usize = 2;
    pub const RESERVED_1: usize = 3;
    pub const INDEX: usize = 4;
    pub const RESERVED_2: usize = 6;
    pub const GENERATION: usize = 8;
    pub const ENTRY: usize = 12;
}

/// One posted write of `len` bytes: read at `src_addr` on `src_node`, written at `dst_addr`
/// on `dst_node` (global PCIe addresses, seed 000 §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write {
    /// Hand back to the issuing engine's [`Engine::handle_write_done`] once the write is posted.
    pub token: Token,
    /// DMA channel that carries it.
    pub channel: u8,
    /// Node the bytes are written to.
    pub dst_node: u16,
    /// Global address of the first destination byte.
    pub dst_addr: u64,
    /// Memory the destination is in.
    pub dst_mem: MemoryType,
    /// Node the bytes are read from (always the issuing node: PEACH2 reads only through its N
    /// port, seed 000 §3.5).
    pub src_node: u16,
    /// Global address of the first source byte.
    pub src_addr: u64,
    /// Memory the source is in (reading GPU memory is slow, seed 000 §4.1.2).
    pub src_mem: MemoryType,
    /// Bytes.
    pub len: u64,
}

/// A notification (slot, tag) from `src_node` to `dst_node` (seed 000 §4.2.2: a status written
/// into the receiver's buffer when a DMA completes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notify {
    /// DMA channel that writes it (after the data it follows).
    pub channel: u8,
    /// Node to deliver to with [`Engine::handle_notify_arrived`] (the local node for
    /// `NOTIFY_SELF`).
    pub dst_node: u16,
    /// Node that ran the chain.
    pub src_node: u16,
    /// Slot, `< NOTIFY_SLOTS`.
    pub slot: u16,
    /// Tag.
    pub tag: u32,
    /// Lands in PEACH2 internal memory rather than host memory (`USE_NOTIFY_INTERNAL`).
    pub internal: bool,
}

/// A remote-read request registered at the node that holds the source (seed 000 §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyRequest {
    /// Node that asked, and that receives the [`ProxyDone`].
    pub requester: u16,
    /// Names the request at the requester.
    pub token: Token,
    /// The transfer: source on the registering node, destination anywhere.
    pub descriptor: Descriptor,
    /// The source handle, checked live by the node that holds it.
    pub src: Handle,
    /// The destination handle.
    pub dst: Handle,
}

/// The answer to a [`ProxyRequest`], sent after all its data is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyDone {
    /// Node that served the request.
    pub responder: u16,
    /// The request's token.
    pub token: Token,
    /// `Err` when the responder refused the request (dead handle, out of bounds).
    pub result: Result<(), TcaError>,
}

/// What the fabric must do, in the order returned by [`Engine::poll_action`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// The CPU stores to `channel`'s start register (`tcaStartDMADesc`, or a driver serving a
    /// proxy read). Timing only; nothing to report back.
    Kick {
        /// Channel.
        channel: u8,
    },
    /// The controller takes the request of chain entry `entry` from `source` before its writes
    /// (seed 000 §3.5.2, §4.1.1). Timing only; nothing to report back.
    Descriptor {
        /// Channel.
        channel: u8,
        /// Entry index in the chain.
        entry: u32,
        /// Where the request is.
        source: DescriptorSource,
    },
    /// Copy bytes; report [`Engine::handle_write_done`] to the issuing engine.
    Write(Write),
    /// Deliver a notification to `dst_node`'s [`Engine::handle_notify_arrived`].
    Notify(Notify),
    /// Write `request` into `node`'s request table: `node`'s [`Engine::handle_proxy_request`].
    RegisterProxy {
        /// Node holding the source.
        node: u16,
        /// The request (boxed: a proxy read is rare, and it would make every action as large
        /// as a request, 112 bytes instead of 56).
        request: Box<ProxyRequest>,
    },
    /// Raise `node`'s interrupt: `node`'s [`Engine::handle_interrupt`].
    Interrupt {
        /// Node to interrupt.
        node: u16,
    },
    /// Deliver `done` to `node`'s [`Engine::handle_proxy_done`]: a completion word written
    /// after the data it answers for, on [`PROXY_CHANNEL`].
    ProxyDone {
        /// The requester.
        node: u16,
        /// The answer.
        done: ProxyDone,
    },
    /// Every entry of the channel's run is done (the status the host polls, seed 000 §4.1).
    ChannelDone {
        /// Channel.
        channel: u8,
    },
    /// The channel's run was abandoned; [`Engine::wait_dma_channel`] returns `error`.
    ChannelFailed {
        /// Channel.
        channel: u8,
        /// Why.
        error: TcaError,
    },
}

/// Where the DMA controller takes a chain entry's request from (seed 000 §3.5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DescriptorSource {
    /// Register mode: written into the controller before the kick; no fetch.
    Registers,
    /// Chaining mode: a 32-byte descriptor read from host memory over PCIe.
    HostMemory,
    /// Chaining mode with `tcaDMAUseInternal`: read from PEACH2 internal memory (seed 001).
    InternalMemory,
}

/// What a non-blocking wait found.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStatus {
    /// The awaited condition holds (for a notification: one was consumed).
    Ready,
    /// Not yet: deliver more events and ask again.
    Pending,
}

/// State of one DMA channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelState {
    /// Never started.
    Idle,
    /// A run is in progress.
    Running,
    /// The last run finished.
    Done,
    /// The last run was abandoned.
    Failed(TcaError),
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any 16 bytes decode to a token that encodes back to the same bytes, or to an error.
        #[test]
        fn garbage_tokens_decode_or_are_rejected(b in proptest::array::uniform16(proptest::prelude::any::<u8>())) {
            if let Ok(t) = Token::from_bytes(&b) {
                proptest::prop_assert_eq!(t.to_bytes(), b);
            }
        }
    }

    #[test]
    fn tokens_round_trip_through_bytes() {
        for owner in [Owner::Channel(3), Owner::Proxy(15)] {
            let t = Token { node: 7, owner, generation: 0xdead_beef, entry: 41 };
            assert_eq!(Token::from_bytes(&t.to_bytes()), Ok(t));
        }
        let mut b = Token { node: 1, owner: Owner::Channel(0), generation: 1, entry: 0 }.to_bytes();
        b[2] = 2;
        assert_eq!(Token::from_bytes(&b), Err(TcaError::UnexpectedCompletion));
        b[2] = 0;
        b[4] = 0;
        b[5] = 1;
        assert_eq!(Token::from_bytes(&b), Err(TcaError::UnexpectedCompletion));
    }
}
