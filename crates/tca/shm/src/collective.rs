//! The collectives of the bootstrap (`tcaAllgather`, `tcaBarrier`): how programs started by
//! `tca run` exchange handles without MPI.
//!
//! Round `r` has two phases on each rank's `boot_seq` counter: publish (copy the contribution
//! into the segment's bootstrap buffer, then `boot_seq = 2r + 1`) and read (once every rank
//! published, copy every contribution, then `boot_seq = 2r + 2`); a rank leaves the round when
//! every rank has read, so no buffer is overwritten while someone reads it.
//!
//! A collective whose ranks pass different lengths, or more than [`BOOT_BYTES`], still runs
//! both phases (without copying) and fails on every rank, so the ranks stay in step and the
//! next collective works. A collective that fails half-way (a wait timed out, a peer died)
//! leaves the ranks out of step: every later collective of this rank fails with that error.

use crate::fabric::{lock, Inner};
use crate::segment::{BOOT, BOOT_BYTES, BOOT_TOO_LARGE};
use crate::wait::{WaitFor, Watch};
use std::sync::atomic::Ordering;
use tca_proto::{FabricError, FabricResult, TcaError, TcaResult};

const WAIT_ALL: WaitFor = WaitFor { watch: Watch::Everyone, cheap: true, engine_reports: false };

impl Inner {
    /// Every rank's `send`, by rank, concatenated. Collective.
    ///
    /// # Errors
    /// [`TcaError::TooLarge`] on a rank that passed more than [`BOOT_BYTES`] and
    /// [`TcaError::OutOfBounds`] on the others when lengths differ (every rank fails; the
    /// next collective works); [`TcaError::PeerDead`]; [`TcaError::Timeout`]; after one of
    /// those two, the same error for every later collective.
    pub(crate) fn allgather(&self, send: &[u8]) -> FabricResult<Vec<u8>> {
        self.check_live()?;
        let mut state = lock(&self.collectives);
        if let Some(e) = state.broken {
            return Err(FabricError::with_detail(
                e,
                "an earlier collective failed half-way; the ranks are out of step",
            ));
        }
        let write_seq = 2 * state.round + 1;
        let read_seq = write_seq + 1;
        self.publish(send);
        let me = self.own().header();
        me.boot_seq.0.store(write_seq, Ordering::Release);
        self.ring_all_app_bells();
        if let Err(e) = self.wait_round(write_seq) {
            state.broken = Some(e);
            return Err(e.into());
        }
        let outcome = self.gather(send.len());
        me.boot_seq.0.store(read_seq, Ordering::Release);
        self.ring_all_app_bells();
        if let Err(e) = self.wait_round(read_seq) {
            state.broken = Some(e);
            return Err(e.into());
        }
        state.round += 1;
        outcome
    }

    /// Copies this rank's contribution into its bootstrap buffer, or marks it too large.
    fn publish(&self, send: &[u8]) {
        let me = self.own();
        if send.len() > BOOT_BYTES {
            me.header().boot_len.0.store(BOOT_TOO_LARGE, Ordering::Relaxed);
            return;
        }
        // SAFETY: the bootstrap buffer is BOOT_BYTES long and only its owner writes it, while
        // no rank reads it (between rounds).
        unsafe { std::ptr::copy_nonoverlapping(send.as_ptr(), me.base().add(BOOT), send.len()) };
        me.header().boot_len.0.store(send.len() as u64, Ordering::Relaxed);
    }

    /// Waits until every rank's `boot_seq` reached `seq`.
    fn wait_round(&self, seq: u64) -> TcaResult<()> {
        self.wait(WAIT_ALL, |inner| Ok(inner.segs.iter().all(|s| s.header().boot_seq.0.load(Ordering::Acquire) >= seq)))
    }

    /// Every rank's contribution of `n` bytes, once all published; the error every rank
    /// reaches when the lengths do not agree.
    fn gather(&self, n: usize) -> FabricResult<Vec<u8>> {
        if n > BOOT_BYTES {
            return Err(FabricError::with_detail(
                TcaError::TooLarge,
                format!("{n} bytes; a rank contributes at most {BOOT_BYTES} bytes to a collective"),
            ));
        }
        let lens: Vec<u64> = self.segs.iter().map(|s| s.header().boot_len.0.load(Ordering::Relaxed)).collect();
        if let Some(r) = lens.iter().position(|&l| l != n as u64) {
            let theirs = if lens[r] == BOOT_TOO_LARGE { "more than 64 KiB".to_string() } else { lens[r].to_string() };
            return Err(FabricError::with_detail(
                TcaError::OutOfBounds,
                format!(
                    "rank {r} passed {theirs} bytes, rank {} passed {n}: all ranks pass the same length",
                    self.cfg.rank
                ),
            ));
        }
        let mut recv = vec![0u8; n * self.segs.len()];
        for (s, out) in self.segs.iter().zip(recv.chunks_exact_mut(n.max(1))) {
            // SAFETY: the rank published n bytes before its release store of write_seq, which
            // wait_round acquired.
            unsafe { std::ptr::copy_nonoverlapping(s.base().add(BOOT), out.as_mut_ptr(), n) };
        }
        Ok(recv)
    }
}
