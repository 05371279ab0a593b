//! Go-back-N delivery between two bridges (seed 002 §3.3.1; expether.md §4): the sender keeps
//! the frames not yet acknowledged; an ACK is cumulative (the next sequence number the
//! receiver expects); a repeated ACK or a timeout resends the oldest unacknowledged frame and
//! every frame after it. The receiver takes only the frame it expects next and answers every
//! DATA frame with an ACK, so a gap shows up at the sender as a repeated ACK.
//!
//! tca's design where the seed is silent: 32-bit sequence numbers compared modulo 2^32; one
//! retransmission timer per peer, restarted when the oldest frame changes or a round of
//! retransmission starts; after a repeated-ACK retransmission further repeated ACKs are ignored
//! until the ACK passes every frame sent before it (the frames already in flight behind the gap
//! repeat the ACK too; without this each of them would start another round). A "loss" is a
//! round of retransmission; losses in a row without progress count towards the path failure
//! (§4.2.1, threshold 3 in the seed's experiment).

use std::collections::VecDeque;

/// Whether `a` lies after `b` in sequence space.
pub fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// What an ACK did at the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// It acknowledged frames.
    Progress {
        /// How many.
        frames: u32,
        /// Their bytes (without Ethernet overhead).
        bytes: u64,
        /// The round trip of the newest of them [ps], when it was sent only once.
        rtt: Option<u64>,
    },
    /// It repeated the last ACK often enough to start a retransmission round; the value is the
    /// number of such rounds in a row.
    Retransmit(u32),
    /// Nothing changed (an old, repeated or impossible ACK).
    Nothing,
}

/// The sending half towards one peer.
#[derive(Debug, Clone, Default)]
pub struct Sender {
    base: u32,
    next: u32,
    inflight: VecDeque<Vec<u8>>,
    /// When each frame in flight was first sent [ps]; `u64::MAX` once it was sent again.
    times: VecDeque<u64>,
    resend: usize,
    deadline: Option<u64>,
    dups: u32,
    recover: Option<u32>,
    losses: u32,
    spare: Vec<Vec<u8>>,
}

impl Sender {
    /// The sequence number of the next new frame.
    pub fn next_seq(&self) -> u32 {
        self.next
    }

    /// Frames sent and not yet acknowledged.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Whether a new frame may go: no retransmission pending and fewer than `window` in flight.
    pub fn can_send_new(&self, window: usize) -> bool {
        self.resend == self.inflight.len() && self.inflight.len() < window
    }

    /// Whether a retransmission is pending.
    pub fn resend_pending(&self) -> bool {
        self.resend < self.inflight.len()
    }

    /// The retransmission deadline [ps], if frames are in flight.
    pub fn deadline(&self) -> Option<u64> {
        self.deadline
    }

    /// Retransmission rounds in a row without progress.
    pub fn losses(&self) -> u32 {
        self.losses
    }

    /// A buffer to build the next new frame in (reused from acknowledged frames).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.spare.pop().unwrap_or_default()
    }

    /// Records the new frame `frame` (sequence number [`Sender::next_seq`]) as sent at `now`.
    pub fn sent(&mut self, frame: Vec<u8>, now: u64, rto: u64) {
        self.inflight.push_back(frame);
        self.times.push_back(now);
        self.next = self.next.wrapping_add(1);
        self.resend = self.inflight.len();
        self.deadline.get_or_insert(now + rto);
    }

    /// The sequence number of the frame [`Sender::next_resend`] would return.
    pub fn next_resend_seq(&self) -> Option<u32> {
        self.resend_pending().then(|| self.base.wrapping_add(self.resend as u32))
    }

    /// The next frame of a retransmission round, to be sent again.
    pub fn next_resend(&mut self) -> Option<&mut Vec<u8>> {
        let f = self.inflight.get_mut(self.resend)?;
        self.times[self.resend] = u64::MAX;
        self.resend += 1;
        Some(f)
    }

    /// Takes the cumulative ACK `ack`, received at `now`; `nak` is true for a NAK frame (only
    /// those count as repeated ACKs; ACK and DATA frames only acknowledge).
    pub fn on_ack(&mut self, ack: u32, nak: bool, now: u64, rto: u64, dup_acks: u32) -> AckOutcome {
        if after(ack, self.base) && !after(ack, self.next) {
            let n = ack.wrapping_sub(self.base);
            let (mut bytes, mut sent_at) = (0, u64::MAX);
            for _ in 0..n {
                let mut f = self.inflight.pop_front().expect("acknowledged frames are in flight");
                sent_at = self.times.pop_front().expect("one time per frame");
                bytes += f.len() as u64;
                f.clear();
                self.spare.push(f);
            }
            self.base = ack;
            self.resend = self.resend.saturating_sub(n as usize);
            (self.dups, self.losses) = (0, 0);
            self.deadline = (!self.inflight.is_empty()).then_some(now + rto);
            if self.recover.is_some_and(|r| !after(r, ack)) {
                self.recover = None;
            }
            let rtt = (sent_at != u64::MAX).then(|| now.saturating_sub(sent_at));
            return AckOutcome::Progress { frames: n, bytes, rtt };
        }
        if nak && ack == self.base && !self.inflight.is_empty() && self.recover.is_none() {
            self.dups += 1;
            if self.dups >= dup_acks {
                self.recover = Some(self.next);
                return AckOutcome::Retransmit(self.go_back(now, rto));
            }
        }
        AckOutcome::Nothing
    }

    /// Starts a retransmission round if the deadline has passed; returns the rounds in a row.
    pub fn on_timeout(&mut self, now: u64, rto: u64) -> Option<u32> {
        match self.deadline {
            Some(d) if d <= now && !self.inflight.is_empty() => Some(self.go_back(now, rto)),
            _ => None,
        }
    }

    fn go_back(&mut self, now: u64, rto: u64) -> u32 {
        self.resend = 0;
        self.dups = 0;
        self.losses += 1;
        self.deadline = Some(now + rto);
        self.losses
    }

    /// The frames in flight, oldest first.
    pub fn frames(&self) -> impl Iterator<Item = &[u8]> {
        self.inflight.iter().map(|f| &f[..])
    }

    /// Forgets every frame in flight (after a path failure); returns them for counting.
    pub fn abandon(&mut self) -> usize {
        let n = self.inflight.len();
        self.inflight.clear();
        self.times.clear();
        (self.resend, self.deadline, self.recover) = (0, None, None);
        n
    }
}

/// What the receiver does with a DATA frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// It is the frame expected next: deliver it, then the frames [`Receiver::take_ready`]
    /// returns (those it completes from the reorder buffer).
    Deliver,
    /// It came early on a multipath connection and waits in the reorder buffer.
    Held,
    /// An old frame, one already held, or one beyond the window: dropped.
    Discard,
}

/// What the receiver owes its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Owed {
    /// Nothing.
    #[default]
    Nothing,
    /// An acknowledgement (a DATA frame going back carries it as well).
    Ack,
    /// A NAK: the expected frame is lost (sent as its own frame).
    Nak,
}

/// The receiving half from one peer.
///
/// Multipath (§3.3.1 "イーサネットパスの集約"; expether.md §6): frame `seq` travels on path
/// `seq % paths`, and each path delivers in order, so frames may overtake each other only
/// across paths. The receiver holds early frames in a reorder buffer of one window and owes
/// the sender a NAK only when the expected frame is proven lost: a later frame arrived on the
/// expected frame's own path. On one path every early frame proves that, which is plain
/// go-back-N. The seed's retransmission trigger, an ACK "for the same frame" received again
/// (§3.3.1), is this NAK: it names the frame again and says why, so that a plain ACK repeated
/// for an old frame (one sent again by a retransmission round, or duplicated on the way) or an
/// ACK overtaken on another path never starts a round. The path rule, the NAK and the buffer
/// size (one window) are tca's design; the seed gives none of them.
#[derive(Debug, Clone, Default)]
pub struct Receiver {
    expected: u32,
    /// What is owed to the peer.
    pub owed: Owed,
    /// Slot `i` holds frame `expected + i` once it has arrived early (slot 0 stays empty).
    ahead: VecDeque<Option<Vec<u8>>>,
    /// The frame the last [`Receiver::take_ready`] returned, kept to reuse its buffer.
    spare: Vec<u8>,
}

impl Receiver {
    /// The next sequence number expected (the cumulative ACK to send).
    pub fn expected(&self) -> u32 {
        self.expected
    }

    /// Frames held in the reorder buffer.
    pub fn held(&self) -> usize {
        self.ahead.iter().flatten().count()
    }

    /// DATA frame `seq` (its bytes `frame`) arrived over a connection of `paths` paths whose
    /// window is `window` frames. Every delivered or old frame owes an ACK (an old one makes it
    /// the ACK again); an early one owes a NAK when it proves the expected frame lost.
    pub fn on_data(&mut self, seq: u32, frame: &[u8], paths: u32, window: u32) -> Arrival {
        if seq == self.expected {
            self.owed = Owed::Ack;
            self.expected = self.expected.wrapping_add(1);
            self.ahead.pop_front(); // the expected frame's own slot, empty
            return Arrival::Deliver;
        }
        if !after(seq, self.expected) {
            if self.owed == Owed::Nothing {
                self.owed = Owed::Ack;
            }
            return Arrival::Discard;
        }
        if seq % paths == self.expected % paths {
            self.owed = Owed::Nak;
        }
        let slot = seq.wrapping_sub(self.expected) as usize;
        if paths == 1 || slot >= window as usize {
            return Arrival::Discard;
        }
        if self.ahead.len() <= slot {
            self.ahead.resize(slot + 1, None);
        }
        if self.ahead[slot].is_some() {
            return Arrival::Discard;
        }
        let mut held = std::mem::take(&mut self.spare);
        held.clear();
        held.extend_from_slice(frame);
        self.ahead[slot] = Some(held);
        Arrival::Held
    }

    /// The next held frame that is now in order, if any; its sequence number is then delivered.
    pub fn take_ready(&mut self) -> Option<&[u8]> {
        self.ahead.front()?.as_ref()?;
        self.spare = self.ahead.pop_front().flatten().expect("checked above");
        self.expected = self.expected.wrapping_add(1);
        Some(&self.spare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_ack_goes_back_once_then_progress_resets() {
        let mut s = Sender::default();
        for i in 0..4 {
            s.sent(vec![i], 0, 100);
        }
        assert!(!s.can_send_new(8) || !s.resend_pending());
        assert_eq!(s.on_ack(1, true, 10, 100, 1), AckOutcome::Progress { frames: 1, bytes: 1, rtt: Some(10) });
        assert_eq!(s.on_ack(1, true, 11, 100, 1), AckOutcome::Retransmit(1));
        assert_eq!(s.next_resend().map(|f| f[0]), Some(1));
        assert_eq!(s.on_ack(1, true, 12, 100, 1), AckOutcome::Nothing, "one round per gap");
        assert!(!s.can_send_new(8), "the round must finish first");
        assert_eq!((s.next_resend().map(|f| f[0]), s.next_resend().map(|f| f[0])), (Some(2), Some(3)));
        assert!(s.next_resend().is_none() && s.can_send_new(8));
        assert_eq!(s.on_timeout(111, 100), Some(2), "second round in a row");
        assert_eq!(s.on_ack(4, false, 120, 100, 1), AckOutcome::Progress { frames: 3, bytes: 3, rtt: None });
        assert_eq!((s.losses(), s.in_flight(), s.deadline()), (0, 0, None));
        assert_eq!(s.on_ack(9, true, 130, 100, 1), AckOutcome::Nothing, "beyond what was sent");
    }

    #[test]
    fn sequence_numbers_wrap() {
        assert!(after(0, u32::MAX) && !after(u32::MAX, 0) && !after(5, 5));
        let mut r = Receiver::default();
        let d = |r: &mut Receiver, seq| r.on_data(seq, &[seq as u8], 1, 8);
        assert_eq!(
            [d(&mut r, 0), d(&mut r, 0), d(&mut r, 2), d(&mut r, 1)],
            [Arrival::Deliver, Arrival::Discard, Arrival::Discard, Arrival::Deliver]
        );
        assert_eq!(r.expected(), 2);
    }
}
