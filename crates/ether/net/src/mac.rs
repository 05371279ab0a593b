//! MAC addresses and the 14-byte Ethernet header of the frames the sockets exchange.

use std::fmt;

/// The EtherType of every frame: 0x88B5, IEEE 802 "local experimental EtherType 1"
/// (IEEE Std 802), reserved for private and experimental protocols and used by no kernel protocol.
pub const ETHERTYPE: u16 = 0x88B5;

/// Length of the Ethernet header (destination, source, EtherType); no VLAN tag.
pub const HEADER_LEN: usize = 14;

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

/// Writes the header for `dst` <- `src` with [`ETHERTYPE`] into the first 14 bytes of `frame`.
/// Panics if `frame` is shorter than [`HEADER_LEN`] (a caller's bug, not input).
pub fn write_header(frame: &mut [u8], dst: MacAddr, src: MacAddr) {
    frame[0..6].copy_from_slice(&dst.0);
    frame[6..12].copy_from_slice(&src.0);
    frame[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
}
