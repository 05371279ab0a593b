//! The TCA API on a simulated cluster, for Python rank programs (`tca.sim.run`).
//!
//! Every blocking call releases the GIL, so rank threads wait for the virtual clock in parallel.
//! API errors raise `tca.api.TcaApiError` (with `.code` and `.name`), deadlocks raise
//! `tca.api.DeadlockError`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;
use tca_proto::{DmaFlags, DmaMode, MemoryType, TcaError};
use base::SimTime;
use tca_sim::{FabricError, Op, Reply};

pub(crate) fn api_error(py: Python<'_>, e: TcaError) -> PyErr {
    let text = format!("{e:?}: {}", tca_proto::error_string(e.code()));
    match py.import("tca.api").and_then(|m| m.getattr("TcaApiError")) {
        Ok(cls) => match cls.call1((text, e.code(), format!("{e:?}"))) {
            Ok(v) => PyErr::from_value(v),
            Err(err) => err,
        },
        Err(err) => err,
    }
}

fn fabric_error(py: Python<'_>, e: FabricError) -> PyErr {
    match e {
        FabricError::Api(e) => api_error(py, e),
        FabricError::Deadlock { .. } => match py.import("tca.api").and_then(|m| m.getattr("DeadlockError")) {
            Ok(cls) => match cls.call1((e.to_string(),)) {
                Ok(v) => PyErr::from_value(v),
                Err(err) => err,
            },
            Err(err) => err,
        },
        FabricError::Unsupported(text) => PyValueError::new_err(text),
    }
}

/// A memory handle (`tcaHandle`): node, global PCIe address, size, memory type. Exchange it
/// between ranks as bytes (`to_bytes` / `Handle.from_bytes`).
#[pyclass(frozen, eq, module = "tca._native")]
#[derive(Clone, Copy, PartialEq)]
pub struct Handle {
    pub inner: tca_proto::Handle,
}

#[pymethods]
impl Handle {
    #[getter]
    fn node(&self) -> u16 {
        self.inner.node
    }
    /// Global address in the sub-cluster's PCIe window.
    #[getter]
    fn addr(&self) -> u64 {
        self.inner.addr
    }
    /// Size [bytes].
    #[getter]
    fn size(&self) -> u64 {
        self.inner.size
    }
    /// "cpu" or "gpu".
    #[getter]
    fn memory(&self) -> &'static str {
        match self.inner.mem {
            MemoryType::Cpu => "cpu",
            MemoryType::Gpu => "gpu",
        }
    }
    /// The 32-byte wire form ranks exchange.
    #[allow(clippy::wrong_self_convention)] // pymethods take &self
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        tca_proto::Handle::from_bytes(data).map(|inner| Handle { inner }).map_err(|e| api_error(py, e))
    }
    fn __repr__(&self) -> String {
        format!(
            "Handle(node={}, addr={:#x}, size={}, memory={})",
            self.inner.node,
            self.inner.addr,
            self.inner.size,
            self.memory()
        )
    }
}

/// A descriptor chain (`tcaDescNew`); each `set_*` call appends a transfer.
#[pyclass(module = "tca._native")]
pub struct Desc {
    inner: tca_proto::Desc,
}

impl Desc {
    /// The chain, for fabrics.
    pub(crate) fn chain(&self) -> &tca_proto::Desc {
        &self.inner
    }
}

#[pymethods]
impl Desc {
    #[new]
    fn new() -> Self {
        Desc { inner: tca_proto::Desc::new() }
    }

    /// `tcaDescSetMemcpy`: copy `size` bytes from `src` + `src_off` to `dst` + `dst_off`.
    #[pyo3(signature = (dst, dst_off, src, src_off, size, flags = 0, slot = 0, tag = 0))]
    #[allow(clippy::too_many_arguments)]
    fn set_memcpy(
        &mut self,
        py: Python<'_>,
        dst: &Handle,
        dst_off: u64,
        src: &Handle,
        src_off: u64,
        size: u64,
        flags: u32,
        slot: u32,
        tag: u32,
    ) -> PyResult<()> {
        let flags = DmaFlags::from_bits(flags).map_err(|e| api_error(py, e))?;
        self.inner
            .set_memcpy(&dst.inner, dst_off, &src.inner, src_off, size, flags, slot, tag)
            .map_err(|e| api_error(py, e))
    }

    /// `tcaDescSetMemcpy2D`: `count` blocks of `width` bytes, `src_pitch` / `dst_pitch` apart.
    #[pyo3(signature = (dst, dst_off, dst_pitch, src, src_off, src_pitch, width, count, flags = 0, slot = 0, tag = 0))]
    #[allow(clippy::too_many_arguments)]
    fn set_memcpy_2d(
        &mut self,
        py: Python<'_>,
        dst: &Handle,
        dst_off: u64,
        dst_pitch: u64,
        src: &Handle,
        src_off: u64,
        src_pitch: u64,
        width: u64,
        count: u64,
        flags: u32,
        slot: u32,
        tag: u32,
    ) -> PyResult<()> {
        let flags = DmaFlags::from_bits(flags).map_err(|e| api_error(py, e))?;
        self.inner
            .set_memcpy_2d(
                &dst.inner, dst_off, dst_pitch, &src.inner, src_off, src_pitch, width, count, flags, slot, tag,
            )
            .map_err(|e| api_error(py, e))
    }

    /// Force "register" or "chaining" mode, or `None` for automatic (register up to 16 entries).
    #[pyo3(signature = (mode = None))]
    fn set_mode(&mut self, py: Python<'_>, mode: Option<&str>) -> PyResult<()> {
        let mode = match mode {
            None => None,
            Some("register") => Some(DmaMode::Register),
            Some("chaining") => Some(DmaMode::Chaining),
            Some(other) => return Err(PyValueError::new_err(format!("unknown DMA mode '{other}'"))),
        };
        self.inner.set_mode(mode).map_err(|e| api_error(py, e))
    }

    /// "register" or "chaining": how the channel will get this chain.
    #[getter]
    fn mode(&self) -> &'static str {
        match self.inner.mode() {
            DmaMode::Register => "register",
            DmaMode::Chaining => "chaining",
        }
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// One rank of a simulated job: the TCA API of its node.
#[pyclass(frozen, module = "tca._native")]
pub struct RankContext {
    job: Arc<tca_sim::SimJob>,
    rank: u32,
}

impl RankContext {
    fn call(&self, py: Python<'_>, op: Op) -> PyResult<Reply> {
        let (job, rank) = (self.job.clone(), self.rank);
        py.allow_threads(move || job.call(rank, op)).map_err(|e| fabric_error(py, e))
    }
}

pub(crate) fn memory_type(name: &str) -> PyResult<MemoryType> {
    match name {
        "cpu" => Ok(MemoryType::Cpu),
        "gpu" => Ok(MemoryType::Gpu),
        other => Err(PyValueError::new_err(format!("unknown memory '{other}' (expected cpu or gpu)"))),
    }
}

#[pymethods]
impl RankContext {
    #[getter]
    fn rank(&self) -> u32 {
        self.rank
    }
    #[getter]
    fn size(&self) -> u32 {
        self.job.ranks()
    }

    /// `tcaMalloc` + `tcaCreateHandle`: `size` bytes of "cpu" or "gpu" memory (GPU `gpu`).
    #[pyo3(signature = (size, memory = "cpu", gpu = 0))]
    fn malloc(&self, py: Python<'_>, size: u64, memory: &str, gpu: u32) -> PyResult<Handle> {
        match self.call(py, Op::Malloc { size, mem: memory_type(memory)?, gpu })? {
            Reply::Handle(inner) => Ok(Handle { inner }),
            _ => unreachable!(),
        }
    }
    /// `tcaDestroyHandle` + `tcaFree`.
    fn free(&self, py: Python<'_>, handle: &Handle) -> PyResult<()> {
        self.call(py, Op::Free { handle: handle.inner }).map(drop)
    }
    /// Stores `data` into this rank's own buffer (a CPU store or a cudaMemcpy; no time).
    fn write(&self, py: Python<'_>, handle: &Handle, offset: u64, data: Vec<u8>) -> PyResult<()> {
        self.call(py, Op::Write { handle: handle.inner, offset, bytes: data }).map(drop)
    }
    /// Reads `length` bytes of this rank's own buffer.
    fn read<'py>(&self, py: Python<'py>, handle: &Handle, offset: u64, length: u64) -> PyResult<Bound<'py, PyBytes>> {
        match self.call(py, Op::Read { handle: handle.inner, offset, len: length })? {
            Reply::Bytes(b) => Ok(PyBytes::new(py, &b)),
            _ => unreachable!(),
        }
    }
    /// `tcaDescSet`: registers `desc` on DMA `channel`.
    fn desc_set(&self, py: Python<'_>, desc: &Desc, channel: u8) -> PyResult<()> {
        self.call(py, Op::SetChain { channel, desc: Box::new(desc.inner.clone()) }).map(drop)
    }
    /// `tcaStartDMADesc`: kicks `channel` (returns at once).
    fn start_dma(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        self.call(py, Op::StartDma { channel }).map(drop)
    }
    /// `tcaWaitDMAC`: polls until `channel`'s chain has been sent.
    fn wait_dmac(&self, py: Python<'_>, channel: u8) -> PyResult<()> {
        self.call(py, Op::WaitDmac { channel }).map(drop)
    }
    /// `tcaWaitDMARecvDesc`: waits for a notification from `handle`'s node with (`slot`, `tag`).
    fn wait_dma_recv(&self, py: Python<'_>, handle: &Handle, slot: u32, tag: u32) -> PyResult<()> {
        self.call(py, Op::WaitRecv { handle: handle.inner, slot, tag }).map(drop)
    }
    /// `tcaSendPIO`: CPU stores of `data` into `handle` (any node) at `offset`.
    fn send_pio(&self, py: Python<'_>, handle: &Handle, offset: u64, data: Vec<u8>) -> PyResult<()> {
        self.call(py, Op::SendPio { dst: handle.inner, offset, bytes: data }).map(drop)
    }
    /// Polls this rank's own buffer until the bytes at `offset` equal `data` (`peer`, the writer,
    /// matters only on real fabrics).
    #[pyo3(signature = (handle, offset, data, peer = None))]
    fn wait_value(
        &self,
        py: Python<'_>,
        handle: &Handle,
        offset: u64,
        data: Vec<u8>,
        peer: Option<u16>,
    ) -> PyResult<()> {
        let _ = peer;
        self.call(py, Op::WaitValue { handle: handle.inner, offset, bytes: data }).map(drop)
    }
    /// Models `seconds` of computation.
    fn compute(&self, py: Python<'_>, seconds: f64) -> PyResult<()> {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return Err(PyValueError::new_err(format!("compute time must be >= 0 s, got {seconds}")));
        }
        let duration = SimTime::from_ps((seconds * 1e12).round() as u64);
        self.call(py, Op::Compute { duration }).map(drop)
    }
    /// Waits for every rank (set-up only: takes no simulated time).
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        self.call(py, Op::Barrier).map(drop)
    }
    /// Every rank's `data`, by rank (set-up only: takes no simulated time).
    fn allgather<'py>(&self, py: Python<'py>, data: Vec<u8>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        match self.call(py, Op::Allgather { bytes: data })? {
            Reply::Gathered(all) => Ok(all.iter().map(|b| PyBytes::new(py, b)).collect()),
            _ => unreachable!(),
        }
    }
    /// Simulated time [s].
    fn wtime(&self, py: Python<'_>) -> PyResult<f64> {
        match self.call(py, Op::Wtime)? {
            Reply::Time(t) => Ok(t.as_ps() as f64 * 1e-12),
            _ => unreachable!(),
        }
    }
}

/// A simulated job: `ranks` ranks, one per node of `platform`.
#[pyclass(frozen, module = "tca._native")]
pub struct SimJob {
    job: Arc<tca_sim::SimJob>,
}

#[pymethods]
impl SimJob {
    #[new]
    #[pyo3(signature = (platform, ranks, trace = false))]
    fn new(py: Python<'_>, platform: &crate::Platform, ranks: u32, trace: bool) -> PyResult<Self> {
        tca_sim::SimJob::new(&platform.inner, ranks, trace)
            .map(|job| SimJob { job })
            .map_err(|e| fabric_error(py, e))
    }
    /// The context of rank `rank`.
    fn rank(&self, rank: u32) -> PyResult<RankContext> {
        if rank >= self.job.ranks() {
            return Err(PyValueError::new_err(format!("rank {rank} of a {}-rank job", self.job.ranks())));
        }
        Ok(RankContext { job: self.job.clone(), rank })
    }
    /// Rank `rank`'s program has returned or failed.
    fn finish(&self, py: Python<'_>, rank: u32) {
        let job = self.job.clone();
        py.allow_threads(move || job.finish(rank));
    }
    /// Simulated time now [s].
    fn now(&self) -> f64 {
        self.job.now().as_ps() as f64 * 1e-12
    }
    /// Chrome trace-event JSON of the hardware (if recorded).
    fn trace_json(&self) -> Option<String> {
        self.job.trace_json()
    }
}

/// DMA flag bits by published name.
#[pyfunction]
pub fn dma_flags() -> Vec<(&'static str, u32)> {
    vec![
        ("tcaDMAUseInternal", DmaFlags::USE_INTERNAL.bits()),
        ("tcaDMAUseNotifyInternal", DmaFlags::USE_NOTIFY_INTERNAL.bits()),
        ("tcaDMANotify", DmaFlags::NOTIFY.bits()),
        ("tcaDMANotifySelf", DmaFlags::NOTIFY_SELF.bits()),
        ("tcaDMAContinue", DmaFlags::CONTINUE.bits()),
        ("tcaDMAPipeline", DmaFlags::PIPELINE.bits()),
    ]
}

/// Every result code: (code, name, message).
#[pyfunction]
pub fn error_codes() -> Vec<(i32, String, &'static str)> {
    TcaError::ALL.iter().map(|e| (e.code(), format!("{e:?}"), tca_proto::error_string(e.code()))).collect()
}
