//! The single-producer, single-consumer rings of a segment: notifications (one 64-bit entry
//! each) and proxy-read messages ([`MSG_BYTES`] each), one ring per sending node.
//!
//! A ring has one producer (threads of the sending process, serialised by its producer lock)
//! and one consumer at a time (the owning process, under its engine lock).
//!
//! A notification entry carries its own lap number, so that a notification is one store into
//! one cache line of the receiver (as a PIO flag is): the producer writes the entry with
//! release ordering after the data it announces, and the consumer, which knows which lap it
//! expects at its position, sees a new entry by reading that entry alone. The producer keeps
//! its position in its own process ([`Producer`]) and reads the consumer's `tail` only when
//! its last copy of it says the ring is full. Message rings publish a `head` instead.

use crate::segment::Line;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Entries of one notification ring.
pub const RING_SLOTS: usize = 1024;
/// Entries of one message ring.
pub const MSG_SLOTS: usize = 64;
/// Bytes of one message.
pub const MSG_BYTES: usize = tca_proto::PROXY_MSG_BYTES;

/// Bits of an entry below its lap number.
const LAP_SHIFT: u32 = 48;

/// The lap number entry `index` is written with: never 0 (the value of a ring never written),
/// and different for consecutive laps of one slot (also where `index` wraps).
fn lap(index: u32) -> u64 {
    u64::from(index / RING_SLOTS as u32) % 0xffff + 1
}

/// The producer's side of one notification ring, kept in the producing process.
#[derive(Debug, Default)]
pub struct Producer {
    /// Next entry to write.
    head: u32,
    /// The consumer's `tail` as last read.
    tail: u32,
}

/// A ring of notifications.
#[repr(C)]
#[derive(Debug)]
pub struct Ring {
    /// Next entry the consumer reads (counts up, wraps at `u32`).
    pub tail: Line<AtomicU32>,
    /// Entries: `lap << 48 | slot << 32 | tag`.
    pub slots: [AtomicU64; RING_SLOTS],
}

impl Ring {
    /// Appends an entry (`value` below bit 48); `false` when the ring is full.
    pub fn push(&self, p: &mut Producer, value: u64) -> bool {
        debug_assert!(value >> LAP_SHIFT == 0);
        if p.head.wrapping_sub(p.tail) as usize >= RING_SLOTS {
            p.tail = self.tail.0.load(Ordering::Acquire);
            if p.head.wrapping_sub(p.tail) as usize >= RING_SLOTS {
                return false;
            }
        }
        let entry = lap(p.head) << LAP_SHIFT | value;
        self.slots[p.head as usize % RING_SLOTS].store(entry, Ordering::Release);
        p.head = p.head.wrapping_add(1);
        true
    }

    /// Whether no entry waits (one load of the entry the producer writes next).
    #[inline]
    pub fn is_empty(&self) -> bool {
        let tail = self.tail.0.load(Ordering::Relaxed);
        self.slots[tail as usize % RING_SLOTS].load(Ordering::Acquire) >> LAP_SHIFT != lap(tail)
    }

    /// The oldest entry, if one waits (no lock needed; only the consumer may take it).
    #[inline]
    pub fn front(&self) -> Option<u64> {
        let tail = self.tail.0.load(Ordering::Relaxed);
        let v = self.slots[tail as usize % RING_SLOTS].load(Ordering::Acquire);
        (v >> LAP_SHIFT == lap(tail)).then_some(v & ((1 << LAP_SHIFT) - 1))
    }

    /// Takes the oldest entry if it is `value`.
    pub fn take_front_if(&self, value: u64) -> bool {
        if self.front() != Some(value) {
            return false;
        }
        let tail = self.tail.0.load(Ordering::Relaxed);
        self.tail.0.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Takes every entry, oldest first.
    pub fn drain(&self, mut f: impl FnMut(u64)) {
        let start = self.tail.0.load(Ordering::Relaxed);
        let mut tail = start;
        loop {
            let v = self.slots[tail as usize % RING_SLOTS].load(Ordering::Acquire);
            if v >> LAP_SHIFT != lap(tail) {
                break;
            }
            f(v & ((1 << LAP_SHIFT) - 1));
            tail = tail.wrapping_add(1);
        }
        if tail != start {
            self.tail.0.store(tail, Ordering::Release);
        }
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
        let mut p = Producer::default();
        assert!(ring.is_empty());
        for i in 0..RING_SLOTS as u64 {
            assert!(ring.push(&mut p, i));
        }
        assert!(!ring.is_empty());
        assert!(!ring.push(&mut p, 99));
        let mut got = Vec::new();
        ring.drain(|v| got.push(v));
        assert_eq!(got, (0..RING_SLOTS as u64).collect::<Vec<_>>());
        assert!(ring.is_empty());
        // Laps after laps, across the wrap of the position counters: nothing lost, nothing
        // seen twice.
        ring.tail.0.store(u32::MAX - 3000, Ordering::Relaxed);
        let mut p = Producer { head: u32::MAX - 3000, tail: u32::MAX - 3000 };
        let mut got = Vec::new();
        for i in 0..6000u64 {
            assert!(ring.push(&mut p, encode_notify(i as u16, i as u32)));
            if i % 7 == 0 {
                ring.drain(|v| got.push(v));
            }
        }
        ring.drain(|v| got.push(v));
        assert_eq!(got, (0..6000u64).map(|i| encode_notify(i as u16, i as u32)).collect::<Vec<_>>());
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

    #[test]
    fn only_the_entry_asked_for_is_taken_from_the_front() {
        // SAFETY: all-zero bytes are a valid empty ring (atomics only).
        let ring: Box<Ring> = unsafe { Box::new(std::mem::zeroed()) };
        let mut p = Producer::default();
        assert_eq!(ring.front(), None);
        assert!(!ring.take_front_if(encode_notify(0, 0)));
        let (a, b) = (encode_notify(1, 7), encode_notify(2, 7));
        assert!(ring.push(&mut p, a) && ring.push(&mut p, b));
        assert_eq!(ring.front(), Some(a));
        assert!(!ring.take_front_if(b), "b waits behind a");
        assert!(ring.take_front_if(a));
        assert_eq!(ring.front(), Some(b));
        let mut rest = Vec::new();
        ring.drain(|v| rest.push(v));
        assert_eq!(rest, [b]);
        assert!(ring.is_empty() && ring.front().is_none());
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
