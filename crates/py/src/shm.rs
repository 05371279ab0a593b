//! The TCA API on the shm fabric, for Python ranks started by `tca run` (or mpirun): the same
//! methods as the simulator's `RankContext`, each a call of [`tca_proto::Fabric`] on the
//! rank's [`tca_shm::ShmFabric`], with real memory and real time.
//!
//! Blocking calls (waits, barriers) release the GIL. API errors raise `tca.api.TcaApiError`.

use crate::sim::{api_error, memory_type, Desc, Handle};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tca_proto::{Fabric, FabricResult};
use tca_shm::ShmFabric;

/// One rank of a job on this host (`tcaInit` from the launcher's environment).
#[pyclass(frozen, module = "tca._native")]
pub struct ShmRank {
    fabric: Box<dyn Fabric>,
    /// The `tcaMalloc` address of each buffer of `malloc`, by handle id, for `free`.
    buffers: Mutex<HashMap<u32, u64>>,
    rank: u16,
    size: u16,
}

fn check<T>(py: Python<'_>, r: FabricResult<T>) -> PyResult<T> {
    r.map_err(|e| api_error(py, e.error))
}

#[pymethods]
impl ShmRank {
    /// Joins the job of `tca run` / mpirun; raises ValueError when the environment has none.
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let fabric = ShmFabric::init().map_err(|e| PyValueError::new_err(format!("tcaInit: {e}")))?;
        let (rank, size) = (check(py, fabric.node_id())?, check(py, fabric.node_count())?);
        Ok(ShmRank { fabric: Box::new(fabric), buffers: Mutex::new(HashMap::new()), rank, size })
    }

    #[getter]
    fn rank(&self) -> u16 {
        self.rank
    }
    #[getter]
    fn size(&self) -> u16 {
        self.size
    }

    /// `tcaMalloc` + `tcaCreateHandle` ("gpu" is host memory on this fabric).
    #[pyo3(signature = (size, memory = "cpu", gpu = 0))]
    fn malloc(&self, py: Python<'_>, size: u64, memory: &str, gpu: u32) -> PyResult<Handle> {
        let _ = gpu;
        let mem = memory_type(memory)?;
        let addr = check(py, self.fabric.malloc(size, mem))?;
        let inner = match self.fabric.create_handle(addr, size, mem) {
            Ok(h) => h,
            Err(e) => {
                let _ = self.fabric.free(addr);
                return Err(api_error(py, e.error));
            }
        };
        self.buffers.lock().unwrap_or_else(|e| e.into_inner()).insert(inner.id, addr);
        Ok(Handle { inner })
    }
    /// `tcaDestroyHandle` + `tcaFree` of a buffer of `malloc`.
    fn free(&self, py: Python<'_>, handle: &Handle) -> PyResult<()> {
        check(py, self.fabric.destroy_handle(&handle.inner))?;
        let addr = self.buffers.lock().unwrap_or_else(|e| e.into_inner()).remove(&handle.inner.id);
        match addr {
            Some(a) => check(py, self.fabric.free(a)),
            None => Err(PyValueError::new_err("the handle's buffer did not come from this rank's malloc")),
        }
    }
    /// Stores `data` into this rank's own buffer.
    fn write(&self, py: Python<'_>, handle: &Handle, offset: u64, data: &[u8]) -> PyResult<()> {
        check(py, self.fabric.write(&handle.inner, offset, data))
    }
    /// Reads `length` bytes of this rank's own buffer.
    fn read<'py>(&self, py: Python<'py>, handle: &Handle, offset: u64, length: u64) -> PyResult<Bound<'py, PyBytes>> {
        let len = usize::try_from(length).map_err(|_| PyValueError::new_err("length too large"))?;
        if !handle.inner.contains(offset, length) {
            return Err(api_error(py, tca_proto::TcaError::OutOfBounds));
        }
        let mut out = vec![0u8; len];
        check(py, self.fabric.read(&handle.inner, offset, &mut out))?;
        Ok(PyBytes::new(py, &out))
    }
    /// `tcaDescSet`.
    fn desc_set(&self, py: Python<'_>, desc: &Desc, channel: u8) -> PyResult<()> {
        check(py, self.fabric.desc_set(channel, desc.chain()))
    }
    /// `tcaStartDMADesc`.
    fn start_dma(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        check(py, self.fabric.start_dma(channel))
    }
    /// `tcaWaitDMAC`.
    fn wait_dmac(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        let r = py.allow_threads(|| self.fabric.wait_dmac(channel));
        check(py, r)
    }
    /// `tcaWaitDMARecvDesc`.
    fn wait_dma_recv(&self, py: Python<'_>, handle: &Handle, slot: u32, tag: u32) -> PyResult<()> {
        let h = handle.inner;
        let r = py.allow_threads(|| self.fabric.wait_dma_recv(&h, slot, tag));
        check(py, r)
    }
    /// `tcaSetPIORegion` + `tcaSendPIO` + `tcaSendPIOCommit`.
    fn send_pio(&self, py: Python<'_>, handle: &Handle, offset: u64, data: &[u8]) -> PyResult<()> {
        let region = check(py, self.fabric.set_pio_region(&handle.inner, offset, data.len() as u64))?;
        check(py, self.fabric.send_pio(&region, 0, data))?;
        check(py, self.fabric.send_pio_commit())
    }
    /// `tcaWaitPIO`: polls this rank's own buffer until the bytes at `offset` equal `data`;
    /// `peer`, the rank expected to write them, is watched for death.
    #[pyo3(signature = (handle, offset, data, peer = None))]
    fn wait_value(&self, py: Python<'_>, handle: &Handle, offset: u64, data: &[u8], peer: Option<u16>) -> PyResult<()> {
        let h = handle.inner;
        let r = py.allow_threads(|| self.fabric.wait_pio(&h, offset, data, peer));
        check(py, r)
    }
    /// Spends `seconds` of real time: a Python program declares computation it does not do,
    /// so the rank sleeps for it, and `wtime` measures what the simulator would.
    fn compute(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        self.fabric.compute(seconds).map_err(|e| PyValueError::new_err(e.to_string()))?;
        py.allow_threads(|| std::thread::sleep(Duration::from_secs_f64(seconds)));
        Ok(())
    }
    /// Waits for every rank.
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.allow_threads(|| self.fabric.barrier());
        check(py, r)
    }
    /// Every rank's `data`, by rank (all ranks give the same length).
    fn allgather<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let n = data.len();
        let send = data.to_vec();
        let r = py.allow_threads(|| self.fabric.allgather(&send));
        let all = check(py, r)?;
        let size = usize::from(self.size);
        Ok((0..size).map(|r| PyBytes::new(py, &all[r * n..(r + 1) * n])).collect())
    }
    /// Seconds since this rank joined (a monotonic clock).
    fn wtime(&self, py: Python<'_>) -> PyResult<f64> {
        check(py, self.fabric.wtime())
    }
    /// Leaves the job (`tcaFinalize`); later calls fail.
    fn finalize(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.allow_threads(|| self.fabric.finalize());
        check(py, r)
    }
}
