//! The DMA allgather on device buffers without `cudaMemcpy`: one node-local DMA reads this
//! rank's block from the caller's send buffer (a handle on it for the call) into its slot of
//! the host work area, the blocks travel between the work areas as for host buffers, and one
//! node-local block-stride DMA moves the area's `n` blocks into the receive buffer
//! (`crate::local`). PEACH2 reads the GPU once per block, not once per peer: its reads of GPU
//! memory are the slow direction (2.6 GB/s on HA-PACS/TCA, seed 001, against 6.7 GB/s from host
//! memory, `platforms/ha-pacs-tca.toml`); the writes into the GPU are posted.
//!
//! Each rank chooses alone (the area is host memory everywhere): it takes this path where its
//! buffers are device memory and its blocks whole 16-byte units starting on 16 bytes of the
//! model's addresses (DMA source and destination agree in their low 4 bits), and stages with
//! `cudaMemcpy` otherwise.

use crate::coll::Coll;
use crate::device::DMA_ALIGN;
use crate::error::CollResult;
use crate::local::LocalCopy;
use crate::user::UserBuf;
use tca_proto::{Fabric, Handle};

/// The caller's buffers, registered for one DMA allgather.
#[derive(Debug)]
pub(crate) struct DevicePlan {
    /// This rank's block (`size` bytes).
    send: Handle,
    /// The whole receive buffer (`size * n` bytes).
    recv: Handle,
}

impl Coll {
    /// Registers the buffers where this rank can take the device path.
    pub(crate) fn device_plan(
        &self,
        f: &dyn Fabric,
        send: UserBuf,
        send_off: u64,
        recv: UserBuf,
        size: u64,
    ) -> CollResult<Option<DevicePlan>> {
        if recv.gpu().is_none() || send.gpu().is_none() || !size.is_multiple_of(DMA_ALIGN) {
            return Ok(None);
        }
        let Some(s) = send.handle(f, send_off, size, DMA_ALIGN)? else { return Ok(None) };
        match recv.handle(f, 0, size * u64::from(self.n), DMA_ALIGN)? {
            Some(r) => Ok(Some(DevicePlan { send: s, recv: r })),
            None => {
                f.destroy_handle(&s)?;
                Ok(None)
            }
        }
    }

    /// Releases the plan's handles.
    pub(crate) fn drop_plan(f: &dyn Fabric, plan: Option<DevicePlan>) -> CollResult<()> {
        if let Some(p) = plan {
            f.destroy_handle(&p.send)?;
            f.destroy_handle(&p.recv)?;
        }
        Ok(())
    }

    /// This rank's block, bytes `off .. off + q`, into byte `at` of the work area by one
    /// node-local DMA.
    pub(crate) fn device_block_in(
        &mut self,
        f: &dyn Fabric,
        plan: &DevicePlan,
        off: u64,
        at: u64,
        q: u64,
    ) -> CollResult<()> {
        let area = self.area.as_ref().expect("an area").mine;
        let c = LocalCopy {
            dst: &area,
            dst_off: at,
            dst_pitch: q,
            src: &plan.send,
            src_off: off,
            src_pitch: q,
            width: q,
            count: 1,
        };
        self.local_copy(f, c)
    }

    /// The area's `n` slots of `q` bytes (`q` a multiple of 16) into bytes `off .. off + q`
    /// of every block of the receive buffer by one node-local block-stride DMA.
    pub(crate) fn device_blocks_out(
        &mut self,
        f: &dyn Fabric,
        plan: &DevicePlan,
        off: u64,
        q: u64,
        size: u64,
    ) -> CollResult<()> {
        let area = self.area.as_ref().expect("an area").mine;
        let c = LocalCopy {
            dst: &plan.recv,
            dst_off: off,
            dst_pitch: size,
            src: &area,
            src_off: 0,
            src_pitch: q,
            width: q,
            count: u64::from(self.n),
        };
        self.local_copy(f, c)
    }
}
