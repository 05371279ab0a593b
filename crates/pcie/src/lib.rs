//! PCIe links and transaction-layer packets (TLPs).
//!
//! Numbers here are those of the PCIe specification, not of a machine: line encodings and the
//! bytes each layer adds to a TLP. Seed 000 §4.1.1 spells out the Gen2 case: a 16 B TLP header,
//! a 2 B sequence number and 4 B LCRC from the data link layer, 1 B start and 1 B end framing,
//! giving 4 GB/s x 256/(256+16+2+4+1+1) = 3.66 GB/s with 256 B payloads.

#![warn(missing_docs)]

use base::SimTime;

/// PCIe generation: fixes the line encoding and the framing of a TLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// 8b/10b encoding (seed 000 §3.1.1: 5 GT/s gives 4 Gbit/s per lane).
    Gen2,
    /// 128b/130b encoding (seed 000 §3.1.1: 8 GT/s gives 7.88 Gbit/s per lane).
    Gen3,
}

impl Generation {
    /// (data bits, line bits) of the encoding.
    pub fn encoding(self) -> (u64, u64) {
        match self {
            Generation::Gen2 => (8, 10),
            Generation::Gen3 => (128, 130),
        }
    }

    /// Bytes the data link and physical layers add to every TLP.
    ///
    /// Gen2: STP 1 + sequence number 2 + LCRC 4 + END 1 (seed 000 §4.1.1).
    /// Gen3: the 4-byte STP token carries the sequence number; LCRC 4; no END symbol.
    #[inline]
    pub fn framing_bytes(self) -> u64 {
        match self {
            Generation::Gen2 => 1 + 2 + 4 + 1,
            Generation::Gen3 => 4 + 4,
        }
    }
}

/// Kinds of TLP the models use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlpKind {
    /// Memory Write (posted).
    MemWrite,
    /// Memory Read request (non-posted).
    MemRead,
    /// Completion with data.
    Completion,
}

impl TlpKind {
    /// Transaction-layer header bytes. Requests to 64-bit addresses use the 4-DW header;
    /// completions use 3 DW.
    #[inline]
    pub fn header_bytes(self, address: u64) -> u64 {
        match self {
            TlpKind::Completion => 12,
            _ if address >= 1 << 32 => 16,
            _ => 12,
        }
    }
}

/// One direction of a PCIe link, as written in a platform file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    /// Gen2 or Gen3: fixes the line code (8b/10b or 128b/130b) and the framing.
    pub generation: Generation,
    /// Transfers per second per lane (5e9 for Gen2).
    pub rate_per_lane: u64,
    /// Link width (seed 000 §3.3: PEACH2's four ports are Gen2 x8).
    pub lanes: u32,
    /// Max Payload Size [bytes].
    pub max_payload: u64,
    /// Max Read Request Size [bytes].
    pub max_read_request: u64,
    /// Read Completion Boundary [bytes]: completions may only split at multiples of it.
    pub read_completion_boundary: u64,
    /// Time from a TLP's last symbol leaving one end to its last symbol arriving at the other
    /// (PHY, data link layer and cable).
    pub latency: SimTime,
}

impl LinkSpec {
    /// Checks the values the specification allows.
    pub fn validate(&self) -> Result<(), String> {
        let pow2 = |v: u64, lo: u64, hi: u64| v.is_power_of_two() && (lo..=hi).contains(&v);
        if !matches!(self.lanes, 1 | 2 | 4 | 8 | 12 | 16 | 32) {
            return Err(format!("lanes = {} is not a PCIe link width", self.lanes));
        }
        if !pow2(self.max_payload, 128, 4096) {
            return Err(format!("max_payload = {} B must be a power of two from 128 to 4096 B", self.max_payload));
        }
        if !pow2(self.max_read_request, 128, 4096) {
            return Err(format!(
                "max_read_request = {} B must be a power of two from 128 to 4096 B",
                self.max_read_request
            ));
        }
        if !matches!(self.read_completion_boundary, 64 | 128) {
            return Err(format!("read_completion_boundary = {} B must be 64 or 128 B", self.read_completion_boundary));
        }
        // The encoding goes with the signalling rate (PCIe Base Spec): 8b/10b at 2.5 and
        // 5 GT/s, 128b/130b from 8 GT/s (8, 16, 32).
        let rates: &[u64] = match self.generation {
            Generation::Gen2 => &[2_500_000_000, 5_000_000_000],
            Generation::Gen3 => &[8_000_000_000, 16_000_000_000, 32_000_000_000],
        };
        if !rates.contains(&self.rate_per_lane) {
            let (name, allowed) = match self.generation {
                Generation::Gen2 => ("gen2 (8b/10b)", "2.5 or 5 GT/s"),
                Generation::Gen3 => ("gen3 (128b/130b)", "8, 16 or 32 GT/s"),
            };
            return Err(format!(
                "rate = {} GT/s is no rate of a {name} link: allowed {allowed}",
                self.rate_per_lane as f64 / 1e9
            ));
        }
        Ok(())
    }

    /// Raw data rate after line encoding [bytes/s] (4e9 for Gen2 x8).
    pub fn raw_bytes_per_second(&self) -> f64 {
        let (data, line) = self.generation.encoding();
        self.rate_per_lane as f64 * self.lanes as f64 * data as f64 / line as f64 / 8.0
    }

    /// Bytes a TLP occupies on the wire.
    #[inline]
    pub fn wire_bytes(&self, kind: TlpKind, address: u64, payload: u64) -> u64 {
        payload + kind.header_bytes(address) + self.generation.framing_bytes()
    }

    /// Time to serialise `wire_bytes` onto the link, rounded up to a picosecond.
    pub fn serialization(&self, wire_bytes: u64) -> SimTime {
        let (data, line) = self.generation.encoding();
        // wire_bytes * 8 * line/data bits over lanes * rate bit/s.
        let num = wire_bytes as u128 * 8 * line as u128 * 1_000_000_000_000;
        let den = data as u128 * self.lanes as u128 * self.rate_per_lane as u128;
        SimTime::from_ps(num.div_ceil(den) as u64)
    }

    /// Ideal bandwidth of a stream of max-payload writes to 64-bit addresses [bytes/s].
    pub fn ideal_write_bandwidth(&self) -> f64 {
        let p = self.max_payload;
        self.raw_bytes_per_second() * p as f64 / self.wire_bytes(TlpKind::MemWrite, 1 << 32, p) as f64
    }
}

/// Splits `[addr, addr+len)` into request-sized pieces that respect `max` and never cross a
/// 4 KiB boundary (PCIe rule for memory requests).
pub fn split_requests(addr: u64, len: u64, max: u64) -> impl Iterator<Item = (u64, u64)> {
    let end = addr + len;
    let mut at = addr;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let to_page = 4096 - (at % 4096);
        let n = (end - at).min(max).min(to_page);
        let piece = (at, n);
        at += n;
        Some(piece)
    })
}

/// Splits the data of one read request into completions: the first ends at a read completion
/// boundary, every completion carries at most `max_payload` bytes and, except the last, ends on
/// an RCB-aligned address (PCIe Base Specification, completion rules).
pub fn split_completions(addr: u64, len: u64, rcb: u64, max_payload: u64) -> impl Iterator<Item = u64> {
    let end = addr + len;
    let mut at = addr;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let mut stop = (at + max_payload).min(end);
        if stop < end {
            stop -= stop % rcb;
            if stop <= at {
                stop = (at / rcb + 1) * rcb;
            }
        }
        let n = stop - at;
        at = stop;
        Some(n)
    })
}

/// When one item went through a [`Server`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmission {
    /// Serialisation starts (after queueing).
    pub start: SimTime,
    /// Serialisation ends.
    pub end: SimTime,
    /// The item is out the far side (end + latency).
    pub out: SimTime,
}

/// A first-in first-out resource with a serialisation rate and a latency: one direction of a
/// link, or a throughput limit inside a chip. Time is passed in; nothing is read from a clock.
#[derive(Debug, Clone)]
pub struct Server {
    /// Picoseconds per byte, as a fraction `num / den`.
    ps_per_byte: (u64, u64),
    latency: SimTime,
    free_at: SimTime,
    busy: SimTime,
    /// The last item's size and service time: a link mostly carries TLPs of one size, and the
    /// division costs more than the rest of a transmission.
    last: (u64, SimTime),
    /// The last train while it is the last thing served, and when the last item that went
    /// between its items ends ([`Server::transmit_between`]).
    train: Option<Train>,
    between_free: SimTime,
}

/// A train as a [`Server`] took it.
#[derive(Debug, Clone, Copy)]
struct Train {
    /// When its first item arrived, and the time between two arrivals.
    arrival: SimTime,
    gap: SimTime,
    /// When its first item started, each item's service, the items, and when the last ended.
    start: SimTime,
    each: SimTime,
    count: u64,
    last_end: SimTime,
}

impl Server {
    /// A server moving `bytes_per_second` with `latency` added after each item.
    pub fn with_bandwidth(bytes_per_second: u64, latency: SimTime) -> Self {
        Self::new((1_000_000_000_000, bytes_per_second), latency)
    }

    /// The server for one direction of a PCIe link (counts wire bytes).
    pub fn for_link(spec: &LinkSpec) -> Self {
        let (data, line) = spec.generation.encoding();
        let ps_per_byte = (8 * line * 1_000_000_000_000, data * u64::from(spec.lanes) * spec.rate_per_lane);
        Self::new(ps_per_byte, spec.latency)
    }

    /// A resource with only a latency (no throughput limit).
    pub fn latency_only(latency: SimTime) -> Self {
        Self::new((0, 1), latency)
    }

    fn new(ps_per_byte: (u64, u64), latency: SimTime) -> Self {
        Self {
            ps_per_byte,
            latency,
            free_at: SimTime::ZERO,
            busy: SimTime::ZERO,
            last: (0, SimTime::ZERO),
            train: None,
            between_free: SimTime::ZERO,
        }
    }

    /// Takes `bytes` arriving at `now` and queues them behind earlier items.
    #[inline]
    pub fn transmit(&mut self, now: SimTime, bytes: u64) -> Transmission {
        let start = now.max(self.free_at);
        let service = if bytes == self.last.0 { self.last.1 } else { self.service(bytes) };
        self.free_at = start + service;
        self.busy += service;
        self.train = None;
        Transmission { start, end: self.free_at, out: self.free_at + self.latency }
    }

    /// As [`Server::transmit`], but an item arriving while the last train is served goes
    /// between two of its items, after those that arrived before it, instead of after the
    /// whole train: first in, first out, as if the train's items had come one by one. The
    /// train keeps its times; what comes after it waits for this item too.
    pub fn transmit_between(&mut self, now: SimTime, bytes: u64) -> Transmission {
        let Some(train) = self.train.filter(|t| now < t.last_end) else { return self.transmit(now, bytes) };
        // The train's items that arrived by `now`, and when the last of them ends.
        let ps = |t: SimTime| t.as_ps();
        let ahead = match ps(now).checked_sub(ps(train.arrival)) {
            None => 0,
            Some(_) if train.gap == SimTime::ZERO => train.count,
            Some(d) => (d / ps(train.gap) + 1).min(train.count),
        };
        let start = match ahead {
            0 => now,
            j => SimTime::from_ps(
                (ps(train.start) + ps(train.each) * j)
                    .max(ps(train.arrival) + ps(train.gap) * (j - 1) + ps(train.each)),
            ),
        };
        let start = start.max(now).max(self.between_free);
        if start >= train.last_end {
            return self.transmit(now, bytes);
        }
        let service = if bytes == self.last.0 { self.last.1 } else { self.service(bytes) };
        let end = start + service;
        self.between_free = end;
        self.free_at += service;
        self.busy += service;
        Transmission { start, end, out: end + self.latency }
    }

    /// Takes a train of `count` items of `each` bytes, the first arriving at `arrival` and the
    /// last `span` later, in order and with nothing else between them; returns the first
    /// item's transmission and when the last one's serialisation ends.
    ///
    /// Both are those `count` calls of [`Server::transmit`] would give when the gaps between
    /// the arrivals never shrink along the train (as behind a FIFO that started idle or
    /// busy): the last item then ends either `count` services after the first starts or one
    /// service after it arrives, whichever is later.
    pub fn transmit_train(
        &mut self,
        arrival: SimTime,
        span: SimTime,
        each: u64,
        count: u64,
    ) -> (Transmission, SimTime) {
        let start = arrival.max(self.free_at);
        let service = if each == self.last.0 { self.last.1 } else { self.service(each) };
        let all = SimTime::from_ps(service.as_ps() * count);
        let last_end = (start + all).max(arrival + span + service);
        self.free_at = last_end;
        self.busy += all;
        let gap = SimTime::from_ps(span.as_ps() / (count - 1).max(1));
        self.train = Some(Train { arrival, gap, start, each: service, count, last_end });
        self.between_free = start;
        let end = start + service;
        (Transmission { start, end, out: end + self.latency }, last_end)
    }

    /// Serialisation time of `bytes`, remembered for the next item.
    fn service(&mut self, bytes: u64) -> SimTime {
        let (num, den) = self.ps_per_byte;
        // In 64 bits whenever the product fits (every TLP does): a 128-bit division is slow.
        let ps = match bytes.checked_mul(num) {
            Some(product) => product.div_ceil(den),
            None => (u128::from(bytes) * u128::from(num)).div_ceil(u128::from(den)) as u64,
        };
        self.last = (bytes, SimTime::from_ps(ps));
        self.last.1
    }

    /// The latency added after each item: the least time an item spends in the server.
    pub fn latency(&self) -> SimTime {
        self.latency
    }

    /// Total time spent serialising.
    pub fn busy(&self) -> SimTime {
        self.busy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding goes with the rate: a gen2 link at 32 GT/s or a gen3 one at 2.5 GT/s is
    /// no PCIe link.
    #[test]
    fn a_rate_must_be_one_of_its_encoding() {
        assert!(link(Generation::Gen2, 5_000_000_000, 256).validate().is_ok());
        assert!(link(Generation::Gen2, 2_500_000_000, 256).validate().is_ok());
        assert!(link(Generation::Gen3, 16_000_000_000, 256).validate().is_ok());
        let e = link(Generation::Gen2, 32_000_000_000, 256).validate().unwrap_err();
        assert_eq!(e, "rate = 32 GT/s is no rate of a gen2 (8b/10b) link: allowed 2.5 or 5 GT/s");
        let e = link(Generation::Gen3, 2_500_000_000, 256).validate().unwrap_err();
        assert_eq!(e, "rate = 2.5 GT/s is no rate of a gen3 (128b/130b) link: allowed 8, 16 or 32 GT/s");
    }

    fn link(generation: Generation, rate: u64, payload: u64) -> LinkSpec {
        LinkSpec {
            generation,
            rate_per_lane: rate,
            lanes: 8,
            max_payload: payload,
            max_read_request: 4096,
            read_completion_boundary: 64,
            latency: SimTime::ZERO,
        }
    }

    #[test]
    fn gen2_x8_256_b_ideal_is_the_seeds_3_66_gb_s() {
        // Seed 000 §4.1.1: 4 GB/s x 256/(256+16+2+4+1+1).
        let l = link(Generation::Gen2, 5_000_000_000, 256);
        assert_eq!(l.raw_bytes_per_second(), 4e9);
        assert_eq!(l.wire_bytes(TlpKind::MemWrite, 1 << 36, 256), 280);
        assert!((l.ideal_write_bandwidth() - 4e9 * 256.0 / 280.0).abs() < 1.0);
        assert!((l.ideal_write_bandwidth() / 1e9 - 3.657).abs() < 0.001);
    }

    #[test]
    fn gen2_x8_128_b_payload() {
        let l = link(Generation::Gen2, 5_000_000_000, 128);
        assert!((l.ideal_write_bandwidth() / 1e9 - 4.0 * 128.0 / 152.0).abs() < 1e-9);
    }

    #[test]
    fn gen3_x8_uses_128b_130b() {
        let l = link(Generation::Gen3, 8_000_000_000, 256);
        assert!((l.raw_bytes_per_second() / 1e9 - 7.876_923).abs() < 1e-5);
        assert!((l.ideal_write_bandwidth() / 1e9 - 7.876_923 * 256.0 / 280.0).abs() < 1e-5);
    }

    #[test]
    fn serialization_of_gen2_x8_is_250_ps_per_byte() {
        let l = link(Generation::Gen2, 5_000_000_000, 256);
        assert_eq!(l.serialization(280), SimTime::from_ps(70_000));
    }

    #[test]
    fn requests_split_at_max_and_4k_pages() {
        let v: Vec<_> = split_requests(4096 - 64, 8192, 4096).collect();
        assert_eq!(v, vec![(4032, 64), (4096, 4096), (8192, 4032)]);
    }

    #[test]
    fn completions_split_at_rcb_then_max_payload() {
        // 4 KiB aligned read: 16 completions of 256 B.
        assert_eq!(split_completions(0, 4096, 64, 256).collect::<Vec<_>>(), vec![256; 16]);
        // Unaligned start: the first completion ends on a 64-B boundary.
        assert_eq!(split_completions(32, 600, 64, 256).collect::<Vec<_>>(), vec![224, 256, 120]);
    }

    #[test]
    fn server_queues_first_in_first_out() {
        let mut s = Server::with_bandwidth(1_000_000_000, SimTime::from_ns(10)); // 1 ns/B
        let ns = SimTime::from_ns;
        let t = |start, end, out| Transmission { start: ns(start), end: ns(end), out: ns(out) };
        assert_eq!(s.transmit(ns(0), 100), t(0, 100, 110));
        assert_eq!(s.transmit(ns(50), 100), t(100, 200, 210));
        assert_eq!(s.transmit(ns(500), 1), t(500, 501, 511));
        // Sizes alternating, and nothing: each its own service time.
        assert_eq!(s.transmit(ns(600), 100), t(600, 700, 710));
        assert_eq!(s.transmit(ns(700), 0), t(700, 700, 710));
        assert_eq!(s.transmit(ns(700), 100), t(700, 800, 810));
        assert_eq!(s.busy(), SimTime::from_ns(401));
    }

    /// A read request arriving while a train is served goes after the train's items that
    /// arrived before it, not after the whole train, and delays what comes after the train.
    #[test]
    fn an_item_between_goes_after_the_train_items_ahead_of_it() {
        let ns = SimTime::from_ns;
        let mut one = Server::with_bandwidth(1_000_000_000, ns(10));
        let mut train = one.clone();
        // Eight items of 100 B arriving 150 ns apart from 100 ns; a 20-B item at 420 ns, when
        // three have arrived (100, 250, 400): it goes after the third ends (500 ns).
        let txs: Vec<_> = (0..3).map(|k| one.transmit(ns(100 + k * 150), 100)).collect();
        let between = one.transmit(ns(420), 20);
        assert_eq!(txs[2].end, ns(500));
        assert_eq!(between, Transmission { start: ns(500), end: ns(520), out: ns(530) });
        let (first, last_end) = train.transmit_train(ns(100), ns(7 * 150), 100, 8);
        assert_eq!((first.end, last_end), (ns(200), ns(1250)));
        assert_eq!(train.transmit_between(ns(420), 20), between);
        // A second one queues behind the first; after the train, items wait for both.
        assert_eq!(train.transmit_between(ns(430), 20).start, ns(520));
        assert_eq!(train.transmit(ns(0), 100).start, ns(1290));
        // Before the train arrives, or with no train, it is an ordinary item.
        let mut idle = Server::with_bandwidth(1_000_000_000, SimTime::ZERO);
        assert_eq!(idle.transmit_between(ns(5), 20).start, ns(5));
    }

    /// A train gives the first and last times of its items sent one by one: arriving faster
    /// than served, slower than served, and behind a busy server that it catches up with.
    #[test]
    fn a_train_ends_as_its_items_one_by_one() {
        let ns = SimTime::from_ns;
        for (busy_until, gap) in [(0, 40), (0, 150), (300, 150), (300, 40), (2000, 150)] {
            let (mut one, mut train) =
                (Server::with_bandwidth(1_000_000_000, ns(10)), Server::with_bandwidth(1_000_000_000, ns(10)));
            one.transmit(ns(0), busy_until);
            train.transmit(ns(0), busy_until);
            let txs: Vec<_> = (0..8).map(|k| one.transmit(ns(100 + k * gap), 100)).collect();
            let (first, last_end) = train.transmit_train(ns(100), ns(7 * gap), 100, 8);
            assert_eq!((first, last_end), (txs[0], txs[7].end), "busy until {busy_until} ns, {gap} ns apart");
            assert_eq!(train.busy(), one.busy());
            assert_eq!(train.transmit(ns(0), 1), one.transmit(ns(0), 1));
        }
    }
}
