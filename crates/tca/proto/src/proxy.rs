//! The messages of a remote read by proxy write (seed 000 §3.5) between two nodes' engines:
//! the requester registers a request in the source node's table and raises its interrupt; the
//! source node writes the data and answers. A real fabric carries them as [`PROXY_MSG_BYTES`]
//! bytes (the shm fabric in its message rings); the seed describes the table but not its layout,
//! so this one is tca's, little-endian:
//!
//! ```text
//! offset 0: kind u32 (1 request, 2 interrupt, 3 answer)
//! request:   4: requester u16   8: token [16]   24: descriptor [32]   56: src handle [32]
//!           88: dst handle [32]
//! answer:    4: responder u16   8: token [16]   24: result i32 (0 or a TcaError code)
//! ```
//! Decoding validates every part; bytes that do not decode give `None` (only a corrupted peer
//! can send them), never a panic.

use crate::action::{ProxyDone, ProxyRequest, Token, TOKEN_BYTES};
use crate::descriptor::{Descriptor, DESCRIPTOR_BYTES};
use crate::error::TcaError;
use crate::handle::{Handle, HANDLE_BYTES};
use crate::wire::{get_bytes, get_i32, get_u16, get_u32, put_bytes, put_i32, put_u16, put_u32};

/// Bytes of one message's wire form.
pub const PROXY_MSG_BYTES: usize = 128;
const L: usize = PROXY_MSG_BYTES;

const KIND_REQUEST: u32 = 1;
const KIND_INTERRUPT: u32 = 2;
const KIND_DONE: u32 = 3;

/// Byte offsets of the fields.
mod at {
    pub const KIND: usize = 0;
    pub const NODE: usize = 4;
    pub const TOKEN: usize = 8;
    pub const DESCRIPTOR: usize = 24;
    pub const RESULT: usize = 24;
    pub const SRC: usize = 56;
    pub const DST: usize = 88;
}

/// One message of the proxy-read protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMsg {
    /// Register a read request in the receiver's table.
    Request(ProxyRequest),
    /// Raise the receiver's interrupt: serve the registered requests.
    Interrupt,
    /// The answer to a request.
    Done(ProxyDone),
}

impl ProxyMsg {
    /// The wire form of this message.
    pub fn encode(&self) -> [u8; PROXY_MSG_BYTES] {
        let mut b = [0u8; PROXY_MSG_BYTES];
        match self {
            ProxyMsg::Request(r) => {
                put_u32::<{ at::KIND }, L>(&mut b, KIND_REQUEST);
                put_u16::<{ at::NODE }, L>(&mut b, r.requester);
                put_bytes::<{ at::TOKEN }, TOKEN_BYTES, L>(&mut b, &r.token.to_bytes());
                let mut d = [0u8; DESCRIPTOR_BYTES];
                r.descriptor.encode(&mut d);
                put_bytes::<{ at::DESCRIPTOR }, DESCRIPTOR_BYTES, L>(&mut b, &d);
                put_bytes::<{ at::SRC }, HANDLE_BYTES, L>(&mut b, &r.src.to_bytes());
                put_bytes::<{ at::DST }, HANDLE_BYTES, L>(&mut b, &r.dst.to_bytes());
            }
            ProxyMsg::Interrupt => put_u32::<{ at::KIND }, L>(&mut b, KIND_INTERRUPT),
            ProxyMsg::Done(d) => {
                put_u32::<{ at::KIND }, L>(&mut b, KIND_DONE);
                put_u16::<{ at::NODE }, L>(&mut b, d.responder);
                put_bytes::<{ at::TOKEN }, TOKEN_BYTES, L>(&mut b, &d.token.to_bytes());
                put_i32::<{ at::RESULT }, L>(&mut b, d.result.err().map_or(0, TcaError::code));
            }
        }
        b
    }

    /// Decodes a wire form; `None` when any part is invalid.
    pub fn decode(b: &[u8; PROXY_MSG_BYTES]) -> Option<ProxyMsg> {
        let token = || Token::from_bytes(&get_bytes::<{ at::TOKEN }, TOKEN_BYTES, L>(b)).ok();
        match get_u32::<{ at::KIND }, L>(b) {
            KIND_REQUEST => Some(ProxyMsg::Request(ProxyRequest {
                requester: get_u16::<{ at::NODE }, L>(b),
                token: token()?,
                descriptor: Descriptor::decode(&get_bytes::<{ at::DESCRIPTOR }, DESCRIPTOR_BYTES, L>(b)).ok()?,
                src: Handle::from_bytes(&get_bytes::<{ at::SRC }, HANDLE_BYTES, L>(b)).ok()?,
                dst: Handle::from_bytes(&get_bytes::<{ at::DST }, HANDLE_BYTES, L>(b)).ok()?,
            })),
            KIND_INTERRUPT => Some(ProxyMsg::Interrupt),
            KIND_DONE => {
                let result = match get_i32::<{ at::RESULT }, L>(b) {
                    0 => Ok(()),
                    c => Err(TcaError::from_code(c)?),
                };
                Some(ProxyMsg::Done(ProxyDone { responder: get_u16::<{ at::NODE }, L>(b), token: token()?, result }))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, Desc, DmaFlags, Engine, MemoryType};
    use proptest::prelude::*;

    /// A real request and answer, as the engines emit them.
    fn request() -> ProxyRequest {
        let mut e = Engine::new(0, 2).unwrap();
        let dst = e.create_handle(0x1000, 256, MemoryType::Cpu).unwrap();
        let src = Handle { node: 1, addr: (1 << 40) + 0x2000, size: 256, mem: MemoryType::Gpu, id: 3 };
        let mut d = Desc::new();
        d.set_memcpy(&dst, 0, &src, 0, 128, DmaFlags::NOTIFY, 0, 1).unwrap();
        e.set_chain(0, &d).unwrap();
        e.handle_start(0).unwrap();
        while let Some(a) = e.poll_action() {
            if let Action::RegisterProxy { request, .. } = a {
                return *request;
            }
        }
        panic!("no proxy request emitted");
    }

    #[test]
    fn messages_round_trip() {
        let r = request();
        let done_ok = ProxyDone { responder: 1, token: r.token, result: Ok(()) };
        let done_err = ProxyDone { result: Err(TcaError::OutOfBounds), ..done_ok };
        for m in [ProxyMsg::Request(r), ProxyMsg::Interrupt, ProxyMsg::Done(done_ok), ProxyMsg::Done(done_err)] {
            assert_eq!(ProxyMsg::decode(&m.encode()), Some(m));
        }
    }

    #[test]
    fn corrupted_messages_are_dropped() {
        let mut b = ProxyMsg::Request(request()).encode();
        b[60] ^= 0xff; // inside the source handle
        assert_eq!(ProxyMsg::decode(&b), None);
        let mut b = ProxyMsg::Interrupt.encode();
        b[0] = 9;
        assert_eq!(ProxyMsg::decode(&b), None);
        let mut b = ProxyMsg::Done(ProxyDone { responder: 1, token: request().token, result: Ok(()) }).encode();
        b[24] = 99;
        assert_eq!(ProxyMsg::decode(&b), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// A message ring entry of garbage never panics the receiver; what decodes encodes
        /// back to a message that decodes the same.
        #[test]
        fn garbage_messages_are_dropped_or_valid(words in proptest::collection::vec(any::<u8>(), PROXY_MSG_BYTES), kind in 0u32..5) {
            let mut b = [0u8; PROXY_MSG_BYTES];
            b.copy_from_slice(&words);
            b[0..4].copy_from_slice(&kind.to_le_bytes());
            if let Some(m) = ProxyMsg::decode(&b) {
                prop_assert_eq!(ProxyMsg::decode(&m.encode()), Some(m));
            }
        }

        /// A real request with one byte changed decodes to a valid request or is dropped.
        #[test]
        fn mutated_requests_are_dropped_or_valid(pos in 0usize..PROXY_MSG_BYTES, byte: u8) {
            let mut b = ProxyMsg::Request(request()).encode();
            b[pos] = byte;
            if let Some(ProxyMsg::Request(r)) = ProxyMsg::decode(&b) {
                prop_assert!(r.src.validate().is_ok() && r.dst.validate().is_ok());
                prop_assert!(r.descriptor.validate().is_ok());
            }
        }
    }
}
