//! One rank of a TCA job for Python, on any fabric: written once against [`tca_proto::Fabric`],
//! so a Python program runs unchanged on the simulator (`tca.peach.sim.run`) and on the shm fabric
//! (`tca run`). Method names are the fabric's (and so the C API's, see `tca_proto::fabric`).
//!
//! Every blocking call releases the GIL, so rank threads wait in parallel.

use crate::api::{fabric_error, memory_type, Desc, Handle};
use crate::coll::{type_op, with_coll};
use crate::guard::CHANNEL_TAKEN;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use tca_proto::{Fabric, FabricResult};

/// One rank of a job: the TCA API of its node.
#[pyclass(frozen, module = "tca._native")]
pub struct Rank {
    fabric: Arc<dyn Fabric>,
    /// Address `malloc` returned for each handle it made (by handle id), for `free`.
    buffers: Mutex<HashMap<u32, u64>>,
    /// The collective library, once a collective set it up.
    coll: Mutex<Option<tca_coll::Coll>>,
    /// The DMA channels (bit mask) the library set a chain on since the program's last
    /// `desc_set` there (`crate::guard`).
    taken: AtomicU8,
}

impl Rank {
    pub(crate) fn new(fabric: Arc<dyn Fabric>) -> Self {
        Rank { fabric, buffers: Mutex::new(HashMap::new()), coll: Mutex::new(None), taken: AtomicU8::new(0) }
    }

    /// Runs `f` on the fabric without the GIL and raises its error.
    fn call<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&dyn Fabric) -> FabricResult<T> + Send) -> PyResult<T> {
        let fabric = self.fabric.clone();
        py.allow_threads(move || f(fabric.as_ref())).map_err(|e| fabric_error(py, e))
    }

    fn buffers(&self) -> std::sync::MutexGuard<'_, HashMap<u32, u64>> {
        self.buffers.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl Rank {
    /// This rank's node (`tcaGetNodeId`).
    #[getter]
    fn rank(&self, py: Python<'_>) -> PyResult<u16> {
        self.call(py, |f| f.node_id())
    }
    /// Nodes of the job (`tcaGetNodeCount`).
    #[getter]
    fn size(&self, py: Python<'_>) -> PyResult<u16> {
        self.call(py, |f| f.node_count())
    }
    /// `tcaMalloc` + `tcaCreateHandle`: `size` bytes of "cpu" or "gpu" memory.
    #[pyo3(signature = (size, memory = "cpu"))]
    fn malloc(&self, py: Python<'_>, size: u64, memory: &str) -> PyResult<Handle> {
        let mem = memory_type(memory)?;
        let (addr, inner) = self.call(py, |f| {
            let addr = f.malloc(size, mem)?;
            Ok((addr, f.create_handle(addr, size, mem)?))
        })?;
        self.buffers().insert(inner.id, addr);
        Ok(Handle { inner })
    }
    /// `tcaDestroyHandle` + `tcaFree` of a buffer from `malloc`.
    fn free(&self, py: Python<'_>, handle: &Handle) -> PyResult<()> {
        let h = handle.inner;
        let Some(addr) = self.buffers().get(&h.id).copied() else {
            return Err(fabric_error(py, tca_proto::TcaError::InvalidHandle.into()));
        };
        self.call(py, |f| {
            f.destroy_handle(&h)?;
            f.free(addr)
        })?;
        self.buffers().remove(&h.id);
        Ok(())
    }
    /// Stores `data` into this rank's own buffer (a CPU store or a cudaMemcpy; no time).
    fn write(&self, py: Python<'_>, handle: &Handle, offset: u64, data: Vec<u8>) -> PyResult<()> {
        let h = handle.inner;
        self.call(py, |f| f.write(&h, offset, &data))
    }
    /// Reads `length` bytes of this rank's own buffer.
    fn read<'py>(&self, py: Python<'py>, handle: &Handle, offset: u64, length: u64) -> PyResult<Bound<'py, PyBytes>> {
        let h = handle.inner;
        let len = usize::try_from(length).map_err(|_| PyValueError::new_err(format!("length {length} too large")))?;
        let bytes = self.call(py, |f| {
            let mut out = vec![0; len];
            f.read(&h, offset, &mut out)?;
            Ok(out)
        })?;
        Ok(PyBytes::new(py, &bytes))
    }
    /// `tcaDescSet`: registers `desc` on DMA `channel`.
    fn desc_set(&self, py: Python<'_>, desc: &Desc, channel: u8) -> PyResult<()> {
        let d = desc.chain().clone();
        self.call(py, |f| f.desc_set(channel, &d))?;
        if channel < 8 {
            self.taken.fetch_and(!(1u8 << channel), Ordering::Relaxed);
        }
        Ok(())
    }
    /// `tcaStartDMADesc`: kicks `channel` (returns at once). `TcaApiError` `ChannelTaken` (and
    /// nothing runs) when a collective set its chain on `channel` since the last `desc_set`.
    fn start_dma(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        if channel < 8 && self.taken.load(Ordering::Relaxed) & (1 << channel) != 0 {
            let text = format!(
                "ChannelTaken: a collective set its chain on DMA channel {channel} since desc_set: set the chain again"
            );
            return Err(crate::api::raise(py, "TcaApiError", (text, CHANNEL_TAKEN, "ChannelTaken".to_string())));
        }
        self.call(py, |f| f.start_dma(channel))
    }
    /// `tcaWaitDMAC`: waits until `channel`'s chain is done.
    fn wait_dmac(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        self.call(py, |f| f.wait_dmac(channel))
    }
    /// `tcaWaitDMARecvDesc`: waits for a notification from `handle`'s node with (`slot`, `tag`).
    fn wait_dma_recv(&self, py: Python<'_>, handle: &Handle, slot: u32, tag: u32) -> PyResult<()> {
        let h = handle.inner;
        self.call(py, |f| f.wait_dma_recv(&h, slot, tag))
    }
    /// `tcaSetPIORegion` + `tcaSendPIO`: CPU stores of `data` into `handle` (any node) at `offset`.
    fn send_pio(&self, py: Python<'_>, handle: &Handle, offset: u64, data: Vec<u8>) -> PyResult<()> {
        let h = handle.inner;
        self.call(py, |f| {
            let region = f.set_pio_region(&h, offset, data.len() as u64)?;
            f.send_pio(&region, 0, &data)
        })
    }
    /// `tcaSendPIOCommit`.
    fn send_pio_commit(&self, py: Python<'_>) -> PyResult<()> {
        self.call(py, |f| f.send_pio_commit())
    }
    /// `tcaWaitPIO`: waits until the bytes at `offset` of this rank's own buffer equal `data`;
    /// `peer`, the writer, ends the wait on a real fabric if it dies.
    #[pyo3(signature = (handle, offset, data, peer = None))]
    fn wait_pio(&self, py: Python<'_>, handle: &Handle, offset: u64, data: Vec<u8>, peer: Option<u16>) -> PyResult<()> {
        let h = handle.inner;
        self.call(py, |f| f.wait_pio(&h, offset, &data, peer))
    }
    /// Declares `seconds` of computation (simulated time on the simulator).
    fn compute(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        self.call(py, |f| f.compute(seconds))
    }
    /// `tcaBarrier`.
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        self.call(py, |f| f.barrier())
    }
    /// `tcaAllgather`: every rank's `data`, by rank.
    fn allgather<'py>(&self, py: Python<'py>, data: Vec<u8>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let n = data.len();
        let all = self.call(py, |f| f.allgather(&data))?;
        if n == 0 {
            return Ok(Vec::new());
        }
        Ok(all.chunks(n).map(|b| PyBytes::new(py, b)).collect())
    }
    /// The fabric's clock [s] (simulated time on the simulator).
    fn wtime(&self, py: Python<'_>) -> PyResult<f64> {
        self.call(py, |f| f.wtime())
    }
    /// `tcaCollBarrier`: the collective library's barrier (TCA communication, timed).
    fn coll_barrier(&self, py: Python<'_>) -> PyResult<()> {
        with_coll(py, &self.coll, self.fabric.as_ref(), &self.taken, |c, f| c.barrier(f))
    }
    /// `tcaCollAllgather`: every rank's `data` (same length everywhere), concatenated by rank.
    fn coll_allgather<'py>(&self, py: Python<'py>, data: Vec<u8>) -> PyResult<Bound<'py, PyBytes>> {
        let all = with_coll(py, &self.coll, self.fabric.as_ref(), &self.taken, |c, f| {
            let mut out = vec![0u8; data.len() * usize::from(c.ranks())];
            c.allgather(f, &data, &mut out)?;
            Ok(out)
        })?;
        Ok(PyBytes::new(py, &all))
    }
    /// `tcaCollAllreduce` of `data` (elements of C type value `dtype`) by C operator value `op`.
    fn coll_allreduce<'py>(
        &self,
        py: Python<'py>,
        data: Vec<u8>,
        dtype: i32,
        op: i32,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let (t, o) = type_op(dtype, op)?;
        let out = with_coll(py, &self.coll, self.fabric.as_ref(), &self.taken, |c, f| {
            let mut out = vec![0u8; data.len()];
            c.allreduce(f, &data, &mut out, t, o)?;
            Ok(out)
        })?;
        Ok(PyBytes::new(py, &out))
    }
    /// `tcaCollReduce`: the result at `root`, `None` elsewhere.
    fn coll_reduce<'py>(
        &self,
        py: Python<'py>,
        data: Vec<u8>,
        dtype: i32,
        op: i32,
        root: i64,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let (t, o) = type_op(dtype, op)?;
        let (out, at_root) = with_coll(py, &self.coll, self.fabric.as_ref(), &self.taken, |c, f| {
            let mut out = vec![0u8; data.len()];
            c.reduce(f, &data, &mut out, t, o, root)?;
            Ok((out, i64::from(c.rank()) == root))
        })?;
        Ok(at_root.then(|| PyBytes::new(py, &out)))
    }
    /// `tcaCollBcast`: `root`'s `data` on every rank (every rank passes as many bytes).
    fn coll_bcast<'py>(&self, py: Python<'py>, mut data: Vec<u8>, root: i64) -> PyResult<Bound<'py, PyBytes>> {
        with_coll(py, &self.coll, self.fabric.as_ref(), &self.taken, |c, f| c.bcast(f, &mut data, root))?;
        Ok(PyBytes::new(py, &data))
    }
    /// `tcaFinalize`.
    fn finalize(&self, py: Python<'_>) -> PyResult<()> {
        self.call(py, |f| f.finalize())
    }
}
