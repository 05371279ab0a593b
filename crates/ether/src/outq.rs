//! A finite output queue of a switch port: frames wait in it until their last bit has left, and a
//! frame that does not fit is dropped and counted.
//!
//! The queue keeps only (release time, bytes) per stored frame; admissions come in time order, so
//! frames whose release time has passed are freed from the front. The ring is sized to the limit
//! up front, so a frame never allocates.

use base::SimTime;
use std::collections::VecDeque;

/// How much an output queue holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    /// At most this many frames.
    Frames(u32),
    /// At most this many frame bytes (header to FCS).
    Bytes(u64),
}

impl QueueLimit {
    /// The most frames that can be held at once (64 B frames for a byte limit).
    fn max_frames(self) -> usize {
        match self {
            QueueLimit::Frames(n) => n as usize,
            QueueLimit::Bytes(b) => (b / u64::from(crate::framing::MIN_FRAME)) as usize,
        }
    }
}

/// A bounded FIFO buffer with drop counting.
#[derive(Debug, Clone)]
pub struct OutputQueue {
    limit: QueueLimit,
    held: VecDeque<(SimTime, u32)>,
    bytes: u64,
    drops: u64,
    peak_frames: usize,
}

impl OutputQueue {
    /// An empty queue.
    pub fn new(limit: QueueLimit) -> Self {
        Self { limit, held: VecDeque::with_capacity(limit.max_frames()), bytes: 0, drops: 0, peak_frames: 0 }
    }

    fn release(&mut self, now: SimTime) {
        while let Some(&(at, bytes)) = self.held.front() {
            if at > now {
                break;
            }
            self.held.pop_front();
            self.bytes -= u64::from(bytes);
        }
    }

    /// Whether a frame of `bytes` arriving at `now` fits; if not, the drop is counted.
    pub fn admit(&mut self, now: SimTime, bytes: u32) -> bool {
        self.release(now);
        let fits = match self.limit {
            QueueLimit::Frames(n) => self.held.len() < n as usize,
            QueueLimit::Bytes(b) => self.bytes + u64::from(bytes) <= b,
        };
        if !fits {
            self.drops += 1;
        }
        fits
    }

    /// Stores an admitted frame until `release` (when its last bit has left the port).
    pub fn hold(&mut self, release: SimTime, bytes: u32) {
        self.held.push_back((release, bytes));
        self.bytes += u64::from(bytes);
        self.peak_frames = self.peak_frames.max(self.held.len());
    }

    /// Frames dropped because the queue was full.
    pub fn drops(&self) -> u64 {
        self.drops
    }

    /// The most frames held at once.
    pub fn peak_frames(&self) -> usize {
        self.peak_frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_limit_drops_the_excess_and_frees_on_release() {
        let mut q = OutputQueue::new(QueueLimit::Frames(2));
        let t = SimTime::from_ns;
        assert!(q.admit(t(0), 100));
        q.hold(t(10), 100);
        assert!(q.admit(t(1), 100));
        q.hold(t(20), 100);
        assert!(!q.admit(t(2), 100));
        assert!(!q.admit(t(9), 100));
        // The first frame has left at 10 ns.
        assert!(q.admit(t(10), 100));
        q.hold(t(30), 100);
        assert_eq!(q.drops(), 2);
        assert_eq!(q.peak_frames(), 2);
    }

    #[test]
    fn byte_limit_counts_frame_bytes() {
        let mut q = OutputQueue::new(QueueLimit::Bytes(3000));
        let t = SimTime::from_ns;
        assert!(q.admit(t(0), 1518));
        q.hold(t(5), 1518);
        assert!(!q.admit(t(0), 1518));
        assert!(q.admit(t(0), 1482));
        q.hold(t(6), 1482);
        assert!(q.admit(t(6), 3000));
        assert_eq!(q.drops(), 1);
    }
}
