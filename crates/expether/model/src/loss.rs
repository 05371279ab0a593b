//! When a device behind ExpEther stops working under frame loss (seed 002 §4.2.1, Fig. 4.7;
//! expether.md §9.5): the seed reports that the SSD no longer worked at 0.4 % loss or more, with
//! the bridge declaring a path failure after 3 consecutive losses. It does not say which of the
//! two gave way first, so the model names both, explicitly:
//!
//! - the bridge declares the path failed (`Event::PathFailed` of expether-proto): its TLPs are
//!   dropped, the device's requests are never answered, and the device is lost to the host;
//! - one I/O takes longer than the device and its driver tolerate (`io_timeout`): an NVMe
//!   controller that waits that long for its data declares a fatal error (an assumption about
//!   the device; the seed gives no timer).

use base::SimTime;

/// The tolerance of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossTolerance {
    /// The longest I/O the device survives.
    pub io_timeout: SimTime,
}

/// What a run under loss came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every I/O finished in time and the path held.
    Works,
    /// The bridge declared the path failed.
    PathFailed,
    /// An I/O took longer than `io_timeout`.
    TimedOut,
}

impl LossTolerance {
    /// The verdict on a run whose bridges reported `path_failed` and whose slowest I/O (or the
    /// oldest unfinished one) took `worst`.
    pub fn judge(&self, path_failed: bool, worst: SimTime) -> Verdict {
        if path_failed {
            Verdict::PathFailed
        } else if worst > self.io_timeout {
            Verdict::TimedOut
        } else {
            Verdict::Works
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_path_or_a_late_io_stops_the_device() {
        let t = LossTolerance { io_timeout: SimTime::from_us(500) };
        assert_eq!(t.judge(false, SimTime::from_us(100)), Verdict::Works);
        assert_eq!(t.judge(false, SimTime::from_us(501)), Verdict::TimedOut);
        assert_eq!(t.judge(true, SimTime::from_us(1)), Verdict::PathFailed);
    }
}
