//! The TCA API on the shm fabric, for Python ranks started by `tca run` (or mpirun): the same
//! methods as the simulator's `RankContext`, carried out with real memory and real time.
//!
//! Blocking calls (waits, barriers) release the GIL. API errors raise `tca.api.TcaApiError`.

use crate::api::{fabric_error, memory_type, Desc, Handle};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::time::{Duration, Instant};
use tca_proto::{TcaError, TcaResult};
use tca_shm::Fabric;

/// One rank of a job on this host (`tcaInit` from the launcher's environment).
#[pyclass(frozen, module = "tca._native")]
pub struct ShmRank {
    fabric: Fabric,
    start: Instant,
}

impl ShmRank {
    fn check<T>(&self, py: Python<'_>, r: TcaResult<T>) -> PyResult<T> {
        r.map_err(|e| fabric_error(py, e.into()))
    }

    /// `len` bytes at `offset` of this rank's own handle, as a raw pointer.
    fn own(&self, py: Python<'_>, h: &Handle, offset: u64, len: u64) -> PyResult<*mut u8> {
        let base = self.check(py, self.fabric.local_ptr(&h.inner))?;
        if offset.checked_add(len).is_none_or(|end| end > h.inner.size) {
            return Err(fabric_error(py, TcaError::OutOfBounds.into()));
        }
        Ok(base.wrapping_add(offset as usize))
    }
}

#[pymethods]
impl ShmRank {
    /// Joins the job of `tca run` / mpirun; raises ValueError when the environment has none.
    #[new]
    fn new() -> PyResult<Self> {
        let fabric = Fabric::init().map_err(|e| PyValueError::new_err(format!("tcaInit: {e}")))?;
        Ok(ShmRank { fabric, start: Instant::now() })
    }

    #[getter]
    fn rank(&self) -> u16 {
        self.fabric.rank()
    }
    #[getter]
    fn size(&self) -> u16 {
        self.fabric.size()
    }

    /// `tcaMalloc` + `tcaCreateHandle` ("gpu" is host memory on this fabric).
    #[pyo3(signature = (size, memory = "cpu", gpu = 0))]
    fn malloc(&self, py: Python<'_>, size: u64, memory: &str, gpu: u32) -> PyResult<Handle> {
        let _ = gpu;
        let mem = memory_type(memory)?;
        let ptr = self.check(py, self.fabric.malloc(size, mem))?;
        let inner = self.check(py, self.fabric.create_handle(ptr, size, mem))?;
        Ok(Handle { inner })
    }
    /// `tcaDestroyHandle` + `tcaFree`.
    fn free(&self, py: Python<'_>, handle: &Handle) -> PyResult<()> {
        let ptr = self.check(py, self.fabric.local_ptr(&handle.inner))?;
        self.check(py, self.fabric.destroy_handle(&handle.inner))?;
        self.check(py, self.fabric.free(ptr))
    }
    /// Stores `data` into this rank's own buffer.
    fn write(&self, py: Python<'_>, handle: &Handle, offset: u64, data: &[u8]) -> PyResult<()> {
        let dst = self.own(py, handle, offset, data.len() as u64)?;
        // SAFETY: `own` checked dst..dst+len lies inside the handle's block of this segment.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        Ok(())
    }
    /// Reads `length` bytes of this rank's own buffer.
    fn read<'py>(&self, py: Python<'py>, handle: &Handle, offset: u64, length: u64) -> PyResult<Bound<'py, PyBytes>> {
        let src = self.own(py, handle, offset, length)?;
        // SAFETY: as in `write`; peers may be writing concurrently, as on the hardware.
        let bytes = unsafe { std::slice::from_raw_parts(src, length as usize) };
        Ok(PyBytes::new(py, bytes))
    }
    /// `tcaDescSet`.
    fn desc_set(&self, py: Python<'_>, desc: &Desc, channel: u8) -> PyResult<()> {
        self.check(py, self.fabric.set_chain(channel, desc.chain()))
    }
    /// `tcaStartDMADesc`.
    fn start_dma(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        self.check(py, self.fabric.start_dma(channel))
    }
    /// `tcaWaitDMAC`.
    fn wait_dmac(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        let r = py.allow_threads(|| self.fabric.wait_dma_channel(channel));
        self.check(py, r)
    }
    /// `tcaWaitDMARecvDesc`.
    fn wait_dma_recv(&self, py: Python<'_>, handle: &Handle, slot: u32, tag: u32) -> PyResult<()> {
        let h = handle.inner;
        let r = py.allow_threads(|| self.fabric.wait_dma_recv(&h, slot, tag));
        self.check(py, r)
    }
    /// `tcaSetPIORegion` + `tcaSendPIO` + `tcaSendPIOCommit`.
    fn send_pio(&self, py: Python<'_>, handle: &Handle, offset: u64, data: &[u8]) -> PyResult<()> {
        let region = self.check(py, self.fabric.pio_region(&handle.inner, offset, data.len() as u64))?;
        self.check(py, self.fabric.send_pio(&region, 0, data))?;
        self.fabric.pio_commit();
        Ok(())
    }
    /// Polls this rank's own buffer until the bytes at `offset` equal `data` (their last
    /// 32-bit word is watched; `peer`, the rank expected to write it, is watched for death).
    #[pyo3(signature = (handle, offset, data, peer = None))]
    fn wait_pio(&self, py: Python<'_>, handle: &Handle, offset: u64, data: &[u8], peer: Option<u16>) -> PyResult<()> {
        if data.len() < 4 || !data.len().is_multiple_of(4) {
            return Err(fabric_error(py, TcaError::SizeNotMultipleOf4.into()));
        }
        let last = offset + data.len() as u64 - 4;
        let word = u32::from_le_bytes(data[data.len() - 4..].try_into().expect("4 bytes"));
        let h = handle.inner;
        let peer = peer.unwrap_or(self.fabric.rank());
        let r = py.allow_threads(|| self.fabric.wait_pio_u32(&h, last, word, peer));
        self.check(py, r)?;
        let got = self.read(py, handle, offset, data.len() as u64)?;
        if got.as_bytes() != data {
            return Err(PyValueError::new_err("the awaited word arrived but the bytes before it differ"));
        }
        Ok(())
    }
    /// Spends `seconds` of real time (stands for computation).
    fn compute(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(PyValueError::new_err(format!("compute time must be >= 0 s, got {seconds}")));
        }
        py.allow_threads(|| std::thread::sleep(Duration::from_secs_f64(seconds)));
        Ok(())
    }
    /// Waits for every rank.
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.allow_threads(|| self.fabric.barrier());
        self.check(py, r)
    }
    /// Every rank's `data`, by rank (all ranks give the same length).
    fn allgather<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let n = data.len();
        let mut recv = vec![0u8; n * self.fabric.size() as usize];
        let send = data.to_vec();
        let r = py.allow_threads(|| self.fabric.allgather(&send, &mut recv));
        self.check(py, r)?;
        Ok(recv.chunks(n.max(1)).take(self.fabric.size() as usize).map(|c| PyBytes::new(py, c)).collect())
    }
    /// Seconds since this rank joined (a monotonic clock).
    fn wtime(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
    /// Leaves the job (`tcaFinalize`); later calls fail.
    fn finalize(&self, py: Python<'_>) -> PyResult<()> {
        let r = py.allow_threads(|| self.fabric.finalize());
        self.check(py, r)
    }
}
