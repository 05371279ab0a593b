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
//! box + 12: len    u32   payload bytes; bit 31: the payload comes by DMA (notification
//!                        SLOT_BOX, tag epoch), to be waited for before it is read
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
/// Flag of the length word: the payload is written by a DMA of the sender (a device buffer as
/// the source), which notifies slot [`SLOT_BOX`] with the epoch as tag.
pub(crate) const BY_DMA: u32 = 1 << 31;
/// The notification slot of payloads written into boxes by DMA.
pub const SLOT_BOX: u32 = 61;
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
        self.wait_box(f, dst)?;
        self.post_header(f, dst, sig, data.len() as u32, data)
    }

    /// Waits until `dst` has read what this rank last put into the box of the current parity.
    pub(crate) fn wait_box(&self, f: &dyn Fabric, dst: u16) -> CollResult<()> {
        let p = self.parity();
        let prev = self.last_sent[usize::from(dst)][p];
        if prev != 0 {
            f.wait_pio(&self.ctl, ack_offset(dst, p), &prev.to_le_bytes(), Some(dst))?;
        }
        Ok(())
    }

    /// Stores the header (length word `len`) and `data`, then the epoch word, into `dst`'s box
    /// (after [`Coll::wait_box`]).
    pub(crate) fn post_header(
        &mut self,
        f: &dyn Fabric,
        dst: u16,
        sig: (u32, u32),
        len: u32,
        data: &[u8],
    ) -> CollResult<()> {
        let p = self.parity();
        let words = data.len().div_ceil(4) * 4;
        let mut msg = Vec::with_capacity(12 + words);
        msg.extend_from_slice(&sig.0.to_le_bytes());
        msg.extend_from_slice(&sig.1.to_le_bytes());
        msg.extend_from_slice(&len.to_le_bytes());
        msg.extend_from_slice(data);
        msg.resize(12 + words, 0);
        let window = &self.windows[usize::from(dst)];
        f.send_pio(window, box_offset(self.me, p) + 4, &msg)?;
        f.send_pio_commit()?;
        f.send_pio(window, box_offset(self.me, p), &self.epoch.to_le_bytes())?;
        self.last_sent[usize::from(dst)][p] = self.epoch;
        Ok(())
    }

    /// Offset in `dst`'s control buffer of the payload of this rank's box of the current epoch
    /// (16-byte aligned, as a DMA destination must match its source's low bits).
    pub(crate) fn payload_offset(&self) -> u64 {
        box_offset(self.me, self.parity()) + 16
    }

    /// This rank's own box's payload of the current epoch (only this rank writes it, by DMA).
    pub(crate) fn own_payload(&self, len: usize) -> Vec<u8> {
        let at = box_offset(self.me, self.parity()) + 16;
        let mut data = vec![0u8; len.min(BOX_PAYLOAD)];
        // SAFETY: the box lies inside this rank's control buffer; the DMA that wrote it was
        // waited for.
        unsafe {
            std::ptr::copy_nonoverlapping((self.ctl_ptr + at) as usize as *const u8, data.as_mut_ptr(), data.len())
        };
        data
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
        let len_word = word(12);
        if len_word & BY_DMA != 0 {
            // The payload comes by DMA with a notification tagged with the epoch.
            f.wait_dma_recv(&self.windows[usize::from(src)].handle, SLOT_BOX, self.epoch)?;
            fence(Ordering::Acquire);
        }
        let len = ((len_word & !BY_DMA) as usize).min(BOX_PAYLOAD);
        let mut data = vec![0u8; len];
        // SAFETY: as above; len is at most the box's payload.
        unsafe {
            std::ptr::copy_nonoverlapping((self.ctl_ptr + at + 16) as usize as *const u8, data.as_mut_ptr(), len)
        };
        f.send_pio(&self.windows[usize::from(src)], ack_offset(self.me, p), &self.epoch.to_le_bytes())?;
        Ok(Msg { sig: (word(4), word(8)), data })
    }
}
