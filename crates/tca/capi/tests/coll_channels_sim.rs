//! A program's DMA chain and the collective library's on the simulated HA-PACS/TCA: a chain
//! registered once and kicked every iteration (HA-PACS style) must not run the chain a large
//! collective left on its channel. `tcaStartDMADesc` answers `TCA_ERROR_CHANNEL_TAKEN` (and runs
//! nothing) until the program registers its chain again; channels outside `TCA_COLL_CHANNELS`
//! are left alone.

use std::ffi::c_void;
use tca::api::*;
use tca::coll::*;
use tca::desc_table::*;
use tca::results::TCA_ERROR_CHANNEL_TAKEN;

mod common;

const CPU: i32 = 0;
const INT: i32 = 4 << 8 | 6;
const SUM: i32 = 0;
/// Bytes the program's chain copies.
const BYTES: usize = 4096;
/// Bytes per rank of the allgather: DMA in the library (docs/collectives.md).
const GATHER: usize = 64 << 10;

/// Runs `program(rank, ranks)` between `tcaInit` and `tcaFinalize` on every rank; their
/// lines, rank by rank.
fn run(ranks: u32, program: fn(i32, i32) -> Vec<String>) -> Vec<String> {
    let (lines, _) = common::run(ranks, move |r, _| {
        assert_eq!(tcaInit(), 0);
        let out = program(r as i32, ranks as i32);
        assert_eq!(tcaFinalize(), 0);
        out
    });
    lines.into_iter().flatten().collect()
}

/// A rank's chain on its own node: `BYTES` from `src` to `dst` (both tcaMalloc'd).
struct Chain {
    src: *mut u8,
    dst: *mut u8,
    desc: *mut c_void,
    tag: i32,
}

impl Chain {
    /// The chain as a `tcaDesc` and as a descriptor table, not yet registered.
    unsafe fn new(me: i32) -> Chain {
        let (mut src, mut dst): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(tcaMalloc(&mut src, BYTES, CPU), 0);
        assert_eq!(tcaMalloc(&mut dst, BYTES, CPU), 0);
        for i in 0..BYTES {
            *src.cast::<u8>().add(i) = (i as i32 * 7 + me) as u8 | 1;
        }
        let (mut hs, mut hd) = ([0u8; 32], [0u8; 32]);
        assert_eq!(tcaCreateHandle(hs.as_mut_ptr().cast(), src, BYTES, CPU), 0);
        assert_eq!(tcaCreateHandle(hd.as_mut_ptr().cast(), dst, BYTES, CPU), 0);
        let (s, d): (*const Handle32, *const Handle32) = (hs.as_ptr().cast(), hd.as_ptr().cast());
        let desc = tcaDescNew();
        assert_eq!(tcaDescSetMemcpy(desc, d, 0, s, 0, BYTES, 0, 0, 0), 0);
        let mut tag = 0;
        assert_eq!(tcaCreateDMADesc(&mut tag, 1), 0);
        assert_eq!(tcaSetDMADesc_Memcpy(tag, 0, std::ptr::null_mut(), d, 0, s, 0, BYTES, 0, 0, 0), 0);
        Chain { src: src.cast(), dst: dst.cast(), desc, tag }
    }

    /// Clears `dst`, kicks channel `ch` and waits: the kick's code, and whether `dst` then
    /// holds `src`.
    unsafe fn kick(&self, ch: i32) -> (i32, bool) {
        std::ptr::write_bytes(self.dst, 0, BYTES);
        let r = tcaStartDMADesc(ch);
        if r == 0 {
            assert_eq!(tcaWaitDMAC(ch), 0);
        }
        let same = std::slice::from_raw_parts(self.src, BYTES) == std::slice::from_raw_parts(self.dst, BYTES);
        (r, same)
    }
}

/// A large allgather; a message for each wrong block.
unsafe fn allgather(me: i32, n: i32, bad: &mut Vec<String>) {
    let mine = vec![me as u8 + 1; GATHER];
    let mut all = vec![0u8; GATHER * n as usize];
    assert_eq!(tcaCollAllgather(mine.as_ptr().cast(), all.as_mut_ptr().cast(), GATHER), 0);
    if !all.chunks(GATHER).enumerate().all(|(r, b)| b.iter().all(|&v| v == r as u8 + 1)) {
        bad.push(format!("rank {me}: allgather"));
    }
}

/// Channel 0 is the library's: kicks after a large allgather fail until the chain is set again.
fn on_a_channel_of_the_library(me: i32, n: i32) -> Vec<String> {
    let mut bad = Vec::new();
    let mut check = |what: &str, got: (i32, bool), want: (i32, bool)| {
        if got != want {
            bad.push(format!("rank {me}: {what}: (code, copied) {got:?}, want {want:?}"));
        }
    };
    // SAFETY: every pointer points at a live buffer of the size passed.
    unsafe {
        let c = Chain::new(me);
        assert_eq!(tcaDescSet(c.desc, 0), 0);
        check("first kick", c.kick(0), (0, true));
        // A small collective on host memory uses PIO only: the chain stays.
        let (x, mut y) = ([1i32], [0i32]);
        assert_eq!(tcaCollAllreduce(x.as_ptr().cast(), y.as_mut_ptr().cast(), 1, INT, SUM), 0);
        check("after a 4-byte allreduce", c.kick(0), (0, true));
        let mut gathered = Vec::new();
        allgather(me, n, &mut gathered);
        check("after a large allgather", c.kick(0), (TCA_ERROR_CHANNEL_TAKEN, false));
        check("again", c.kick(0), (TCA_ERROR_CHANNEL_TAKEN, false));
        assert_eq!(tcaWaitDMAC(0), 0, "the wait has nothing to wait for");
        assert_eq!(tcaDescSet(c.desc, 0), 0);
        check("after tcaDescSet again", c.kick(0), (0, true));
        check("and every iteration", c.kick(0), (0, true));
        // The descriptor-table registration gives the channel back too.
        allgather(me, n, &mut gathered);
        check("table: after the allgather", c.kick(0), (TCA_ERROR_CHANNEL_TAKEN, false));
        assert_eq!(tcaSetDMAChain(0, c.tag), 0);
        check("after tcaSetDMAChain", c.kick(0), (0, true));
        bad.extend(gathered);
        assert_eq!(tcaDestroyDMADesc(c.tag), 0);
        assert_eq!(tcaDescFree(c.desc), 0);
    }
    bad
}

/// `TCA_COLL_CHANNELS=2,3`: the program's chain on channel 0 keeps running.
fn outside_the_library_channels(me: i32, n: i32) -> Vec<String> {
    let mut bad = Vec::new();
    // SAFETY: as above.
    unsafe {
        let c = Chain::new(me);
        assert_eq!(tcaDescSet(c.desc, 0), 0);
        for i in 0..3 {
            allgather(me, n, &mut bad);
            let got = c.kick(0);
            if got != (0, true) {
                bad.push(format!("rank {me}: kick {i} after an allgather: {got:?}"));
            }
        }
        // The library's first channel is taken all the same.
        let r = tcaStartDMADesc(2);
        if r != TCA_ERROR_CHANNEL_TAKEN {
            bad.push(format!("rank {me}: channel 2 gives {r}"));
        }
        assert_eq!(tcaDestroyDMADesc(c.tag), 0);
        assert_eq!(tcaDescFree(c.desc), 0);
    }
    bad
}

#[test]
fn a_kick_never_runs_the_chain_of_the_collective_library() {
    // One test: the two cases need different TCA_COLL_CHANNELS, read by each rank's first
    // collective.
    for n in [2, 3] {
        let bad = run(n, on_a_channel_of_the_library);
        assert!(bad.is_empty(), "{n} nodes: {bad:?}");
    }
    // SAFETY: no rank thread runs now.
    unsafe { std::env::set_var("TCA_COLL_CHANNELS", "2,3") };
    let bad = run(3, outside_the_library_channels);
    assert!(bad.is_empty(), "{bad:?}");
}
