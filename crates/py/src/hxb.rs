//! PM/Ethernet-HXB in virtual time (`hxb-sim`, seed 004) as seen from Python: platform files of
//! `platforms/hxb/` and the experiments of Tables 2, 4, 5, 6 and 7. Every function takes the
//! platform file's path, returns a dict of plain numbers and raises ValueError with one line.

use hxb_sim::experiments::{bandwidth, budget, mpi, neighbour, routing};
use hxb_sim::platform::Platform;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};

fn load(path: &str) -> PyResult<Platform> {
    Platform::load(Path::new(path)).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn u8_arg(name: &str, v: i64) -> PyResult<u8> {
    u8::try_from(v).map_err(|_| PyValueError::new_err(format!("{name} must be in 0..=255, not {v}")))
}

fn size_arg(v: i64) -> PyResult<u64> {
    u64::try_from(v)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| PyValueError::new_err(format!("message size must be at least 1 B, not {v}")))
}

/// Writes the run's trace to `path` if one was asked for.
fn write_trace(trace: Option<base::Trace>, path: Option<PathBuf>) -> PyResult<()> {
    if let (Some(t), Some(p)) = (trace, path) {
        std::fs::write(&p, t.to_json())
            .map_err(|e| PyValueError::new_err(format!("{}: cannot write trace: {e}", p.display())))?;
    }
    Ok(())
}

/// The platform's description and parameters: `{"name", "description", "source", "nodes",
/// "grid", "ports_per_node", "max_links_per_dim", "parameters": [{key, value, source,
/// calibrated}]}`.
#[pyfunction]
pub fn hxb_platform<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyDict>> {
    let p = load(path)?;
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("description", &p.description)?;
    d.set_item("source", &p.source)?;
    d.set_item("nodes", p.nodes)?;
    d.set_item("grid", p.grid.0.to_vec())?;
    d.set_item("ports_per_node", p.ports_per_node)?;
    d.set_item("max_links_per_dim", p.max_links_per_dim)?;
    let params = p
        .params
        .iter()
        .map(|q| {
            let e = PyDict::new(py);
            e.set_item("key", &q.key)?;
            e.set_item("value", &q.value)?;
            e.set_item("source", &q.source)?;
            e.set_item("calibrated", &q.calibrated)?;
            Ok(e)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("parameters", params)?;
    Ok(d)
}

/// 1-D unidirectional bandwidth (Table 4, Fig. 3) with `stack` "hxb" or "nt", or MPI-level
/// (Table 7) with "mpi" (then `bidirectional` may be set). Returns `{"bytes_per_second",
/// "per_message_us", "efficiency", "retransmitted"}`.
#[pyfunction]
#[pyo3(signature = (path, links, size, stack = "hxb", bidirectional = false, trace = None))]
pub fn hxb_bandwidth<'py>(
    py: Python<'py>,
    path: &str,
    links: i64,
    size: i64,
    stack: &str,
    bidirectional: bool,
    trace: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = load(path)?;
    let (links, size) = (u8_arg("links", links)?, size_arg(size)?);
    let tracing = trace.is_some();
    let (rate, eff, retx, tr) = match stack {
        "hxb" | "nt" => {
            if bidirectional {
                return Err(PyValueError::new_err("bidirectional applies to the MPI stack only"));
            }
            let st = if stack == "hxb" { bandwidth::Stack::Hxb } else { bandwidth::Stack::Nt };
            let (b, tr) = py
                .allow_threads(|| bandwidth::bandwidth(&p, st, links, size, tracing))
                .map_err(PyValueError::new_err)?;
            (b.bytes_per_second, b.efficiency, b.totals.stats.retransmitted, tr)
        }
        "mpi" => {
            let (m, tr) = py
                .allow_threads(|| mpi::mpi_bandwidth(&p, links, size, bidirectional, tracing))
                .map_err(PyValueError::new_err)?;
            (m.bytes_per_second, m.efficiency, m.totals.stats.retransmitted, tr)
        }
        other => return Err(PyValueError::new_err(format!("unknown stack '{other}' (expected hxb, nt or mpi)"))),
    };
    write_trace(tr, trace)?;
    let d = PyDict::new(py);
    d.set_item("bytes_per_second", rate)?;
    d.set_item("per_message_us", size as f64 / rate * 1e6)?;
    d.set_item("efficiency", eff)?;
    d.set_item("retransmitted", retx)?;
    Ok(d)
}

/// Bandwidth through `relays` relays (Table 6): `{"bytes_per_second"}`.
#[pyfunction]
#[pyo3(signature = (path, relays, links, size, trace = None))]
pub fn hxb_routed<'py>(
    py: Python<'py>,
    path: &str,
    relays: i64,
    links: i64,
    size: i64,
    trace: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = load(path)?;
    let (relays, links, size) = (u8_arg("relays", relays)?, u8_arg("links", links)?, size_arg(size)?);
    let tracing = trace.is_some();
    let (b, tr) = py
        .allow_threads(|| routing::routed_bandwidth(&p, relays, links, size, tracing))
        .map_err(PyValueError::new_err)?;
    write_trace(tr, trace)?;
    let d = PyDict::new(py);
    d.set_item("bytes_per_second", b.bytes_per_second)?;
    Ok(d)
}

/// Half round-trip time [us] through `relays` relays (Table 6), over `round_trips` ping-pongs.
#[pyfunction]
#[pyo3(signature = (path, relays, links, size, round_trips = 10, trace = None))]
pub fn hxb_half_rtt(
    py: Python<'_>,
    path: &str,
    relays: i64,
    links: i64,
    size: i64,
    round_trips: u32,
    trace: Option<PathBuf>,
) -> PyResult<f64> {
    let p = load(path)?;
    let (relays, links, size) = (u8_arg("relays", relays)?, u8_arg("links", links)?, size_arg(size)?);
    let tracing = trace.is_some();
    let (h, tr) = py
        .allow_threads(|| routing::half_rtt(&p, relays, links, size, round_trips, tracing))
        .map_err(PyValueError::new_err)?;
    write_trace(tr, trace)?;
    Ok(h)
}

/// A Table 5 cell: `pattern` "send", "receive" or "bidirectional" in `dims` dimensions.
/// Returns `{"bytes_per_second", "efficiency"}`.
#[pyfunction]
#[pyo3(signature = (path, dims, pattern, links, size, trace = None))]
pub fn hxb_neighbour<'py>(
    py: Python<'py>,
    path: &str,
    dims: i64,
    pattern: &str,
    links: i64,
    size: i64,
    trace: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let p = load(path)?;
    let pattern = match pattern {
        "send" => neighbour::Pattern::Send,
        "receive" => neighbour::Pattern::Receive,
        "bidirectional" => neighbour::Pattern::Bidirectional,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown pattern '{other}' (expected send, receive or bidirectional)"
            )))
        }
    };
    let (dims, links, size) = (u8_arg("dims", dims)?, u8_arg("links", links)?, size_arg(size)?);
    let tracing = trace.is_some();
    let (n, tr) = py
        .allow_threads(|| neighbour::neighbour(&p, dims, pattern, links, size, tracing))
        .map_err(PyValueError::new_err)?;
    write_trace(tr, trace)?;
    let d = PyDict::new(py);
    d.set_item("bytes_per_second", n.bytes_per_second)?;
    d.set_item("efficiency", n.efficiency)?;
    Ok(d)
}

/// The neighbour exchange on the platform's whole hyper-crossbar: `{"nodes", "sent",
/// "delivered", "finish_us", "wall_s"}`.
#[pyfunction]
pub fn hxb_exchange<'py>(py: Python<'py>, path: &str, size: i64) -> PyResult<Bound<'py, PyDict>> {
    let p = load(path)?;
    let size = size_arg(size)?;
    let start = std::time::Instant::now();
    let r = py.allow_threads(|| neighbour::exchange(&p, size)).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("nodes", r.nodes)?;
    d.set_item("sent", r.sent)?;
    d.set_item("delivered", r.delivered)?;
    d.set_item("finish_us", r.finish.as_us_f64())?;
    d.set_item("wall_s", start.elapsed().as_secs_f64())?;
    Ok(d)
}

/// A Table 2 cell: `{"formula_us", "simulated_us"}`.
#[pyfunction]
pub fn hxb_budget<'py>(py: Python<'py>, path: &str, links: i64, size: u32) -> PyResult<Bound<'py, PyDict>> {
    let p = load(path)?;
    let b = budget::budget(&p, u8_arg("links", links)?, size).map_err(PyValueError::new_err)?;
    let d = PyDict::new(py);
    d.set_item("formula_us", b.formula_us)?;
    d.set_item("simulated_us", b.simulated_us)?;
    Ok(d)
}

/// Registers the functions on `tca._native`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hxb_platform, m)?)?;
    m.add_function(wrap_pyfunction!(hxb_bandwidth, m)?)?;
    m.add_function(wrap_pyfunction!(hxb_routed, m)?)?;
    m.add_function(wrap_pyfunction!(hxb_half_rtt, m)?)?;
    m.add_function(wrap_pyfunction!(hxb_neighbour, m)?)?;
    m.add_function(wrap_pyfunction!(hxb_exchange, m)?)?;
    m.add_function(wrap_pyfunction!(hxb_budget, m)?)?;
    Ok(())
}
