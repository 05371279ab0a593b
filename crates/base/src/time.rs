use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Simulated time or duration, in integer picoseconds.
///
/// Picoseconds keep a PCIe Gen3 symbol (about 125 ps per byte on one lane) exact enough while a
/// `u64` still spans 213 days of simulated time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

impl SimTime {
    /// The start of a simulation; a zero duration.
    pub const ZERO: SimTime = SimTime(0);
    /// The latest representable time (about 213 days).
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// `ps` picoseconds.
    #[inline]
    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    /// `ns` nanoseconds; `ns` must not exceed `u64::MAX / 1000`.
    #[inline]
    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }
    /// `us` microseconds; `us` must not exceed `u64::MAX / 1_000_000`.
    #[inline]
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }
    /// The time in picoseconds.
    #[inline]
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Microseconds as a float, for reports only (never for model arithmetic).
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Time to move `bytes` at `bytes_per_second`, rounded up to the next picosecond.
    ///
    /// # Panics
    /// If `bytes_per_second` is zero.
    pub fn for_bytes(bytes: u64, bytes_per_second: u64) -> Self {
        assert!(bytes_per_second > 0, "zero bandwidth");
        let ps = (bytes as u128 * 1_000_000_000_000).div_ceil(bytes_per_second as u128);
        SimTime(ps as u64)
    }
    /// `self - other`, or zero if `other` is later.
    #[inline]
    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
    /// The later of the two.
    #[inline]
    pub fn max(self, other: SimTime) -> SimTime {
        if self >= other {
            self
        } else {
            other
        }
    }
}

impl Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_add(rhs.0).expect("simulated time overflow"))
    }
}

impl AddAssign for SimTime {
    #[inline]
    fn add_assign(&mut self, rhs: SimTime) {
        *self = *self + rhs;
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    #[inline]
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.checked_sub(rhs.0).expect("negative simulated duration"))
    }
}

impl fmt::Display for SimTime {
    /// Exact decimal microseconds, e.g. `1.234567us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:06}us", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_at_a_rate_round_up() {
        // 256 B at 4 GB/s is exactly 64 ns.
        assert_eq!(SimTime::for_bytes(256, 4_000_000_000), SimTime::from_ns(64));
        // 1 B at 3 B/s is a third of a second, rounded up.
        assert_eq!(SimTime::for_bytes(1, 3).as_ps(), 333_333_333_334);
    }

    #[test]
    fn display_is_exact() {
        assert_eq!(SimTime::from_ps(1_234_567).to_string(), "1.234567us");
    }
}
