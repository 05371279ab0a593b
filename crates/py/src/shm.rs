//! A rank of a job on this host, for Python programs started by `tca run` (or mpirun): a
//! [`Rank`] on the shm fabric, with real memory and real time.

use crate::api::fabric_error;
use crate::rank::Rank;
use pyo3::prelude::*;
use std::sync::Arc;
use tca_proto::{FabricError, TcaError};
use tca_shm::ShmFabric;

/// Joins the job of `tca run` / mpirun (`tcaInit` from the launcher's environment); raises
/// `tca.peach.api.TcaApiError` when the environment has none or the settings are inconsistent.
#[pyfunction]
pub fn shm_rank(py: Python<'_>) -> PyResult<Rank> {
    let fabric = py
        .allow_threads(ShmFabric::init)
        .map_err(|e| fabric_error(py, FabricError::with_detail(TcaError::NotInitialized, format!("tcaInit: {e}"))))?;
    Ok(Rank::new(Arc::new(fabric)))
}
