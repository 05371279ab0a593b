//! The HXB header: a view over the first [`HEADER_LEN`] bytes of a frame's Ethernet payload,
//! and [`Header`], its validated form.
//!
//! The seed names what a header must carry (per-destination sequence numbers §3.3, node
//! coordinates and a header rewritten by relays §3.4, ACKs §5.4) but gives no layout
//! (hxb.md §3.6). This layout is tca's design, big-endian (network order):
//!
//! ```text
//! offset  size  field
//!  0      1     version      always 1
//!  1      1     kind         1 DATA, 2 ACK
//!  2      1     flags        bit 0 END: the last packet of a message; other bits zero
//!  3      1     hops         relays crossed so far (0..=2)
//!  4      3     src          x, y, z of the sending node
//!  7      1     (zero)
//!  8      3     dst          x, y, z of the final destination (relays route on it)
//! 11      1     (zero)
//! 12      3     next         x, y, z of the node this hop is addressed to; relays rewrite it
//! 15      1     (zero)
//! 16      4     seq          DATA: sequence number per (src, dst) pair; ACK: zero
//! 20      4     ack          next sequence number src expects from dst (cumulative)
//! 24      4     sack         bit i: packet ack + 1 + i is held by src already
//! 28      4     buffer       id of the receive buffer the frame landed in (§3.2), stamped by
//!                            the receiving driver; senders write 0 and the core ignores it
//! 32      2     len          payload bytes after the header (0 for ACK)
//! 34      2     (zero)
//! ```
//!
//! Every DATA header carries the ACK fields too, so data flowing back acknowledges for free.
//! A relay changes only `next` and `hops` (§3.4: only the header is changed).
//!
//! Panic rules, as in smoltcp: field accessors on [`HeaderView`] never panic once
//! [`HeaderView::new_checked`] has accepted the buffer; [`Header::parse`] validates every field
//! and returns an error for any byte pattern it does not accept.

use crate::coord::Coord;
use crate::error::HxbError;

/// Bytes of the header.
pub const HEADER_LEN: usize = 36;
/// The header version this crate reads and writes.
pub const VERSION: u8 = 1;

/// Byte offsets of the fields.
mod at {
    pub const VERSION: usize = 0;
    pub const KIND: usize = 1;
    pub const FLAGS: usize = 2;
    pub const HOPS: usize = 3;
    pub const SRC: usize = 4;
    pub const DST: usize = 8;
    pub const NEXT: usize = 12;
    pub const SEQ: usize = 16;
    pub const ACK: usize = 20;
    pub const SACK: usize = 24;
    pub const BUFFER: usize = 28;
    pub const LEN: usize = 32;
    /// Bytes that must be zero.
    pub const ZERO: [usize; 5] = [7, 11, 15, 34, 35];
}

const FLAG_END: u8 = 1;
/// Relays a dimension-order route in 3-D can need.
pub const MAX_HOPS: u8 = 2;

/// The kind of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A packet of a message.
    Data,
    /// A pure acknowledgement.
    Ack,
}

/// A zero-copy view of a header at the start of `buffer`.
#[derive(Debug, Clone, Copy)]
pub struct HeaderView<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HeaderView<T> {
    /// A view of `buffer`.
    ///
    /// # Errors
    /// [`HxbError::Truncated`] when `buffer` is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self, HxbError> {
        let n = buffer.as_ref().len();
        if n < HEADER_LEN {
            return Err(HxbError::Truncated(n));
        }
        Ok(Self { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.b()[at..at + 4].try_into().expect("4 bytes"))
    }
    fn coord_at(&self, at: usize) -> Coord {
        Coord([self.b()[at], self.b()[at + 1], self.b()[at + 2]])
    }

    /// The version byte.
    pub fn version(&self) -> u8 {
        self.b()[at::VERSION]
    }
    /// The kind byte.
    pub fn kind(&self) -> u8 {
        self.b()[at::KIND]
    }
    /// The flags byte.
    pub fn flags(&self) -> u8 {
        self.b()[at::FLAGS]
    }
    /// Relays crossed.
    pub fn hops(&self) -> u8 {
        self.b()[at::HOPS]
    }
    /// The sending node.
    pub fn src(&self) -> Coord {
        self.coord_at(at::SRC)
    }
    /// The final destination.
    pub fn dst(&self) -> Coord {
        self.coord_at(at::DST)
    }
    /// The node this hop is addressed to.
    pub fn next(&self) -> Coord {
        self.coord_at(at::NEXT)
    }
    /// The sequence number.
    pub fn seq(&self) -> u32 {
        self.u32_at(at::SEQ)
    }
    /// The cumulative acknowledgement.
    pub fn ack(&self) -> u32 {
        self.u32_at(at::ACK)
    }
    /// The selective-acknowledgement bitmap.
    pub fn sack(&self) -> u32 {
        self.u32_at(at::SACK)
    }
    /// The receive buffer id stamped on arrival.
    pub fn buffer_id(&self) -> u32 {
        self.u32_at(at::BUFFER)
    }
    /// Payload bytes.
    pub fn len(&self) -> u16 {
        u16::from_be_bytes([self.b()[at::LEN], self.b()[at::LEN + 1]])
    }
    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> HeaderView<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
    fn put_u32(&mut self, at: usize, v: u32) {
        self.m()[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
    fn put_coord(&mut self, at: usize, c: Coord) {
        self.m()[at..at + 3].copy_from_slice(&c.0);
    }
    /// Sets the next hop (what a relay rewrites).
    pub fn set_next(&mut self, c: Coord) {
        self.put_coord(at::NEXT, c);
    }
    /// Sets the relay count.
    pub fn set_hops(&mut self, hops: u8) {
        self.m()[at::HOPS] = hops;
    }
    /// Stamps the receive buffer id (done by the receiving driver, §3.2).
    pub fn set_buffer_id(&mut self, id: u32) {
        self.put_u32(at::BUFFER, id);
    }
}

/// A validated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// DATA or ACK.
    pub kind: Kind,
    /// The last packet of a message (DATA only).
    pub end: bool,
    /// Relays crossed so far.
    pub hops: u8,
    /// The sending node.
    pub src: Coord,
    /// The final destination.
    pub dst: Coord,
    /// The node this hop is addressed to.
    pub next: Coord,
    /// Sequence number per (src, dst) (DATA only; 0 in an ACK).
    pub seq: u32,
    /// The next sequence number `src` expects from `dst`.
    pub ack: u32,
    /// Bit i: `src` already holds packet `ack + 1 + i` from `dst`.
    pub sack: u32,
    /// The receive buffer id stamped on arrival (0 as sent).
    pub buffer: u32,
    /// Payload bytes following the header.
    pub len: u16,
}

impl Header {
    /// Parses and validates the header at the start of `frame`; the frame must be exactly the
    /// header plus `len` payload bytes.
    ///
    /// # Errors
    /// [`HxbError::Truncated`], [`HxbError::BadHeader`] or [`HxbError::LengthMismatch`].
    pub fn parse(frame: &[u8]) -> Result<Header, HxbError> {
        let v = HeaderView::new_checked(frame)?;
        if v.version() != VERSION {
            return Err(HxbError::BadHeader("unknown version"));
        }
        let kind = match v.kind() {
            1 => Kind::Data,
            2 => Kind::Ack,
            _ => return Err(HxbError::BadHeader("unknown kind")),
        };
        if v.flags() & !FLAG_END != 0 {
            return Err(HxbError::BadHeader("unknown flag bits"));
        }
        if at::ZERO.iter().any(|&i| frame[i] != 0) {
            return Err(HxbError::BadHeader("reserved bytes are not zero"));
        }
        if v.hops() > MAX_HOPS {
            return Err(HxbError::BadHeader("more than 2 relays"));
        }
        let h = Header {
            kind,
            end: v.flags() & FLAG_END != 0,
            hops: v.hops(),
            src: v.src(),
            dst: v.dst(),
            next: v.next(),
            seq: v.seq(),
            ack: v.ack(),
            sack: v.sack(),
            buffer: v.buffer_id(),
            len: v.len(),
        };
        if kind == Kind::Ack && (h.len != 0 || h.end || h.seq != 0) {
            return Err(HxbError::BadHeader("an ACK carries no payload, END flag or sequence number"));
        }
        if h.src == h.dst {
            return Err(HxbError::BadHeader("source equals destination"));
        }
        let got = frame.len() - HEADER_LEN;
        if usize::from(h.len) != got {
            return Err(HxbError::LengthMismatch { said: usize::from(h.len), got });
        }
        Ok(h)
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b.fill(0);
        b[at::VERSION] = VERSION;
        b[at::KIND] = match self.kind {
            Kind::Data => 1,
            Kind::Ack => 2,
        };
        b[at::FLAGS] = if self.end { FLAG_END } else { 0 };
        let mut v = HeaderView { buffer: b };
        v.set_hops(self.hops);
        v.put_coord(at::SRC, self.src);
        v.put_coord(at::DST, self.dst);
        v.set_next(self.next);
        v.put_u32(at::SEQ, self.seq);
        v.put_u32(at::ACK, self.ack);
        v.put_u32(at::SACK, self.sack);
        v.set_buffer_id(self.buffer);
        v.m()[at::LEN..at::LEN + 2].copy_from_slice(&self.len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn data() -> Header {
        Header {
            kind: Kind::Data,
            end: true,
            hops: 1,
            src: Coord::new(1, 2, 3),
            dst: Coord::new(4, 5, 6),
            next: Coord::new(4, 5, 3),
            seq: 0x0102_0304,
            ack: 7,
            sack: 0x8000_0001,
            buffer: 9,
            len: 3,
        }
    }

    #[test]
    fn byte_layout_is_the_documented_one() {
        let mut f = [0u8; HEADER_LEN + 3];
        data().emit(&mut f);
        #[rustfmt::skip]
        let want: [u8; HEADER_LEN] = [
            1, 1, 1, 1,  1, 2, 3, 0,  4, 5, 6, 0,  4, 5, 3, 0,
            1, 2, 3, 4,  0, 0, 0, 7,  0x80, 0, 0, 1,  0, 0, 0, 9,  0, 3, 0, 0,
        ];
        assert_eq!(f[..HEADER_LEN], want);
        assert_eq!(Header::parse(&f), Ok(data()));
    }

    #[test]
    fn bad_headers_are_refused_with_a_reason() {
        let mut f = [0u8; HEADER_LEN + 3];
        data().emit(&mut f);
        assert_eq!(Header::parse(&f[..10]), Err(HxbError::Truncated(10)));
        assert_eq!(Header::parse(&f[..HEADER_LEN + 2]), Err(HxbError::LengthMismatch { said: 3, got: 2 }));
        for (at, v, why) in [(0, 2, "version"), (1, 3, "kind"), (2, 2, "flag"), (3, 3, "relays"), (15, 1, "reserved")] {
            let mut g = f;
            g[at] = v;
            let e = Header::parse(&g).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        let mut ack = data();
        (ack.kind, ack.len) = (Kind::Ack, 0);
        let mut g = [0u8; HEADER_LEN];
        ack.emit(&mut g);
        assert!(Header::parse(&g).unwrap_err().to_string().contains("ACK"));
    }

    #[test]
    fn a_relay_rewrites_next_and_hops_in_place() {
        let mut f = [0u8; HEADER_LEN + 3];
        data().emit(&mut f);
        let mut v = HeaderView::new_checked(&mut f[..]).unwrap();
        v.set_next(Coord::new(4, 5, 6));
        v.set_hops(2);
        let h = Header::parse(&f).unwrap();
        assert_eq!((h.next, h.hops, h.seq, h.src), (Coord::new(4, 5, 6), 2, data().seq, data().src));
    }

    proptest! {
        /// Any bytes either parse into a header that emits back to the same bytes, or give an
        /// error; never a panic.
        #[test]
        fn garbage_never_panics_and_accepted_bytes_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Ok(h) = Header::parse(&bytes) {
                let mut again = vec![0u8; bytes.len()];
                h.emit(&mut again);
                prop_assert_eq!(&again[..HEADER_LEN], &bytes[..HEADER_LEN]);
            }
        }

        /// Mostly valid headers with one byte changed: the same rule.
        #[test]
        fn one_byte_corruptions_never_panic(at in 0..HEADER_LEN + 3, v in any::<u8>()) {
            let mut f = [0u8; HEADER_LEN + 3];
            data().emit(&mut f);
            f[at] = v;
            if let Ok(h) = Header::parse(&f) {
                let mut again = [0u8; HEADER_LEN];
                h.emit(&mut again);
                prop_assert_eq!(&again[..], &f[..HEADER_LEN]);
            }
        }
    }
}
