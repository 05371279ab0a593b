//! The per-peer receive array: in-order delivery without a queue or a lock (seed 004 §3.3).
//!
//! The seed gives each peer node a fixed array of 32 `int`s (§4: 320 KB for 2,560 nodes); an
//! entry of 0 is empty, any other value is the id of the receive buffer holding that packet.
//! Because two packets with the same sequence number never arrive at the same time, the receive
//! side of several links can store into the array without locking, and the consumer delivers
//! from the slot of the next expected sequence number onward. The seed does not say how a
//! sequence number maps to an entry (hxb.md §3.3, [inference]); here it is `seq % 32`, which
//! bounds the packets in flight per peer to 32.

/// Entries per peer (§4).
pub const WINDOW: u32 = 32;

/// What [`ReceiveArray::store`] did with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Held in the array; the buffer now belongs to the array until delivered.
    Held,
    /// Already delivered or already held: a duplicate; the buffer may be reused.
    Duplicate,
    /// Beyond the window: the sender broke the window; the buffer may be reused.
    OutOfWindow,
}

/// One peer's array and its next expected sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiveArray {
    slots: [u32; WINDOW as usize],
    expected: u32,
}

impl Default for ReceiveArray {
    fn default() -> Self {
        Self { slots: [0; WINDOW as usize], expected: 0 }
    }
}

impl ReceiveArray {
    /// The next sequence number to deliver (everything before it has been delivered).
    pub fn expected(&self) -> u32 {
        self.expected
    }

    /// Records that packet `seq` sits in buffer `buffer` (non-zero).
    ///
    /// # Panics
    /// If `buffer` is 0, the value that means "empty".
    pub fn store(&mut self, seq: u32, buffer: u32) -> Stored {
        assert_ne!(buffer, 0, "buffer id 0 means an empty entry");
        let ahead = seq.wrapping_sub(self.expected);
        if ahead >= WINDOW {
            // Sequence numbers just below `expected` are late duplicates; the rest are beyond.
            return if ahead > u32::MAX - WINDOW { Stored::Duplicate } else { Stored::OutOfWindow };
        }
        let slot = &mut self.slots[(seq % WINDOW) as usize];
        if *slot != 0 {
            return Stored::Duplicate;
        }
        *slot = buffer;
        Stored::Held
    }

    /// Takes the buffer of the next expected packet if it has arrived, advancing the expected
    /// sequence number.
    pub fn take_next(&mut self) -> Option<u32> {
        let slot = &mut self.slots[(self.expected % WINDOW) as usize];
        if *slot == 0 {
            return None;
        }
        self.expected = self.expected.wrapping_add(1);
        Some(std::mem::take(slot))
    }

    /// Bit i set: packet `expected() + 1 + i` is held (the SACK field of an ACK).
    pub fn sack(&self) -> u32 {
        (0..WINDOW - 1)
            .filter(|&i| self.slots[(self.expected.wrapping_add(1 + i) % WINDOW) as usize] != 0)
            .fold(0, |m, i| m | 1 << i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_in_order_whatever_the_arrival_order() {
        let mut a = ReceiveArray::default();
        assert_eq!(a.store(2, 12), Stored::Held);
        assert_eq!(a.store(1, 11), Stored::Held);
        assert_eq!(a.take_next(), None, "0 is missing");
        assert_eq!(a.sack(), 0b11);
        assert_eq!(a.store(0, 10), Stored::Held);
        assert_eq!((a.take_next(), a.take_next(), a.take_next(), a.take_next()), (Some(10), Some(11), Some(12), None));
        assert_eq!(a.expected(), 3);
    }

    #[test]
    fn duplicates_and_window_breaks_are_refused() {
        let mut a = ReceiveArray::default();
        assert_eq!(a.store(0, 5), Stored::Held);
        assert_eq!(a.store(0, 6), Stored::Duplicate);
        assert_eq!(a.take_next(), Some(5));
        assert_eq!(a.store(0, 7), Stored::Duplicate, "already delivered");
        assert_eq!(a.store(33, 7), Stored::OutOfWindow);
        assert_eq!(a.store(32, 7), Stored::Held, "the last entry of the window");
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut a = ReceiveArray { expected: u32::MAX, ..Default::default() };
        assert_eq!(a.store(0, 2), Stored::Held);
        assert_eq!(a.store(u32::MAX, 1), Stored::Held);
        assert_eq!((a.take_next(), a.take_next()), (Some(1), Some(2)));
        assert_eq!(a.expected(), 1);
        assert_eq!(a.store(u32::MAX, 3), Stored::Duplicate);
    }
}
