//! The intra-node DMA experiment of seed 000 §4.1 (Fig. 4-6) on node 0 of a [`Cluster`]: one
//! chain on channel 0 from host or GPU memory to host or GPU memory of the same node. The driver
//! kicks the channel and polls its status register; the time runs from just before the kick until
//! the poll sees the end, best of 5 measurements as in the seed.

pub use crate::cluster::DmaMode;
use crate::cluster::{run_to_idle, Cluster, DmaJob, JobEntry, Output};
use tca_proto::descriptor::Descriptor;
use crate::platform::Platform;
use crate::router::{AddressMap, Target};
use base::{SimTime, Trace};

/// Where a DMA buffer lives on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    Host,
    Gpu(u32),
}

/// One intra-node DMA experiment: `count` transfers of `size` bytes from `src` to `dst`, as one
/// chain on channel 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaRun {
    pub src: Endpoint,
    pub dst: Endpoint,
    pub mode: DmaMode,
    /// Bytes per transfer (per descriptor).
    pub size: u64,
    /// Transfers (descriptors) in the chain.
    pub count: u32,
}

/// What one run measured in virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaResult {
    /// From just before the kick until the polling CPU sees the channel done.
    pub elapsed: SimTime,
    /// When the last write left PEACH2 (the controller's notion of done).
    pub sent: SimTime,
    pub bytes: u64,
    pub events: u64,
    /// Bytes that arrived at the destination (checked equal to `bytes`).
    pub delivered: u64,
    /// When each descriptor was decoded and its reads could start, by descriptor index.
    pub decoded: Vec<SimTime>,
}

impl DmaResult {
    /// Bandwidth as the seed computes it [bytes/s].
    pub fn bandwidth(&self) -> f64 {
        self.bytes as f64 / (self.elapsed.as_ps() as f64 * 1e-12)
    }
}

/// Measurements per point, of which the best is kept (seed 000 §4.1: best of 5).
pub const MEASUREMENTS: u64 = 5;

/// A run the model cannot carry out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    #[error("transfer size {0} B is not a multiple of 4")]
    SizeNotMultipleOf4(u64),
    #[error("transfer size and count must be positive")]
    Empty,
    #[error("register mode holds at most {slots} requests, {count} asked")]
    TooManyForRegisters { slots: u32, count: u32 },
    #[error("GPU {gpu} does not exist (the node has {gpus})")]
    NoSuchGpu { gpu: u32, gpus: u32 },
    #[error("{bytes} B of buffers do not fit in the {region} B mapped for the {what}")]
    DoesNotFit { bytes: u64, region: u64, what: &'static str },
    #[error("transfer size {size} B exceeds the descriptor's 4 GiB limit")]
    TooLarge { size: u64 },
}

/// Runs one DMA experiment on the node of `platform`.
///
/// # Errors
/// [`DmaError`] for sizes the controller cannot move or buffers the address map cannot hold.
pub fn run_dma(platform: &Platform, run: &DmaRun, trace: Option<&mut Trace>) -> Result<DmaResult, DmaError> {
    let gpus = platform.gpu.sockets.len() as u32;
    if run.size == 0 || run.count == 0 {
        return Err(DmaError::Empty);
    }
    if !run.size.is_multiple_of(4) {
        return Err(DmaError::SizeNotMultipleOf4(run.size));
    }
    if run.size > u32::MAX as u64 {
        return Err(DmaError::TooLarge { size: run.size });
    }
    if run.mode == DmaMode::Register && run.count > platform.peach2.register_slots {
        return Err(DmaError::TooManyForRegisters { slots: platform.peach2.register_slots, count: run.count });
    }
    for e in [run.src, run.dst] {
        if let Endpoint::Gpu(g) = e {
            if g >= gpus {
                return Err(DmaError::NoSuchGpu { gpu: g, gpus });
            }
        }
    }
    let map = AddressMap::new(&platform.address_map, gpus);
    let total = run.size * run.count as u64;
    // Source at the start of its region; destination at the start of its own region, or in the
    // second half when both are the same memory. The descriptor table sits at the top of host memory.
    let table_bytes = (run.count as u64 * platform.peach2.descriptor_bytes).next_multiple_of(4096);
    let region = |e: Endpoint| match e {
        Endpoint::Host => map.host_bytes - table_bytes,
        Endpoint::Gpu(_) => map.gpu_bytes,
    };
    let same = run.src == run.dst;
    for (e, what) in [(run.src, "source"), (run.dst, "destination")] {
        let room = if same { region(e) / 2 } else { region(e) };
        if total > room {
            return Err(DmaError::DoesNotFit { bytes: total, region: room, what });
        }
    }
    let target = |e: Endpoint, off: u64| match e {
        Endpoint::Host => Target::Host(off),
        Endpoint::Gpu(g) => Target::Gpu(g, off),
    };
    let src0 = map.global(0, target(run.src, 0));
    let dst0 = map.global(0, target(run.dst, if same { region(run.dst) / 2 } else { 0 }));
    let entries = (0..run.count as u64)
        .map(|i| JobEntry {
            descriptor: Descriptor::copy(src0 + i * run.size, dst0 + i * run.size, run.size as u32),
            notify: Vec::new(),
            internal: false,
        })
        .collect();
    let job = DmaJob { mode: run.mode, entries, table_offset: map.host_bytes - table_bytes, id: 0 };

    let mut cluster = Cluster::new(platform);
    let mut trace = trace;
    if let Some(t) = trace.as_deref_mut() {
        cluster.register_tracks(t);
    }
    cluster.kick(SimTime::ZERO, 0, 0, job).expect("the run was validated above");
    let mut delivered = 0;
    let mut sent = None;
    for (at, out) in run_to_idle(&mut cluster, trace) {
        match out {
            Output::DmaLanded { len, .. } => delivered += len,
            Output::ChannelDone { .. } => sent = Some(at),
            _ => {}
        }
    }
    let sent = sent.expect("a kicked job always finishes");
    assert_eq!(delivered, total, "the model lost or duplicated data");
    Ok(DmaResult {
        // The driver polls the status register right after the kick; the seed keeps the best of
        // 5 measurements (seed 000 §4.1).
        elapsed: cluster.poll_register_best_of(SimTime::ZERO, sent, MEASUREMENTS),
        sent,
        bytes: total,
        events: cluster.events(),
        delivered,
        decoded: cluster.decoded(0, 0).to_vec(),
    })
}
