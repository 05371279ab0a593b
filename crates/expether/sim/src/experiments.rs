//! The experiments of seed 002 §4.2 on a platform, each giving the numbers the seed states
//! (expether.md §9) next to the model's. Settings the seed does not give come from the
//! platform's `[experiments]` section.
//!
//! Set-ups (§4.2.1-§4.2.2): the PCIe SSD behind ExpEther over `ethernet.paths` paths (2 x 10GbE
//! in the prototype), with or without a switch (Fig. 4.3); the GPU over one path, no switch
//! (§4.2.1); the RAID-0 over one 10GbE path (Fig. 4.9), aggregating up to `bridge.max_tlps` TLPs
//! (10, §4.2.2) or one. The SSD and GPU experiments of §4.2.1 ran on the first prototype,
//! before aggregation (§4.2.2 describes the aggregation prototype separately): one TLP per
//! frame (Fig. 3.4(a)).

use crate::block::BlockJob;
use crate::platform::Platform;
use crate::run::{self, Attach, BlockResult, RunOptions};
use crate::SimError;
use expether_model::{SsspGraph, Verdict};

/// A seed number: value, unit and where it is stated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seed {
    /// The value.
    pub value: f64,
    /// Where the seed states it.
    pub source: &'static str,
}

/// Fig. 4.4(a): random-read IOPS do not drop when the SSD is disaggregated.
pub const READ_IOPS_RATIO: Seed = Seed { value: 1.0, source: "seed 002 §4.2.1, Fig. 4.4(a): no loss" };
/// Fig. 4.4(b): random-write IOPS fall by 14 % with a switch in the path.
pub const WRITE_IOPS_LOSS: Seed = Seed { value: 14.0, source: "seed 002 §4.2.1, Fig. 4.4(b): -14 % with a switch" };
/// Fig. 4.6(b): write bandwidth falls by 25 % on average over the block sizes.
pub const WRITE_BW_LOSS: Seed = Seed { value: 25.0, source: "seed 002 §4.2.1, Fig. 4.6(b): -25 % on average" };
/// Fig. 4.7: the SSD stops working at 0.4 % frame loss.
pub const LOSS_LIMIT: Seed = Seed { value: 0.4, source: "seed 002 §4.2.1, Fig. 4.7: fails at >= 0.4 % loss" };
/// Fig. 4.8: SSSP takes 27 % longer on average.
pub const SSSP_OVERHEAD: Seed = Seed { value: 27.0, source: "seed 002 §4.2.1, Fig. 4.8: +27 % on average" };
/// Fig. 4.10(a): aggregation gains 41 % on reads with 4 SSDs.
pub const AGG_READ_GAIN: Seed = Seed { value: 41.0, source: "seed 002 §4.2.2, Fig. 4.10(a): +41 % with 4 SSDs" };
/// Fig. 4.10(b): aggregation gains 37 % on writes at best.
pub const AGG_WRITE_GAIN: Seed = Seed { value: 37.0, source: "seed 002 §4.2.2, Fig. 4.10(b): +37 % at best" };

/// Table 4.1 [us]: (write, bytes, aggregation, latency).
pub const TABLE_4_1: [(bool, u64, bool, f64); 8] = [
    (false, 4096, true, 70.68),
    (false, 4096, false, 69.5),
    (false, 64 << 20, true, 65_180.0),
    (false, 64 << 20, false, 91_622.0),
    (true, 4096, true, 98.18),
    (true, 4096, false, 98.21),
    (true, 64 << 20, true, 65_038.0),
    (true, 64 << 20, false, 89_993.0),
];

/// The source of Table 4.1.
pub const TABLE_4_1_SOURCE: &str = "seed 002 §4.2.2, Table 4.1";

fn opts() -> RunOptions {
    RunOptions::default()
}

/// The SSD behind ExpEther as in Fig. 4.3(b): `ethernet.paths` paths, one TLP per frame.
pub fn ssd_attach(p: &Platform, switch: bool) -> Attach {
    Attach::ExpEther { paths: p.paths, switch, max_tlps: 1 }
}

/// One point of Fig. 4.4.
#[derive(Debug, Clone, Copy)]
pub struct IopsPoint {
    /// Writes or reads.
    pub write: bool,
    /// fio iodepth.
    pub iodepth: u32,
    /// IOPS with the SSD in the host.
    pub local: f64,
    /// Behind ExpEther, bridges cabled directly.
    pub direct: f64,
    /// Behind ExpEther with a switch.
    pub switched: f64,
}

/// Fig. 4.4: 4 KB random read and write IOPS against iodepth.
pub fn iops(p: &Platform) -> Result<Vec<IopsPoint>, SimError> {
    let mut out = Vec::new();
    for write in [false, true] {
        for &iodepth in &p.experiments.iodepths {
            let job = BlockJob { write, bytes: 4096, iodepth, ios: p.experiments.iops_ios };
            let d = &p.ssd.timing;
            let run = |a| run::block(p, d, a, job, &opts()).map(|r| r.iops);
            out.push(IopsPoint {
                write,
                iodepth,
                local: run(Attach::Local)?,
                direct: run(ssd_attach(p, false))?,
                switched: run(ssd_attach(p, true))?,
            });
        }
    }
    Ok(out)
}

/// Mean over iodepths of switched / local IOPS, for reads or writes.
pub fn iops_ratio(points: &[IopsPoint], write: bool) -> f64 {
    let r: Vec<f64> = points.iter().filter(|p| p.write == write).map(|p| p.switched / p.local).collect();
    r.iter().sum::<f64>() / r.len() as f64
}

/// One point of Fig. 4.6.
#[derive(Debug, Clone, Copy)]
pub struct BandwidthPoint {
    /// Writes or reads.
    pub write: bool,
    /// Block size [bytes].
    pub block: u64,
    /// Bandwidth with the SSD in the host [bytes/s].
    pub local: f64,
    /// Behind ExpEther (no switch) [bytes/s].
    pub expether: f64,
}

/// Fig. 4.6: bandwidth against block size at iodepth 1.
pub fn bandwidth(p: &Platform) -> Result<Vec<BandwidthPoint>, SimError> {
    let mut out = Vec::new();
    for write in [false, true] {
        for &block in &p.experiments.block_sizes {
            let ios = (p.experiments.bandwidth_bytes / block).clamp(1, 1 << 20) as u32;
            let job = BlockJob { write, bytes: block, iodepth: 1, ios };
            let d = &p.ssd.timing;
            let run = |a| run::block(p, d, a, job, &opts()).map(|r| r.bandwidth);
            out.push(BandwidthPoint { write, block, local: run(Attach::Local)?, expether: run(ssd_attach(p, false))? });
        }
    }
    Ok(out)
}

/// Mean loss over block sizes [%] (1 - ExpEther / local), for reads or writes.
pub fn bandwidth_loss(points: &[BandwidthPoint], write: bool) -> f64 {
    let r: Vec<f64> =
        points.iter().filter(|p| p.write == write).map(|p| 100.0 * (1.0 - p.expether / p.local)).collect();
    r.iter().sum::<f64>() / r.len() as f64
}

/// One point of Fig. 4.10.
#[derive(Debug, Clone, Copy)]
pub struct AggregationPoint {
    /// Writes or reads.
    pub write: bool,
    /// SSDs in the RAID-0.
    pub drives: u32,
    /// Bandwidth without aggregation (one TLP per frame) [bytes/s].
    pub without: f64,
    /// With aggregation [bytes/s].
    pub with: f64,
    /// Mean TLPs per data frame with aggregation (the direction carrying the data).
    pub tlps_mean: f64,
    /// Their standard deviation.
    pub tlps_std: f64,
}

impl AggregationPoint {
    /// The gain of aggregation [%].
    pub fn gain(&self) -> f64 {
        100.0 * (self.with / self.without - 1.0)
    }
}

/// Fig. 4.10: the RAID-0 of 1-`raid.drives` SSDs over one 10GbE path, with and without
/// aggregation.
pub fn aggregation(p: &Platform) -> Result<Vec<AggregationPoint>, SimError> {
    let e = &p.experiments;
    let mut out = Vec::new();
    for write in [false, true] {
        for drives in 1..=p.raid.drives {
            let d = p.raid.with_drives(drives);
            let job =
                BlockJob { write, bytes: e.aggregation_block, iodepth: e.aggregation_iodepth, ios: e.aggregation_ios };
            let run =
                |max_tlps| run::block(p, &d, Attach::ExpEther { paths: 1, switch: false, max_tlps }, job, &opts());
            let without = run(1)?;
            let with = run(p.proto.max_tlps)?;
            let (tlps_mean, tlps_std) = data_direction(&with, write);
            out.push(AggregationPoint {
                write,
                drives,
                without: without.bandwidth,
                with: with.bandwidth,
                tlps_mean,
                tlps_std,
            });
        }
    }
    Ok(out)
}

/// TLPs per frame in the direction of the data: device to host for reads, host to device for
/// writes.
fn data_direction(r: &BlockResult, write: bool) -> (f64, f64) {
    let side = if write { crate::fabric::Side::Host } else { crate::fabric::Side::Device };
    r.path.map(|s| s.tlps_per_frame(side)).unwrap_or((0.0, 0.0))
}

/// One cell of Table 4.1.
#[derive(Debug, Clone, Copy)]
pub struct LatencyPoint {
    /// Writes or reads.
    pub write: bool,
    /// Bytes per I/O.
    pub bytes: u64,
    /// With aggregation.
    pub aggregation: bool,
    /// Mean latency [us].
    pub latency_us: f64,
    /// The seed's value [us].
    pub seed: f64,
}

/// Table 4.1: one I/O at a time (fio threads = 1, iodepth 1), 4 KB and 64 MB, with and without
/// aggregation, on the RAID-0 of `experiments.latency_drives` SSDs over one 10GbE path.
pub fn latency(p: &Platform) -> Result<Vec<LatencyPoint>, SimError> {
    let d = p.raid.with_drives(p.experiments.latency_drives);
    TABLE_4_1
        .iter()
        .map(|&(write, bytes, aggregation, seed)| {
            let ios = if bytes <= 4096 { 64 } else { 1 };
            let job = BlockJob { write, bytes, iodepth: 1, ios };
            let max_tlps = if aggregation { p.proto.max_tlps } else { 1 };
            let r = run::block(p, &d, Attach::ExpEther { paths: 1, switch: false, max_tlps }, job, &opts())?;
            Ok(LatencyPoint { write, bytes, aggregation, latency_us: r.mean_latency_us, seed })
        })
        .collect()
}

/// One graph of Fig. 4.8.
#[derive(Debug, Clone, Copy)]
pub struct SsspPoint {
    /// Vertices.
    pub vertices: u64,
    /// Time with the GPU in the host [us].
    pub local_us: f64,
    /// Behind ExpEther, one path, no switch [us].
    pub expether_us: f64,
}

impl SsspPoint {
    /// The overhead of ExpEther [%].
    pub fn overhead(&self) -> f64 {
        100.0 * (self.expether_us / self.local_us - 1.0)
    }
}

/// Fig. 4.8: SSSP on the GPU for every graph size.
pub fn sssp(p: &Platform) -> Result<Vec<SsspPoint>, SimError> {
    p.sssp
        .vertices
        .iter()
        .map(|&vertices| {
            let g = SsspGraph { vertices, degree: p.sssp.degree, iterations: p.sssp.iterations };
            let (local, _) = run::sssp(p, &g, Attach::Local, &opts())?;
            let path = Attach::ExpEther { paths: 1, switch: false, max_tlps: 1 };
            let (remote, _) = run::sssp(p, &g, path, &opts())?;
            Ok(SsspPoint { vertices, local_us: local.as_us_f64(), expether_us: remote.as_us_f64() })
        })
        .collect()
}

/// One loss rate of Fig. 4.7.
#[derive(Debug, Clone)]
pub struct LossPoint {
    /// Frame loss on each link.
    pub loss: f64,
    /// What became of the SSD.
    pub verdict: Verdict,
    /// Bandwidth while it worked [bytes/s].
    pub bandwidth: f64,
    /// Mean I/O latency [us].
    pub mean_latency_us: f64,
    /// Retransmission rounds of both bridges.
    pub rounds: u64,
}

/// Fig. 4.7: the SSD over ExpEther (this platform's Ethernet, the seed used 1GbE) under random
/// frame loss.
pub fn loss(p: &Platform) -> Result<Vec<LossPoint>, SimError> {
    let e = &p.experiments;
    let d = &p.ssd.timing;
    e.loss_rates
        .iter()
        .map(|&loss| {
            let job = BlockJob { write: false, bytes: e.loss_block, iodepth: e.loss_iodepth, ios: e.loss_ios };
            let o = RunOptions { loss, seed: 7, ..RunOptions::default() };
            let r = run::block(p, d, ssd_attach(p, false), job, &o)?;
            let path = r.path.unwrap_or_default();
            let verdict = p.ssd.tolerance.judge(path.failed_at.is_some(), r.worst);
            let rounds = path.bridges.iter().map(|b| b.dup_ack_rounds + b.timeout_rounds).sum();
            Ok(LossPoint { loss, verdict, bandwidth: r.bandwidth, mean_latency_us: r.mean_latency_us, rounds })
        })
        .collect()
}
