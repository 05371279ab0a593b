//! The fabric the collective library gets on a Python rank: every call passed on, and the
//! channels `desc_set` registered a chain on noted, so that the rank's `start_dma` on such a
//! channel raises `TcaApiError` (`ChannelTaken`, code 111 as in the C ABI) until the program
//! calls `desc_set` there again, instead of running the library's chain (the C ABI does the
//! same: `crates/tca/capi/src/coll_guard.rs`).

pub(crate) use tca_coll::Recording;

/// The result code of a kick on a channel the library took (`TCA_ERROR_CHANNEL_TAKEN`).
pub(crate) const CHANNEL_TAKEN: i32 = 111;
