//! The intra-node DMA experiment of seed 000 §4.1 (Fig. 4-6), run through the protocol core
//! like any program: one chain on channel 0 of node 0 from host or GPU memory to host or GPU
//! memory of the same node. The driver kicks the channel and polls its status register; the
//! time runs from just before the kick until the poll sees the end, best of 5 measurements as
//! in the seed.
//!
//! The seed measured the controller from inside the driver, with no API fence between
//! descriptors: the hardware fetches the next descriptor while the data of the previous one
//! moves. The chain here therefore carries `tcaDMAContinue` on every entry but the last.

use crate::world::{Marker, Op, Reply, Submitted, World};
use base::{SimTime, Trace};
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, DmaMode, FabricError, MemoryType, TcaError};

/// Where a DMA buffer lives on the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// Host memory.
    Host,
    /// Memory of GPU n.
    Gpu(u32),
}

/// One intra-node DMA experiment: `count` transfers of `size` bytes from `src` to `dst`, as one
/// chain on channel 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DmaRun {
    /// Source memory.
    pub src: Endpoint,
    /// Destination memory.
    pub dst: Endpoint,
    /// Register or chaining mode.
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
    /// Bytes moved.
    pub bytes: u64,
    /// Hardware events of the run.
    pub events: u64,
    /// When each descriptor was decoded and its reads could start, by descriptor index.
    pub decoded: Vec<SimTime>,
}

impl DmaResult {
    /// Bandwidth as the seed computes it \[bytes/s\].
    pub fn bandwidth(&self) -> f64 {
        self.bytes as f64 / (self.elapsed.as_ps() as f64 * 1e-12)
    }
}

/// Measurements per point, of which the best is kept (seed 000 §4.1: best of 5).
pub const MEASUREMENTS: u64 = 5;

fn ok(s: Submitted) -> Result<Reply, FabricError> {
    match s {
        Submitted::Done(r) => r,
        Submitted::Wait(_) => Err(TcaError::UnexpectedCompletion.into()),
    }
}

/// Runs one DMA experiment on node 0 of `platform`.
///
/// # Errors
/// Sizes the controller cannot move, buffers that do not fit, a GPU the node does not have:
/// the TCA error with a line saying which.
pub fn run_dma(platform: &Platform, run: &DmaRun, mut trace: Option<&mut Trace>) -> Result<DmaResult, FabricError> {
    if run.count == 0 {
        return Err(FabricError::with_detail(TcaError::ZeroSize, "a chain of no transfers"));
    }
    let mut world = World::new(platform, 1, trace.as_deref_mut().map(std::mem::take))?;
    let buffer = |world: &mut World, e: Endpoint| {
        let (mem, gpu) = match e {
            Endpoint::Host => (MemoryType::Cpu, 0),
            Endpoint::Gpu(g) => (MemoryType::Gpu, g),
        };
        let size = run.size.checked_mul(u64::from(run.count)).ok_or(TcaError::TooLarge)?;
        let detail = || format!("{} B of {e:?} memory on a node of {}", size, platform.name);
        let Reply::Addr(addr) = ok(world.submit(0, Op::Malloc { size, mem, gpu }))
            .map_err(|e2| FabricError::with_detail(e2.error, detail()))?
        else {
            return Err(TcaError::UnexpectedCompletion.into());
        };
        match ok(world.submit(0, Op::CreateHandle { addr, size, mem }))? {
            Reply::Handle(h) => Ok::<_, FabricError>(h),
            _ => Err(TcaError::UnexpectedCompletion.into()),
        }
    };
    let src = buffer(&mut world, run.src)?;
    let dst = buffer(&mut world, run.dst)?;
    let mut desc = Desc::new();
    for i in 0..u64::from(run.count) {
        let last = i + 1 == u64::from(run.count);
        let flags = if last { DmaFlags::NONE } else { DmaFlags::CONTINUE };
        desc.set_memcpy(&dst, i * run.size, &src, i * run.size, run.size, flags, 0, 0)?;
    }
    desc.set_mode(Some(run.mode))?;
    ok(world.submit(0, Op::DescSet { channel: 0, desc: Box::new(desc) }))?;
    let start = world.now;
    ok(world.submit(0, Op::StartDma { channel: 0 }))?;
    let sent = loop {
        if let Marker::Done(t) = world.markers[0][0] {
            break t;
        }
        if world.next_event().is_none() {
            return Err(FabricError::with_detail(TcaError::Deadlock, "the channel never finished"));
        }
        world.step()?;
    };
    // The run's outcome: a failure (none is expected here) ends the experiment with its error.
    let _ = world.engines[0].wait_dma_channel(0)?;
    while world.next_event().is_some() {
        world.step()?;
    }
    if let (Some(t), Some(w)) = (trace, world.trace.take()) {
        *t = w;
    }
    Ok(DmaResult {
        // The driver polls the status register right after the kick; the seed keeps the best of
        // 5 measurements (seed 000 §4.1).
        elapsed: world.cluster.poll_register_best_of(start, sent, MEASUREMENTS) - start,
        sent: sent - start,
        bytes: run.size * u64::from(run.count),
        events: world.events(),
        decoded: world.cluster.decoded(0, 0).to_vec(),
    })
}
