//! The messages of a remote read by proxy write (seed 000 §3.5), as carried between processes
//! in the message rings: the requester registers a request in the source node's table and
//! raises its interrupt; the source node writes the data and answers. Fixed layout in one
//! [`MSG_BYTES`]-byte ring entry, little-endian:
//!
//! ```text
//! offset 0: kind u32 (1 request, 2 interrupt, 3 answer)
//! request:   4: requester u16   8: token [16]   24: descriptor [32]   56: src handle [32]
//!           88: dst handle [32]
//! answer:    4: responder u16   8: token [16]   24: result i32 (0 or a TcaError code)
//! ```
//! Decoding validates every part; a message that does not decode is dropped (only a corrupted
//! peer can write one).

use crate::ring::MSG_BYTES;
use tca_proto::descriptor::{Descriptor, DESCRIPTOR_BYTES};
use tca_proto::{Handle, ProxyDone, ProxyRequest, TcaError, Token, HANDLE_BYTES, TOKEN_BYTES};

const KIND_REQUEST: u32 = 1;
const KIND_INTERRUPT: u32 = 2;
const KIND_DONE: u32 = 3;

/// One message of the proxy-read protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// Register a read request in the receiver's table.
    Request(ProxyRequest),
    /// Raise the receiver's interrupt: serve the registered requests.
    Interrupt,
    /// The answer to a request.
    Done(ProxyDone),
}

impl Msg {
    /// The ring entry of this message.
    pub fn encode(&self) -> [u8; MSG_BYTES] {
        let mut b = [0u8; MSG_BYTES];
        match self {
            Msg::Request(r) => {
                b[0..4].copy_from_slice(&KIND_REQUEST.to_le_bytes());
                b[4..6].copy_from_slice(&r.requester.to_le_bytes());
                b[8..8 + TOKEN_BYTES].copy_from_slice(&r.token.to_bytes());
                let mut d = [0u8; DESCRIPTOR_BYTES];
                r.descriptor.encode(&mut d);
                b[24..56].copy_from_slice(&d);
                b[56..56 + HANDLE_BYTES].copy_from_slice(&r.src.to_bytes());
                b[88..88 + HANDLE_BYTES].copy_from_slice(&r.dst.to_bytes());
            }
            Msg::Interrupt => b[0..4].copy_from_slice(&KIND_INTERRUPT.to_le_bytes()),
            Msg::Done(d) => {
                b[0..4].copy_from_slice(&KIND_DONE.to_le_bytes());
                b[4..6].copy_from_slice(&d.responder.to_le_bytes());
                b[8..8 + TOKEN_BYTES].copy_from_slice(&d.token.to_bytes());
                let code = match d.result {
                    Ok(()) => 0,
                    Err(e) => e.code(),
                };
                b[24..28].copy_from_slice(&code.to_le_bytes());
            }
        }
        b
    }

    /// Decodes a ring entry; `None` when any part is invalid.
    pub fn decode(b: &[u8; MSG_BYTES]) -> Option<Msg> {
        let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
        let kind = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let token = || {
            let mut t = [0u8; TOKEN_BYTES];
            t.copy_from_slice(&b[8..8 + TOKEN_BYTES]);
            Token::from_bytes(&t).ok()
        };
        match kind {
            KIND_REQUEST => {
                let mut d = [0u8; DESCRIPTOR_BYTES];
                d.copy_from_slice(&b[24..56]);
                Some(Msg::Request(ProxyRequest {
                    requester: u16_at(4),
                    token: token()?,
                    descriptor: Descriptor::decode(&d).ok()?,
                    src: Handle::from_bytes(&b[56..56 + HANDLE_BYTES]).ok()?,
                    dst: Handle::from_bytes(&b[88..88 + HANDLE_BYTES]).ok()?,
                }))
            }
            KIND_INTERRUPT => Some(Msg::Interrupt),
            KIND_DONE => {
                let code = i32::from_le_bytes([b[24], b[25], b[26], b[27]]);
                let result = match code {
                    0 => Ok(()),
                    c => Err(TcaError::from_code(c)?),
                };
                Some(Msg::Done(ProxyDone { responder: u16_at(4), token: token()?, result }))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tca_proto::{Action, Desc, DmaFlags, Engine, MemoryType};

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
                return request;
            }
        }
        panic!("no proxy request emitted");
    }

    #[test]
    fn messages_round_trip() {
        let r = request();
        let done_ok = ProxyDone { responder: 1, token: r.token, result: Ok(()) };
        let done_err = ProxyDone { result: Err(TcaError::OutOfBounds), ..done_ok };
        for m in [Msg::Request(r), Msg::Interrupt, Msg::Done(done_ok), Msg::Done(done_err)] {
            assert_eq!(Msg::decode(&m.encode()), Some(m));
        }
    }

    #[test]
    fn corrupted_messages_are_dropped() {
        let mut b = Msg::Request(request()).encode();
        b[60] ^= 0xff; // inside the source handle
        assert_eq!(Msg::decode(&b), None);
        let mut b = Msg::Interrupt.encode();
        b[0] = 9;
        assert_eq!(Msg::decode(&b), None);
        let mut b = Msg::Done(ProxyDone { responder: 1, token: request().token, result: Ok(()) }).encode();
        b[24] = 99;
        assert_eq!(Msg::decode(&b), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// A message ring entry of garbage never panics the receiver; what decodes encodes
        /// back to a message that decodes the same.
        #[test]
        fn garbage_messages_are_dropped_or_valid(words in proptest::collection::vec(any::<u8>(), MSG_BYTES), kind in 0u32..5) {
            let mut b = [0u8; MSG_BYTES];
            b.copy_from_slice(&words);
            b[0..4].copy_from_slice(&kind.to_le_bytes());
            if let Some(m) = Msg::decode(&b) {
                prop_assert_eq!(Msg::decode(&m.encode()), Some(m));
            }
        }

        /// A real request with one byte changed decodes to a valid request or is dropped.
        #[test]
        fn mutated_requests_are_dropped_or_valid(pos in 0usize..MSG_BYTES, byte: u8) {
            let mut b = Msg::Request(request()).encode();
            b[pos] = byte;
            if let Some(Msg::Request(r)) = Msg::decode(&b) {
                prop_assert!(r.src.validate().is_ok() && r.dst.validate().is_ok());
                prop_assert!(r.descriptor.validate().is_ok());
            }
        }

        /// Token bytes from a peer: garbage is refused or re-encodes to the same bytes.
        #[test]
        fn garbage_tokens_fail_or_round_trip(bytes in proptest::array::uniform16(any::<u8>())) {
            if let Ok(t) = Token::from_bytes(&bytes) {
                prop_assert_eq!(t.to_bytes(), bytes);
            }
        }
    }
}
