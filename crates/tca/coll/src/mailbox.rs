//! PIO messages between ranks: every rank's control buffer holds, for each sender and each
//! epoch parity, one box that only that sender stores into, and one acknowledgement word per
//! receiver and parity that only that receiver stores into.
//!
//! A message of epoch `e` from `s` to `d` lands in `d`'s box `(s, e % 2)`:
//!
//! ```text
//! box + 0:  epoch  u32   stored last, after a tcaSendPIOCommit: the receiver waits for it
//! box + 4:  min    u32   smallest argument signature the sender has seen
//! box + 8:  max    u32   largest one
//! box + 12: len    u32   payload bytes
//! box + 16: payload      up to BOX_PAYLOAD bytes (stored in whole 4-byte words)
//! ```
//!
//! The receiver waits for the epoch word (`tcaWaitPIO`), copies the box out and stores the
//! epoch into the sender's acknowledgement word `(d, e % 2)`. Before the sender stores into a
//! box again (two epochs later) it waits until that word holds the epoch it last sent there:
//! two boxes per pair let a sender run one collective ahead (a root of a broadcast does) without
//! ever overwriting a message nobody has read, and the wait is almost never long.

use crate::coll::Coll;
use crate::error::CollResult;
use std::sync::atomic::{fence, Ordering};
use tca_proto::Fabric;

/// Largest payload of one PIO message \[bytes\].
pub const BOX_PAYLOAD: usize = 4096;
/// Bytes of one box: header and payload.
pub(crate) const BOX_BYTES: u64 = 16 + BOX_PAYLOAD as u64;
/// Bytes of the acknowledgement words at the start of the control buffer (16 ranks, 2
/// parities, 4 bytes), rounded to 16.
const ACK_BYTES: u64 = 128;

/// Bytes of the control buffer of a job of `n` ranks.
pub(crate) fn control_bytes(n: u16) -> u64 {
    ACK_BYTES + u64::from(n) * 2 * BOX_BYTES
}

fn ack_offset(peer: u16, parity: usize) -> u64 {
    (u64::from(peer) * 2 + parity as u64) * 4
}

fn box_offset(src: u16, parity: usize) -> u64 {
    ACK_BYTES + (u64::from(src) * 2 + parity as u64) * BOX_BYTES
}

/// A message taken from a box.
pub(crate) struct Msg {
    /// The signatures the sender had seen (min, max).
    pub sig: (u32, u32),
    /// The payload.
    pub data: Vec<u8>,
}

impl Coll {
    fn parity(&self) -> usize {
        (self.epoch % 2) as usize
    }

    /// Stores a message of the current epoch into `dst`'s box.
    pub(crate) fn post(&mut self, f: &dyn Fabric, dst: u16, sig: (u32, u32), data: &[u8]) -> CollResult<()> {
        debug_assert!(data.len() <= BOX_PAYLOAD && dst != self.me);
        let p = self.parity();
        let prev = self.last_sent[usize::from(dst)][p];
        if prev != 0 {
            f.wait_pio(&self.ctl, ack_offset(dst, p), &prev.to_le_bytes(), Some(dst))?;
        }
        let words = data.len().div_ceil(4) * 4;
        let mut msg = Vec::with_capacity(12 + words);
        msg.extend_from_slice(&sig.0.to_le_bytes());
        msg.extend_from_slice(&sig.1.to_le_bytes());
        msg.extend_from_slice(&(data.len() as u32).to_le_bytes());
        msg.extend_from_slice(data);
        msg.resize(12 + words, 0);
        let window = &self.windows[usize::from(dst)];
        f.send_pio(window, box_offset(self.me, p) + 4, &msg)?;
        f.send_pio_commit()?;
        f.send_pio(window, box_offset(self.me, p), &self.epoch.to_le_bytes())?;
        self.last_sent[usize::from(dst)][p] = self.epoch;
        Ok(())
    }

    /// Waits for the current epoch's message from `src`, copies it out and acknowledges it.
    pub(crate) fn take(&mut self, f: &dyn Fabric, src: u16) -> CollResult<Msg> {
        let p = self.parity();
        let at = box_offset(src, p);
        f.wait_pio(&self.ctl, at, &self.epoch.to_le_bytes(), Some(src))?;
        fence(Ordering::Acquire);
        let mut head = [0u8; 16];
        // SAFETY: the control buffer is this rank's allocation of control_bytes(n) bytes and
        // the box lies inside it; its sender stores nothing more before the acknowledgement.
        unsafe { std::ptr::copy_nonoverlapping((self.ctl_ptr + at) as usize as *const u8, head.as_mut_ptr(), 16) };
        let word = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
        let len = (word(12) as usize).min(BOX_PAYLOAD);
        let mut data = vec![0u8; len];
        // SAFETY: as above; len is at most the box's payload.
        unsafe {
            std::ptr::copy_nonoverlapping((self.ctl_ptr + at + 16) as usize as *const u8, data.as_mut_ptr(), len)
        };
        f.send_pio(&self.windows[usize::from(src)], ack_offset(self.me, p), &self.epoch.to_le_bytes())?;
        Ok(Msg { sig: (word(4), word(8)), data })
    }
}
