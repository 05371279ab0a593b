//! Collectives over PIO messages, for small payloads: every one is the same dissemination
//! pattern (Bruck et al.): in round `k` (`dist = 2^k < n`) rank `r` sends to `r - dist` and
//! receives from `r + dist` (mod n), so after `ceil(log2 n)` rounds every rank has heard,
//! directly or not, from every other, for any `n`, power of two or not. What a message carries
//! differs:
//!
//! - the handshake that starts a DMA broadcast: nothing but the header;
//! - allgather (where the direct exchange would store too much in one round): the blocks the
//!   sender holds (Bruck's allgather; the last round sends `n - dist` blocks), so every rank
//!   ends with every rank's block;
//! - broadcast: the root's block, sent to a rank that does not hold it yet.
//!
//! Small allgathers, reductions and the barrier take one round instead: the direct exchange
//! ([`Coll::pio_direct_allgather`]), every rank storing its block into every other rank's box.
//! Reductions gather the raw contributions and every rank folds them in rank order: a
//! latency-bound payload gains nothing from halving data, and every rank folding the same inputs
//! in the same order gives floating-point results that agree bit for bit on every rank and with a
//! serial left fold.
//!
//! Every header carries the smallest and largest signature of the arguments the sender has seen,
//! so after the last round every rank knows whether all ranks called with the same arguments:
//! all of them fail together with [`CollError::Mismatch`] instead of some waiting forever.

use crate::coll::Coll;
use crate::error::{CollError, CollResult};
use tca_proto::Fabric;

/// The rounds of a job of `n` ranks: `(dist, blocks)` with the number of blocks Bruck's
/// allgather sends in that round.
pub(crate) fn rounds(n: u16) -> impl Iterator<Item = (u16, usize)> {
    let n = usize::from(n);
    (0..).map(|k| 1usize << k).take_while(move |&d| d < n).map(move |d| (d as u16, d.min(n - d)))
}

/// The most blocks a rank sends in one round of Bruck's allgather on `n` ranks.
pub(crate) fn max_blocks(n: u16) -> usize {
    rounds(n).map(|(_, b)| b).max().unwrap_or(0)
}

impl Coll {
    fn to_from(&self, dist: u16) -> (u16, u16) {
        let n = self.n;
        ((self.me + n - dist) % n, (self.me + dist) % n)
    }

    /// One collective of the dissemination pattern: `send(dist)` gives the payload of the round,
    /// `recv(dist, payload)` takes the partner's and says whether its length was the expected
    /// one. Fails on every rank when the ranks' signatures differ.
    pub(crate) fn disseminate(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        what: &str,
        send: &mut dyn FnMut(u16) -> Vec<u8>,
        recv: &mut dyn FnMut(u16, &[u8]) -> bool,
    ) -> CollResult<()> {
        self.disseminate_seen(f, (sig, sig), what, send, recv)
    }

    /// [`Coll::disseminate`] starting from the pair of signatures `seen` (a refusing rank
    /// starts from a pair that never agrees, [`Coll::refuse`]).
    pub(crate) fn disseminate_seen(
        &mut self,
        f: &dyn Fabric,
        mut seen: (u32, u32),
        what: &str,
        send: &mut dyn FnMut(u16) -> Vec<u8>,
        recv: &mut dyn FnMut(u16, &[u8]) -> bool,
    ) -> CollResult<()> {
        self.begin();
        for (dist, _) in rounds(self.n) {
            let (to, from) = self.to_from(dist);
            let payload = send(dist);
            self.post(f, to, seen, &payload)?;
            let m = self.take(f, from)?;
            seen = (seen.0.min(m.sig.0), seen.1.max(m.sig.1));
            if !recv(dist, &m.data) {
                // The sender's arguments differ (its signature does too): poison what this
                // rank passes on, and keep going so that no rank waits for it.
                seen = (0, u32::MAX);
            }
        }
        if seen.0 != seen.1 {
            return Err(CollError::Mismatch(format!(
                "{what}: another rank passed a different kind, size, type, operator or root"
            )));
        }
        Ok(())
    }

    /// Barrier, and the handshake of the DMA allgather and reductions: the direct exchange of
    /// headers only (one round).
    pub(crate) fn pio_barrier(&mut self, f: &dyn Fabric, sig: u32, what: &str) -> CollResult<()> {
        self.pio_direct_allgather(f, sig, what, &[]).map(drop)
    }

    /// The dissemination barrier: the handshake of the DMA broadcast, whose PIO form
    /// disseminates too (so that ranks that disagree on the size still meet and all fail).
    pub(crate) fn pio_dissemination_barrier(&mut self, f: &dyn Fabric, sig: u32, what: &str) -> CollResult<()> {
        self.disseminate(f, sig, what, &mut |_| Vec::new(), &mut |_, d| d.is_empty())
    }

    /// Bruck's allgather of `mine` (`p` bytes): every rank's block in rank order.
    pub(crate) fn pio_allgather(&mut self, f: &dyn Fabric, sig: u32, what: &str, mine: &[u8]) -> CollResult<Vec<u8>> {
        let (n, p) = (usize::from(self.n), mine.len());
        // rotated[i] is the block of rank me + i.
        let mut rotated = vec![0u8; n * p];
        rotated[..p].copy_from_slice(mine);
        let shared = std::cell::RefCell::new(rotated);
        self.disseminate(
            f,
            sig,
            what,
            &mut |dist| {
                let cnt = usize::from(dist).min(n - usize::from(dist));
                shared.borrow()[..cnt * p].to_vec()
            },
            &mut |dist, data| {
                let d = usize::from(dist);
                let cnt = d.min(n - d);
                let mut r = shared.borrow_mut();
                let take = data.len().min(cnt * p);
                r[d * p..d * p + take].copy_from_slice(&data[..take]);
                data.len() == cnt * p
            },
        )?;
        let rotated = shared.into_inner();
        let mut out = vec![0u8; n * p];
        for i in 0..n {
            let rank = (usize::from(self.me) + i) % n;
            out[rank * p..(rank + 1) * p].copy_from_slice(&rotated[i * p..(i + 1) * p]);
        }
        Ok(out)
    }

    /// Direct allgather of `mine` (`p` bytes): one round in which every rank stores its block
    /// into every other rank's box and then takes every other rank's. PIO stores are posted
    /// writes the CPU does not wait for, so for tiny blocks the `n - 1` messages of one round
    /// cost about one latency to the farthest node instead of `ceil(log2 n)` latencies.
    pub(crate) fn pio_direct_allgather(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        what: &str,
        mine: &[u8],
    ) -> CollResult<Vec<u8>> {
        self.direct_exchange(f, (sig, sig), what, mine)
    }

    /// [`Coll::pio_direct_allgather`] sending the pair of signatures `sent` (a refusing rank
    /// sends a pair that never agrees, [`Coll::refuse`]).
    pub(crate) fn direct_exchange(
        &mut self,
        f: &dyn Fabric,
        sent: (u32, u32),
        what: &str,
        mine: &[u8],
    ) -> CollResult<Vec<u8>> {
        self.begin();
        let (n, p, me) = (self.n, mine.len(), self.me);
        for d in 1..n {
            self.post(f, (me + d) % n, sent, mine)?;
        }
        let mut out = vec![0u8; usize::from(n) * p];
        out[usize::from(me) * p..][..p].copy_from_slice(mine);
        let mut seen = sent;
        let mut lengths_differ = false;
        for d in 1..n {
            let src = (me + n - d) % n;
            let m = self.take(f, src)?;
            seen = (seen.0.min(m.sig.0), seen.1.max(m.sig.1));
            // Different lengths are different arguments, whatever the signatures say (two
            // argument lists may hash alike).
            lengths_differ |= m.data.len() != p;
            let take = m.data.len().min(p);
            out[usize::from(src) * p..][..take].copy_from_slice(&m.data[..take]);
        }
        if seen.0 != seen.1 || lengths_differ {
            return Err(CollError::Mismatch(format!(
                "{what}: another rank passed a different kind, size, type, operator or root"
            )));
        }
        Ok(out)
    }

    /// Broadcast of `root`'s `buf` (every rank passes a buffer of the same length).
    pub(crate) fn pio_bcast(
        &mut self,
        f: &dyn Fabric,
        sig: u32,
        what: &str,
        buf: &mut [u8],
        root: u16,
    ) -> CollResult<()> {
        let n = self.n;
        let me = self.me;
        // Before round `dist`, rank r holds the blocks of ranks r .. r + dist.
        let holds = move |r: u16, dist: u16| (root + n - r) % n < dist;
        let shared = std::cell::RefCell::new(buf);
        self.disseminate(
            f,
            sig,
            what,
            &mut |dist| {
                let to = (me + n - dist) % n;
                if holds(me, dist) && !holds(to, dist) {
                    shared.borrow().to_vec()
                } else {
                    Vec::new()
                }
            },
            &mut |dist, data| {
                let from = (me + dist) % n;
                if holds(from, dist) && !holds(me, dist) {
                    let mut b = shared.borrow_mut();
                    let take = data.len().min(b.len());
                    b[..take].copy_from_slice(&data[..take]);
                    data.len() == b.len()
                } else {
                    data.is_empty()
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_cover_every_rank() {
        for n in 1..=16u16 {
            let got: usize = 1 + rounds(n).map(|(_, b)| b).sum::<usize>();
            assert_eq!(got, usize::from(n), "blocks received on {n} ranks");
            assert_eq!(rounds(n).count(), (usize::from(n)).next_power_of_two().trailing_zeros() as usize);
        }
        assert_eq!(max_blocks(16), 8);
        assert_eq!(max_blocks(5), 2);
        assert_eq!(max_blocks(1), 0);
    }
}
