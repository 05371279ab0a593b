//! The TCA API's values for Python: handles, descriptor chains, flags, result codes, and how
//! a failed fabric call becomes a Python exception (`tca.peach.api.TcaApiError` with `.code` and
//! `.name`; `tca.peach.api.DeadlockError` for a deadlock on the simulator).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tca_proto::{DmaFlags, DmaMode, FabricError, MemoryType, TcaError};

pub(crate) fn raise<'py>(
    py: Python<'py>,
    class: &str,
    args: impl IntoPyObject<'py, Target = pyo3::types::PyTuple>,
) -> PyErr {
    match py.import("tca.peach.api").and_then(|m| m.getattr(class)).and_then(|cls| cls.call1(args)) {
        Ok(v) => PyErr::from_value(v),
        Err(err) => err,
    }
}

/// The Python exception for a failed call.
pub(crate) fn fabric_error(py: Python<'_>, e: FabricError) -> PyErr {
    let mut text = format!("{:?}: {}", e.error, tca_proto::error_string(e.error.code()));
    if let Some(d) = &e.detail {
        text = format!("{text}: {d}");
    }
    match e.error {
        TcaError::Deadlock => raise(py, "DeadlockError", (text,)),
        err => raise(py, "TcaApiError", (text, err.code(), format!("{err:?}"))),
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
        tca_proto::Handle::from_bytes(data).map(|inner| Handle { inner }).map_err(|e| fabric_error(py, e.into()))
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
        let flags = DmaFlags::from_bits(flags).map_err(|e| fabric_error(py, e.into()))?;
        self.inner
            .set_memcpy(&dst.inner, dst_off, &src.inner, src_off, size, flags, slot, tag)
            .map_err(|e| fabric_error(py, e.into()))
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
        let flags = DmaFlags::from_bits(flags).map_err(|e| fabric_error(py, e.into()))?;
        self.inner
            .set_memcpy_2d(
                &dst.inner, dst_off, dst_pitch, &src.inner, src_off, src_pitch, width, count, flags, slot, tag,
            )
            .map_err(|e| fabric_error(py, e.into()))
    }

    /// Force "register" or "chaining" mode, or `None` for automatic (register up to 16 entries).
    #[pyo3(signature = (mode = None))]
    fn set_mode(&mut self, py: Python<'_>, mode: Option<&str>) -> PyResult<()> {
        let mode = match mode {
            None => None,
            Some(name) => Some(dma_mode(name)?),
        };
        self.inner.set_mode(mode).map_err(|e| fabric_error(py, e.into()))
    }

    /// "register" or "chaining": how the channel will get this chain.
    #[getter]
    fn mode(&self) -> &'static str {
        self.inner.mode().name()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

pub(crate) fn memory_type(name: &str) -> PyResult<MemoryType> {
    MemoryType::from_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown memory '{name}' (expected cpu or gpu)")))
}

pub(crate) fn dma_mode(name: &str) -> PyResult<DmaMode> {
    DmaMode::from_name(name)
        .ok_or_else(|| PyValueError::new_err(format!("unknown DMA mode '{name}' (expected chaining or register)")))
}

/// DMA flag bits by published name.
#[pyfunction]
pub fn dma_flags() -> Vec<(&'static str, u32)> {
    DmaFlags::NAMES.iter().map(|(c_name, _, flag)| (*c_name, flag.bits())).collect()
}

/// Every result code: (code, name, message).
#[pyfunction]
pub fn error_codes() -> Vec<(i32, String, &'static str)> {
    TcaError::ALL.iter().map(|e| (e.code(), format!("{e:?}"), tca_proto::error_string(e.code()))).collect()
}
