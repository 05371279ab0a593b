use crate::radix::RadixHeap;
use crate::SimTime;
use std::collections::VecDeque;

/// Width of a wheel slot: 2^10 ps, about 1 ns.
const SLOT_BITS: u32 = 11;
/// Slots of the wheel (a power of two): 4,096 slots cover 4.2 us ahead of the clock, where
/// nearly every event of a PCIe or Ethernet model falls.
const SLOTS: u64 = 8192;

/// One pending event: its time [ps], its push sequence number, the event.
type Entry<E> = (u64, u64, E);

/// No slot entry: the end of a slot's list.
const NONE: u32 = u32::MAX;

/// An event waiting in a wheel slot, linked to the next of its slot.
struct Linked<E> {
    entry: Option<Entry<E>>,
    next: u32,
}

/// A priority queue of events ordered by (time, insertion sequence).
///
/// The sequence number makes the order total and deterministic: two events at the same time are
/// delivered in the order they were pushed, whatever the internal layout.
///
/// The queue is *monotone*, as a discrete-event simulation is: nothing may be pushed earlier than
/// the last popped time. It is a timing wheel: an event in the next [`SLOTS`] slots of about a
/// nanosecond goes unsorted into its slot's list; the slot of the clock is sorted once, when the clock
/// reaches it. An event further ahead waits in a radix heap until the clock reaches its slot.
/// Each event is so written about twice, whether 1e3 or 1e6 are pending.
pub struct EventQueue<E> {
    /// Events of slot `cursor`, in (time, sequence) order.
    current: VecDeque<Entry<E>>,
    /// The slot of the last popped time.
    cursor: u64,
    /// `heads[s % SLOTS]` starts the list of the events of slot `s`, `cursor < s < cursor +
    /// SLOTS`, in `linked`: one store for every slot, so a long run allocates nothing more.
    heads: Vec<u32>,
    linked: Vec<Linked<E>>,
    /// Unused entries of `linked`.
    free: Vec<u32>,
    /// Bit `i % 64` of word `i / 64` is set when slot list `i` holds events.
    occupied: Vec<u64>,
    /// Events whose slot was beyond the wheel when they were pushed: (time, (sequence, event)).
    far: RadixHeap<(u64, E)>,
    /// The last popped time [ps].
    last: u64,
    len: usize,
    next_seq: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        Self {
            current: VecDeque::new(),
            cursor: 0,
            heads: vec![NONE; SLOTS as usize],
            linked: Vec::new(),
            free: Vec::new(),
            occupied: vec![0; (SLOTS / 64) as usize],
            far: RadixHeap::new(),
            last: 0,
            len: 0,
            next_seq: 0,
        }
    }

    /// An empty queue; the hint is accepted for API symmetry, slots grow as needed.
    pub fn with_capacity(_capacity: usize) -> Self {
        Self::new()
    }

    /// Adds `event` at time `at`.
    ///
    /// # Panics
    /// If `at` is earlier than the time of the last popped event.
    pub fn push(&mut self, at: SimTime, event: E) {
        let time = at.as_ps();
        assert!(time >= self.last, "event pushed before the last popped time");
        let seq = self.next_seq;
        self.next_seq += 1;
        self.len += 1;
        let slot = time >> SLOT_BITS;
        if slot == self.cursor {
            // After every pending event of its time: it has the highest sequence number.
            let at = self.current.partition_point(|e| e.0 <= time);
            self.current.insert(at, (time, seq, event));
        } else if slot < self.cursor + SLOTS {
            let i = (slot % SLOTS) as usize;
            let node = Linked { entry: Some((time, seq, event)), next: self.heads[i] };
            self.heads[i] = match self.free.pop() {
                Some(k) => {
                    self.linked[k as usize] = node;
                    k
                }
                None => {
                    self.linked.push(node);
                    u32::try_from(self.linked.len() - 1).expect("fewer than 2^32 pending events")
                }
            };
            self.occupied[i / 64] |= 1 << (i % 64);
        } else {
            self.far.push(time, (seq, event));
        }
    }

    /// The first occupied slot of the wheel after the cursor.
    fn next_wheel_slot(&self) -> Option<u64> {
        let start = (self.cursor + 1) % SLOTS;
        let words = self.occupied.len();
        let first = (start / 64) as usize;
        // The first word is looked at twice: from `start` on, and at the end below `start`.
        for k in 0..=words {
            let w = (first + k) % words;
            let mut bits = self.occupied[w];
            if k == 0 {
                bits &= !0u64 << (start % 64);
            } else if k == words {
                bits &= (1u64 << (start % 64)).wrapping_sub(1);
            }
            if bits != 0 {
                let i = w as u64 * 64 + u64::from(bits.trailing_zeros());
                return Some(self.cursor + 1 + (i + SLOTS - start) % SLOTS);
            }
        }
        None
    }

    /// Moves the cursor to the next slot holding events and sorts them into `current`.
    fn load_next_slot(&mut self) {
        let wheel = self.next_wheel_slot();
        let far = self.far.peek_time().map(|t| t >> SLOT_BITS);
        let slot = match (wheel, far) {
            (Some(w), Some(f)) => w.min(f),
            (w, f) => w.or(f).expect("a pending event"),
        };
        self.cursor = slot;
        if wheel == Some(slot) {
            let i = (slot % SLOTS) as usize;
            let mut k = std::mem::replace(&mut self.heads[i], NONE);
            while k != NONE {
                let node = &mut self.linked[k as usize];
                self.current.push_back(node.entry.take().expect("a linked event"));
                self.free.push(k);
                k = node.next;
            }
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        while self.far.peek_time().is_some_and(|t| t >> SLOT_BITS == slot) {
            let (time, (seq, event)) = self.far.pop().expect("peeked");
            self.current.push_back((time, seq, event));
        }
        if self.current.len() > 1 {
            self.current.make_contiguous().sort_unstable_by_key(|e| (e.0, e.1));
        }
    }

    /// Removes and returns the earliest event (the first pushed among equal times).
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        if self.len == 0 {
            return None;
        }
        if self.current.is_empty() {
            self.load_next_slot();
        }
        let (time, _, event) = self.current.pop_front().expect("the slot of the next event is loaded");
        self.last = time;
        self.len -= 1;
        Some((SimTime::from_ps(time), event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        if let Some(e) = self.current.front() {
            return Some(SimTime::from_ps(e.0));
        }
        let wheel = self.next_wheel_slot().map(|s| {
            let (mut k, mut min) = (self.heads[(s % SLOTS) as usize], u64::MAX);
            while k != NONE {
                let node = &self.linked[k as usize];
                min = min.min(node.entry.as_ref().expect("a linked event").0);
                k = node.next;
            }
            min
        });
        let far = self.far.peek_time();
        match (wheel, far) {
            (Some(w), Some(f)) => Some(SimTime::from_ps(w.min(f))),
            (w, f) => w.or(f).map(SimTime::from_ps),
        }
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No event is pending.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An event pushed beyond the wheel comes out before later ones pushed once the clock has
    /// come closer, and slots found after the wheel's index wraps around keep their order.
    #[test]
    fn far_events_and_wrapped_slots_keep_their_order() {
        let slot = |s: u64| SimTime::from_ps(s << SLOT_BITS);
        let mut q = EventQueue::new();
        q.push(slot(5000), "far");
        q.push(slot(100), "a");
        assert_eq!(q.pop(), Some((slot(100), "a")));
        q.push(slot(4190), "wheel");
        assert_eq!(q.peek_time(), Some(slot(4190)));
        assert_eq!(q.pop(), Some((slot(4190), "wheel")));
        q.push(slot(5001), "after far");
        q.push(slot(4190) + SimTime::from_ps(3), "same slot");
        assert_eq!(q.peek_time(), Some(slot(4190) + SimTime::from_ps(3)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["same slot", "far", "after far"]);
    }

    proptest! {
        /// Interleaved pushes (never before the last pop) and pops agree with a sorted list:
        /// pushes within one slot, a few slots ahead, across the wheel and far beyond it.
        #[test]
        fn interleaved_operations_match_a_sorted_model(ops in proptest::collection::vec(
            (0u64..5, prop_oneof![0u64..40, 0u64..5_000, 0u64..8_000_000, 0u64..1 << 40]), 1..300)) {
            let mut q = EventQueue::new();
            let mut model: Vec<(u64, u64)> = Vec::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for (kind, delta) in ops {
                if kind == 0 && !model.is_empty() {
                    model.sort();
                    let (t, s) = model.remove(0);
                    prop_assert_eq!(q.pop(), Some((SimTime::from_ps(t), s)));
                    now = t;
                } else {
                    q.push(SimTime::from_ps(now + delta), seq);
                    model.push((now + delta, seq));
                    seq += 1;
                }
                prop_assert_eq!(q.len(), model.len());
                model.sort();
                prop_assert_eq!(q.peek_time(), model.first().map(|m| SimTime::from_ps(m.0)));
            }
        }

        /// Popping yields events sorted by time, and by push order among equal times.
        #[test]
        fn pops_in_time_then_sequence_order(times in proptest::collection::vec(0u64..20, 0..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(SimTime::from_ps(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let mut got = vec![];
            while let Some((t, i)) = q.pop() {
                got.push((t.as_ps(), i));
            }
            prop_assert_eq!(got, expected);
        }
    }
}
