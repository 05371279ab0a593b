//! The TLPs the software bridges carry: memory read and write requests and completions, in a
//! wire form that is tca's design (the seed names PCIe TLPs, §3.3, but a software bridge has no
//! PCIe link to take them from).
//!
//! A 16-byte header, little-endian, then the data:
//!
//! ```text
//! offset  size  field
//!  0      1     type     0x20 MRd (memory read request), 0x60 MWr (memory write, posted),
//!                        0x4A CplD (completion with data), 0x0A Cpl (completion without data)
//!                        (the Fmt/Type codes of 64-bit-address PCIe TLPs)
//!  1      1     status   completions: 0 successful, 1 unsupported request, 4 completer abort
//!  2      2     tag      a read request's tag, repeated by its completions
//!  4      4     length   MRd: bytes requested; MWr, CplD: bytes of data that follow; Cpl: 0
//!  8      8     address  MRd, MWr: the target; CplD: the address the data belongs to
//! 16      ...   data
//! ```
//!
//! Rules, as in PCIe: a MWr or CplD carries at most [`MAX_PAYLOAD`] bytes; a MRd asks for at
//! most [`MAX_READ`] bytes and is answered by CplDs in address order, each naming its own
//! address (PCIe names the lower address bits and the bytes remaining; the full address lets the
//! requester place the data without state); a request the completer cannot serve gets a Cpl
//! with a non-zero status. Posted writes from one side arrive before a later completion or
//! write from that side because the bridges deliver in order.

use crate::ExpNetError;

/// Bytes of the header.
pub const TLP_HEADER: usize = 16;
/// Most data bytes in one MWr or CplD (a common PCIe Max_Payload_Size; seed §3.4.1: 128 or 256).
pub const MAX_PAYLOAD: usize = 256;
/// Most bytes one MRd asks for (a common PCIe Max_Read_Request_Size).
pub const MAX_READ: usize = 4096;

/// Completion status: successful.
pub const SC: u8 = 0;
/// Completion status: unsupported request (no device at the address).
pub const UR: u8 = 1;
/// Completion status: completer abort (the device failed the request).
pub const CA: u8 = 4;

/// The kind of a TLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Memory read request.
    Read,
    /// Memory write (posted: no completion).
    Write,
    /// Completion with data.
    CplD,
    /// Completion without data (an error).
    Cpl,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Read => 0x20,
            Kind::Write => 0x60,
            Kind::CplD => 0x4A,
            Kind::Cpl => 0x0A,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        Some(match c {
            0x20 => Kind::Read,
            0x60 => Kind::Write,
            0x4A => Kind::CplD,
            0x0A => Kind::Cpl,
            _ => return None,
        })
    }
}

/// A parsed TLP borrowing its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlp<'a> {
    /// What it is.
    pub kind: Kind,
    /// Completion status (0 for requests).
    pub status: u8,
    /// Tag of the read it belongs to.
    pub tag: u16,
    /// MRd: bytes asked for; otherwise `data.len()`.
    pub length: u32,
    /// Target address, or where a completion's data belongs.
    pub address: u64,
    /// The data (empty for MRd and Cpl).
    pub data: &'a [u8],
}

impl<'a> Tlp<'a> {
    /// A memory write of `data` (at most [`MAX_PAYLOAD`] bytes) at `address`.
    pub fn write(address: u64, data: &'a [u8]) -> Self {
        Tlp { kind: Kind::Write, status: SC, tag: 0, length: data.len() as u32, address, data }
    }

    /// A read request of `length` bytes (at most [`MAX_READ`]) at `address`.
    pub fn read(tag: u16, address: u64, length: u32) -> Self {
        Tlp { kind: Kind::Read, status: SC, tag, length, address, data: &[] }
    }

    /// A successful completion carrying `data`, which belongs at `address`.
    pub fn cpld(tag: u16, address: u64, data: &'a [u8]) -> Self {
        Tlp { kind: Kind::CplD, status: SC, tag, length: data.len() as u32, address, data }
    }

    /// A failed completion of the read `tag` at `address`.
    pub fn cpl(tag: u16, address: u64, status: u8) -> Self {
        Tlp { kind: Kind::Cpl, status, tag, length: 0, address, data: &[] }
    }

    /// Bytes of the encoded TLP.
    pub fn len(&self) -> usize {
        TLP_HEADER + self.data.len()
    }

    /// Whether it carries no data.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The wire form, appended to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.kind.code());
        out.push(self.status);
        out.extend_from_slice(&self.tag.to_le_bytes());
        out.extend_from_slice(&self.length.to_le_bytes());
        out.extend_from_slice(&self.address.to_le_bytes());
        out.extend_from_slice(self.data);
    }

    /// The wire form as a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        self.encode(&mut v);
        v
    }

    /// Parses `b`, checking the type, the lengths and the size limits.
    pub fn parse(b: &'a [u8]) -> Result<Tlp<'a>, ExpNetError> {
        let bad = |m: &str| Err(ExpNetError::Tlp(m.to_string()));
        if b.len() < TLP_HEADER {
            return bad(&format!("{} bytes, shorter than the {TLP_HEADER}-byte header", b.len()));
        }
        let Some(kind) = Kind::from_code(b[0]) else { return bad(&format!("unknown type 0x{:02x}", b[0])) };
        let tag = u16::from_le_bytes([b[2], b[3]]);
        let length = u32::from_le_bytes(b[4..8].try_into().expect("4 bytes"));
        let address = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
        let data = &b[TLP_HEADER..];
        let ok = match kind {
            Kind::Read => data.is_empty() && length >= 1 && length as usize <= MAX_READ,
            Kind::Write | Kind::CplD => length as usize == data.len() && (1..=MAX_PAYLOAD).contains(&data.len()),
            Kind::Cpl => data.is_empty() && length == 0 && b[1] != SC,
        };
        if !ok {
            return bad(&format!("{kind:?} with length {length} and {} data bytes", data.len()));
        }
        Ok(Tlp { kind, status: b[1], tag, length, address, data })
    }
}

/// The MWr TLPs that write `data` at `address`, split at [`MAX_PAYLOAD`], each appended to `out`.
pub fn writes(address: u64, data: &[u8], out: &mut Vec<Vec<u8>>) {
    for (i, chunk) in data.chunks(MAX_PAYLOAD).enumerate() {
        out.push(Tlp::write(address + (i * MAX_PAYLOAD) as u64, chunk).to_vec());
    }
}

/// The CplD TLPs answering read `tag` at `address` with `data`, split at [`MAX_PAYLOAD`].
pub fn completions(tag: u16, address: u64, data: &[u8], out: &mut Vec<Vec<u8>>) {
    for (i, chunk) in data.chunks(MAX_PAYLOAD).enumerate() {
        out.push(Tlp::cpld(tag, address + (i * MAX_PAYLOAD) as u64, chunk).to_vec());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refusals() {
        let data: Vec<u8> = (0..200).map(|i| i as u8).collect();
        for t in [Tlp::write(0x1234, &data), Tlp::read(9, 1 << 40, 4096), Tlp::cpld(3, 77, &data), Tlp::cpl(4, 8, UR)] {
            let v = t.to_vec();
            assert_eq!(v.len(), t.len());
            assert_eq!(Tlp::parse(&v).unwrap(), t);
        }
        let mut w = Tlp::write(0, &data).to_vec();
        w[0] = 0x33;
        assert!(Tlp::parse(&w).is_err(), "unknown type");
        assert!(Tlp::parse(&Tlp::write(0, &data).to_vec()[..100]).is_err(), "length mismatch");
        assert!(Tlp::parse(&Tlp::read(0, 0, 4097).to_vec()).is_err(), "read beyond MAX_READ");
        assert!(Tlp::parse(&Tlp::write(0, &[0; 257]).to_vec()).is_err(), "payload beyond MAX_PAYLOAD");
        assert!(Tlp::parse(&[0x20; 10]).is_err(), "short");
        let mut out = Vec::new();
        writes(1000, &[5; 600], &mut out);
        let parsed: Vec<Tlp> = out.iter().map(|v| Tlp::parse(v).unwrap()).collect();
        assert_eq!(
            parsed.iter().map(|t| (t.address, t.data.len())).collect::<Vec<_>>(),
            [(1000, 256), (1256, 256), (1512, 88)]
        );
    }
}
