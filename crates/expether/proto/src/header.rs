//! The ExpEther frame: a view over the Ethernet header, the ExpEther header and the list of
//! TLPs, and [`Header`], the validated form of the fixed part.
//!
//! From the seed (shared/systems/expether.md §3): standard Ethernet frames; the VLAN number
//! names the host a device belongs to; an ExpEther header carries the control information;
//! several TLPs may share one frame, its addresses and its ExpEther header (Fig. 3.4(b)). The
//! seed gives no layout. This layout is tca's design, big-endian (network order), FCS left to
//! the NIC:
//!
//! ```text
//! offset  size  field
//!  0      6     dst        MAC of the destination bridge (§3.4.3 destination look-up)
//!  6      6     src        MAC of the sending bridge
//! 12      2     tpid       0x8100 (802.1Q tag)
//! 14      2     tci        priority 3 bits, DEI 1 bit, VLAN id 12 bits (the host's VLAN, §3.3.1)
//! 16      2     ethertype  0x88B5 (IEEE 802 local experimental)
//! 18      1     version    always 1
//! 19      1     kind       1 DATA, 2 ACK, 3 NAK (an ACK saying the frame `ack` names is lost)
//! 20      1     count      DATA: TLPs in the frame (1..=255); ACK: 0
//! 21      1     (zero)
//! 22      4     seq        DATA: frame sequence number per (src, dst) pair; ACK: zero
//! 26      4     ack        next sequence number src expects from dst (cumulative)
//! 30      2     len        bytes of the TLP list after the header (0 for ACK)
//! 32      2     (zero)
//! 34      ...   TLP list   count x (2-byte length n >= 1, then n bytes of the TLP)
//! ```
//!
//! TLPs are opaque here; each carries its own length, so TLPs of any size share a frame.
//! Every DATA frame carries `ack` too, so data flowing back acknowledges for free. A frame may
//! be longer than `HEADER_LEN + len` only by Ethernet padding: the whole frame is then at most
//! [`MIN_FRAME`] bytes.
//!
//! Panic rules, as in smoltcp: accessors on [`FrameView`] never panic once
//! [`FrameView::new_checked`] has accepted the buffer (offsets are constants checked against
//! [`HEADER_LEN`] when compiling); [`Header::parse`] and [`tlps`] return an error for any byte
//! pattern they do not accept.

use crate::error::ExpError;
use std::fmt;

/// Bytes of the Ethernet header with its VLAN tag plus the ExpEther header.
pub const HEADER_LEN: usize = 34;
/// The smallest Ethernet frame without FCS; shorter frames are padded to it.
pub const MIN_FRAME: usize = 60;
/// Bytes before each TLP in the list (its length).
pub const TLP_PREFIX: usize = 2;
/// The header version this crate reads and writes.
pub const VERSION: u8 = 1;
/// The 802.1Q tag protocol id.
pub const TPID: u16 = 0x8100;
/// The EtherType of ExpEther frames (IEEE 802 local experimental; tca's choice).
pub const ETHERTYPE: u16 = 0x88B5;
/// The largest VLAN id (12 bits; 4096 hosts, Table 3.1).
pub const MAX_VLAN: u16 = 0x0FFF;

/// Byte offsets of the fields.
mod at {
    pub const DST: usize = 0;
    pub const SRC: usize = 6;
    pub const TPID: usize = 12;
    pub const TCI: usize = 14;
    pub const ETHERTYPE: usize = 16;
    pub const VERSION: usize = 18;
    pub const KIND: usize = 19;
    pub const COUNT: usize = 20;
    pub const SEQ: usize = 22;
    pub const ACK: usize = 26;
    pub const LEN: usize = 30;
    /// Bytes that must be zero.
    pub const ZERO: [usize; 3] = [21, 32, 33];
}

/// A MAC address: the name of an ExpEther bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Mac(pub [u8; 6]);

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

/// The kind of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// TLPs, with a sequence number.
    Data,
    /// A pure acknowledgement.
    Ack,
    /// An acknowledgement that also says the frame it names (the next one expected) was lost:
    /// a later frame came over that frame's own path (see [`crate::gbn::Receiver`]).
    Nak,
}

/// A zero-copy view of a frame.
#[derive(Debug, Clone, Copy)]
pub struct FrameView<T: AsRef<[u8]>> {
    buffer: T,
}

fn get<const AT: usize, const N: usize>(b: &[u8]) -> [u8; N] {
    const { assert!(AT + N <= HEADER_LEN, "field outside the header") };
    b[AT..AT + N].try_into().expect("checked length")
}

fn put<const AT: usize, const N: usize>(b: &mut [u8], v: [u8; N]) {
    const { assert!(AT + N <= HEADER_LEN, "field outside the header") };
    b[AT..AT + N].copy_from_slice(&v);
}

impl<T: AsRef<[u8]>> FrameView<T> {
    /// A view of `buffer`.
    ///
    /// # Errors
    /// [`ExpError::Truncated`] when `buffer` is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self, ExpError> {
        let n = buffer.as_ref().len();
        if n < HEADER_LEN {
            return Err(ExpError::Truncated(n));
        }
        Ok(Self { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// The destination bridge.
    pub fn dst(&self) -> Mac {
        Mac(get::<{ at::DST }, 6>(self.b()))
    }
    /// The sending bridge.
    pub fn src(&self) -> Mac {
        Mac(get::<{ at::SRC }, 6>(self.b()))
    }
    /// The 802.1Q tag protocol id.
    pub fn tpid(&self) -> u16 {
        u16::from_be_bytes(get::<{ at::TPID }, 2>(self.b()))
    }
    /// The VLAN id (low 12 bits of the tag).
    pub fn vlan(&self) -> u16 {
        u16::from_be_bytes(get::<{ at::TCI }, 2>(self.b())) & MAX_VLAN
    }
    /// The EtherType.
    pub fn ethertype(&self) -> u16 {
        u16::from_be_bytes(get::<{ at::ETHERTYPE }, 2>(self.b()))
    }
    /// The version byte.
    pub fn version(&self) -> u8 {
        self.b()[at::VERSION]
    }
    /// The kind byte.
    pub fn kind(&self) -> u8 {
        self.b()[at::KIND]
    }
    /// TLPs in the frame.
    pub fn count(&self) -> u8 {
        self.b()[at::COUNT]
    }
    /// The sequence number.
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes(get::<{ at::SEQ }, 4>(self.b()))
    }
    /// The cumulative acknowledgement.
    pub fn ack(&self) -> u32 {
        u32::from_be_bytes(get::<{ at::ACK }, 4>(self.b()))
    }
    /// Bytes of the TLP list.
    pub fn len(&self) -> u16 {
        u16::from_be_bytes(get::<{ at::LEN }, 2>(self.b()))
    }
    /// Whether the frame carries no TLP bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> FrameView<T> {
    /// Rewrites the acknowledgement (a retransmitted frame carries the current one).
    pub fn set_ack(&mut self, ack: u32) {
        put::<{ at::ACK }, 4>(self.buffer.as_mut(), ack.to_be_bytes());
    }
}

/// The validated fixed part of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The destination bridge.
    pub dst: Mac,
    /// The sending bridge.
    pub src: Mac,
    /// The VLAN id (0..=4095).
    pub vlan: u16,
    /// DATA or ACK.
    pub kind: Kind,
    /// TLPs in the frame (0 for ACK).
    pub count: u8,
    /// The sequence number (0 for ACK).
    pub seq: u32,
    /// The cumulative acknowledgement.
    pub ack: u32,
    /// Bytes of the TLP list.
    pub len: u16,
}

impl Header {
    /// Validates the fixed part of `frame` against the layout and the frame's length.
    ///
    /// # Errors
    /// [`ExpError::Truncated`], [`ExpError::BadHeader`] or [`ExpError::BadTlps`] for a frame
    /// this layout does not define.
    pub fn parse(frame: &[u8]) -> Result<Header, ExpError> {
        let v = FrameView::new_checked(frame)?;
        if v.tpid() != TPID {
            return Err(ExpError::BadHeader("no 802.1Q VLAN tag"));
        }
        if v.ethertype() != ETHERTYPE {
            return Err(ExpError::BadHeader("not the ExpEther EtherType"));
        }
        if v.version() != VERSION {
            return Err(ExpError::BadHeader("unknown version"));
        }
        if at::ZERO.iter().any(|&i| frame[i] != 0) {
            return Err(ExpError::BadHeader("reserved bytes are not zero"));
        }
        let kind = match v.kind() {
            1 => Kind::Data,
            2 => Kind::Ack,
            3 => Kind::Nak,
            _ => return Err(ExpError::BadHeader("unknown kind")),
        };
        let (count, seq, len) = (v.count(), v.seq(), v.len());
        match kind {
            Kind::Data if count == 0 => return Err(ExpError::BadHeader("DATA frame without TLPs")),
            Kind::Ack | Kind::Nak if count != 0 || seq != 0 || len != 0 => {
                return Err(ExpError::BadHeader("ACK frame with TLP or sequence fields"))
            }
            _ => {}
        }
        let end = HEADER_LEN + len as usize;
        if frame.len() < end || (frame.len() > end && frame.len() > MIN_FRAME) {
            return Err(ExpError::BadTlps("length field disagrees with the frame length"));
        }
        Ok(Header { dst: v.dst(), src: v.src(), vlan: v.vlan(), kind, count, seq, ack: v.ack(), len })
    }

    /// Writes the fixed part into `buf[..HEADER_LEN]`; the TLP list must follow it.
    ///
    /// # Panics
    /// If `buf` is shorter than [`HEADER_LEN`] or `vlan` exceeds [`MAX_VLAN`].
    pub fn emit(&self, buf: &mut [u8]) {
        assert!(self.vlan <= MAX_VLAN, "VLAN id {} exceeds 12 bits", self.vlan);
        let b = &mut buf[..HEADER_LEN];
        put::<{ at::DST }, 6>(b, self.dst.0);
        put::<{ at::SRC }, 6>(b, self.src.0);
        put::<{ at::TPID }, 2>(b, TPID.to_be_bytes());
        put::<{ at::TCI }, 2>(b, self.vlan.to_be_bytes());
        put::<{ at::ETHERTYPE }, 2>(b, ETHERTYPE.to_be_bytes());
        b[at::VERSION] = VERSION;
        b[at::KIND] = match self.kind {
            Kind::Data => 1,
            Kind::Ack => 2,
            Kind::Nak => 3,
        };
        b[at::COUNT] = self.count;
        put::<{ at::SEQ }, 4>(b, self.seq.to_be_bytes());
        put::<{ at::ACK }, 4>(b, self.ack.to_be_bytes());
        put::<{ at::LEN }, 2>(b, self.len.to_be_bytes());
        for i in at::ZERO {
            b[i] = 0;
        }
    }
}

/// The TLPs of a frame whose header `h` was accepted by [`Header::parse`], in order.
///
/// # Errors
/// [`ExpError::BadTlps`] when the list does not hold exactly `h.count` non-empty TLPs filling
/// `h.len` bytes.
pub fn tlps<'a>(h: &Header, frame: &'a [u8]) -> Result<Tlps<'a>, ExpError> {
    let list = frame.get(HEADER_LEN..HEADER_LEN + h.len as usize).ok_or(ExpError::BadTlps("frame too short"))?;
    let (mut rest, mut count) = (list, 0usize);
    while !rest.is_empty() {
        if rest.len() < TLP_PREFIX {
            return Err(ExpError::BadTlps("a TLP length is cut off"));
        }
        let n = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        if n == 0 {
            return Err(ExpError::BadTlps("an empty TLP"));
        }
        rest = rest.get(TLP_PREFIX + n..).ok_or(ExpError::BadTlps("a TLP runs past the list"))?;
        count += 1;
    }
    if count != h.count as usize {
        return Err(ExpError::BadTlps("TLP count disagrees with the header"));
    }
    Ok(Tlps { rest: list })
}

/// The TLPs of a validated list, in order (from [`tlps`]).
#[derive(Debug, Clone)]
pub struct Tlps<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Tlps<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let n = u16::from_be_bytes([*self.rest.first()?, *self.rest.get(1)?]) as usize;
        let tlp = self.rest.get(TLP_PREFIX..TLP_PREFIX + n)?;
        self.rest = &self.rest[TLP_PREFIX + n..];
        Some(tlp)
    }
}

/// Appends one TLP (its length, then its bytes) at `buf[at..]`; returns the new end.
///
/// # Panics
/// If the TLP is empty or longer than `u16::MAX`, or `buf` is too short.
pub fn put_tlp(buf: &mut [u8], at: usize, tlp: &[u8]) -> usize {
    let n = u16::try_from(tlp.len()).expect("TLP length fits 16 bits");
    assert!(n > 0, "empty TLP");
    buf[at..at + TLP_PREFIX].copy_from_slice(&n.to_be_bytes());
    buf[at + TLP_PREFIX..at + TLP_PREFIX + tlp.len()].copy_from_slice(tlp);
    at + TLP_PREFIX + tlp.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> Header {
        Header {
            dst: Mac([2, 0, 0, 0, 0, 2]),
            src: Mac([2, 0, 0, 0, 0, 1]),
            vlan: 0x123,
            kind: Kind::Data,
            count: 2,
            seq: 0x0102_0304,
            ack: 7,
            len: 9,
        }
    }

    #[test]
    fn bytes_are_where_the_layout_says() {
        let mut f = [0u8; HEADER_LEN + 9];
        data().emit(&mut f);
        let end = put_tlp(&mut f, HEADER_LEN, b"abc");
        assert_eq!(put_tlp(&mut f, end, b"de"), f.len());
        assert_eq!(f[..12], [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        assert_eq!(f[12..18], [0x81, 0x00, 0x01, 0x23, 0x88, 0xB5]);
        assert_eq!(f[18..34], [1, 1, 2, 0, 1, 2, 3, 4, 0, 0, 0, 7, 0, 9, 0, 0]);
        assert_eq!(f[34..], *b"\0\x03abc\0\x02de");
        let h = Header::parse(&f).unwrap();
        assert_eq!(h, data());
        assert_eq!(tlps(&h, &f).unwrap().collect::<Vec<_>>(), [&b"abc"[..], b"de"]);
    }

    #[test]
    fn acks_are_padded_and_checked() {
        let ack = Header { kind: Kind::Ack, count: 0, seq: 0, len: 0, ..data() };
        let mut f = [0u8; MIN_FRAME];
        ack.emit(&mut f);
        assert_eq!(Header::parse(&f), Ok(ack));
        assert_eq!(Header::parse(&f[..HEADER_LEN]), Ok(ack));
        f[20] = 1;
        assert_eq!(Header::parse(&f), Err(ExpError::BadHeader("ACK frame with TLP or sequence fields")));
        let mut v = FrameView::new_checked(&mut f[..]).unwrap();
        v.set_ack(99);
        assert_eq!(v.ack(), 99);
        let nak = Header { kind: Kind::Nak, ..ack };
        let mut f = [0u8; MIN_FRAME];
        nak.emit(&mut f);
        assert_eq!((f[19], Header::parse(&f)), (3, Ok(nak)));
        f[19] = 4;
        assert_eq!(Header::parse(&f), Err(ExpError::BadHeader("unknown kind")));
    }

    #[test]
    fn bad_lists_are_refused() {
        let mut f = [0u8; HEADER_LEN + 9];
        data().emit(&mut f);
        put_tlp(&mut f, HEADER_LEN, b"abcdefg");
        let h = Header::parse(&f).unwrap();
        assert_eq!(tlps(&h, &f).err(), Some(ExpError::BadTlps("TLP count disagrees with the header")));
        assert_eq!(Header::parse(&f[..40]), Err(ExpError::BadTlps("length field disagrees with the frame length")));
        assert_eq!(Header::parse(&f[..3]), Err(ExpError::Truncated(3)));
    }
}
