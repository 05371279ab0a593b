//! Result codes of the C ABI: the codes of [`TcaError`] unchanged, and the codes of the ABI
//! itself. One table ([`c_errors`]) names them all as `tca-api.h` does; a test checks the
//! header's `#define TCA_ERROR_*` lines against it, so the two cannot drift.
//!
//! Every exported function runs its body through `run`: a panic becomes
//! [`TCA_ERROR_INTERNAL`] instead of unwinding into C.

use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use tca_proto::{FabricError, TcaError, TCA_SUCCESS};

/// A NULL pointer or a negative count (C ABI only).
pub const TCA_ERROR_INVALID_ARGUMENT: c_int = 100;
/// A panic inside the library, reported instead of unwinding into C.
pub const TCA_ERROR_INTERNAL: c_int = 101;
/// `TCA_FABRIC` names no fabric this process has (C ABI only).
pub const TCA_ERROR_UNKNOWN_FABRIC: c_int = 102;
/// `tcaFree` with a memory type other than the block's (C ABI only).
pub const TCA_ERROR_MEMORY_TYPE_MISMATCH: c_int = 103;

/// A reduction operator that is not one (`TCA_OP_NOOP`) or not defined on the data type
/// (a bitwise operator on floating point): the collectives (C ABI only).
pub const TCA_ERROR_INVALID_OP: c_int = 109;
/// The ranks called a collective with different arguments (kind, size, type, operator, root).
pub const TCA_ERROR_COLL_MISMATCH: c_int = 110;
/// `tcaStartDMADesc` on a channel the collective library registered a chain on since the
/// program's last registration there ([`crate::coll_guard`]).
pub const TCA_ERROR_CHANNEL_TAKEN: c_int = 111;

/// The codes only the C ABI returns: (code, C name, message).
pub const ABI_ERRORS: [(c_int, &str, &str); 7] = [
    (
        TCA_ERROR_INVALID_ARGUMENT,
        "TCA_ERROR_INVALID_ARGUMENT",
        "invalid argument (a NULL pointer, a negative number or a value no call takes)",
    ),
    (TCA_ERROR_INTERNAL, "TCA_ERROR_INTERNAL", "internal error in the TCA library"),
    (TCA_ERROR_UNKNOWN_FABRIC, "TCA_ERROR_UNKNOWN_FABRIC", "TCA_FABRIC names no fabric of this process"),
    (
        TCA_ERROR_MEMORY_TYPE_MISMATCH,
        "TCA_ERROR_MEMORY_TYPE_MISMATCH",
        "memory type is not the block's (tcaFree, tcaCreateHandle)",
    ),
    (TCA_ERROR_INVALID_OP, "TCA_ERROR_INVALID_OP", "reduction operator not defined for the data type"),
    (TCA_ERROR_COLL_MISMATCH, "TCA_ERROR_COLL_MISMATCH", "ranks called the collective with different arguments"),
    (
        TCA_ERROR_CHANNEL_TAKEN,
        "TCA_ERROR_CHANNEL_TAKEN",
        "the collective library used this DMA channel since tcaDescSet: set the chain again",
    ),
];

/// The C name of an error: `TCA_ERROR_` and its Rust name in upper snake case
/// (`SizeNotMultipleOf4` is `TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4`).
pub fn c_name(e: TcaError) -> String {
    let rust = format!("{e:?}");
    let mut out = String::from("TCA_ERROR_");
    let mut prev: Option<char> = None;
    for c in rust.chars() {
        let starts_word = c.is_ascii_uppercase() || (c.is_ascii_digit() && prev.is_some_and(|p| p.is_alphabetic()));
        if starts_word && prev.is_some() {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
        prev = Some(c);
    }
    out
}

/// Every error code of the C ABI with its C name and message: the [`TcaError`] table, then
/// [`ABI_ERRORS`], then the descriptor-table codes ([`crate::desc_table::TABLE_ERRORS`]).
pub fn c_errors() -> Vec<(c_int, String, &'static str)> {
    let core = TcaError::ALL.iter().map(|&e| (e.code(), c_name(e), e.message()));
    let abi = ABI_ERRORS.iter().chain(crate::desc_table::TABLE_ERRORS.iter());
    core.chain(abi.map(|&(c, n, m)| (c, n.to_string(), m))).collect()
}

/// A failure of the C ABI.
pub(crate) enum CErr {
    /// An API error.
    Tca(TcaError),
    /// [`TCA_ERROR_INVALID_ARGUMENT`].
    Arg,
    /// Another code of the ABI itself.
    Abi(c_int),
}

impl From<TcaError> for CErr {
    fn from(e: TcaError) -> Self {
        CErr::Tca(e)
    }
}

impl From<FabricError> for CErr {
    fn from(e: FabricError) -> Self {
        CErr::Tca(e.error)
    }
}

pub(crate) type CResult = Result<(), CErr>;

/// Runs an exported function's body: its result as a code, a panic as
/// [`TCA_ERROR_INTERNAL`].
///
/// Inside SimGrid, a rank killed while the body waited (another rank called `MPI_Abort`) does
/// not return: SimGrid's kill is thrown again here, outside the `catch_unwind` that could not
/// pass it, and unwinds through the exported function (declared `C-unwind` for that) into the
/// program and back to SimGrid ([`tca_smpi::end_if_killed`]).
pub(crate) fn run(f: impl FnOnce() -> CResult) -> c_int {
    let code = run_nested(f);
    tca_smpi::end_if_killed();
    code
}

/// [`run`] for the entry points of another library (the CUDA runtime, `libtcacudart`), which has
/// a `catch_unwind` of its own around the call: it ends a killed rank at its own edge
/// (`tca_smpi_end_if_killed`).
pub(crate) fn run_nested(f: impl FnOnce() -> CResult) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => TCA_SUCCESS,
        Ok(Err(CErr::Tca(e))) => e.code(),
        Ok(Err(CErr::Arg)) => TCA_ERROR_INVALID_ARGUMENT,
        Ok(Err(CErr::Abi(code))) => code,
        Err(_) => TCA_ERROR_INTERNAL,
    }
}

/// `tcaGetErrorString`: one line of text for any code; never NULL.
#[no_mangle]
pub extern "C-unwind" fn tcaGetErrorString(code: c_int) -> *const c_char {
    static MESSAGES: OnceLock<Vec<(c_int, CString)>> = OnceLock::new();
    let all = MESSAGES.get_or_init(|| {
        let mut v = vec![(TCA_SUCCESS, c"success".to_owned())];
        v.extend(c_errors().into_iter().map(|(c, _, m)| (c, CString::new(m).unwrap_or_default())));
        v
    });
    match all.iter().find(|(c, _)| *c == code) {
        Some((_, s)) => s.as_ptr(),
        None => c"unknown error code".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_names_follow_the_rust_names() {
        assert_eq!(c_name(TcaError::SizeNotMultipleOf4), "TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4");
        assert_eq!(c_name(TcaError::InvalidFlagCombination), "TCA_ERROR_INVALID_FLAG_COMBINATION");
        assert_eq!(c_name(TcaError::PeerDead), "TCA_ERROR_PEER_DEAD");
        assert_eq!(c_name(TcaError::Deadlock), "TCA_ERROR_DEADLOCK");
    }

    #[test]
    fn every_code_has_its_own_c_string() {
        let mut seen = std::collections::HashSet::new();
        for (code, _, msg) in c_errors() {
            // SAFETY: every returned pointer is a static NUL-terminated string.
            let s = unsafe { std::ffi::CStr::from_ptr(tcaGetErrorString(code)) }.to_str().unwrap();
            assert_eq!(s, msg);
            assert!(seen.insert(s.to_string()), "{s} twice");
        }
        for code in [TCA_SUCCESS, -5, 99, 12345] {
            // SAFETY: as above.
            let s = unsafe { std::ffi::CStr::from_ptr(tcaGetErrorString(code)) }.to_str().unwrap();
            assert!(s == "success" || s == "unknown error code", "{code}: {s}");
        }
    }

    #[test]
    fn a_panic_becomes_a_code() {
        assert_eq!(run(|| panic!("a bug")), TCA_ERROR_INTERNAL);
        assert_eq!(run(|| Err(CErr::Abi(TCA_ERROR_UNKNOWN_FABRIC))), TCA_ERROR_UNKNOWN_FABRIC);
        assert_eq!(run(|| Err(TcaError::Timeout.into())), TcaError::Timeout.code());
    }
}
