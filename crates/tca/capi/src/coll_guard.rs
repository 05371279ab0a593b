//! Keeps the collective library's DMA chains from running in place of the program's.
//!
//! The library registers its own chains ([`Fabric::desc_set`]) on the channels
//! `TCA_COLL_CHANNELS` names. A program that registered a chain on such a channel once and
//! kicks it every iteration (`tcaStartDMADesc`) would run the library's chain after a
//! collective. So the fabric handed to the library is a [`Recording`] one, which notes every
//! channel the library set a chain on; the rank's `tcaStartDMADesc` on such a channel then
//! answers [`TCA_ERROR_CHANNEL_TAKEN`] until the program registers a chain there again
//! (`tcaDescSet`, `tcaSetDMAChain`, `tcaSetDMAChainInt`, or `tcaDestroyDMADesc` registering the
//! remaining tags). `tcaWaitDMAC` is unchanged: it waits for the channel's last run, which runs
//! nothing and, after a collective, is over.
//!
//! Why an error and not the program's chain registered again after the collective: that
//! registration could fail inside the collective for reasons of the program's (a handle of its
//! chain destroyed since), and on the hardware registering a table is work the program did not
//! ask for. State is kept per rank (per fabric object, as the descriptor tables do).

use crate::results::{CErr, TCA_ERROR_CHANNEL_TAKEN};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
pub(crate) use tca_coll::Recording;

/// The channels the library took, as a bit mask, by rank.
fn taken() -> MutexGuard<'static, BTreeMap<usize, u8>> {
    static TAKEN: Mutex<BTreeMap<usize, u8>> = Mutex::new(BTreeMap::new());
    TAKEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// The collective library of rank `key` set chains on the channels of `mask`. A run it kept
/// for repeats there is dropped too: the header's inline start would repeat it without asking
/// for [`TCA_ERROR_CHANNEL_TAKEN`].
pub(crate) fn took(key: usize, mask: u8) {
    if mask != 0 {
        *taken().entry(key).or_default() |= mask;
        EVER_TAKEN.store(true, Ordering::Release);
        for ch in (0..8).filter(|ch| mask & (1 << ch) != 0) {
            crate::dma_direct::forget_kept_run(ch);
        }
    }
}

/// The library took a channel of some rank of this process once: until then a start needs no
/// look at the table (and its lock) at all.
static EVER_TAKEN: AtomicBool = AtomicBool::new(false);

/// The program of rank `key` registered a chain on `ch`: it is the program's again.
pub(crate) fn chain_set(key: usize, ch: u8) {
    if let Some(m) = taken().get_mut(&key) {
        *m &= !(1u8 << ch);
    }
}

/// `tcaStartDMADesc`: [`TCA_ERROR_CHANNEL_TAKEN`] where the library's chain is on `ch`.
pub(crate) fn check_start(key: usize, ch: u8) -> Result<(), CErr> {
    if !EVER_TAKEN.load(Ordering::Acquire) {
        return Ok(());
    }
    match taken().get(&key) {
        Some(m) if ch < 8 && m & (1 << ch) != 0 => Err(CErr::Abi(TCA_ERROR_CHANNEL_TAKEN)),
        _ => Ok(()),
    }
}

/// `tcaFinalize`.
pub(crate) fn forget(key: usize) {
    taken().remove(&key);
}
