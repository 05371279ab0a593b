//! The bytes a frame occupies on an Ethernet wire (IEEE 802.3 clause 3 and 4).
//!
//! On the wire a frame is: preamble and start-of-frame delimiter (8 B), header (destination,
//! source, EtherType: 14 B, or 18 B with an 802.1Q VLAN tag), payload, frame check sequence
//! (4 B), then at least the inter-frame gap (12 B times) before the next preamble. The frame from
//! header to FCS is at least 64 B, so short payloads are padded (46 B minimum payload, 42 B with a
//! VLAN tag). Standard frames carry up to 1,500 B of payload; jumbo frames (not in 802.3, but what
//! the E1000 NICs of seed 004 used) up to 9,000 B.

use crate::EtherError;

/// Preamble (7 B) and start-of-frame delimiter (1 B).
pub const PREAMBLE_SFD: u32 = 8;
/// Destination MAC, source MAC and EtherType.
pub const HEADER: u32 = 14;
/// An 802.1Q tag (TPID and TCI) inserted after the source MAC.
pub const VLAN_TAG: u32 = 4;
/// Frame check sequence (CRC-32).
pub const FCS: u32 = 4;
/// Minimum inter-frame gap, in byte times (96 bit times).
pub const IFG: u32 = 12;
/// Minimum frame from header to FCS; shorter ones are padded.
pub const MIN_FRAME: u32 = 64;
/// Largest standard payload.
pub const STANDARD_MTU: u32 = 1_500;
/// Largest jumbo payload accepted here.
pub const MAX_JUMBO_PAYLOAD: u32 = 9_000;
/// Smallest MTU a link may be given (the minimum untagged payload).
pub const MIN_MTU: u32 = MIN_FRAME - HEADER - FCS;

/// How frames are built on one link: whether they carry a VLAN tag, and the largest payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// Frames carry an 802.1Q tag (4 B more header).
    pub vlan: bool,
    /// Largest payload, 46..=9000 B.
    pub mtu: u32,
}

impl Framing {
    /// Untagged frames of up to 1,500 B of payload.
    pub const STANDARD: Framing = Framing { vlan: false, mtu: STANDARD_MTU };
    /// Untagged jumbo frames of up to 9,000 B of payload.
    pub const JUMBO: Framing = Framing { vlan: false, mtu: MAX_JUMBO_PAYLOAD };

    /// Checks the MTU.
    pub fn validate(&self) -> Result<(), EtherError> {
        if (MIN_MTU..=MAX_JUMBO_PAYLOAD).contains(&self.mtu) {
            Ok(())
        } else {
            Err(EtherError::BadMtu(self.mtu))
        }
    }

    /// Checks that a payload fits this framing's MTU.
    pub fn check(&self, payload: u32) -> Result<(), EtherError> {
        if payload > self.mtu {
            return Err(EtherError::PayloadTooLarge { payload, mtu: self.mtu });
        }
        Ok(())
    }

    /// Header bytes (with the tag if any).
    pub fn header(&self) -> u32 {
        HEADER + if self.vlan { VLAN_TAG } else { 0 }
    }

    /// The frame from header to FCS, padded to 64 B: what a switch stores and a NIC moves by DMA
    /// (with the FCS; NICs that strip it move 4 B less, which the I/O bus costs ignore).
    pub fn frame_bytes(&self, payload: u32) -> u32 {
        (self.header() + payload + FCS).max(MIN_FRAME)
    }

    /// Bytes from the first preamble bit to the last FCS bit.
    pub fn bytes_to_last_bit(&self, payload: u32) -> u32 {
        PREAMBLE_SFD + self.frame_bytes(payload)
    }

    /// Byte times a frame holds the wire, the gap before the next frame included.
    pub fn wire_bytes(&self, payload: u32) -> u32 {
        self.bytes_to_last_bit(payload) + IFG
    }

    /// Payload over wire bytes for back-to-back frames of `payload` bytes.
    pub fn efficiency(&self, payload: u32) -> f64 {
        f64::from(payload) / f64::from(self.wire_bytes(payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_of_common_frames() {
        let s = Framing::STANDARD;
        // 1500 + 14 + 4 + 8 + 12.
        assert_eq!(s.wire_bytes(1500), 1538);
        assert_eq!(s.frame_bytes(1500), 1518);
        // A minimum frame: 64 + 8 + 12, whatever the payload below 46 B.
        assert_eq!(s.wire_bytes(46), 84);
        assert_eq!(s.wire_bytes(0), 84);
        assert_eq!(s.wire_bytes(47), 85);
        // With a VLAN tag the minimum payload is 42 B.
        let tagged = Framing { vlan: true, mtu: 1500 };
        assert_eq!(tagged.frame_bytes(42), 64);
        assert_eq!(tagged.frame_bytes(1500), 1522);
        assert_eq!(Framing::JUMBO.wire_bytes(9000), 9038);
    }

    #[test]
    fn payload_limits() {
        assert_eq!(Framing::JUMBO.check(9000), Ok(()));
        assert_eq!(Framing::JUMBO.check(9001), Err(EtherError::PayloadTooLarge { payload: 9001, mtu: 9000 }));
        assert_eq!(
            Framing::STANDARD.check(1501).unwrap_err().to_string(),
            "payload of 1501 B exceeds the MTU of 1500 B"
        );
        assert_eq!(Framing { vlan: false, mtu: 9001 }.validate(), Err(EtherError::BadMtu(9001)));
        assert_eq!(Framing { vlan: false, mtu: 45 }.validate(), Err(EtherError::BadMtu(45)));
        assert!(Framing::JUMBO.validate().is_ok());
    }

    #[test]
    fn efficiency_grows_with_payload() {
        let j = Framing::JUMBO;
        assert!((j.efficiency(1500) - 1500.0 / 1538.0).abs() < 1e-12);
        assert!((j.efficiency(9000) - 9000.0 / 9038.0).abs() < 1e-12);
        // 46 B payload in 84 B of wire: 54.8 %.
        assert!((j.efficiency(46) - 0.547_619).abs() < 1e-6);
        let mut last = 0.0;
        for p in [46, 64, 256, 512, 1024, 1500, 4096, 8192, 9000] {
            let e = j.efficiency(p);
            assert!(e > last, "{p}: {e} <= {last}");
            last = e;
        }
        assert!(last > 0.995);
    }
}
