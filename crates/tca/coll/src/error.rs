//! Errors of the collectives: a fabric call that failed, or arguments the library refuses.

use tca_proto::{FabricError, TcaError};

/// A failed collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollError {
    /// A call of the basic API failed (a peer died, a timeout, a deadlock on the simulator).
    Fabric(FabricError),
    /// An operator that is not one (`TCA_OP_NOOP`), or one not defined on the type.
    InvalidOp(String),
    /// A value that is no `tcaDataType`.
    InvalidType(String),
    /// A bad argument of this rank (a root outside the job, buffer lengths that disagree).
    InvalidArgument(String),
    /// The ranks called the collective with different arguments (kind, size, type, operator or
    /// root); every rank gets this error and the job stays usable.
    Mismatch(String),
}

impl CollError {
    /// The API error a fabric failure carries, if this is one.
    pub fn tca_error(&self) -> Option<TcaError> {
        match self {
            CollError::Fabric(e) => Some(e.error),
            _ => None,
        }
    }
}

impl std::fmt::Display for CollError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CollError::Fabric(e) => write!(f, "{e}"),
            CollError::InvalidOp(s) | CollError::InvalidType(s) | CollError::InvalidArgument(s) => f.write_str(s),
            CollError::Mismatch(s) => write!(f, "collective arguments differ across ranks: {s}"),
        }
    }
}

impl std::error::Error for CollError {}

impl From<FabricError> for CollError {
    fn from(e: FabricError) -> Self {
        CollError::Fabric(e)
    }
}

impl From<TcaError> for CollError {
    fn from(e: TcaError) -> Self {
        CollError::Fabric(e.into())
    }
}

/// The result of a collective.
pub type CollResult<T> = Result<T, CollError>;
