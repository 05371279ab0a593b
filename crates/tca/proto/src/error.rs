//! Result codes of the TCA API.
//!
//! The published C API returns a `tcaresult`, `TCA_SUCCESS` on success, and turns a code into
//! text with `tcaGetErrorString` (SYSTEMS.md §1, API names of seed 001 "TCAアーキテクチャのユーザ
//! 利用"). tca keeps one [`TcaError`] variant per failure, each with a stable `i32` code that the
//! future C ABI returns unchanged: codes are never renumbered or reused.

use std::fmt;

/// The code of a successful call (`TCA_SUCCESS` in C).
pub const TCA_SUCCESS: i32 = 0;

/// The result of a TCA API call.
pub type TcaResult<T> = Result<T, TcaError>;

/// One specific failure of a TCA API call. `#[repr(i32)]`: the discriminant is the C code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum TcaError {
    /// A transfer size or 2D width is not a multiple of 4 bytes (SYSTEMS.md §1 constraints;
    /// PCIe DWORD granularity).
    SizeNotMultipleOf4 = 1,
    /// Source and destination addresses differ in their low 4 bits (SYSTEMS.md §1 constraints);
    /// for 2D transfers this must hold for every burst.
    AlignmentMismatch = 2,
    /// `offset + size` (or the last 2D burst) lies outside the handle's region.
    OutOfBounds = 3,
    /// A node id of 16 or more, or a sub-cluster of more than 16 nodes (seed 000 §2.2:
    /// 8-16 nodes per sub-cluster; SYSTEMS.md §1: at most 16).
    TooManyNodes = 4,
    /// A DMA channel outside `0..4` (seed 000 §3.5.2: four channels).
    InvalidChannel = 5,
    /// A notification slot outside `0..NOTIFY_SLOTS`.
    InvalidSlot = 6,
    /// A handle that is malformed, unknown or destroyed.
    InvalidHandle = 7,
    /// A descriptor chain that is empty or was freed.
    InvalidDescriptor = 8,
    /// A register-mode chain of more than 16 requests (seed 001 "PEACH2による通信": 16 DMA
    /// request registers).
    RegisterModeFull = 9,
    /// DMA flags with bits that name no flag.
    UnknownFlags = 10,
    /// The library was used before `tcaInit` (produced by the C ABI and the fabrics).
    NotInitialized = 11,
    /// A fixed table is full (handles, proxy-read requests) or memory could not be allocated.
    OutOfMemory = 12,
    /// A wait on a real fabric passed its deadline (produced by the fabrics, DESIGN.md
    /// principle 5).
    Timeout = 13,
    /// The peer node stopped answering.
    PeerDead = 14,
    /// A transfer of zero bytes (size, width or count of 0).
    ZeroSize = 15,
    /// A 2D pitch smaller than the width (bursts would overlap) or not a multiple of 4.
    InvalidPitch = 16,
    /// A transfer the 32-byte hardware descriptor cannot express (burst over `u32::MAX`
    /// bytes, more than `u16::MAX` bursts).
    TooLarge = 17,
    /// A node id that is not in this sub-cluster (at or above its node count).
    InvalidNode = 18,
    /// Known flags in a combination that means nothing (notify-internal without a notify).
    InvalidFlagCombination = 19,
    /// A channel was started or re-set while its chain is still running.
    ChannelBusy = 20,
    /// A channel was started with no chain set on it.
    ChannelNotSet = 21,
    /// A completion the engine did not ask for (unknown write token or proxy request).
    UnexpectedCompletion = 22,
    /// Simulated fabric: every rank waits and nothing can change any more.
    Deadlock = 23,
}

impl TcaError {
    /// Every error, in code order.
    pub const ALL: [TcaError; 23] = [
        TcaError::SizeNotMultipleOf4,
        TcaError::AlignmentMismatch,
        TcaError::OutOfBounds,
        TcaError::TooManyNodes,
        TcaError::InvalidChannel,
        TcaError::InvalidSlot,
        TcaError::InvalidHandle,
        TcaError::InvalidDescriptor,
        TcaError::RegisterModeFull,
        TcaError::UnknownFlags,
        TcaError::NotInitialized,
        TcaError::OutOfMemory,
        TcaError::Timeout,
        TcaError::PeerDead,
        TcaError::ZeroSize,
        TcaError::InvalidPitch,
        TcaError::TooLarge,
        TcaError::InvalidNode,
        TcaError::InvalidFlagCombination,
        TcaError::ChannelBusy,
        TcaError::ChannelNotSet,
        TcaError::UnexpectedCompletion,
        TcaError::Deadlock,
    ];

    /// The stable C code of this error (never [`TCA_SUCCESS`]).
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The error with C code `code`; `None` for [`TCA_SUCCESS`] and for unknown codes.
    pub fn from_code(code: i32) -> Option<TcaError> {
        TcaError::ALL.into_iter().find(|e| e.code() == code)
    }

    /// A one-line English description (what `tcaGetErrorString` returns).
    pub fn message(self) -> &'static str {
        match self {
            TcaError::SizeNotMultipleOf4 => "transfer size is not a multiple of 4 bytes",
            TcaError::AlignmentMismatch => "source and destination addresses differ in their low 4 bits",
            TcaError::OutOfBounds => "offset plus size lies outside the handle",
            TcaError::TooManyNodes => "more than 16 nodes in a sub-cluster",
            TcaError::InvalidChannel => "invalid DMA channel",
            TcaError::InvalidSlot => "invalid notification slot",
            TcaError::InvalidHandle => "invalid or destroyed handle",
            TcaError::InvalidDescriptor => "invalid descriptor (empty chain or freed)",
            TcaError::RegisterModeFull => "register mode holds at most 16 requests",
            TcaError::UnknownFlags => "unknown DMA flags",
            TcaError::NotInitialized => "TCA is not initialised",
            TcaError::OutOfMemory => "out of memory",
            TcaError::Timeout => "timed out",
            TcaError::PeerDead => "peer node is dead",
            TcaError::ZeroSize => "size is zero",
            TcaError::InvalidPitch => "pitch is smaller than the width or not a multiple of 4 bytes",
            TcaError::TooLarge => "too large (a transfer for one descriptor, a chain for its table, a payload, or a time past the simulated clock)",
            TcaError::InvalidNode => "node is not in this sub-cluster",
            TcaError::InvalidFlagCombination => "invalid combination of DMA flags",
            TcaError::ChannelBusy => "DMA channel is busy",
            TcaError::ChannelNotSet => "no descriptor chain set on the DMA channel",
            TcaError::UnexpectedCompletion => "completion for no outstanding request",
            TcaError::Deadlock => "deadlock: every rank waits and nothing can change",
        }
    }
}

impl fmt::Display for TcaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for TcaError {}

/// The text of a C result code, like `tcaGetErrorString`: `"success"` for [`TCA_SUCCESS`],
/// `"unknown error code"` for codes no error has.
pub fn error_string(code: i32) -> &'static str {
    if code == TCA_SUCCESS {
        return "success";
    }
    TcaError::from_code(code).map_or("unknown error code", TcaError::message)
}

/// The C code of a result: [`TCA_SUCCESS`] or the error's code.
pub fn result_code<T>(result: &TcaResult<T>) -> i32 {
    match result {
        Ok(_) => TCA_SUCCESS,
        Err(e) => e.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_stable_and_round_trip() {
        // Spot-check the numbering the C header will publish.
        assert_eq!(TcaError::SizeNotMultipleOf4.code(), 1);
        assert_eq!(TcaError::AlignmentMismatch.code(), 2);
        assert_eq!(TcaError::PeerDead.code(), 14);
        assert_eq!(TcaError::UnexpectedCompletion.code(), 22);
        for (i, e) in TcaError::ALL.into_iter().enumerate() {
            assert_eq!(e.code(), i as i32 + 1, "{e:?}");
            assert_eq!(TcaError::from_code(e.code()), Some(e));
        }
        assert_eq!(TcaError::from_code(TCA_SUCCESS), None);
        assert_eq!(TcaError::Deadlock.code(), 23);
        assert_eq!(TcaError::from_code(24), None);
        assert_eq!(TcaError::from_code(-1), None);
    }

    #[test]
    fn every_code_has_its_own_string() {
        let strings: HashSet<_> = TcaError::ALL.iter().map(|e| error_string(e.code())).collect();
        assert_eq!(strings.len(), TcaError::ALL.len());
        assert!(!strings.contains("success") && !strings.contains("unknown error code"));
        assert_eq!(error_string(TCA_SUCCESS), "success");
        assert_eq!(error_string(999), "unknown error code");
        assert_eq!(TcaError::Timeout.to_string(), "timed out");
    }

    #[test]
    fn result_code_maps_ok_and_err() {
        assert_eq!(result_code(&Ok::<(), TcaError>(())), TCA_SUCCESS);
        assert_eq!(result_code::<()>(&Err(TcaError::InvalidSlot)), 6);
    }
}
