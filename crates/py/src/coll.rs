//! The collective library ([`tca_coll::Coll`]) on a Python rank: `coll_barrier`,
//! `coll_allgather`, `coll_allreduce`, `coll_reduce` and `coll_bcast` of [`crate::rank::Rank`]
//! call these on bytes; `tca.peach.sim.Rank` adds NumPy arrays and operator names.

use crate::api::fabric_error;
use crate::guard::Recording;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use tca_coll::{Coll, CollError, Config, DataType, Op};
use tca_proto::Fabric;

/// A collective's failure as a Python exception: the fabric's error classes, `ValueError` for
/// bad arguments, `TcaApiError` with the C code for a mismatch across ranks.
pub(crate) fn coll_error(py: Python<'_>, e: CollError) -> PyErr {
    match e {
        CollError::Fabric(e) => fabric_error(py, e),
        CollError::Mismatch(_) => {
            let text = format!("CollMismatch: {e}");
            crate::api::raise(py, "TcaApiError", (text, 110, "CollMismatch".to_string()))
        }
        other => PyValueError::new_err(other.to_string()),
    }
}

/// Runs `op` with the rank's library, set up by the first collective (every rank calls it);
/// the channels the library registered chains on are added to `taken` (a bit mask).
pub(crate) fn with_coll<T: Send>(
    py: Python<'_>,
    slot: &Mutex<Option<Coll>>,
    fabric: &dyn Fabric,
    taken: &AtomicU8,
    op: impl FnOnce(&mut Coll, &dyn Fabric) -> Result<T, CollError> + Send,
) -> PyResult<T> {
    py.allow_threads(|| {
        let rec = Recording::new(fabric);
        let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
        let r = (|| {
            if guard.is_none() {
                *guard = Some(Coll::new(&rec, Config::default())?);
            }
            op(guard.as_mut().expect("set up above"), &rec)
        })();
        taken.fetch_or(rec.channels(), Ordering::Relaxed);
        r
    })
    .map_err(|e| coll_error(py, e))
}

/// The data type and operator of C values.
pub(crate) fn type_op(ty: i32, op: i32) -> PyResult<(DataType, Op)> {
    let t = DataType::from_value(ty).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let o = Op::from_value(op).map_err(|e| PyValueError::new_err(e.to_string()))?;
    t.check(o).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((t, o))
}
