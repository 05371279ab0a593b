//! Delay-based rate control per destination bridge, fed by ACK arrival (seed 002 §3.3.1,
//! §3.4.3; expether.md §5). The seed says: monitor the end-to-end delay, lower the sending rate
//! when delay grows (queueing in a switch), raise it when there is no congestion, use the
//! receive rate of the ACK frames as the feedback, and hold one rate per connection equal to the
//! bottleneck bandwidth of its path. The control law is in the seed's ref. [55], not in the
//! thesis; this one is tca's design:
//!
//! - Every ACK that acknowledges frames adds their wire bytes to a counter and, when the newest
//!   acknowledged frame was sent once only, gives a round-trip sample; the smallest sample is the
//!   path's base delay, a sample minus it the queueing delay.
//! - Once per base delay (at least `min_interval_ps`) the controller decides. The ACK rate of
//!   the interval (bytes acknowledged / time) is what the bottleneck delivered. If the newest
//!   queueing delay exceeds `target_queue_ps`, the rate falls to `decrease` (7/8) of the ACK
//!   rate: just below what the bottleneck drains, so the queue empties (to half of that when
//!   the queueing delay exceeds 8 targets). Otherwise it rises by `increase` (1/16) of itself.
//! - The rate stays within `min_rate..=line_rate`; it starts at the line rate (a dedicated
//!   Ethernet, §3.3.1).
//!
//! For comparison, [`Law::Loss`] is a loss-based controller in the manner of TCP Reno (AIMD):
//! the rate rises by `increase` of the line rate per decision interval until a retransmission
//! round, which multiplies it by `decrease` (1/2). It finds the bottleneck only by overflowing
//! its queue, which is what the seed's delay-based design avoids (§2.2.1).
//!
//! The bridge paces each destination's new frames at its rate: a frame of `b` wire bytes makes
//! the destination wait `b / rate` before its next one (the deficit round robin "at each
//! destination's rate" of §3.4.3). Retransmissions and ACKs are paced by the link only.

/// What moves the rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Law {
    /// Queueing delay seen in the ACKs, against the ACK rate (the seed's design).
    #[default]
    Delay,
    /// Loss only: additive increase, multiplicative decrease on a retransmission round.
    Loss,
}

/// The knobs of the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateConfig {
    /// What moves the rate.
    pub law: Law,
    /// The lowest rate [bytes/s] (at least 1).
    pub min_rate: u64,
    /// Queueing delay tolerated before the rate falls [ps].
    pub target_queue_ps: u64,
    /// Shortest decision interval [ps] (at least 1).
    pub min_interval_ps: u64,
    /// Increase per decision, numerator over 1024: of the current rate ([`Law::Delay`]) or of
    /// the line rate ([`Law::Loss`]).
    pub increase_1024: u64,
    /// Decrease factor, numerator over 1024 (1..=1023): applied to the ACK rate per decision
    /// ([`Law::Delay`]) or to the rate per retransmission round ([`Law::Loss`]).
    pub decrease_1024: u64,
}

impl Default for RateConfig {
    /// 10 Mb/s floor, 2 µs of queueing tolerated, decisions at least 1 µs apart, x 17/16 up,
    /// x 7/8 of the ACK rate down.
    fn default() -> Self {
        RateConfig {
            law: Law::Delay,
            min_rate: 1_250_000,
            target_queue_ps: 2_000_000,
            min_interval_ps: 1_000_000,
            increase_1024: 64,
            decrease_1024: 896,
        }
    }
}

impl RateConfig {
    /// The loss-based comparison: 10 Mb/s floor, decisions once per base delay (at least
    /// 1 µs), + 1/64 of the line rate per decision, halved per retransmission round.
    pub fn loss_based() -> Self {
        RateConfig { law: Law::Loss, increase_1024: 16, decrease_1024: 512, ..RateConfig::default() }
    }

    /// Whether the knobs are in range.
    pub fn is_valid(&self) -> bool {
        self.min_rate >= 1 && self.min_interval_ps >= 1 && (1..1024).contains(&self.decrease_1024)
    }
}

/// The controller of one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateControl {
    rate: u64,
    base_rtt: u64,
    queueing: u64,
    acked: u64,
    mark: Option<(u64, u64)>,
    ack_rate: u64,
}

impl RateControl {
    /// A controller starting at `line_rate` [bytes/s].
    pub fn new(line_rate: u64) -> Self {
        RateControl { rate: line_rate, base_rtt: u64::MAX, queueing: 0, acked: 0, mark: None, ack_rate: 0 }
    }

    /// The sending rate [bytes/s].
    pub fn rate(&self) -> u64 {
        self.rate
    }

    /// The last ACK rate measured [bytes/s] (0 before the first interval).
    pub fn ack_rate(&self) -> u64 {
        self.ack_rate
    }

    /// The smallest round trip seen [ps] (`u64::MAX` before the first sample).
    pub fn base_rtt(&self) -> u64 {
        self.base_rtt
    }

    /// An ACK at `now` [ps] acknowledged `bytes` wire bytes; `rtt` is the round trip of its
    /// newest frame when that frame was sent only once.
    pub fn on_ack(&mut self, cfg: &RateConfig, line_rate: u64, now: u64, bytes: u64, rtt: Option<u64>) {
        self.acked += bytes;
        if let Some(rtt) = rtt {
            self.base_rtt = self.base_rtt.min(rtt);
            self.queueing = rtt - self.base_rtt;
        }
        let Some((t0, b0)) = self.mark else {
            self.mark = Some((now, self.acked));
            return;
        };
        let interval = if self.base_rtt == u64::MAX { cfg.min_interval_ps } else { self.base_rtt };
        let dt = now - t0;
        if dt < interval.max(cfg.min_interval_ps) {
            return;
        }
        self.ack_rate = ((self.acked - b0) as u128 * 1_000_000_000_000 / dt as u128) as u64;
        self.mark = Some((now, self.acked));
        if cfg.law == Law::Loss {
            let step = (line_rate as u128 * cfg.increase_1024 as u128 / 1024) as u64;
            self.rate = self.rate.saturating_add(step.max(1)).clamp(cfg.min_rate.min(line_rate), line_rate);
            return;
        }
        self.rate = if self.queueing > cfg.target_queue_ps {
            // Below what the bottleneck delivered, so the queue drains; a deep queue, twice as fast.
            let deep = if self.queueing > 8 * cfg.target_queue_ps { 2 } else { 1 };
            (self.ack_rate as u128 * cfg.decrease_1024 as u128 / 1024) as u64 / deep
        } else {
            self.rate.saturating_add((self.rate * cfg.increase_1024 / 1024).max(1))
        }
        .clamp(cfg.min_rate.min(line_rate), line_rate);
    }

    /// A retransmission round started: a loss-based controller backs off; a delay-based one
    /// has already acted on the queueing that preceded the loss.
    pub fn on_loss(&mut self, cfg: &RateConfig, line_rate: u64) {
        if cfg.law == Law::Loss {
            let lower = (self.rate as u128 * cfg.decrease_1024 as u128 / 1024) as u64;
            self.rate = lower.clamp(cfg.min_rate.min(line_rate), line_rate);
        }
    }

    /// How long a destination waits after sending `wire_bytes` at this rate [ps].
    pub fn gap_ps(&self, wire_bytes: usize) -> u64 {
        (wire_bytes as u128 * 1_000_000_000_000).div_ceil(self.rate.max(1) as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn falls_below_the_ack_rate_on_queueing_and_rises_without() {
        let cfg = RateConfig::default();
        let line = 1_250_000_000;
        let mut c = RateControl::new(line);
        c.on_ack(&cfg, line, 0, 1000, Some(5_000_000));
        // 10 µs later: 12,500 bytes acknowledged (1.25 GB/s) with 3 µs of queueing.
        c.on_ack(&cfg, line, 10_000_000, 12_500, Some(8_000_000));
        assert_eq!((c.base_rtt(), c.ack_rate()), (5_000_000, 1_250_000_000));
        assert_eq!(c.rate(), 1_250_000_000 * 7 / 8);
        // No queueing: up by 1/16.
        c.on_ack(&cfg, line, 20_000_000, 10_000, Some(5_000_000));
        assert_eq!(c.rate(), 1_250_000_000 * 7 / 8 * 17 / 16);
        // Deep queueing (20 µs): half of 7/8 of the ACK rate (1 GB/s here).
        c.on_ack(&cfg, line, 30_000_000, 10_000, Some(25_000_000));
        assert_eq!(c.rate(), 1_000_000_000 * 7 / 8 / 2);
        assert_eq!(c.gap_ps(1250), 1250 * 1_000_000_000_000 / c.rate() + 1);
    }
}
