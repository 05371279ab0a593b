//! `tca._native.expether_*`: the simulated ExpEther systems of `expether-sim` (seed 002 §4.2)
//! as seen from Python. Results are lists of dicts; a bad platform or argument raises
//! `ValueError` with one line; the simulations release the GIL.

use base::SimTime;
use expether_sim::block::BlockJob;
use expether_sim::experiments as x;
use expether_sim::{run, Attach, Platform, RunOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn load(platform: &str) -> PyResult<Platform> {
    expether_sim::find(platform).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn sim_err(e: expether_sim::SimError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The platform's name, file, description and parameters (key, value, source, calibrated).
#[pyfunction]
fn expether_platform<'py>(py: Python<'py>, platform: &str) -> PyResult<Bound<'py, PyDict>> {
    let p = load(platform)?;
    let d = PyDict::new(py);
    d.set_item("name", &p.name)?;
    d.set_item("path", p.path.display().to_string())?;
    d.set_item("description", &p.description)?;
    d.set_item("calibration", &p.calibration)?;
    let params: Vec<(String, String, String, Option<String>)> =
        p.params.iter().map(|q| (q.key.clone(), q.value.clone(), q.source.clone(), q.calibrated.clone())).collect();
    d.set_item("parameters", params)?;
    d.set_item("max_drives", p.raid.drives)?;
    Ok(d)
}

/// Fig. 4.10: for reads and writes and 1..=`drives` SSDs (all of the platform's when None),
/// the bandwidth without and with aggregation [bytes/s], the gain [%] and the TLPs per frame.
#[pyfunction]
#[pyo3(signature = (platform, drives=None))]
fn expether_aggregation<'py>(
    py: Python<'py>,
    platform: &str,
    drives: Option<u32>,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let mut p = load(platform)?;
    if let Some(n) = drives {
        if n == 0 || n > p.raid.drives {
            return Err(PyValueError::new_err(format!("drives must be 1..={} on {}", p.raid.drives, p.name)));
        }
        p.raid.drives = n;
    }
    let pts = py.allow_threads(|| x::aggregation(&p)).map_err(sim_err)?;
    pts.iter()
        .map(|a| {
            let d = PyDict::new(py);
            d.set_item("write", a.write)?;
            d.set_item("drives", a.drives)?;
            d.set_item("without", a.without)?;
            d.set_item("with", a.with)?;
            d.set_item("gain", a.gain())?;
            d.set_item("tlps_mean", a.tlps_mean)?;
            d.set_item("tlps_std", a.tlps_std)?;
            Ok(d)
        })
        .collect()
}

/// Table 4.1's set-up: mean latency [us] of one I/O at a time of each size, read and write,
/// with and without aggregation, on the RAID-0 of `experiments.latency_drives` SSDs.
#[pyfunction]
fn expether_latency<'py>(py: Python<'py>, platform: &str, sizes: Vec<u64>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let p = load(platform)?;
    let d = p.raid.with_drives(p.experiments.latency_drives);
    let mut cells = Vec::new();
    for write in [false, true] {
        for &bytes in &sizes {
            for aggregation in [true, false] {
                cells.push((write, bytes, aggregation));
            }
        }
    }
    let out = py
        .allow_threads(|| {
            cells
                .iter()
                .map(|&(write, bytes, aggregation)| {
                    let ios = if bytes <= 64 * 1024 { 64 } else { 1 };
                    let job = BlockJob { write, bytes, iodepth: 1, ios };
                    let max_tlps = if aggregation { p.proto.max_tlps } else { 1 };
                    let a = Attach::ExpEther { paths: 1, switch: false, max_tlps };
                    run::block(&p, &d, a, job, &RunOptions::default()).map(|r| r.mean_latency_us)
                })
                .collect::<Result<Vec<f64>, _>>()
        })
        .map_err(sim_err)?;
    cells
        .iter()
        .zip(out)
        .map(|(&(write, bytes, aggregation), us)| {
            let d = PyDict::new(py);
            d.set_item("write", write)?;
            d.set_item("bytes", bytes)?;
            d.set_item("aggregation", aggregation)?;
            d.set_item("latency_us", us)?;
            Ok(d)
        })
        .collect()
}

/// The Chrome trace (JSON text) of one run on the RAID-0 of `drives` SSDs over one path: `ios`
/// I/Os of `bytes`, `iodepth` at a time, with aggregation or not.
#[pyfunction]
#[pyo3(signature = (platform, write, bytes, drives, aggregation, ios=4, iodepth=1))]
#[allow(clippy::too_many_arguments)]
fn expether_trace(
    py: Python<'_>,
    platform: &str,
    write: bool,
    bytes: u64,
    drives: u32,
    aggregation: bool,
    ios: u32,
    iodepth: u32,
) -> PyResult<String> {
    let p = load(platform)?;
    if drives == 0 || drives > p.raid.drives {
        return Err(PyValueError::new_err(format!("drives must be 1..={}", p.raid.drives)));
    }
    let d = p.raid.with_drives(drives);
    let max_tlps = if aggregation { p.proto.max_tlps } else { 1 };
    let job = BlockJob { write, bytes, iodepth, ios };
    let o = RunOptions { trace: true, limit: SimTime::from_us(60_000_000), ..RunOptions::default() };
    let r = py
        .allow_threads(|| run::block(&p, &d, Attach::ExpEther { paths: 1, switch: false, max_tlps }, job, &o))
        .map_err(sim_err)?;
    Ok(r.trace.unwrap_or_default())
}

/// Adds the functions to `tca._native`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(expether_platform, m)?)?;
    m.add_function(wrap_pyfunction!(expether_aggregation, m)?)?;
    m.add_function(wrap_pyfunction!(expether_latency, m)?)?;
    m.add_function(wrap_pyfunction!(expether_trace, m)?)?;
    Ok(())
}
