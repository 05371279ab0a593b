//! The collective library on the basic API (seed 001) in C: `tcaCollBarrier`,
//! `tcaCollAllgather`, `tcaCollAllreduce`, `tcaCollReduce` and `tcaCollBcast`, each carried out
//! by the rank's [`tca_coll::Coll`], set up by its first collective (every rank calls it: the
//! set-up is collective too) and released by `tcaFinalize`.
//!
//! `TCA_COLL_CHANNELS` (a comma-separated list of DMA channels, default `0,1,2,3`) names the
//! channels the DMA collectives may register chains on; every rank must set the same. The
//! library gets the rank's fabric through [`crate::coll_guard::Recording`], so a program's
//! `tcaStartDMADesc` on a channel the library set a chain on fails instead of running it.

use crate::api::fabric_key;
use crate::coll_guard::{self, Recording};
use crate::registry::with_fabric;
use crate::results::{run, CErr, TCA_ERROR_COLL_MISMATCH, TCA_ERROR_INVALID_ARGUMENT, TCA_ERROR_INVALID_OP};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, MutexGuard};
use tca_coll::{Coll, CollError, Config, DataType, Kind, Op};
use tca_proto::{Fabric, CHANNELS};

/// Each rank's library by fabric. A rank's library is taken out while it runs a collective:
/// inside SMPI every rank runs on one thread, and a collective blocks in SimGrid.
fn ranks() -> MutexGuard<'static, BTreeMap<usize, Coll>> {
    static RANKS: Mutex<BTreeMap<usize, Coll>> = Mutex::new(BTreeMap::new());
    RANKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// `tcaFinalize`: the rank's library goes with its fabric.
pub(crate) fn forget(key: usize) {
    ranks().remove(&key);
}

impl From<CollError> for CErr {
    fn from(e: CollError) -> Self {
        match e {
            CollError::Fabric(e) => CErr::Tca(e.error),
            CollError::InvalidOp(_) => CErr::Abi(TCA_ERROR_INVALID_OP),
            CollError::Mismatch(_) => CErr::Abi(TCA_ERROR_COLL_MISMATCH),
            CollError::InvalidType(_) | CollError::InvalidArgument(_) => CErr::Abi(TCA_ERROR_INVALID_ARGUMENT),
        }
    }
}

/// The configuration `TCA_COLL_CHANNELS` asks for.
fn config() -> Result<Config, CErr> {
    let mut c = Config::default();
    if let Ok(v) = std::env::var("TCA_COLL_CHANNELS") {
        let parsed: Result<Vec<u8>, _> = v.split(',').map(|s| s.trim().parse::<u8>()).collect();
        match parsed {
            Ok(ch) if !ch.is_empty() && ch.iter().all(|&x| usize::from(x) < CHANNELS) => c.channels = ch,
            _ => {
                use std::io::Write;
                let last = CHANNELS - 1;
                let line =
                    format!("tcaColl: TCA_COLL_CHANNELS={v:?}: a comma-separated list of channels 0 to {last}\n");
                let _ = std::io::stderr().write_all(line.as_bytes());
                return Err(CErr::Arg);
            }
        }
    }
    Ok(c)
}

/// The fabric's calls are made inside the program's call until this is dropped.
struct Within<'a>(&'a dyn Fabric);

impl Drop for Within<'_> {
    fn drop(&mut self) {
        self.0.call_within(None);
    }
}

/// Runs `op` for the program's call `call` with the calling rank's library, setting it up
/// first if needed; a deadlock report names `call` beside the wait it is stuck in.
fn with_coll(call: &'static str, op: impl FnOnce(&mut Coll, &dyn Fabric) -> Result<(), CollError>) -> Result<(), CErr> {
    with_fabric(|f| {
        f.call_within(Some(call));
        let _within = Within(f);
        let key = fabric_key(f);
        let taken = ranks().remove(&key);
        let rec = Recording::new(f);
        let mut coll = match taken {
            Some(c) => c,
            None => Coll::new(&rec, config()?).inspect_err(|_| coll_guard::took(key, rec.channels()))?,
        };
        let r = op(&mut coll, &rec);
        ranks().insert(key, coll);
        coll_guard::took(key, rec.channels());
        Ok(r?)
    })
}

fn op_type(ty: c_int, op: c_int) -> Result<(DataType, Op), CollError> {
    let (ty, op) = (DataType::from_value(ty)?, Op::from_value(op)?);
    ty.check(op)?;
    Ok((ty, op))
}

/// A NULL buffer where the call needs one.
fn null(call: &str) -> CollError {
    CollError::InvalidArgument(format!("{call}: a NULL buffer"))
}

/// The bytes of `count` elements of type value `ty` a rank (one a byte for a value that is no
/// type: the guess that picks the other ranks' first exchange when they pass a byte type).
fn bytes(count: usize, ty: c_int) -> u64 {
    let size = DataType::from_value(ty).map_or(1, |t| t.size());
    (count as u64).saturating_mul(size as u64)
}

/// `tcaCollBarrier`.
#[no_mangle]
pub extern "C-unwind" fn tcaCollBarrier() -> c_int {
    run(|| with_coll("tcaCollBarrier", |c, f| c.barrier(f)))
}

/// `tcaCollAllgather`.
///
/// # Safety
/// `send` holds `size` readable bytes and `recv` `size * nodes` writable bytes of this process
/// (or are NULL with `size` 0).
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaCollAllgather(send: *const c_void, recv: *mut c_void, size: usize) -> c_int {
    let (s, r) = (send as usize as u64, recv as usize as u64);
    run(|| {
        with_coll("tcaCollAllgather", |c, f| {
            if size > 0 && (s == 0 || r == 0) {
                return Err(c.refuse(f, Kind::Allgather, size as u64, null("tcaCollAllgather")));
            }
            // SAFETY: the caller's contract (tca-api.h): send holds size bytes, recv size * nodes.
            unsafe { c.allgather_raw(f, s, r, size as u64) }
        })
    })
}

/// `tcaCollAllreduce`.
///
/// # Safety
/// `send` and `recv` hold `count` elements of `type` of this process (or NULL with `count` 0).
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaCollAllreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    ty: c_int,
    op: c_int,
) -> c_int {
    let (s, r) = (send as usize as u64, recv as usize as u64);
    run(|| {
        with_coll("tcaCollAllreduce", |c, f| {
            let checked = op_type(ty, op).and_then(|t| match count > 0 && (s == 0 || r == 0) {
                true => Err(null("tcaCollAllreduce")),
                false => Ok(t),
            });
            let (ty, op) = checked.map_err(|e| c.refuse(f, Kind::Allreduce, bytes(count, ty), e))?;
            // SAFETY: the caller's contract: both hold count elements.
            unsafe { c.allreduce_raw(f, s, r, count as u64, ty, op) }
        })
    })
}

/// `tcaCollReduce`.
///
/// # Safety
/// `send` holds `count` elements of `type` of this process, `recv` too at the root.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaCollReduce(
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    ty: c_int,
    op: c_int,
    root: c_int,
) -> c_int {
    let (s, r) = (send as usize as u64, recv as usize as u64);
    run(|| {
        with_coll("tcaCollReduce", |c, f| {
            let at_root = i64::from(root) == i64::from(c.rank());
            let checked = op_type(ty, op).and_then(|t| match count > 0 && (s == 0 || (r == 0 && at_root)) {
                true => Err(null("tcaCollReduce")),
                false => Ok(t),
            });
            let (ty, op) = checked.map_err(|e| c.refuse(f, Kind::Reduce, bytes(count, ty), e))?;
            // SAFETY: the caller's contract: send holds count elements, recv too at the root.
            unsafe { c.reduce_raw(f, s, r, count as u64, ty, op, i64::from(root)) }
        })
    })
}

/// `tcaCollBcast`.
///
/// # Safety
/// `buf` holds `size` bytes of this process.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaCollBcast(buf: *mut c_void, size: usize, root: c_int) -> c_int {
    let b = buf as usize as u64;
    run(|| {
        with_coll("tcaCollBcast", |c, f| {
            if size > 0 && b == 0 {
                return Err(c.refuse(f, Kind::Bcast, size as u64, null("tcaCollBcast")));
            }
            // SAFETY: the caller's contract: buf holds size bytes.
            unsafe { c.bcast_raw(f, b, size as u64, i64::from(root)) }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tca_proto::TcaError;

    /// Before `tcaInit` there is no job to refuse arguments to (a rank that refuses its own
    /// arguments still takes part in the call's first exchange: `Coll::refuse`): every call
    /// answers `TCA_ERROR_NOT_INITIALIZED`, reading nothing. The argument errors themselves are
    /// tested on ranks, by `tests/shm/collectives.c` (`refused`).
    #[test]
    fn calls_before_init_fail_cleanly_whatever_their_arguments() {
        let not_init = TcaError::NotInitialized.code();
        assert_eq!(tcaCollBarrier(), not_init);
        for (ty, op) in [(4 << 8 | 6, 0), (4 << 8 | 12, 4), (4 << 8 | 6, 10), (7, 0)] {
            // SAFETY: nothing is read before the job is found.
            let r = unsafe { tcaCollAllreduce(std::ptr::null(), std::ptr::null_mut(), 1, ty, op) };
            assert_eq!(r, not_init, "type {ty:#x}, operator {op}");
        }
        // SAFETY: as above.
        assert_eq!(unsafe { tcaCollBcast(std::ptr::null_mut(), 8, 0) }, not_init);
    }
}
