//! The transmission queue to one destination bridge (seed 002 §3.4.3, Fig. 3.5): TLPs in
//! arrival order (first-in, first-served), a byte limit that gives back-pressure, and the
//! deficit-round-robin credit the scheduler in [`crate::bridge`] spends.
//!
//! Storage is one byte ring and one length ring per destination, sized by the limit, so queuing
//! a TLP does not allocate once the rings have grown (the seed's queues are static, §3.4.3).

use crate::header::{put_tlp, TLP_PREFIX};
use std::collections::VecDeque;

/// TLPs waiting for one destination, with their DRR credit.
#[derive(Debug, Clone)]
pub struct Outbox {
    bytes: VecDeque<u8>,
    lens: VecDeque<u16>,
    limit: usize,
    /// Deficit-round-robin credit [bytes]: spent by the bytes a frame takes, refilled by one
    /// quantum per round; the queue may send only while it is not negative.
    pub credit: i64,
}

impl Outbox {
    /// An empty queue holding at most `limit` TLP bytes.
    pub fn new(limit: usize) -> Self {
        Self { bytes: VecDeque::new(), lens: VecDeque::new(), limit, credit: 0 }
    }

    /// Queues `tlp`; returns false (and queues nothing) when it would pass the limit.
    pub fn push(&mut self, tlp: &[u8]) -> bool {
        if self.bytes.len() + tlp.len() > self.limit {
            return false;
        }
        self.bytes.extend(tlp);
        self.lens.push_back(u16::try_from(tlp.len()).expect("TLP sizes are checked by the bridge"));
        true
    }

    /// TLPs queued.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    /// Whether no TLP is queued.
    pub fn is_empty(&self) -> bool {
        self.lens.is_empty()
    }

    /// TLP bytes queued.
    pub fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Moves queued TLPs, oldest first, into the TLP list of a frame at `buf[at..end]`: every
    /// TLP that fits, up to `max_tlps` (adaptive aggregation, §3.4.2: all that are queued when
    /// the destination gets its turn, nothing waited for). Spends the credit by the bytes taken
    /// and returns (TLPs taken, new end of the list).
    pub fn fill(&mut self, buf: &mut [u8], mut at: usize, end: usize, max_tlps: usize) -> (usize, usize) {
        let start = at;
        let mut taken = 0;
        while taken < max_tlps {
            let Some(&n) = self.lens.front() else { break };
            let n = n as usize;
            if at + TLP_PREFIX + n > end {
                break;
            }
            let (a, b) = self.bytes.as_slices();
            if a.len() >= n {
                at = put_tlp(buf, at, &a[..n]);
            } else {
                // The TLP wraps around the ring: write its length, then both pieces.
                let len = TLP_PREFIX + n;
                buf[at..at + TLP_PREFIX].copy_from_slice(&(n as u16).to_be_bytes());
                buf[at + TLP_PREFIX..at + TLP_PREFIX + a.len()].copy_from_slice(a);
                buf[at + TLP_PREFIX + a.len()..at + len].copy_from_slice(&b[..n - a.len()]);
                at += len;
            }
            self.bytes.drain(..n);
            self.lens.pop_front();
            taken += 1;
        }
        self.credit -= (at - start) as i64;
        (taken, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_all_that_fit_in_order_and_spends_credit() {
        let mut q = Outbox::new(10);
        assert!(q.push(b"abcd") && q.push(b"ef") && q.push(b"ghij"));
        assert!(!q.push(b"k"), "limit reached");
        let mut buf = [0u8; 32];
        let (n, end) = q.fill(&mut buf, 0, 32, 2);
        assert_eq!((n, end, q.credit, q.len()), (2, 10, -10, 1));
        assert_eq!(buf[..10], *b"\0\x04abcd\0\x02ef");
        assert!(q.push(b"lmnop"), "room again");
        let (n, end) = q.fill(&mut buf, 0, 7, 10);
        assert_eq!((n, end, q.bytes()), (1, 6, 5), "only what fits the frame");
        assert_eq!(buf[..6], *b"\0\x04ghij");
    }
}
