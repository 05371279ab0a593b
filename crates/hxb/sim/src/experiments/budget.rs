//! Table 2 of seed 004 (§2.3): the time between packet arrivals when k GbE links run at full
//! rate, the budget a host has to process one packet.
//!
//! Two values per cell: the seed's formula, size x 8 bit / (k x 1 Gb/s), which ignores Ethernet
//! framing (hxb.md §2); and the interval simulated on the platform's links, where each frame
//! also carries preamble, Ethernet header, FCS and the inter-frame gap.

use crate::platform::Platform;
use base::SimTime;
use ether::{Endpoint, Frame, NetworkBuilder, NicSpec};

/// One cell of Table 2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetCell {
    /// Links.
    pub links: u8,
    /// Packet size [B].
    pub size: u32,
    /// The seed's formula [us].
    pub formula_us: f64,
    /// Simulated arrival interval on k links, framing included [us].
    pub simulated_us: f64,
}

/// Frames sent per link to measure the interval.
const FRAMES_PER_LINK: u64 = 16;

/// The cell for `links` links and packets of `size` bytes of Ethernet payload.
pub fn budget(p: &Platform, links: u8, size: u32) -> Result<BudgetCell, String> {
    if links == 0 {
        return Err("links must be at least 1".into());
    }
    p.link.framing.check(size).map_err(|e| e.to_string())?;
    let mut b = NetworkBuilder::new();
    let mut pairs = vec![];
    for _ in 0..links {
        let a = b.nic(NicSpec::IDEAL, None).map_err(|e| e.to_string())?;
        let z = b.nic(NicSpec::IDEAL, None).map_err(|e| e.to_string())?;
        b.connect(Endpoint::Nic(a), Endpoint::Nic(z), p.link).map_err(|e| e.to_string())?;
        pairs.push((a, z));
    }
    let mut net = b.build();
    let n = FRAMES_PER_LINK * u64::from(links);
    for id in 0..n {
        let (a, z) = pairs[(id % u64::from(links)) as usize];
        net.inject(SimTime::ZERO, Frame { id, payload: size, src: a, dst: z }).map_err(|e| e.to_string())?;
    }
    net.run();
    let at: Vec<SimTime> = net.deliveries().iter().map(|d| d.at).collect();
    // Arrivals of the first and last frame over the frames between: k arrive per wire time.
    let span = (at[at.len() - 1] - at[0]).as_ps() as f64 / 1e6;
    let simulated_us = span / (n - u64::from(links)) as f64;
    let formula_us = f64::from(size) * 8.0 / (f64::from(links) * p.link.bits_per_second as f64 / 1e6);
    Ok(BudgetCell { links, size, formula_us, simulated_us })
}
