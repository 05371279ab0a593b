//! `tca._native`: the simulator and hardware models as seen from Python.
//!
//! Errors in user input (platform files, sizes) arrive as `ValueError` with a one-line message;
//! long simulations release the GIL.

use base::units;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use tca_model::platform;
use tca_sim::experiment::{run_dma, DmaRun, Endpoint};

mod api;
mod coll;
mod expether;
mod guard;
mod hold;
mod hxb;
mod rank;
mod shm;
mod sim;
mod vswitch;

/// A loaded platform file.
#[pyclass(frozen, module = "tca._native")]
struct Platform {
    inner: platform::Platform,
}

#[pymethods]
impl Platform {
    /// Loads and validates a platform file; raises ValueError naming the file and the problem.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        platform::Platform::load(&path)
            .map(|inner| Platform { inner })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }
    /// The file the platform was loaded from.
    #[getter]
    fn path(&self) -> String {
        self.inner.path.display().to_string()
    }
    #[getter]
    fn description(&self) -> &str {
        &self.inner.description
    }
    #[getter]
    fn source(&self) -> &str {
        &self.inner.source
    }
    #[getter]
    fn nodes(&self) -> u32 {
        self.inner.nodes
    }
    #[getter]
    fn gpus(&self) -> usize {
        self.inner.gpu.sockets.len()
    }

    /// Ideal bandwidth of max-payload writes on the PEACH2-host link [bytes/s] (seed 000 §4.1.1).
    fn ideal_write_bandwidth(&self) -> f64 {
        self.inner.host_link.ideal_write_bandwidth()
    }

    /// Every parameter: key, value as written, source, and the number it was calibrated on.
    fn parameters<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .params
            .iter()
            .map(|p| {
                let d = PyDict::new(py);
                d.set_item("key", &p.key)?;
                d.set_item("value", &p.value)?;
                d.set_item("source", &p.source)?;
                d.set_item("calibrated", &p.calibrated)?;
                let unused = tca_model::platform::UNUSED.iter().find(|(k, _)| *k == p.key);
                d.set_item("unused", unused.map(|(_, why)| *why))?;
                Ok(d)
            })
            .collect()
    }

    /// The `[baselines.<table>]` parameters, checked at load:
    /// `{table: {name: {"value", "source", "calibrated"}}}`, whole numbers as `int`, quantities
    /// and words as written (`"6.6 us"`, `"QDR"`), `calibrated` `None` unless fitted.
    fn baselines<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let tables = PyDict::new(py);
        for b in &self.inner.baselines {
            let table = match tables.get_item(&b.table)? {
                Some(t) => t.downcast_into::<PyDict>()?,
                None => {
                    let t = PyDict::new(py);
                    tables.set_item(&b.table, &t)?;
                    t
                }
            };
            let entry = PyDict::new(py);
            match &b.value {
                platform::baselines::BaselineValue::Integer(n) => entry.set_item("value", n)?,
                platform::baselines::BaselineValue::Text(s) => entry.set_item("value", s)?,
            }
            entry.set_item("source", &b.source)?;
            entry.set_item("calibrated", &b.calibrated)?;
            table.set_item(&b.name, entry)?;
        }
        Ok(tables)
    }

    /// The seed's numbers stored with the platform (`[[reference]]`).
    fn references<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .references
            .iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("benchmark", &r.benchmark)?;
                d.set_item("experiment", &r.experiment)?;
                d.set_item("series", &r.series)?;
                d.set_item("x", r.x)?;
                d.set_item("value", r.value)?;
                d.set_item("unit", &r.unit)?;
                d.set_item("source", &r.source)?;
                d.set_item("kind", &r.kind)?;
                Ok(d)
            })
            .collect()
    }
}

/// Chrome trace-event spans gathered over several runs.
#[pyclass(module = "tca._native")]
struct Trace {
    inner: base::Trace,
}

#[pymethods]
impl Trace {
    #[new]
    #[pyo3(signature = (max_spans = base::Trace::DEFAULT_MAX_SPANS))]
    fn new(max_spans: usize) -> Self {
        Trace { inner: base::Trace::with_limit(max_spans) }
    }

    /// Starts a process group (one per run) named `name`.
    fn process(&mut self, name: &str) {
        self.inner.process(name);
    }

    #[getter]
    fn span_count(&self) -> usize {
        self.inner.span_count()
    }

    #[getter]
    fn dropped(&self) -> u64 {
        self.inner.dropped()
    }

    /// Writes the trace as JSON.
    fn write(&self, path: PathBuf) -> PyResult<()> {
        std::fs::write(&path, self.inner.to_json())
            .map_err(|e| PyValueError::new_err(format!("{}: cannot write trace: {e}", path.display())))
    }
}

fn endpoint(name: &str) -> PyResult<Endpoint> {
    match name {
        "cpu" | "host" => Ok(Endpoint::Host),
        _ => {
            name.strip_prefix("gpu").and_then(|n| n.parse().ok()).map(Endpoint::Gpu).ok_or_else(|| {
                PyValueError::new_err(format!("unknown memory '{name}' (expected cpu, gpu0, gpu1, ...)"))
            })
        }
    }
}

/// Simulates one intra-node DMA chain: `count` transfers of `size` bytes from `src` to `dst`
/// ("cpu", "gpu0", ...), `mode` "chaining" or "register". Returns elapsed time [ps] from the kick
/// until the polling CPU sees completion, and the number of events.
#[pyfunction]
#[pyo3(signature = (platform, src, dst, mode, size, count, trace = None))]
#[allow(clippy::too_many_arguments)] // mirrors the Python keyword signature
fn simulate_dma<'py>(
    py: Python<'py>,
    platform: &Platform,
    src: &str,
    dst: &str,
    mode: &str,
    size: i64,
    count: i64,
    trace: Option<&Bound<'py, Trace>>,
) -> PyResult<Bound<'py, PyDict>> {
    let mode = api::dma_mode(mode)?;
    if size <= 0 || count <= 0 || count > u32::MAX as i64 {
        return Err(PyValueError::new_err(format!("size ({size}) and count ({count}) must be positive")));
    }
    let run = DmaRun { src: endpoint(src)?, dst: endpoint(dst)?, mode, size: size as u64, count: count as u32 };
    let inner = &platform.inner;
    let result = match trace {
        Some(t) => {
            let mut guard = t.borrow_mut();
            let tr = &mut guard.inner;
            py.allow_threads(|| run_dma(inner, &run, Some(tr)))
        }
        None => py.allow_threads(|| run_dma(inner, &run, None)),
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    d.set_item("elapsed_ps", result.elapsed.as_ps())?;
    d.set_item("sent_ps", result.sent.as_ps())?;
    d.set_item("bytes", result.bytes)?;
    d.set_item("events", result.events)?;
    Ok(d)
}

/// Parses a quantity with its unit (`base::units`, the project's one unit parser) into the SI
/// base unit: bytes, seconds, bytes per second, hertz, transfers per second. `dimension` is bytes,
/// time, bandwidth, frequency or transfer-rate; `spelling` "platform" (platform files: every value
/// has a unit, binary size prefixes) or "argument" (also "4096", "4K", "1 GB", "1.2 GiB/s", "0").
/// Raises ValueError with a one-line message.
#[pyfunction]
#[pyo3(signature = (text, dimension, spelling = "platform"))]
fn parse_quantity(text: &str, dimension: &str, spelling: &str) -> PyResult<f64> {
    let dim = units::Dimension::from_name(dimension).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown dimension '{dimension}' (expected bytes, time, bandwidth, frequency or transfer-rate)"
        ))
    })?;
    let spelling = match spelling {
        "platform" => units::Spelling::Platform,
        "argument" => units::Spelling::Argument,
        other => {
            return Err(PyValueError::new_err(format!("unknown spelling '{other}' (expected platform or argument)")))
        }
    };
    units::parse_quantity(text, dim, spelling).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Platform>()?;
    m.add_class::<Trace>()?;
    m.add_class::<vswitch::VirtualSwitch>()?;
    m.add_function(wrap_pyfunction!(simulate_dma, m)?)?;
    m.add_function(wrap_pyfunction!(parse_quantity, m)?)?;
    m.add_function(wrap_pyfunction!(hold::hold_model_rate, m)?)?;
    m.add_class::<api::Handle>()?;
    m.add_class::<api::Desc>()?;
    m.add_class::<rank::Rank>()?;
    m.add_class::<sim::SimJob>()?;
    m.add_function(wrap_pyfunction!(shm::shm_rank, m)?)?;
    m.add_function(wrap_pyfunction!(api::dma_flags, m)?)?;
    m.add_function(wrap_pyfunction!(api::error_codes, m)?)?;
    expether::register(m)?;
    hxb::register(m)?;
    Ok(())
}
