//! The TLPs the simulated host and devices exchange, as bytes the bridges carry.
//!
//! The bridges treat a TLP as opaque bytes (expether-proto); what matters for timing is its
//! length: the header of the PCIe transaction layer (16 B for a request to a 64-bit address,
//! 12 B for a completion; PCIe Base Spec, `pcie::TlpKind`) and the payload. The header bytes
//! hold this simulator's own fields, not the PCIe layout:
//!
//! ```text
//! request (16 B):    kind 1 | 0 | tag 2 | len 4 | address 8
//! completion (12 B): kind 1 | 0 | tag 2 | len 4 | offset 4   (offset inside the request)
//! ```
//!
//! `len` is the payload of a write or completion and the bytes asked for by a read. Addresses
//! name what a TLP is for: a region in the top byte, an I/O or step number, an offset.

use crate::SimError;

/// What a TLP does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Memory write (posted).
    MemWr,
    /// Memory read request (non-posted).
    MemRd,
    /// Completion with data.
    Cpl,
}

/// A decoded TLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlp {
    /// What it does.
    pub kind: Kind,
    /// Matches a completion to its read request.
    pub tag: u16,
    /// Payload bytes (writes, completions) or bytes asked for (reads).
    pub len: u32,
    /// The address (requests) or the offset inside the request (completions).
    pub addr: u64,
}

/// What an address is for (its top byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Region {
    /// A device register written by the host (doorbell).
    Doorbell = 1,
    /// A command in host memory, read by the device.
    Command = 2,
    /// I/O data in host memory.
    Data = 3,
    /// A completion entry written to host memory.
    CompletionEntry = 4,
    /// An interrupt message.
    Interrupt = 5,
    /// A small value in host memory copied to or from a GPU.
    Flag = 6,
    /// A word the GPU writes when it finishes a step; the host polls it.
    Semaphore = 7,
}

impl Region {
    fn from_byte(b: u8) -> Option<Region> {
        use Region::*;
        [Doorbell, Command, Data, CompletionEntry, Interrupt, Flag, Semaphore].into_iter().find(|r| *r as u8 == b)
    }
}

/// An address in `region` for item `id` (an I/O, a step) at `offset`.
pub fn address(region: Region, id: u32, offset: u32) -> u64 {
    (region as u64) << 56 | u64::from(id & 0x00FF_FFFF) << 32 | u64::from(offset)
}

/// The parts of an address made by [`address`].
pub fn parts(addr: u64) -> Option<(Region, u32, u32)> {
    Some((Region::from_byte((addr >> 56) as u8)?, ((addr >> 32) & 0x00FF_FFFF) as u32, addr as u32))
}

/// Bytes of the header of a request.
pub const REQUEST_HEADER: usize = 16;
/// Bytes of the header of a completion.
pub const COMPLETION_HEADER: usize = 12;

impl Tlp {
    /// A memory write of `len` bytes to `addr`.
    pub fn write(addr: u64, len: u32) -> Tlp {
        Tlp { kind: Kind::MemWr, tag: 0, len, addr }
    }

    /// A read request for `len` bytes at `addr`.
    pub fn read(addr: u64, len: u32, tag: u16) -> Tlp {
        Tlp { kind: Kind::MemRd, tag, len, addr }
    }

    /// A completion of `len` bytes at `offset` inside the request tagged `tag`.
    pub fn completion(tag: u16, offset: u32, len: u32) -> Tlp {
        Tlp { kind: Kind::Cpl, tag, len, addr: u64::from(offset) }
    }

    /// Payload bytes carried.
    pub fn payload(&self) -> u32 {
        if self.kind == Kind::MemRd {
            0
        } else {
            self.len
        }
    }

    /// Header bytes.
    pub fn header(&self) -> usize {
        if self.kind == Kind::Cpl {
            COMPLETION_HEADER
        } else {
            REQUEST_HEADER
        }
    }

    /// Bytes of the TLP (header and payload), as a bridge carries it.
    pub fn size(&self) -> usize {
        self.header() + self.payload() as usize
    }

    /// The TLP in the PCIe timing model's terms (kind, address, payload).
    pub fn pcie(&self) -> (pcie::TlpKind, u64, u64) {
        let kind = match self.kind {
            Kind::MemWr => pcie::TlpKind::MemWrite,
            Kind::MemRd => pcie::TlpKind::MemRead,
            Kind::Cpl => pcie::TlpKind::Completion,
        };
        (kind, if self.kind == Kind::Cpl { 0 } else { self.addr.max(1 << 32) }, u64::from(self.payload()))
    }

    /// Writes the TLP into `buf` (cleared first); the payload repeats the tag's low byte.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        buf.clear();
        buf.push(match self.kind {
            Kind::MemWr => 1,
            Kind::MemRd => 2,
            Kind::Cpl => 3,
        });
        buf.push(0);
        buf.extend_from_slice(&self.tag.to_be_bytes());
        buf.extend_from_slice(&self.len.to_be_bytes());
        if self.kind == Kind::Cpl {
            buf.extend_from_slice(&(self.addr as u32).to_be_bytes());
        } else {
            buf.extend_from_slice(&self.addr.to_be_bytes());
        }
        buf.resize(self.size(), self.tag as u8);
    }

    /// Reads a TLP written by [`Tlp::encode`].
    pub fn decode(b: &[u8]) -> Result<Tlp, SimError> {
        let bad = |why: &str| Err(SimError::Tlp(format!("{why} ({} bytes)", b.len())));
        if b.len() < COMPLETION_HEADER {
            return bad("shorter than a TLP header");
        }
        let kind = match b[0] {
            1 => Kind::MemWr,
            2 => Kind::MemRd,
            3 => Kind::Cpl,
            _ => return bad("unknown TLP kind"),
        };
        let tag = u16::from_be_bytes([b[2], b[3]]);
        let len = u32::from_be_bytes(b[4..8].try_into().expect("4 bytes"));
        let addr = if kind == Kind::Cpl {
            u64::from(u32::from_be_bytes(b[8..12].try_into().expect("4 bytes")))
        } else {
            if b.len() < REQUEST_HEADER {
                return bad("request shorter than its header");
            }
            u64::from_be_bytes(b[8..16].try_into().expect("8 bytes"))
        };
        let t = Tlp { kind, tag, len, addr };
        if t.size() != b.len() {
            return bad("length field does not match the TLP");
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_sizes() {
        let mut buf = Vec::new();
        for t in [
            Tlp::write(address(Region::Data, 7, 4096), 128),
            Tlp::read(address(Region::Command, 0xFF_FFFF, 0), 64, 31),
            Tlp::completion(9, 384, 128),
        ] {
            t.encode(&mut buf);
            assert_eq!(buf.len(), t.size());
            assert_eq!(Tlp::decode(&buf), Ok(t));
        }
        assert_eq!(Tlp::write(0, 128).size(), 144);
        assert_eq!(Tlp::completion(0, 0, 128).size(), 140);
        assert_eq!(Tlp::read(0, 512, 0).size(), 16);
        assert_eq!(parts(address(Region::Flag, 3, 4)), Some((Region::Flag, 3, 4)));
        assert!(Tlp::decode(&buf[..buf.len() - 1]).is_err());
        assert!(Tlp::decode(&[9; 16]).is_err());
    }
}
