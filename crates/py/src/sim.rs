//! A simulated job for Python rank programs (`tca.peach.sim.run`): its ranks are [`Rank`]s on
//! [`tca_sim::SimRank`].

use crate::api::fabric_error;
use crate::rank::Rank;
use pyo3::prelude::*;
use std::sync::Arc;
use tca_sim::SimRank;

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
        tca_sim::SimJob::new(&platform.inner, ranks, trace).map(|job| SimJob { job }).map_err(|e| fabric_error(py, e))
    }
    /// Rank `rank` of the job.
    fn rank(&self, py: Python<'_>, rank: u32) -> PyResult<Rank> {
        let r = SimRank::new(self.job.clone(), rank).map_err(|e| fabric_error(py, e))?;
        Ok(Rank::new(Arc::new(r)))
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
    /// Spans the trace did not keep (it keeps the first million).
    fn trace_dropped(&self) -> u64 {
        self.job.trace_dropped()
    }
}
