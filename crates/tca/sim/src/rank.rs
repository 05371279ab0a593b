//! One rank of a simulated job as a [`Fabric`]: the TCA calls of a program, carried out in
//! virtual time.
//!
//! Buffers are real memory of this process: `malloc` returns a pointer the program may use
//! (a C program reads and writes through it), and `create_handle` / `free` take such a
//! pointer. Handles carry the buffer's address in the model's PCIe window, the address the
//! model routes ([`SimRank::model_addr`] gives it for a pointer).

use crate::world::{Op, Reply};
use crate::Driver;
use base::SimTime;
use std::sync::Arc;
use tca_proto::fabric::{CopyKind, PointerInfo};
use tca_proto::{Desc, Fabric, FabricError, FabricResult, Handle, MemoryType, PioRegion, TcaError};

/// Rank `rank` of a job (a [`crate::SimJob`], or a job inside another simulator).
#[derive(Clone)]
pub struct SimRank {
    job: Arc<dyn Driver>,
    rank: u32,
}

/// A reply that is not the kind the call expects: the world broke its own contract.
fn mismatch(reply: Reply) -> FabricError {
    FabricError::with_detail(TcaError::UnexpectedCompletion, format!("unexpected reply {reply:?}"))
}

impl SimRank {
    /// Rank `rank` of `job`.
    ///
    /// # Errors
    /// [`TcaError::InvalidNode`] for a rank the job does not have.
    pub fn new(job: Arc<dyn Driver>, rank: u32) -> FabricResult<SimRank> {
        if rank >= job.ranks() {
            let detail = format!("rank {rank} of a {}-rank job", job.ranks());
            return Err(FabricError::with_detail(TcaError::InvalidNode, detail));
        }
        Ok(SimRank { job, rank })
    }

    /// This rank's number.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The job this rank belongs to.
    pub fn job(&self) -> &Arc<dyn Driver> {
        &self.job
    }

    fn call(&self, op: Op) -> FabricResult<Reply> {
        self.job.call(self.rank, op)
    }

    fn unit(&self, op: Op) -> FabricResult<()> {
        match self.call(op)? {
            Reply::Unit => Ok(()),
            other => Err(mismatch(other)),
        }
    }

    /// The address in the model's PCIe window of `ptr`, a pointer into a buffer of this rank
    /// (what a handle of it carries).
    ///
    /// # Errors
    /// [`TcaError::InvalidHandle`] for a pointer into no buffer of this rank.
    pub fn model_addr(&self, ptr: u64) -> FabricResult<u64> {
        match self.call(Op::ModelAddr { ptr })? {
            Reply::Addr(a) => Ok(a),
            other => Err(mismatch(other)),
        }
    }

    /// Socket of each GPU of the node.
    fn gpu_sockets(&self) -> FabricResult<Vec<u32>> {
        match self.call(Op::GpuSockets)? {
            Reply::Sockets(s) => Ok(s),
            other => Err(mismatch(other)),
        }
    }

    /// The simulated time now.
    pub fn now(&self) -> FabricResult<SimTime> {
        match self.call(Op::Wtime)? {
            Reply::Time(t) => Ok(t),
            other => Err(mismatch(other)),
        }
    }
}

impl Fabric for SimRank {
    fn node_id(&self) -> FabricResult<u16> {
        Ok(self.rank as u16)
    }

    fn call_within(&self, within: Option<&'static str>) {
        self.job.call_within(self.rank, within);
    }

    fn node_count(&self) -> FabricResult<u16> {
        Ok(self.job.ranks() as u16)
    }

    /// A zeroed buffer (on GPU 0 for [`MemoryType::Gpu`]); returns its pointer in this
    /// process.
    fn malloc(&self, size: u64, mem: MemoryType) -> FabricResult<u64> {
        self.malloc_on(size, mem, 0)
    }

    /// `ptr` must be the pointer `malloc` returned.
    fn free(&self, ptr: u64) -> FabricResult<()> {
        self.unit(Op::Free { addr: ptr })
    }

    /// `ptr` points into a buffer of this rank; the handle carries its model address.
    fn create_handle(&self, ptr: u64, size: u64, mem: MemoryType) -> FabricResult<Handle> {
        match self.call(Op::CreateHandle { addr: ptr, size, mem })? {
            Reply::Handle(h) => Ok(h),
            other => Err(mismatch(other)),
        }
    }

    fn destroy_handle(&self, handle: &Handle) -> FabricResult<()> {
        self.unit(Op::DestroyHandle { handle: *handle })
    }

    fn write(&self, handle: &Handle, offset: u64, data: &[u8]) -> FabricResult<()> {
        self.unit(Op::Write { handle: *handle, offset, bytes: data.to_vec() })
    }

    fn read(&self, handle: &Handle, offset: u64, out: &mut [u8]) -> FabricResult<()> {
        match self.call(Op::Read { handle: *handle, offset, len: out.len() as u64 })? {
            Reply::Bytes(b) if b.len() == out.len() => {
                out.copy_from_slice(&b);
                Ok(())
            }
            other => Err(mismatch(other)),
        }
    }

    fn desc_set(&self, channel: u8, desc: &Desc) -> FabricResult<()> {
        self.unit(Op::DescSet { channel, desc: Box::new(desc.clone()) })
    }

    fn start_dma(&self, channel: u8) -> FabricResult<()> {
        self.unit(Op::StartDma { channel })
    }

    fn wait_dmac(&self, channel: u8) -> FabricResult<()> {
        self.unit(Op::WaitDmac { channel })
    }

    fn wait_dma_recv(&self, handle: &Handle, slot: u32, tag: u32) -> FabricResult<()> {
        self.unit(Op::WaitRecv { handle: *handle, slot, tag })
    }

    fn set_pio_region(&self, handle: &Handle, offset: u64, len: u64) -> FabricResult<PioRegion> {
        handle.validate()?;
        let region = PioRegion::new(*handle, offset, len)?;
        self.unit(Op::CheckLive { handle: *handle })?;
        Ok(region)
    }

    fn send_pio(&self, region: &PioRegion, offset: u64, data: &[u8]) -> FabricResult<()> {
        match offset.checked_add(data.len() as u64) {
            Some(end) if end <= region.len => {}
            _ => return Err(TcaError::OutOfBounds.into()),
        }
        self.unit(Op::SendPio { dst: region.handle, offset: region.offset + offset, bytes: data.to_vec() })
    }

    fn send_pio_commit(&self) -> FabricResult<()> {
        // Stores leave the core in order in the model: nothing to flush.
        Ok(())
    }

    fn wait_pio(&self, handle: &Handle, offset: u64, expected: &[u8], peer: Option<u16>) -> FabricResult<()> {
        // A peer outside the job is an error even when the value is there already, as on shm.
        if peer.is_some_and(|p| u32::from(p) >= self.job.ranks()) {
            return Err(TcaError::InvalidNode.into());
        }
        self.unit(Op::WaitValue { handle: *handle, offset, bytes: expected.to_vec(), peer })
    }

    fn barrier(&self) -> FabricResult<()> {
        self.unit(Op::Barrier)
    }

    fn allgather(&self, send: &[u8]) -> FabricResult<Vec<u8>> {
        match self.call(Op::Allgather { bytes: send.to_vec() })? {
            Reply::Gathered(all) => Ok(all.concat()),
            other => Err(mismatch(other)),
        }
    }

    fn wtime(&self) -> FabricResult<f64> {
        Ok(self.now()?.as_ps() as f64 * 1e-12)
    }

    fn compute(&self, seconds: f64) -> FabricResult<()> {
        if !(seconds.is_finite() && seconds >= 0.0) {
            let detail = format!("a computation of {seconds} s");
            return Err(FabricError::with_detail(TcaError::TooLarge, detail));
        }
        let ps = seconds * 1e12;
        if ps >= u64::MAX as f64 {
            let detail = format!("a computation of {seconds} s does not fit in simulated time");
            return Err(FabricError::with_detail(TcaError::TooLarge, detail));
        }
        self.unit(Op::Compute { duration: SimTime::from_ps(ps.round() as u64) })
    }

    fn finalize(&self) -> FabricResult<()> {
        self.job.finish(self.rank);
        Ok(())
    }

    /// The platform's GPUs per node.
    fn gpu_count(&self) -> FabricResult<u32> {
        Ok(self.gpu_sockets()?.len() as u32)
    }

    /// A buffer on GPU `gpu` of this rank's node for [`MemoryType::Gpu`] (what `cudaSetDevice`
    /// selects in a CUDA program); the pointer in this process.
    fn malloc_on(&self, size: u64, mem: MemoryType, gpu: u32) -> FabricResult<u64> {
        match self.call(Op::Malloc { size, mem, gpu })? {
            Reply::Addr(a) => Ok(a),
            other => Err(mismatch(other)),
        }
    }

    /// Two GPUs behind the same CPU socket.
    fn gpu_peer_access(&self, gpu: u32, peer: u32) -> FabricResult<bool> {
        let sockets = self.gpu_sockets()?;
        let gpus = sockets.len() as u32;
        if gpu >= gpus || peer >= gpus {
            let detail = format!("GPUs {gpu} and {peer} of a node with {gpus}");
            return Err(FabricError::with_detail(TcaError::InvalidNode, detail));
        }
        Ok(crate::copy_time::peer_access(&sockets, gpu, peer))
    }

    fn pointer_info(&self, ptr: u64) -> FabricResult<PointerInfo> {
        match self.call(Op::PointerInfo { ptr })? {
            Reply::Pointer(p) => Ok(p),
            other => Err(mismatch(other)),
        }
    }

    /// Copies the bytes at once, then waits the simulated time of the copy (docs/cuda.md).
    unsafe fn memcpy(&self, dst: u64, src: u64, len: u64, kind: CopyKind) -> FabricResult<()> {
        self.unit(Op::Memcpy { dst, src, len, kind })
    }
}
