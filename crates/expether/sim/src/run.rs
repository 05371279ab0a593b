//! One run of a workload on a platform: a block-I/O job or the SSSP loop, with the device in a
//! host slot or behind ExpEther.

use crate::block::{BlockDevice, BlockHost, BlockJob};
use crate::ethpath::{EtherPath, PathStats};
use crate::fabric::{Fabric, Local};
use crate::gpu::{GpuDevice, GpuHost};
use crate::platform::Platform;
use crate::system::System;
use crate::SimError;
use base::SimTime;
use expether_model::{BlockTiming, SsspGraph};

/// Where the device sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// In a PCIe slot of the host (the baseline of every §4.2 comparison).
    Local,
    /// Behind ExpEther.
    ExpEther {
        /// Ethernet paths between the bridges.
        paths: u8,
        /// An Ethernet switch between them (Fig. 4.3(b)).
        switch: bool,
        /// Most TLPs per frame (1 = no aggregation).
        max_tlps: u8,
    },
}

/// Options of a run beyond the workload.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Frame loss on every Ethernet link.
    pub loss: f64,
    /// Seed of the loss generator.
    pub seed: u64,
    /// Record a Chrome trace.
    pub trace: bool,
    /// Stop at this virtual time (zero: one hour).
    pub limit: SimTime,
}

/// What a block-I/O run measured.
#[derive(Debug, Clone, Default)]
pub struct BlockResult {
    /// I/Os finished.
    pub completed: u32,
    /// I/Os per second.
    pub iops: f64,
    /// Bytes per second.
    pub bandwidth: f64,
    /// Mean latency of an I/O [us].
    pub mean_latency_us: f64,
    /// The slowest I/O, or the oldest unfinished one when the run stopped early.
    pub worst: SimTime,
    /// Counters of the ExpEther path.
    pub path: Option<PathStats>,
    /// Why the run stopped early, if it did.
    pub stopped: Option<String>,
    /// The Chrome trace, if asked for.
    pub trace: Option<String>,
}

fn fabric(p: &Platform, device: &BlockTiming, attach: Attach, o: &RunOptions) -> Result<Fabric, SimError> {
    Ok(match attach {
        Attach::Local => Fabric::Local(Box::new(Local::new(&p.pcie_for(device)))),
        Attach::ExpEther { paths, switch, max_tlps } => {
            let mut spec = p.path(paths, switch, max_tlps, device);
            spec.loss = o.loss;
            spec.seed = o.seed;
            spec.trace = o.trace;
            Fabric::Ether(Box::new(EtherPath::new(&spec).map_err(SimError::Config)?))
        }
    })
}

/// Runs `job` against `device`.
pub fn block(
    p: &Platform,
    device: &BlockTiming,
    attach: Attach,
    job: BlockJob,
    o: &RunOptions,
) -> Result<BlockResult, SimError> {
    if job.ios == 0 || job.iodepth == 0 || job.bytes == 0 || !job.bytes.is_multiple_of(4096) || job.bytes > 1 << 30 {
        return Err(SimError::Config(format!(
            "a job needs ios and iodepth >= 1 and a block size that is a multiple of 4 KiB up to 1 GiB (got {} B)",
            job.bytes
        )));
    }
    let fabric = fabric(p, device, attach, o)?;
    let host = BlockHost::new(p.host, job, device.max_payload, p.pcie.read_completion_boundary, o.trace);
    let dev = BlockDevice::new(*device, job, o.trace);
    let mut sys = System::new(fabric, host, dev, o.trace);
    let limit = if o.limit == SimTime::ZERO { SimTime::from_us(3_600_000_000) } else { o.limit };
    let outcome = sys.run(|h| h.is_done(), limit);
    let mut r = BlockResult { path: sys.fabric.ether().map(|e| e.stats()), ..BlockResult::default() };
    match outcome {
        Ok(_) => {}
        Err(e @ (SimError::Stalled(_) | SimError::TimeLimit(_))) => r.stopped = Some(e.to_string()),
        Err(e) => return Err(e),
    }
    let h = &sys.host;
    r.completed = h.completed();
    let elapsed = h.finished.as_ps() as f64 / 1e12;
    if r.completed > 0 && elapsed > 0.0 {
        r.iops = f64::from(r.completed) / elapsed;
        r.bandwidth = r.iops * job.bytes as f64;
        r.mean_latency_us = h.latencies.iter().map(|l| l.as_us_f64()).sum::<f64>() / h.latencies.len() as f64;
    }
    r.worst = h.latencies.iter().copied().max().unwrap_or(SimTime::ZERO);
    if r.stopped.is_some() {
        if let Some(t) = h.issued_at(h.completed()) {
            r.worst = r.worst.max(sys.now().saturating_sub(t));
        }
    }
    r.trace = sys.trace_json();
    Ok(r)
}

/// Runs the SSSP loop on `graph`; returns its time and, if asked, the trace.
pub fn sssp(
    p: &Platform,
    graph: &SsspGraph,
    attach: Attach,
    o: &RunOptions,
) -> Result<(SimTime, Option<String>), SimError> {
    let fabric = fabric(p, &p.ssd.timing, attach, o)?;
    let host = GpuHost::new(p.gpu, p.host, graph, o.trace);
    let dev = GpuDevice::new(p.gpu, graph);
    let mut sys = System::new(fabric, host, dev, o.trace);
    let t = sys.run(|h| h.finished.is_some(), SimTime::from_us(3_600_000_000))?;
    Ok((t, sys.trace_json()))
}
