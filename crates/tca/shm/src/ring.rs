//! The single-producer, single-consumer rings of a segment: notifications (one 64-bit entry
//! each) and proxy-read messages ([`MSG_BYTES`] each), one ring per sending node.
//!
//! A ring has one producer (threads of the sending process, serialised by its producer lock)
//! and one consumer at a time (the owning process, under its engine lock), so head and tail
//! are plain atomics: the producer writes the entry, then publishes `head` with release
//! ordering; the data a notification announces was written before that.

use crate::segment::Line;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Entries of one notification ring.
pub const RING_SLOTS: usize = 1024;
/// Entries of one message ring.
pub const MSG_SLOTS: usize = 64;
/// Bytes of one message.
pub const MSG_BYTES: usize = 128;

/// A ring of notifications.
#[repr(C)]
#[derive(Debug)]
pub struct Ring {
    /// Next entry the producer writes (counts up, wraps at `u32`).
    pub head: Line<AtomicU32>,
    /// Next entry the consumer reads.
    pub tail: Line<AtomicU32>,
    /// Entries: `slot << 32 | tag`.
    pub slots: [AtomicU64; RING_SLOTS],
}

impl Ring {
    /// Appends an entry; `false` when the ring is full.
    pub fn push(&self, value: u64) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        if head.wrapping_sub(tail) as usize >= RING_SLOTS {
            return false;
        }
        self.slots[head as usize % RING_SLOTS].store(value, Ordering::Relaxed);
        self.head.0.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// Whether no entry waits (one load of a line the producer writes only on a push).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.0.load(Ordering::Acquire) == self.tail.0.load(Ordering::Relaxed)
    }

    /// Takes every entry, oldest first.
    pub fn drain(&self, mut f: impl FnMut(u64)) {
        let head = self.head.0.load(Ordering::Acquire);
        let mut tail = self.tail.0.load(Ordering::Relaxed);
        if head == tail {
            return;
        }
        while tail != head {
            f(self.slots[tail as usize % RING_SLOTS].load(Ordering::Relaxed));
            tail = tail.wrapping_add(1);
        }
        self.tail.0.store(tail, Ordering::Release);
    }
}

/// Encodes a notification as a ring entry.
pub fn encode_notify(slot: u16, tag: u32) -> u64 {
    (u64::from(slot) << 32) | u64::from(tag)
}

/// Decodes a ring entry into (slot, tag). Every `u64` decodes; the engine rejects a slot out
/// of range (only a corrupted peer writes one).
pub fn decode_notify(v: u64) -> (u16, u32) {
    ((v >> 32) as u16, v as u32)
}

/// A ring of proxy-read messages (seed 000 §3.5: requests, interrupts, answers).
#[repr(C)]
#[derive(Debug)]
pub struct MsgRing {
    /// Next entry the producer writes.
    pub head: Line<AtomicU32>,
    /// Next entry the consumer reads.
    pub tail: Line<AtomicU32>,
    /// Entries, as 64-bit words.
    pub slots: [[AtomicU64; MSG_BYTES / 8]; MSG_SLOTS],
}

impl MsgRing {
    /// Appends a message; `false` when the ring is full.
    pub fn push(&self, msg: &[u8; MSG_BYTES]) -> bool {
        let head = self.head.0.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        if head.wrapping_sub(tail) as usize >= MSG_SLOTS {
            return false;
        }
        let slot = &self.slots[head as usize % MSG_SLOTS];
        for (w, chunk) in slot.iter().zip(msg.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            w.store(u64::from_le_bytes(b), Ordering::Relaxed);
        }
        self.head.0.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// Whether a message waits (no lock needed).
    pub fn is_empty(&self) -> bool {
        self.head.0.load(Ordering::Acquire) == self.tail.0.load(Ordering::Relaxed)
    }

    /// Takes every message, oldest first.
    pub fn drain(&self, mut f: impl FnMut(&[u8; MSG_BYTES])) {
        let head = self.head.0.load(Ordering::Acquire);
        let mut tail = self.tail.0.load(Ordering::Relaxed);
        if head == tail {
            return;
        }
        let mut msg = [0u8; MSG_BYTES];
        while tail != head {
            let slot = &self.slots[tail as usize % MSG_SLOTS];
            for (w, chunk) in slot.iter().zip(msg.chunks_exact_mut(8)) {
                chunk.copy_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            f(&msg);
            tail = tail.wrapping_add(1);
        }
        self.tail.0.store(tail, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_entries_round_trip() {
        for (slot, tag) in [(0u16, 0u32), (63, u32::MAX), (7, 0x1234_5678)] {
            assert_eq!(decode_notify(encode_notify(slot, tag)), (slot, tag));
        }
    }

    #[test]
    fn rings_keep_order_and_refuse_when_full() {
        // SAFETY: all-zero bytes are a valid empty ring (atomics only).
        let ring: Box<Ring> = unsafe { Box::new(std::mem::zeroed()) };
        for i in 0..RING_SLOTS as u64 {
            assert!(ring.push(i));
        }
        assert!(!ring.push(99));
        let mut got = Vec::new();
        ring.drain(|v| got.push(v));
        assert_eq!(got, (0..RING_SLOTS as u64).collect::<Vec<_>>());
        // SAFETY: as above.
        let msgs: Box<MsgRing> = unsafe { Box::new(std::mem::zeroed()) };
        assert!(msgs.is_empty());
        let mut m = [0u8; MSG_BYTES];
        m[127] = 5;
        assert!(msgs.push(&m));
        assert!(!msgs.is_empty());
        let mut seen = 0;
        msgs.drain(|b| seen = b[127]);
        assert_eq!(seen, 5);
        assert!(msgs.is_empty());
    }

    proptest::proptest! {
        /// Any ring entry a peer writes decodes; the engine takes it or refuses it.
        #[test]
        fn any_notification_entry_is_taken_or_refused(v: u64, src in 0u16..4) {
            let mut e = tca_proto::Engine::new(0, 4).unwrap();
            let (slot, tag) = decode_notify(v);
            let r = e.handle_notify_arrived(src, slot, tag);
            proptest::prop_assert_eq!(r.is_ok(), slot < tca_proto::NOTIFY_SLOTS);
        }
    }
}
