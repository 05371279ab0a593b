//! The descriptor-table calls of the published API, on top of [`Desc`]: tables named by a tag
//! (`tcaCreateDMADesc`, `tcaSetDMADesc_Memcpy`, `tcaSetDMADesc_Memcpy2D`, `tcaSetDMAChain`,
//! `tcaDestroyDMADesc`) and the table in PEACH2's internal memory (`tcaDMADescInt_Init`,
//! `tcaSetDMADescInt_Memcpy`, `tcaSetDMADescInt_Memcpy2D`, `tcaSetDMAChainInt`).
//!
//! Both are the chaining mode of seed 000 §3.5.2 and §3.7 as programs write it: descriptors
//! placed in a table beforehand, linked, and the table's head registered with a DMA channel,
//! which then only needs a kick per iteration. Each set call validates its entry exactly as
//! `tcaDescSetMemcpy(2D)` does (the same [`Desc`] code); registering a chain hands the fabric
//! one [`Desc`] in [`DmaMode::Chaining`], so every fabric runs it unchanged.
//!
//! The published sources show only how programs call these functions; what follows is decided
//! from those uses (docs/c-api.md gives the evidence):
//! - A tag names a table of `entries` slots. A set call writes its entry at `slot` (replacing
//!   one there) and stores `slot + 1` in `*next_slot`. A table's chain is its set slots in
//!   increasing order; empty slots are skipped.
//! - `tcaSetDMAChain(ch, tag)` appends the tag's chain to the tags already chained on `ch` and
//!   registers the whole on the channel; a tag chained again is read again, not run twice.
//!   `tcaDescSet` or `tcaSetDMAChainInt` on the channel begins a new list. The channel keeps a
//!   copy: a table changed afterwards runs changed after the next `tcaSetDMAChain`.
//! - `tcaDestroyDMADesc` takes the tag off every channel, whose remaining tags are registered
//!   again; a channel left without a tag answers `tcaStartDMADesc` with
//!   `TCA_ERROR_CHANNEL_NOT_SET`. Tags are 1, 2, 3, ... per rank and never reused, so a tag never
//!   created (the 0 programs initialise their variables with) or destroyed gets its own code.
//! - Internal memory holds [`INTERNAL_SLOTS`] descriptors per rank, empty from `tcaInit`;
//!   `tcaDMADescInt_Init` empties it. Every entry set there carries `tcaDMAUseInternal` (its
//!   descriptor is fetched from the chip, not over the host link). `tcaSetDMAChainInt(ch, slot)`
//!   registers the chain from `slot` through the following set slots up to the first empty one.
//!
//! State is kept per rank: per fabric object, as `tcaFree` does (ranks of the simulator are
//! threads of one process), and dropped at `tcaFinalize`. No lock is held while the fabric
//! works (a `desc_set` may wait for a running channel).

#![allow(clippy::missing_safety_doc)]

use crate::api::{fabric_key, handle_in, nonneg, offset, Handle32};
use crate::registry::with_fabric;
use crate::results::{run, CErr};
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use tca_proto::{Desc, DmaFlags, DmaMode, Handle, TcaError, TcaResult, CHANNELS};

/// Descriptors PEACH2's internal memory holds for `tcaSetDMADescInt_*`: 1024 of 32 bytes
/// (32 KiB). Assumption: the seeds give no size (seed 000 §3.3 only says the chip keeps its
/// packet buffers in the FPGA's embedded memory and an external DDR3); 1024 is the table size
/// the HA-PACS/TCA benchmark programs ask `tcaCreateDMADesc` for, and 32 KiB is a small part
/// of the embedded memory of the Stratix IV GX 530 (seed 000 Table 2).
pub const INTERNAL_SLOTS: u32 = 1024;

/// `tcaSetDMADesc*`, `tcaSetDMAChain` or `tcaDestroyDMADesc` with a tag no `tcaCreateDMADesc`
/// of this rank returned.
pub const TCA_ERROR_UNKNOWN_TAG: c_int = 104;
/// A tag `tcaDestroyDMADesc` destroyed.
pub const TCA_ERROR_DESTROYED_TAG: c_int = 105;
/// A descriptor slot below 0 or at or above the table's entries.
pub const TCA_ERROR_DESC_SLOT_OUT_OF_RANGE: c_int = 106;
/// `tcaSetDMAChain` of a table without entries, `tcaSetDMAChainInt` at an empty slot.
pub const TCA_ERROR_EMPTY_TABLE: c_int = 107;
/// An internal-memory slot at or above [`INTERNAL_SLOTS`].
pub const TCA_ERROR_INTERNAL_MEMORY_FULL: c_int = 108;

/// The codes of this module: (code, C name, message), listed by [`crate::c_errors`].
pub const TABLE_ERRORS: [(c_int, &str, &str); 5] = [
    (TCA_ERROR_UNKNOWN_TAG, "TCA_ERROR_UNKNOWN_TAG", "no descriptor table has this tag (tcaCreateDMADesc)"),
    (TCA_ERROR_DESTROYED_TAG, "TCA_ERROR_DESTROYED_TAG", "descriptor table was destroyed (tcaDestroyDMADesc)"),
    (TCA_ERROR_DESC_SLOT_OUT_OF_RANGE, "TCA_ERROR_DESC_SLOT_OUT_OF_RANGE", "descriptor slot outside the table"),
    (TCA_ERROR_EMPTY_TABLE, "TCA_ERROR_EMPTY_TABLE", "no descriptor to chain (empty table or slot)"),
    (
        TCA_ERROR_INTERNAL_MEMORY_FULL,
        "TCA_ERROR_INTERNAL_MEMORY_FULL",
        "descriptor slot beyond PEACH2's internal memory",
    ),
];

/// The arguments of one set call, replayed into a [`Desc`] when a chain is registered. A
/// contiguous copy is one burst of `width` bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Entry {
    dst: Handle,
    dst_off: u64,
    dst_pitch: u64,
    src: Handle,
    src_off: u64,
    src_pitch: u64,
    width: u64,
    count: u64,
    flags: DmaFlags,
    wait_slot: u32,
    wait_tag: u32,
}

impl Entry {
    pub(crate) fn append_to(&self, d: &mut Desc) -> TcaResult<()> {
        let Entry { dst, dst_off, dst_pitch, src, src_off, src_pitch, width, count, flags, wait_slot, wait_tag } =
            *self;
        d.set_memcpy_2d(&dst, dst_off, dst_pitch, &src, src_off, src_pitch, width, count, flags, wait_slot, wait_tag)
    }

    /// The entry if `tcaDescSetMemcpy2D` would accept it.
    fn checked(self) -> Result<Entry, CErr> {
        self.append_to(&mut Desc::new())?;
        Ok(self)
    }
}

/// A tag's table.
#[derive(Debug, Default)]
struct Table {
    entries: u32,
    slots: BTreeMap<u32, Entry>,
}

/// What a channel runs, as far as this module knows.
#[derive(Debug, Clone, Default, PartialEq)]
enum Chained {
    /// Never set, or set by `tcaDescSet` / `tcaSetDMAChainInt`: the fabric knows.
    #[default]
    Elsewhere,
    /// The tags chained by `tcaSetDMAChain`, in order.
    Tags(Vec<c_int>),
    /// Its last tag was destroyed: nothing to start.
    Emptied,
}

/// One rank's tables.
#[derive(Debug, Default)]
struct Rank {
    /// Tag `t` is `tags[t - 1]`; `None` once destroyed.
    tags: Vec<Option<Table>>,
    internal: BTreeMap<u32, Entry>,
    channels: [Chained; CHANNELS],
}

impl Rank {
    fn table(&mut self, tag: c_int) -> Result<&mut Table, CErr> {
        let i = usize::try_from(tag).ok().and_then(|t| t.checked_sub(1));
        match i.and_then(|i| self.tags.get_mut(i)) {
            Some(Some(t)) => Ok(t),
            Some(None) => Err(CErr::Abi(TCA_ERROR_DESTROYED_TAG)),
            None => Err(CErr::Abi(TCA_ERROR_UNKNOWN_TAG)),
        }
    }

    /// The chaining-mode chain of `tags`, one after the other.
    fn chain_of(&mut self, tags: &[c_int]) -> Result<Desc, CErr> {
        let mut d = chaining();
        for &t in tags {
            for e in self.table(t)?.slots.values() {
                e.append_to(&mut d)?;
            }
        }
        Ok(d)
    }
}

static RANKS: Mutex<BTreeMap<usize, Rank>> = Mutex::new(BTreeMap::new());

/// A channel of some rank of this process was emptied once: until then a start needs no look
/// at the tables (and their lock) at all.
static EVER_EMPTIED: AtomicBool = AtomicBool::new(false);

fn ranks() -> MutexGuard<'static, BTreeMap<usize, Rank>> {
    RANKS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The calling rank's key; [`TcaError::NotInitialized`] before `tcaInit` and after
/// `tcaFinalize` (the shm fabric stays registered in the process after it).
fn rank_key() -> Result<usize, CErr> {
    with_fabric(|f| {
        f.node_id()?;
        Ok(fabric_key(f))
    })
}

fn with_rank<T>(key: usize, f: impl FnOnce(&mut Rank) -> Result<T, CErr>) -> Result<T, CErr> {
    f(ranks().entry(key).or_default())
}

fn chaining() -> Desc {
    let mut d = Desc::new();
    // A new chain is live, so setting its mode cannot fail.
    let _ = d.set_mode(Some(DmaMode::Chaining));
    d
}

fn channel_index(ch: c_int) -> Result<usize, CErr> {
    usize::try_from(ch).ok().filter(|c| *c < CHANNELS).ok_or(CErr::Tca(TcaError::InvalidChannel))
}

fn internal_slot(slot: c_int) -> Result<u32, CErr> {
    let s = u32::try_from(slot).map_err(|_| CErr::Abi(TCA_ERROR_DESC_SLOT_OUT_OF_RANGE))?;
    if s >= INTERNAL_SLOTS {
        return Err(CErr::Abi(TCA_ERROR_INTERNAL_MEMORY_FULL));
    }
    Ok(s)
}

/// Registers `desc` on channel `ch` of the calling rank, then records what the channel runs.
fn register(key: usize, ch: usize, desc: &Desc, now: Chained) -> Result<(), CErr> {
    with_fabric(|f| Ok(f.desc_set(ch as u8, desc)?))?;
    crate::coll_guard::chain_set(key, ch as u8);
    with_rank(key, |r| {
        r.channels[ch] = now;
        Ok(())
    })
}

/// Decodes the arguments of a set call (as `tcaDescSetMemcpy2D` takes them; a contiguous copy
/// is one burst of its size).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn decode_entry(
    dst: *const Handle32,
    dst_off: i64,
    dst_pitch: usize,
    src: *const Handle32,
    src_off: i64,
    src_pitch: usize,
    width: usize,
    count: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> Result<Entry, CErr> {
    Ok(Entry {
        dst: handle_in(dst)?,
        dst_off: offset(dst_off)?,
        dst_pitch: dst_pitch as u64,
        src: handle_in(src)?,
        src_off: offset(src_off)?,
        src_pitch: src_pitch as u64,
        width: width as u64,
        count: count as u64,
        flags: DmaFlags::from_bits(flags as u32)?,
        wait_slot: nonneg(wait_slot)?,
        wait_tag: wait_tag as u32,
    })
}

/// [`decode_entry`], and the entry if `tcaDescSetMemcpy2D` would accept it.
#[allow(clippy::too_many_arguments)]
unsafe fn entry_in(
    dst: *const Handle32,
    dst_off: i64,
    dst_pitch: usize,
    src: *const Handle32,
    src_off: i64,
    src_pitch: usize,
    width: usize,
    count: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> Result<Entry, CErr> {
    decode_entry(dst, dst_off, dst_pitch, src, src_off, src_pitch, width, count, flags, wait_slot, wait_tag)?.checked()
}

/// Stores `entry` (its arguments' error, if any, after the table's) at `slot` of `tag`.
fn set_tagged(tag: c_int, slot: c_int, next_slot: *mut c_int, entry: Result<Entry, CErr>) -> Result<(), CErr> {
    let key = rank_key()?;
    with_rank(key, |r| {
        let table = r.table(tag)?;
        let s = u32::try_from(slot).ok().filter(|s| *s < table.entries);
        let s = s.ok_or(CErr::Abi(TCA_ERROR_DESC_SLOT_OUT_OF_RANGE))?;
        table.slots.insert(s, entry?);
        Ok(())
    })?;
    // SAFETY: the caller passes NULL or a pointer to an int; slot < entries <= c_int::MAX.
    if let Some(n) = unsafe { next_slot.as_mut() } {
        *n = slot + 1;
    }
    Ok(())
}

/// Stores `entry` with `tcaDMAUseInternal` at internal-memory `slot`.
fn set_internal(slot: c_int, next_slot: *mut c_int, entry: Result<Entry, CErr>) -> Result<(), CErr> {
    let key = rank_key()?;
    let s = internal_slot(slot)?;
    let mut e = entry?;
    e.flags |= DmaFlags::USE_INTERNAL;
    with_rank(key, |r| {
        r.internal.insert(s, e);
        Ok(())
    })?;
    // SAFETY: as in `set_tagged`; slot < INTERNAL_SLOTS.
    if let Some(n) = unsafe { next_slot.as_mut() } {
        *n = slot + 1;
    }
    Ok(())
}

// ---- hooks of the tcaDesc calls (api.rs) ----

/// `tcaDescSet` put another chain on `ch` of the rank `key`: a later `tcaSetDMAChain` starts a
/// new list.
pub(crate) fn chain_replaced(key: usize, ch: u8) {
    if let Some(c) = ranks().get_mut(&key).and_then(|r| r.channels.get_mut(usize::from(ch))) {
        *c = Chained::Elsewhere;
    }
}

/// `tcaStartDMADesc`: a channel whose tags were all destroyed has no chain.
pub(crate) fn check_start(key: usize, ch: u8) -> Result<(), CErr> {
    if !EVER_EMPTIED.load(Ordering::Acquire) {
        return Ok(());
    }
    let ranks = ranks();
    match ranks.get(&key).and_then(|r| r.channels.get(usize::from(ch))) {
        Some(Chained::Emptied) => Err(CErr::Tca(TcaError::ChannelNotSet)),
        _ => Ok(()),
    }
}

/// `tcaFinalize`: the rank's tables go with it.
pub(crate) fn forget(key: usize) {
    ranks().remove(&key);
}

// ---- tables by tag ----

/// `tcaCreateDMADesc(int *tag, int entries)`: a table of `entries` (> 0) slots; its tag.
#[no_mangle]
pub unsafe extern "C-unwind" fn tcaCreateDMADesc(tag: *mut c_int, entries: c_int) -> c_int {
    run(|| {
        let out = tag.as_mut().ok_or(CErr::Arg)?;
        let entries = u32::try_from(entries).ok().filter(|e| *e > 0).ok_or(CErr::Arg)?;
        let key = rank_key()?;
        *out = with_rank(key, |r| {
            let t = c_int::try_from(r.tags.len() + 1).map_err(|_| CErr::Tca(TcaError::OutOfMemory))?;
            r.tags.push(Some(Table { entries, slots: BTreeMap::new() }));
            Ok(t)
        })?;
        Ok(())
    })
}

/// `tcaSetDMADesc_Memcpy`: a contiguous copy at `slot` of table `tag`; `*next_slot = slot + 1`
/// (`next_slot` may be NULL).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn tcaSetDMADesc_Memcpy(
    tag: c_int,
    slot: c_int,
    next_slot: *mut c_int,
    dst: *const Handle32,
    dst_off: i64,
    src: *const Handle32,
    src_off: i64,
    size: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let e = entry_in(dst, dst_off, size, src, src_off, size, size, 1, flags, wait_slot, wait_tag);
        set_tagged(tag, slot, next_slot, e)
    })
}

/// `tcaSetDMADesc_Memcpy2D`: a block-stride copy at `slot` of table `tag`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn tcaSetDMADesc_Memcpy2D(
    tag: c_int,
    slot: c_int,
    next_slot: *mut c_int,
    dst: *const Handle32,
    dst_off: i64,
    dst_pitch: usize,
    src: *const Handle32,
    src_off: i64,
    src_pitch: usize,
    width: usize,
    count: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let e = entry_in(dst, dst_off, dst_pitch, src, src_off, src_pitch, width, count, flags, wait_slot, wait_tag);
        set_tagged(tag, slot, next_slot, e)
    })
}

/// `tcaSetDMAChain(ch, tag)`: chains table `tag` after the tags already chained on `ch`.
#[no_mangle]
pub extern "C-unwind" fn tcaSetDMAChain(ch: c_int, tag: c_int) -> c_int {
    run(|| {
        let ch = channel_index(ch)?;
        let key = rank_key()?;
        let (list, desc) = with_rank(key, |r| {
            if r.table(tag)?.slots.is_empty() {
                return Err(CErr::Abi(TCA_ERROR_EMPTY_TABLE));
            }
            let mut list = match &r.channels[ch] {
                Chained::Tags(l) => l.clone(),
                _ => Vec::new(),
            };
            if !list.contains(&tag) {
                list.push(tag);
            }
            let desc = r.chain_of(&list)?;
            Ok((list, desc))
        })?;
        register(key, ch, &desc, Chained::Tags(list))
    })
}

/// `tcaDestroyDMADesc(tag)`: the table goes, and off every channel it was chained on.
#[no_mangle]
pub extern "C-unwind" fn tcaDestroyDMADesc(tag: c_int) -> c_int {
    run(|| {
        let key = rank_key()?;
        let again = with_rank(key, |r| {
            r.table(tag)?;
            r.tags[(tag - 1) as usize] = None;
            let mut again = Vec::new();
            for ch in 0..CHANNELS {
                let Chained::Tags(list) = &r.channels[ch] else { continue };
                if !list.contains(&tag) {
                    continue;
                }
                let rest: Vec<c_int> = list.iter().copied().filter(|t| *t != tag).collect();
                if rest.is_empty() {
                    r.channels[ch] = Chained::Emptied;
                    EVER_EMPTIED.store(true, Ordering::Release);
                    crate::dma_direct::forget_kept_run(ch);
                } else {
                    again.push((ch, r.chain_of(&rest)?, rest));
                }
            }
            Ok(again)
        })?;
        for (ch, desc, rest) in again {
            if let Err(e) = register(key, ch, &desc, Chained::Tags(rest)) {
                with_rank(key, |r| {
                    r.channels[ch] = Chained::Emptied;
                    EVER_EMPTIED.store(true, Ordering::Release);
                    crate::dma_direct::forget_kept_run(ch);
                    Ok(())
                })?;
                return Err(e);
            }
        }
        Ok(())
    })
}

// ---- PEACH2 internal memory ----

/// `tcaDMADescInt_Init`: empties the rank's internal descriptor memory (channels keep the
/// chains they were given).
#[no_mangle]
pub extern "C-unwind" fn tcaDMADescInt_Init() -> c_int {
    run(|| {
        let key = rank_key()?;
        with_rank(key, |r| {
            r.internal.clear();
            Ok(())
        })
    })
}

/// `tcaSetDMADescInt_Memcpy`: a contiguous copy at internal `slot`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn tcaSetDMADescInt_Memcpy(
    slot: c_int,
    next_slot: *mut c_int,
    dst: *const Handle32,
    dst_off: i64,
    src: *const Handle32,
    src_off: i64,
    size: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let e = entry_in(dst, dst_off, size, src, src_off, size, size, 1, flags, wait_slot, wait_tag);
        set_internal(slot, next_slot, e)
    })
}

/// `tcaSetDMADescInt_Memcpy2D`: a block-stride copy at internal `slot`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C-unwind" fn tcaSetDMADescInt_Memcpy2D(
    slot: c_int,
    next_slot: *mut c_int,
    dst: *const Handle32,
    dst_off: i64,
    dst_pitch: usize,
    src: *const Handle32,
    src_off: i64,
    src_pitch: usize,
    width: usize,
    count: usize,
    flags: c_int,
    wait_slot: c_int,
    wait_tag: c_int,
) -> c_int {
    run(|| {
        let e = entry_in(dst, dst_off, dst_pitch, src, src_off, src_pitch, width, count, flags, wait_slot, wait_tag);
        set_internal(slot, next_slot, e)
    })
}

/// `tcaSetDMAChainInt(ch, slot)`: registers the internal chain from `slot` to the first empty
/// slot after it.
#[no_mangle]
pub extern "C-unwind" fn tcaSetDMAChainInt(ch: c_int, slot: c_int) -> c_int {
    run(|| {
        let ch = channel_index(ch)?;
        let first = internal_slot(slot)?;
        let key = rank_key()?;
        let desc = with_rank(key, |r| {
            let mut d = chaining();
            for s in first.. {
                let Some(e) = r.internal.get(&s) else { break };
                e.append_to(&mut d)?;
            }
            if d.is_empty() {
                return Err(CErr::Abi(TCA_ERROR_EMPTY_TABLE));
            }
            Ok(d)
        })?;
        register(key, ch, &desc, Chained::Elsewhere)
    })
}

#[cfg(test)]
mod tests;
