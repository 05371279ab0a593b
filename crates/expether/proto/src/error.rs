//! What the core refuses, as one-line messages.

use crate::header::Mac;

/// An input the core does not accept. The bridge's state is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpError {
    /// A frame shorter than the header.
    #[error("frame of {0} bytes is shorter than the {hdr}-byte ExpEther header", hdr = crate::header::HEADER_LEN)]
    Truncated(usize),
    /// A header field holds a value the format does not define.
    #[error("bad ExpEther header: {0}")]
    BadHeader(&'static str),
    /// The TLP list after the header does not match the header's length and count.
    #[error("bad ExpEther TLP list: {0}")]
    BadTlps(&'static str),
    /// A frame for another bridge.
    #[error("frame for {0} arrived at bridge {1}")]
    Misaddressed(Mac, Mac),
    /// A frame from another VLAN (another host's virtual computer, seed 002 §3.3.1).
    #[error("frame on VLAN {0} arrived at a bridge of VLAN {1}")]
    OtherVlan(u16, u16),
    /// The destination's transmission queue cannot take the TLP now (back-pressure, §3.4.4):
    /// offer it again after the bridge has sent frames.
    #[error("transmission queue to {0} is full (back-pressure): try again after frames leave")]
    QueueFull(Mac),
    /// A TLP that cannot be carried: empty, or larger than a frame can hold.
    #[error("TLP of {0} bytes cannot be carried (1..={1} bytes)")]
    TlpSize(usize, usize),
    /// A TLP for a destination whose path has failed.
    #[error("the Ethernet path to {0} has failed")]
    PathFailed(Mac),
    /// A TLP addressed to the bridge itself.
    #[error("bridge {0} cannot send to itself")]
    SelfSend(Mac),
    /// The caller's buffer is too small.
    #[error("buffer of {0} bytes is smaller than the {1} bytes needed")]
    BufferTooSmall(usize, usize),
    /// An invalid configuration.
    #[error("bad ExpEther configuration: {0}")]
    Config(&'static str),
    /// A VLAN id beyond the 12 bits of an 802.1Q tag.
    #[error("VLAN id {0} exceeds 12 bits (0..=4095)")]
    VlanRange(u16),
    /// Every VLAN id already has a host bridge (seed 002 Table 3.1: at most 4096 hosts).
    #[error("all 4096 VLAN ids already have a host bridge (at most 4096 hosts, seed 002 Table 3.1)")]
    HostsFull,
    /// A host bridge asked for a VLAN id that another host bridge holds.
    #[error("VLAN {0} already has host bridge {1}")]
    VlanTaken(u16, Mac),
    /// A bridge joined twice.
    #[error("bridge {0} has already joined the virtual switch")]
    BridgeKnown(Mac),
    /// No host bridge holds this VLAN id.
    #[error("no host bridge on VLAN {0}")]
    UnknownHost(u16),
    /// No device bridge with this MAC address has joined.
    #[error("no device bridge {0} in the virtual switch")]
    UnknownDevice(Mac),
    /// Every downstream port of the host's upstream bridge holds a device (seed 002 Table 3.1:
    /// at most 32 devices per host).
    #[error(
        "the host on VLAN {0} has all {1} downstream ports in use (at most 32 devices per host, seed 002 Table 3.1)"
    )]
    PortsFull(u16, u8),
}
