//! The latency of an ExpEther bridge (seed 002 §4.1, §4.2.1; expether.md §8).
//!
//! What the seed gives: the prototype is an FPGA; its user logic (the PCIe-to-Ethernet bridge,
//! the forwarding engine and the multipath module of Fig. 4.1) is 47 % of the bridge's total
//! latency, the rest being hard IP (PCIe and Ethernet PHY/MAC); an ASIC could clock the user
//! logic about twice as fast, which cuts the total by 24 %. What it does not give is the total
//! itself: that is a calibrated parameter of each platform file.
//!
//! One traversal is one direction through one bridge: a TLP in from PCIe and out in a frame, or
//! a frame in and its TLPs out to PCIe. Both directions take the same time here (an assumption).

use crate::ModelError;
use base::SimTime;

/// The latency of one bridge traversal and how it splits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BridgeTiming {
    /// Total latency of one traversal of the FPGA bridge.
    pub latency: SimTime,
    /// Share of `latency` spent in user logic (0.47 in the prototype, §4.2.1).
    pub user_logic_share: f64,
    /// How much faster than the prototype's FPGA the user logic is clocked (1 = the FPGA;
    /// about 2 for an ASIC, §4.2.1).
    pub clock_factor: f64,
}

impl BridgeTiming {
    /// The FPGA prototype's split (§4.2.1) around a total `latency`.
    pub fn fpga(latency: SimTime) -> Self {
        BridgeTiming { latency, user_logic_share: 0.47, clock_factor: 1.0 }
    }

    /// The same bridge with its user logic clocked `factor` times faster (an ASIC, §4.2.1).
    pub fn clocked(self, factor: f64) -> Self {
        BridgeTiming { clock_factor: factor, ..self }
    }

    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), ModelError> {
        if !(0.0..=1.0).contains(&self.user_logic_share) {
            return Err(ModelError("bridge.user_logic_share", format!("{} is outside 0..=1", self.user_logic_share)));
        }
        if !(self.clock_factor.is_finite() && self.clock_factor >= 1.0) {
            return Err(ModelError("bridge.clock_factor", format!("{} must be at least 1", self.clock_factor)));
        }
        Ok(())
    }

    /// One traversal: hard IP as it is, user logic divided by the clock factor.
    pub fn traversal(&self) -> SimTime {
        let ps = self.latency.as_ps() as f64;
        let user = ps * self.user_logic_share;
        SimTime::from_ps((ps - user + user / self.clock_factor).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 002 §4.2.1: doubling the clock of the 47 % user logic cuts the bridge's latency by
    /// 47 % / 2 = 23.5 %, "about 24 %".
    #[test]
    fn an_asic_clock_cuts_a_quarter() {
        let fpga = BridgeTiming::fpga(SimTime::from_ns(1000));
        assert_eq!(fpga.traversal(), SimTime::from_ns(1000));
        let asic = fpga.clocked(2.0);
        assert_eq!(asic.traversal(), SimTime::from_ns(765));
        let cut = 1.0 - asic.traversal().as_ps() as f64 / fpga.traversal().as_ps() as f64;
        assert!((cut - 0.24).abs() < 0.01, "{cut}");
        assert!(fpga.clocked(0.5).validate().is_err());
        assert!(BridgeTiming { user_logic_share: 1.2, ..fpga }.validate().is_err());
    }
}
