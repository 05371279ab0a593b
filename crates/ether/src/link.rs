//! A full-duplex Ethernet link: a bit rate, a propagation delay and a framing, with one FIFO per
//! direction.
//!
//! A frame waits for the frames before it in its direction, then holds the wire for its wire
//! bytes (preamble to FCS, then the inter-frame gap). Its last bit reaches the far end one
//! propagation delay after it was sent; the gap only delays the next frame.

use crate::{fifo::Fifo, framing::Framing, EtherError};
use base::SimTime;

/// One Gb/s (IEEE 802.3 clause 35/36: 1000BASE-X, 1000BASE-T).
pub const GBE: u64 = 1_000_000_000;
/// Ten Gb/s (IEEE 802.3 clause 46).
pub const TEN_GBE: u64 = 10_000_000_000;
/// Forty Gb/s (IEEE 802.3ba).
pub const FORTY_GBE: u64 = 40_000_000_000;

/// What a link is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSpec {
    /// Data rate in bits per second (after line coding: 1 Gb/s for GbE).
    pub bits_per_second: u64,
    /// Time for a bit to cross the cable (about 5 ns per metre of copper or fibre).
    pub propagation: SimTime,
    /// VLAN tag and MTU.
    pub framing: Framing,
}

impl LinkSpec {
    /// A link at `bits_per_second` with jumbo frames and the given propagation delay.
    pub fn new(bits_per_second: u64, propagation: SimTime) -> Self {
        Self { bits_per_second, propagation, framing: Framing::JUMBO }
    }

    /// Gigabit Ethernet with jumbo frames, as in seed 004 (E1000 NICs, jumbo frames on).
    pub fn gbe(propagation: SimTime) -> Self {
        Self::new(GBE, propagation)
    }

    /// Checks the rate and the MTU.
    pub fn validate(&self) -> Result<(), EtherError> {
        if self.bits_per_second == 0 {
            return Err(EtherError::Zero("link rate"));
        }
        self.framing.validate()
    }

    /// Time to send `bytes` byte times at this rate, rounded up to a picosecond.
    pub fn byte_time(&self, bytes: u32) -> SimTime {
        let ps = (u128::from(bytes) * 8 * 1_000_000_000_000).div_ceil(u128::from(self.bits_per_second));
        SimTime::from_ps(ps as u64)
    }

    /// Time a frame of `payload` bytes holds the wire, inter-frame gap included.
    pub fn wire_time(&self, payload: u32) -> SimTime {
        self.byte_time(self.framing.wire_bytes(payload))
    }

    /// Payload bytes per second of back-to-back frames of `payload` bytes.
    pub fn goodput(&self, payload: u32) -> f64 {
        self.bits_per_second as f64 / 8.0 * self.framing.efficiency(payload)
    }
}

/// When one frame used a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmission {
    /// First preamble bit leaves the sender.
    pub start: SimTime,
    /// Last FCS bit leaves the sender.
    pub last_bit: SimTime,
    /// The wire is free for the next frame (after the inter-frame gap).
    pub free: SimTime,
    /// Last FCS bit reaches the receiver.
    pub arrival: SimTime,
}

/// One direction of a link: a FIFO of frames.
#[derive(Debug, Clone)]
pub struct Channel {
    spec: LinkSpec,
    fifo: Fifo,
    payload_bytes: u64,
}

impl Channel {
    /// An idle direction of a link built to `spec` (validated by the caller).
    pub fn new(spec: LinkSpec) -> Self {
        Self { spec, fifo: Fifo::new(), payload_bytes: 0 }
    }

    /// The link this direction belongs to.
    pub fn spec(&self) -> &LinkSpec {
        &self.spec
    }

    /// Sends a frame of `payload` bytes handed over at `now`, behind the frames before it.
    pub fn transmit(&mut self, now: SimTime, payload: u32) -> Result<Transmission, EtherError> {
        self.spec.framing.check(payload)?;
        let (start, free) = self.fifo.serve(now, self.spec.wire_time(payload));
        let last_bit = start + self.spec.byte_time(self.spec.framing.bytes_to_last_bit(payload));
        self.payload_bytes += u64::from(payload);
        Ok(Transmission { start, last_bit, free, arrival: last_bit + self.spec.propagation })
    }

    /// Frames sent so far.
    pub fn frames(&self) -> u64 {
        self.fifo.served()
    }

    /// Payload bytes sent so far.
    pub fn payload_bytes(&self) -> u64 {
        self.payload_bytes
    }

    /// Time the wire was busy (gaps included).
    pub fn busy(&self) -> SimTime {
        self.fifo.busy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_times_are_exact() {
        let g = LinkSpec::gbe(SimTime::ZERO);
        // 1538 B on the wire at 8 ns per byte.
        assert_eq!(g.wire_time(1500), SimTime::from_ps(12_304_000));
        // A minimum frame: 84 B, 0.672 us.
        assert_eq!(g.wire_time(46), SimTime::from_ns(672));
        assert_eq!(g.wire_time(1), SimTime::from_ns(672));
        assert_eq!(g.wire_time(9000), SimTime::from_ns(72_304));
        let ten = LinkSpec::new(TEN_GBE, SimTime::ZERO);
        assert_eq!(ten.wire_time(1500), SimTime::from_ps(1_230_400));
        let forty = LinkSpec::new(FORTY_GBE, SimTime::ZERO);
        assert_eq!(forty.wire_time(1500), SimTime::from_ps(307_600));
        assert_eq!(forty.wire_time(46), SimTime::from_ps(16_800));
        // A rate that does not divide evenly rounds up: 84 B at 3 b/s.
        let odd = LinkSpec::new(3, SimTime::ZERO);
        assert_eq!(odd.wire_time(46).as_ps(), 224_000_000_000_000);
    }

    #[test]
    fn a_direction_is_a_fifo_and_the_gap_delays_only_the_next_frame() {
        let mut c = Channel::new(LinkSpec::gbe(SimTime::from_ns(50)));
        let a = c.transmit(SimTime::ZERO, 1500).unwrap();
        assert_eq!(a.start, SimTime::ZERO);
        // Last bit after 1526 B (no gap); arrives 50 ns later.
        assert_eq!(a.last_bit, SimTime::from_ns(12_208));
        assert_eq!(a.arrival, SimTime::from_ns(12_258));
        assert_eq!(a.free, SimTime::from_ns(12_304));
        let b = c.transmit(SimTime::from_ns(1), 1500).unwrap();
        assert_eq!(b.start, a.free);
        assert_eq!(b.arrival - a.arrival, SimTime::from_ns(12_304));
        assert_eq!(c.frames(), 2);
        assert_eq!(c.payload_bytes(), 3000);
        assert_eq!(c.busy(), SimTime::from_ns(2 * 12_304));
    }

    #[test]
    fn oversized_frames_and_zero_rates_are_errors() {
        let mut c = Channel::new(LinkSpec::gbe(SimTime::ZERO));
        assert_eq!(c.transmit(SimTime::ZERO, 9001), Err(EtherError::PayloadTooLarge { payload: 9001, mtu: 9000 }));
        assert_eq!(c.frames(), 0);
        assert_eq!(LinkSpec::new(0, SimTime::ZERO).validate(), Err(EtherError::Zero("link rate")));
    }

    #[test]
    fn goodput_is_line_rate_less_framing() {
        let g = LinkSpec::gbe(SimTime::ZERO);
        assert!((g.goodput(9000) - 125e6 * 9000.0 / 9038.0).abs() < 1e-3);
        assert!((g.goodput(1500) - 125e6 * 1500.0 / 1538.0).abs() < 1e-3);
    }
}
