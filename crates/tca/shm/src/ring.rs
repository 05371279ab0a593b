//! The single-producer, single-consumer rings of a segment: notifications (one 64-bit entry
//! each) and proxy-read messages ([`MSG_BYTES`] each), one ring per sending node.
//!
//! A ring has one producer (threads of the sending process, serialised by its producer lock).
//! A notification ring's consumers are the threads of the owning process: each takes an entry
//! by moving `tail` past it with a compare-and-swap, so a waiter takes the entry it waits for
//! without the engine lock while another thread drains the ring into the engine. A message
//! ring has one consumer at a time (under the engine lock).
//!
//! A notification entry carries its own lap number, so that a notification is one store into
//! one cache line of the receiver (as a PIO flag is): the producer writes the entry with
//! release ordering after the data it announces, and the consumer, which knows which lap it
//! expects at its position, sees a new entry by reading that entry alone. The producer keeps
//! its position in its own process ([`Producer`]) and reads the consumer's `tail` only when
//! its last copy of it says the ring is full. Message rings publish a `head` instead.

use crate::segment::Line;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Entries of one notification ring: the notifications from one sender a receiver holds
/// unconsumed; a sender waits for room, up to the timeout.
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

/// The producer's side of one notification ring, kept in the producing process (`repr(C)`:
/// the C header's inline `tcaStartDMADesc` pushes as [`Ring::push`] does).
#[repr(C)]
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

    /// The oldest entry, if one waits.
    #[inline]
    pub fn front(&self) -> Option<u64> {
        self.entry_at(self.tail.0.load(Ordering::Acquire))
    }

    /// The entry at `tail`, if one waits there.
    #[inline]
    fn entry_at(&self, tail: u32) -> Option<u64> {
        let v = self.slots[tail as usize % RING_SLOTS].load(Ordering::Acquire);
        (v >> LAP_SHIFT == lap(tail)).then_some(v & ((1 << LAP_SHIFT) - 1))
    }

    /// Takes the oldest entry if it is `value`; false when it is not, or another consumer took
    /// it first.
    #[inline]
    pub fn take_front_if(&self, value: u64) -> bool {
        let tail = self.tail.0.load(Ordering::Acquire);
        self.entry_at(tail) == Some(value) && self.take(tail)
    }

    /// Moves `tail` past the entry at `tail`; false when another consumer moved it first. The
    /// producer writes an entry only once `tail` has passed the entry a lap before it, so a
    /// value read at `tail` before a successful swap is the entry taken.
    #[inline]
    fn take(&self, tail: u32) -> bool {
        self.tail.0.compare_exchange(tail, tail.wrapping_add(1), Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Takes every entry, oldest first.
    pub fn drain(&self, mut f: impl FnMut(u64)) {
        let mut tail = self.tail.0.load(Ordering::Acquire);
        while let Some(v) = self.entry_at(tail) {
            if self.take(tail) {
                f(v);
                tail = tail.wrapping_add(1);
            } else {
                tail = self.tail.0.load(Ordering::Acquire);
            }
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

    /// A producer and three consumers at once (two taking the entries they wait for from the
    /// front, one draining): every entry is taken exactly once, across many laps.
    #[test]
    fn consumers_racing_take_each_entry_once() {
        const ENTRIES: u64 = 200_000;
        // SAFETY: all-zero bytes are a valid empty ring (atomics only).
        let ring: Box<Ring> = unsafe { Box::new(std::mem::zeroed()) };
        let taken: Vec<AtomicU32> = (0..ENTRIES).map(|_| AtomicU32::new(0)).collect();
        let done = std::sync::atomic::AtomicBool::new(false);
        let record = |v: u64| taken[(v & 0xffff_ffff) as usize].fetch_add(1, Ordering::Relaxed);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut p = Producer::default();
                for i in 0..ENTRIES {
                    while !ring.push(&mut p, encode_notify((i % 3) as u16, i as u32)) {
                        std::hint::spin_loop();
                    }
                }
                done.store(true, Ordering::Release);
            });
            for slot in 0..2u16 {
                let (ring, done, record) = (&ring, &done, &record);
                s.spawn(move || {
                    let mut next = u64::from(slot);
                    while !done.load(Ordering::Acquire) || !ring.is_empty() {
                        // Asks for entries of its slot in order; those it misses are drained.
                        if ring.take_front_if(encode_notify(slot, next as u32)) {
                            record(encode_notify(slot, next as u32));
                        }
                        if let Some(v) = ring.front() {
                            let i = v & 0xffff_ffff;
                            if i % 3 == u64::from(slot) && i > next {
                                next = i;
                            }
                        }
                    }
                });
            }
            s.spawn(|| {
                while !done.load(Ordering::Acquire) || !ring.is_empty() {
                    ring.drain(|v| {
                        record(v);
                    });
                }
            });
        });
        let wrong: Vec<usize> = (0..ENTRIES as usize).filter(|&i| taken[i].load(Ordering::Relaxed) != 1).collect();
        assert!(
            wrong.is_empty(),
            "{} entries not taken exactly once, first {:?}",
            wrong.len(),
            &wrong[..wrong.len().min(5)]
        );
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
