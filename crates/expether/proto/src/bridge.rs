//! One ExpEther bridge (seed 002 §3.3-§3.4): TLPs from PCIe go into a transmission queue per
//! destination bridge, leave aggregated in frames chosen by deficit round robin, travel under
//! go-back-N, and come out at the peer bridge in order.
//!
//! Scheduling, in the order [`Bridge::poll_transmit`] tries it whenever the link can take a
//! frame: an owed ACK; the next frame of a retransmission round; a new frame for the
//! destination deficit round robin picks. A destination is ready when it has queued TLPs, its
//! go-back-N window is open and its path has not failed. The pick goes round-robin from the
//! last destination served to the first ready one whose credit is not negative; a frame spends
//! the bytes it takes; when every ready destination is in debt, each gets the quanta needed
//! until one is not (a new round, done at once, so nothing ever waits for credit). Destinations
//! with backlogs therefore share the link in proportion to bytes, and each frame takes every
//! TLP queued for its destination up to `max_tlps` and `max_frame` (§3.4.2).
//!
//! The links: with `line_rate` set, the bridge paces each of its `paths` Ethernet ports at that
//! rate, counting each frame's Ethernet overhead (FCS, preamble, inter-frame gap, padding), and
//! offers the next frame as soon as its port is free, never later (no aggregation wait,
//! §3.4.2). With `line_rate` 0 the caller's links take every frame when asked. Multipath
//! (§3.3.1, §4.1): DATA frame `seq` leaves on port `seq % paths`, so consecutive frames go
//! round robin over the ports and a retransmission takes its frame's port again; ACKs take the
//! first free port; the receiver reorders ([`crate::gbn::Receiver`]). Both ends of a connection
//! use the same number of paths. With rate control
//! ([`crate::rate`]) a destination is also ready only once its rate allows its next frame;
//! TLPs queued meanwhile join that frame.

use crate::error::ExpError;
use crate::gbn::{AckOutcome, Arrival, Owed, Receiver, Sender};
use crate::header::{tlps, FrameView, Header, Kind, Mac, Tlps, HEADER_LEN, MAX_VLAN, MIN_FRAME, TLP_PREFIX};
use crate::outbox::Outbox;
use crate::rate::{RateConfig, RateControl};
use std::collections::{BTreeMap, VecDeque};

/// Bytes an Ethernet frame takes on the wire besides the frame itself: FCS 4, preamble and
/// start delimiter 8, inter-frame gap 12 (IEEE 802.3).
pub const WIRE_OVERHEAD: usize = 24;

/// How a bridge behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// This bridge's MAC address.
    pub mac: Mac,
    /// This bridge's VLAN id (0..=4095): frames of other VLANs are refused (§3.3.1).
    pub vlan: u16,
    /// Frames in flight per destination, not yet acknowledged (1..=2^30).
    pub window: u32,
    /// Retransmission timeout [ps].
    pub rto_ps: u64,
    /// NAKs (repeated ACKs naming a lost frame) that start a retransmission round (at least 1).
    pub dup_acks: u32,
    /// Retransmission rounds in a row without progress that declare the path failed
    /// (§4.2.1: 3 in the seed's experiment); 0 never declares it.
    pub failure_losses: u32,
    /// Most TLPs in one frame (1..=255; 10 in the seed's prototype, §4.2.2).
    pub max_tlps: u8,
    /// Largest frame without FCS [bytes] (at least a header and one 1-byte TLP, at most 65,535).
    pub max_frame: usize,
    /// TLP bytes each destination's queue holds before it refuses more (back-pressure).
    pub queue_bytes: usize,
    /// The link's rate [bytes/s]; 0 = the caller's link takes a frame whenever asked.
    pub line_rate: u64,
    /// Deficit-round-robin quantum [bytes] (at least 1).
    pub quantum: u32,
    /// Delay-based rate control per destination ([`crate::rate`]); `None` sends each
    /// destination's frames as fast as the link and the window allow. Needs `line_rate`.
    pub rate_control: Option<RateConfig>,
    /// Ethernet ports (paths) the bridge sends over round robin, each at `line_rate`
    /// (1..=16; the seed's prototype has 2, "no limit on the number of ports", §3.3.1).
    pub paths: u8,
}

impl Config {
    /// A 10GbE bridge: window 64, RTO 50 µs, 1 repeated ACK, failure after 3 losses, up to 10
    /// TLPs in standard 1,518-byte tagged frames, 16 KiB per destination queue, quantum 1,518.
    pub fn new(mac: Mac, vlan: u16) -> Config {
        Config {
            mac,
            vlan,
            window: 64,
            rto_ps: 50_000_000,
            dup_acks: 1,
            failure_losses: 3,
            max_tlps: 10,
            max_frame: 1518,
            queue_bytes: 16 * 1024,
            line_rate: 1_250_000_000,
            quantum: 1518,
            rate_control: None,
            paths: 1,
        }
    }

    fn check(&self) -> Result<(), ExpError> {
        let bad = |m| Err(ExpError::Config(m));
        if self.vlan > MAX_VLAN {
            return bad("vlan exceeds 4095");
        }
        if self.window == 0 || self.window > 1 << 30 {
            return bad("window must be 1..=2^30 frames");
        }
        if self.dup_acks == 0 || self.max_tlps == 0 || self.quantum == 0 || self.rto_ps == 0 {
            return bad("dup_acks, max_tlps, quantum and rto_ps must be at least 1");
        }
        if !(1..=16).contains(&self.paths) {
            return bad("paths must be 1..=16");
        }
        if self.max_frame < HEADER_LEN + TLP_PREFIX + 1 || self.max_frame > u16::MAX as usize {
            return bad("max_frame must hold a header and a TLP and fit 16 bits");
        }
        if let Some(r) = self.rate_control {
            if !r.is_valid() || self.line_rate == 0 {
                return bad("rate control needs line_rate, min_rate and min_interval_ps >= 1, decrease 1..=1023");
            }
        }
        Ok(())
    }

    /// The largest TLP a frame can carry [bytes].
    pub fn max_tlp(&self) -> usize {
        self.max_frame - HEADER_LEN - TLP_PREFIX
    }
}

/// A frame to send, written at the start of the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// The destination bridge.
    pub to: Mac,
    /// Bytes of the frame (without FCS; the NIC pads it to 60).
    pub len: usize,
    /// Bytes it takes on the wire, with padding, FCS, preamble and gap.
    pub wire_bytes: usize,
    /// The Ethernet port (path) it leaves on, `0..paths`.
    pub path: usize,
}

/// A TLP delivered in order, written at the start of the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivered {
    /// The bridge it came from.
    pub from: Mac,
    /// Its length [bytes].
    pub len: usize,
}

/// Something the bridge reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `failure_losses` retransmission rounds in a row made no progress: the Ethernet path to
    /// `peer` is taken as failed (§4.2.1). Its queued and unacknowledged TLPs are dropped
    /// (`tlps_dropped`) and new TLPs for it are refused.
    PathFailed {
        /// The destination bridge.
        peer: Mac,
        /// When it was declared [ps].
        at: u64,
    },
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// DATA frames sent for the first time.
    pub data_frames: u64,
    /// TLPs in them.
    pub tlps_sent: u64,
    /// DATA frames sent again.
    pub retransmitted: u64,
    /// ACK and NAK frames sent.
    pub acks: u64,
    /// Retransmission rounds started by a NAK (a repeated ACK naming a lost frame).
    pub dup_ack_rounds: u64,
    /// Retransmission rounds started by the timer.
    pub timeout_rounds: u64,
    /// TLPs delivered in order.
    pub tlps_delivered: u64,
    /// DATA frames received again, early on one path or beyond the window (discarded).
    pub discarded: u64,
    /// DATA frames that arrived early over multipath and waited in the reorder buffer.
    pub reordered: u64,
    /// TLPs dropped because their path failed.
    pub tlps_dropped: u64,
}

/// Per destination: the queue, the two go-back-N halves and the path state.
#[derive(Debug, Clone)]
struct Peer {
    out: Outbox,
    tx: Sender,
    rx: Receiver,
    failed: bool,
    rate: RateControl,
    /// When rate control lets this destination send its next new frame [ps].
    next_at: u64,
}

/// The protocol state of one bridge.
#[derive(Debug, Clone)]
pub struct Bridge {
    cfg: Config,
    peers: BTreeMap<Mac, Peer>,
    /// The destination served last by round robin.
    cursor: Option<Mac>,
    /// When each port is free for the next frame [ps].
    link_free_at: Vec<u64>,
    rx_bytes: VecDeque<u8>,
    rx_tlps: VecDeque<(Mac, usize)>,
    events: VecDeque<Event>,
    stats: Stats,
}

impl Bridge {
    /// A bridge with no traffic yet.
    ///
    /// # Errors
    /// [`ExpError::Config`] for a configuration outside the documented ranges.
    pub fn new(cfg: Config) -> Result<Bridge, ExpError> {
        cfg.check()?;
        let ports = usize::from(cfg.paths);
        Ok(Bridge {
            cfg,
            peers: BTreeMap::new(),
            cursor: None,
            link_free_at: vec![0; ports],
            rx_bytes: VecDeque::new(),
            rx_tlps: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// TLPs queued for `dst`, not yet in a frame.
    pub fn queued(&self, dst: Mac) -> usize {
        self.peers.get(&dst).map_or(0, |p| p.out.len())
    }

    /// Frames to `dst` not yet acknowledged.
    pub fn in_flight(&self, dst: Mac) -> usize {
        self.peers.get(&dst).map_or(0, |p| p.tx.in_flight())
    }

    /// The rate control's sending rate to `dst` [bytes/s] (the line rate without rate control).
    pub fn rate(&self, dst: Mac) -> u64 {
        self.peers.get(&dst).map_or(self.cfg.line_rate, |p| p.rate.rate())
    }

    /// Whether the path to `dst` has been declared failed.
    pub fn path_failed(&self, dst: Mac) -> bool {
        self.peers.get(&dst).is_some_and(|p| p.failed)
    }

    fn peer(&mut self, mac: Mac) -> &mut Peer {
        let (limit, line_rate) = (self.cfg.queue_bytes, self.cfg.line_rate);
        self.peers.entry(mac).or_insert_with(|| Peer {
            out: Outbox::new(limit),
            tx: Sender::default(),
            rx: Receiver::default(),
            failed: false,
            rate: RateControl::new(line_rate),
            next_at: 0,
        })
    }

    /// Queues a TLP from PCIe for the bridge `dst` (an application command).
    ///
    /// # Errors
    /// [`ExpError::QueueFull`] when the destination's queue is full (back-pressure: offer it
    /// again after frames have left); [`ExpError::TlpSize`], [`ExpError::SelfSend`],
    /// [`ExpError::PathFailed`].
    pub fn send_tlp(&mut self, dst: Mac, tlp: &[u8]) -> Result<(), ExpError> {
        let max = self.cfg.max_tlp();
        if tlp.is_empty() || tlp.len() > max {
            return Err(ExpError::TlpSize(tlp.len(), max));
        }
        if dst == self.cfg.mac {
            return Err(ExpError::SelfSend(dst));
        }
        let p = self.peer(dst);
        if p.failed {
            return Err(ExpError::PathFailed(dst));
        }
        if !p.out.push(tlp) {
            return Err(ExpError::QueueFull(dst));
        }
        Ok(())
    }

    /// A frame arrived at `now` [ps].
    ///
    /// # Errors
    /// A malformed frame ([`ExpError::Truncated`], [`ExpError::BadHeader`],
    /// [`ExpError::BadTlps`]), one for another bridge ([`ExpError::Misaddressed`]) or another
    /// VLAN ([`ExpError::OtherVlan`]). The bridge's state is then unchanged.
    pub fn handle_frame(&mut self, now: u64, frame: &[u8]) -> Result<(), ExpError> {
        let h = Header::parse(frame)?;
        if h.dst != self.cfg.mac || h.src == self.cfg.mac {
            return Err(ExpError::Misaddressed(h.dst, self.cfg.mac));
        }
        if h.vlan != self.cfg.vlan {
            return Err(ExpError::OtherVlan(h.vlan, self.cfg.vlan));
        }
        let list = if h.kind == Kind::Data { Some(tlps(&h, frame)?) } else { None };
        let (rto, dup_acks, paths, window) = (self.cfg.rto_ps, self.cfg.dup_acks, self.cfg.paths, self.cfg.window);
        self.peer(h.src);
        let p = self.peers.get_mut(&h.src).expect("created above");
        if let Some(list) = list {
            match p.rx.on_data(h.seq, frame, u32::from(paths), window) {
                Arrival::Deliver => {
                    let mut deliver = |list: Tlps<'_>| {
                        for tlp in list {
                            self.rx_bytes.extend(tlp);
                            self.rx_tlps.push_back((h.src, tlp.len()));
                            self.stats.tlps_delivered += 1;
                        }
                    };
                    deliver(list);
                    // Frames held in the reorder buffer that this one put in order.
                    while let Some(f) = p.rx.take_ready() {
                        deliver(Header::parse(f).and_then(|held| tlps(&held, f)).expect("checked when it arrived"));
                    }
                }
                Arrival::Held => self.stats.reordered += 1,
                Arrival::Discard => self.stats.discarded += 1,
            }
        }
        let p = self.peers.get_mut(&h.src).expect("created above");
        if !p.failed {
            match p.tx.on_ack(h.ack, h.kind == Kind::Nak, now, rto, dup_acks) {
                AckOutcome::Retransmit(losses) => {
                    self.stats.dup_ack_rounds += 1;
                    self.lost(h.src, losses, now);
                }
                AckOutcome::Progress { frames, bytes, rtt } => {
                    if let Some(rc) = &self.cfg.rate_control {
                        let wire = bytes + frames as u64 * WIRE_OVERHEAD as u64;
                        p.rate.on_ack(rc, self.cfg.line_rate, now, wire, rtt);
                    }
                }
                AckOutcome::Nothing => {}
            }
        }
        Ok(())
    }

    /// Retransmission timers whose deadline is at or before `now` fire. An early or repeated
    /// call is harmless.
    pub fn handle_timeout(&mut self, now: u64) {
        let rto = self.cfg.rto_ps;
        let mut rounds = Vec::new();
        for (&mac, p) in self.peers.iter_mut().filter(|(_, p)| !p.failed) {
            if let Some(losses) = p.tx.on_timeout(now, rto) {
                rounds.push((mac, losses));
            }
        }
        for (mac, losses) in rounds {
            self.stats.timeout_rounds += 1;
            self.lost(mac, losses, now);
        }
    }

    /// A retransmission round to `mac` started; `losses` in a row may fail the path.
    fn lost(&mut self, mac: Mac, losses: u32, now: u64) {
        if let Some(rc) = &self.cfg.rate_control {
            let p = self.peers.get_mut(&mac).expect("a known peer");
            p.rate.on_loss(rc, self.cfg.line_rate);
        }
        if self.cfg.failure_losses == 0 || losses < self.cfg.failure_losses {
            return;
        }
        let p = self.peers.get_mut(&mac).expect("a known peer");
        p.failed = true;
        let queued = p.out.len();
        p.out = Outbox::new(0);
        let in_frames: u64 = p.tx.frames().map(|f| Header::parse(f).map_or(0, |h| h.count as u64)).sum();
        p.tx.abandon();
        self.stats.tlps_dropped += queued as u64 + in_frames;
        self.events.push_back(Event::PathFailed { peer: mac, at: now });
    }

    /// The next frame to send at `now` [ps], written into `buf`, or `None` when there is
    /// nothing to send or its port is still busy (see [`Bridge::poll_timeout`]).
    ///
    /// # Panics
    /// If `buf` is shorter than `max_frame`.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<Transmit> {
        assert!(buf.len() >= self.cfg.max_frame, "transmit buffer shorter than max_frame");
        let (to, len, path) = self.next_frame(now, buf)?;
        let wire_bytes = len.max(MIN_FRAME) + WIRE_OVERHEAD;
        if self.cfg.line_rate > 0 {
            let ps = (wire_bytes as u128 * 1_000_000_000_000).div_ceil(self.cfg.line_rate as u128);
            self.link_free_at[path] = now + ps as u64;
        }
        Some(Transmit { to, len, wire_bytes, path })
    }

    /// The port DATA frame `seq` leaves on.
    fn path_of(&self, seq: u32) -> usize {
        (seq % u32::from(self.cfg.paths)) as usize
    }

    /// Whether `path` can take a frame at `now`.
    fn free(&self, path: usize, now: u64) -> bool {
        self.cfg.line_rate == 0 || now >= self.link_free_at[path]
    }

    fn next_frame(&mut self, now: u64, buf: &mut [u8]) -> Option<(Mac, usize, usize)> {
        let (mac, vlan) = (self.cfg.mac, self.cfg.vlan);
        let any_free = (0..self.link_free_at.len()).find(|&q| self.free(q, now))?;
        if let Some((&to, p)) = self.peers.iter_mut().find(|(_, p)| p.rx.owed != Owed::Nothing) {
            let kind = if p.rx.owed == Owed::Nak { Kind::Nak } else { Kind::Ack };
            p.rx.owed = Owed::Nothing;
            let h = Header { dst: to, src: mac, vlan, kind, count: 0, seq: 0, ack: p.rx.expected(), len: 0 };
            h.emit(buf);
            self.stats.acks += 1;
            return Some((to, HEADER_LEN, any_free));
        }
        let resend = self.peers.iter().find_map(|(&m, p)| {
            let seq = p.tx.next_resend_seq().filter(|_| !p.failed)?;
            self.free(self.path_of(seq), now).then_some((m, seq))
        });
        if let Some((to, seq)) = resend {
            let path = self.path_of(seq);
            let p = self.peers.get_mut(&to).expect("found above");
            let ack = p.rx.expected();
            let f = p.tx.next_resend().expect("pending");
            FrameView::new_checked(&mut f[..]).expect("a stored frame").set_ack(ack);
            buf[..f.len()].copy_from_slice(f);
            self.stats.retransmitted += 1;
            return Some((to, f.len(), path));
        }
        let to = self.pick(now)?;
        let (max_tlps, max_frame, rto) = (self.cfg.max_tlps as usize, self.cfg.max_frame, self.cfg.rto_ps);
        let path = self.path_of(self.peers[&to].tx.next_seq());
        let p = self.peers.get_mut(&to).expect("picked");
        let (count, end) = p.out.fill(buf, HEADER_LEN, max_frame, max_tlps);
        if p.out.is_empty() {
            p.out.credit = p.out.credit.min(0); // an emptied queue keeps its debt, not its surplus
        }
        let seq = p.tx.next_seq();
        let len = (end - HEADER_LEN) as u16;
        Header { dst: to, src: mac, vlan, kind: Kind::Data, count: count as u8, seq, ack: p.rx.expected(), len }
            .emit(buf);
        if p.rx.owed == Owed::Ack {
            p.rx.owed = Owed::Nothing; // carried by this frame; a NAK goes as its own frame
        }
        let mut stored = p.tx.take_buffer();
        stored.extend_from_slice(&buf[..end]);
        p.tx.sent(stored, now, rto);
        if self.cfg.rate_control.is_some() {
            p.next_at = now + p.rate.gap_ps(end.max(MIN_FRAME) + WIRE_OVERHEAD);
        }
        self.cursor = Some(to);
        self.stats.data_frames += 1;
        self.stats.tlps_sent += count as u64;
        Some((to, end, path))
    }

    /// Deficit round robin over the ready destinations (see the module docs).
    fn pick(&mut self, now: u64) -> Option<Mac> {
        let window = self.cfg.window as usize;
        let ready = |p: &Peer| {
            !p.failed
                && !p.out.is_empty()
                && p.tx.can_send_new(window)
                && p.next_at <= now
                && self.free(self.path_of(p.tx.next_seq()), now)
        };
        // Round-robin order: the destinations after the cursor, then the rest.
        let order = |peers: &BTreeMap<Mac, Peer>, cursor: Option<Mac>| -> Vec<Mac> {
            let (mut later, mut earlier): (Vec<Mac>, Vec<Mac>) =
                peers.iter().filter(|(_, p)| ready(p)).map(|(m, _)| *m).partition(|m| cursor.is_none_or(|c| *m > c));
            later.append(&mut earlier);
            later
        };
        let candidates = order(&self.peers, self.cursor);
        if candidates.is_empty() {
            return None;
        }
        if let Some(m) = candidates.iter().find(|m| self.peers[m].out.credit >= 0) {
            return Some(*m);
        }
        // Everyone ready is in debt: give each the quanta of as many rounds as the least
        // indebted needs, at once.
        let q = self.cfg.quantum as i64;
        let rounds = candidates.iter().map(|m| (-self.peers[m].out.credit + q - 1) / q).min().expect("non-empty");
        for m in &candidates {
            let p = self.peers.get_mut(m).expect("known");
            p.out.credit = (p.out.credit + rounds * q).min(q);
        }
        candidates.into_iter().find(|m| self.peers[m].out.credit >= 0)
    }

    /// The next TLP delivered in order, written into `buf`.
    ///
    /// # Errors
    /// [`ExpError::BufferTooSmall`] when `buf` cannot hold it (it stays queued).
    pub fn poll_tlp(&mut self, buf: &mut [u8]) -> Result<Option<Delivered>, ExpError> {
        let Some(&(from, len)) = self.rx_tlps.front() else { return Ok(None) };
        if buf.len() < len {
            return Err(ExpError::BufferTooSmall(buf.len(), len));
        }
        for (d, s) in buf.iter_mut().zip(self.rx_bytes.drain(..len)) {
            *d = s;
        }
        self.rx_tlps.pop_front();
        Ok(Some(Delivered { from, len }))
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Bridge::handle_timeout`] (or another [`Bridge::poll_transmit`]) is next due [ps]:
    /// the earliest retransmission deadline, or the time a frame's port is free again when the
    /// frame is waiting for it.
    pub fn poll_timeout(&self) -> Option<u64> {
        let window = self.cfg.window as usize;
        let rto = self.peers.values().filter(|p| !p.failed).filter_map(|p| p.tx.deadline()).min();
        if self.cfg.line_rate == 0 {
            return rto;
        }
        let port = |seq: u32| self.link_free_at[self.path_of(seq)];
        let first_free = self.link_free_at.iter().copied().min().expect("at least one port");
        let ack = self.peers.values().any(|p| p.rx.owed != Owed::Nothing).then_some(first_free);
        let resend = self.peers.values().filter(|p| !p.failed).filter_map(|p| p.tx.next_resend_seq().map(port)).min();
        // New frames wait for their port and for their destination's rate.
        let paced = self
            .peers
            .values()
            .filter(|p| !p.failed && !p.out.is_empty() && p.tx.can_send_new(window))
            .map(|p| p.next_at.max(port(p.tx.next_seq())))
            .min();
        [rto, ack, resend, paced].into_iter().flatten().min()
    }
}
