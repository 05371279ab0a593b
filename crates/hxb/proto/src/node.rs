//! One node's HXB state machine: send queues and windows per peer, receive arrays, relaying,
//! ACKs and retransmission. The call order is in the crate documentation.
//!
//! Retransmission (tca's design; the seed only says that dropped packets are sent again,
//! §3.4): a packet goes again when its timeout `rto_ps` expires, or earlier, once, when the
//! receiver's selective ACKs show it was lost (fast retransmission): at least [`DUPTHRESH`]
//! packets sent after it are held by the receiver, one of them sent on the same port. A link
//! delivers in order, so a later packet of the same port held by the receiver means this one
//! was dropped; the count of [`DUPTHRESH`] keeps packets that merely overtook it on other
//! links (a transport that sends on another link than the port it was given) from counting.
//! Fast retransmission is for peers one hop away (on a switch of this node) only: a relay
//! stripes the next hop over its own links, so two packets that shared the first link can
//! arrive in either order without a loss; packets to peers behind relays wait for the timeout.
//! Without a hole in the receiver's array nothing changes: no SACK bit, no extra frame.

use crate::coord::{Coord, Grid};
use crate::error::HxbError;
use crate::header::{Header, Kind, HEADER_LEN, MAX_HOPS};
use crate::rxarray::{ReceiveArray, Stored, WINDOW};
use crate::stripe::Striper;
use std::collections::{BTreeMap, VecDeque};
use std::num::NonZeroU32;

/// Packets sent after an unacknowledged one and already held by the receiver before it is
/// taken as lost (TCP's duplicate-ACK threshold, RFC 5681, is the same number).
pub const DUPTHRESH: usize = 3;

/// The id of a receive buffer owned by the caller (the skbuf ID of seed 004 §3.2); never 0,
/// the value that marks an empty receive-array entry.
pub type BufferId = NonZeroU32;

/// A node's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The hyper-crossbar size (PACS-CS: 16 x 16 x 10).
    pub grid: Grid,
    /// This node.
    pub coord: Coord,
    /// Links per dimension, k (PACS-CS: 2); ports are numbered `dim * k + link`.
    pub links_per_dim: u8,
    /// Payload bytes per packet [bytes] (a 9,000-byte jumbo frame holds 8,964 after the header).
    pub mtu: u16,
    /// Retransmission timeout [ps]: a packet unacknowledged this long after it was sent is sent
    /// again. The seed gives no value (hxb.md §3.6).
    pub rto_ps: u64,
}

/// What the caller may do with a buffer it passed to [`Node::handle_frame`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// The node keeps it: it comes back in an [`Event::Deliver`] or a relayed [`Transmit`].
    Held,
    /// The node is done with it (an ACK, a duplicate); the caller may reuse it at once.
    Free,
}

/// A frame to send, written by [`Node::poll_transmit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// The port (`dim * k + link`) to send on.
    pub port: u16,
    /// The node this hop is addressed to (a neighbour on the port's switch).
    pub to: Coord,
    /// Bytes written at the start of the caller's buffer.
    pub len: usize,
    /// `None`: the frame is the `len` bytes written. `Some(b)`: a relay; the frame is the new
    /// header written (`len` = [`HEADER_LEN`]) followed by the payload of received buffer `b`
    /// from byte [`HEADER_LEN`] on; after sending, buffer `b` is free again.
    pub relay: Option<BufferId>,
}

/// What the node reports to the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The next packet from `from`, in order. The caller reads its header (length, END flag)
    /// and payload in place in buffer `buffer`, then may reuse the buffer.
    Deliver {
        /// The sending node.
        from: Coord,
        /// The caller's buffer holding the packet.
        buffer: BufferId,
    },
}

/// Counters of a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// DATA packets sent for the first time.
    pub sent: u64,
    /// DATA packets sent again (after a timeout or, see `fast_retransmitted`, earlier).
    pub retransmitted: u64,
    /// Of `retransmitted`, those sent again on selective-ACK evidence before their timeout.
    pub fast_retransmitted: u64,
    /// Pure ACK packets sent.
    pub acks: u64,
    /// Frames relayed to another node.
    pub relayed: u64,
    /// Packets delivered in order.
    pub delivered: u64,
    /// DATA packets received twice (or beyond the window) and dropped.
    pub duplicates: u64,
}

/// A sent packet not yet acknowledged.
#[derive(Debug, Clone)]
struct InFlight {
    payload: Vec<u8>,
    end: bool,
    sent_at: u64,
    /// The port and the node-wide send count of its latest transmission.
    port: u16,
    order: u64,
    /// The receiver holds it (selective ACK): not sent again.
    sacked: bool,
    /// In the retransmission queue.
    queued: bool,
    /// Queued or sent by fast retransmission (at most once per packet).
    fast: bool,
}

/// Everything a node keeps per peer.
#[derive(Debug, Default)]
struct Peer {
    rx: ReceiveArray,
    ack_due: bool,
    /// Packets of messages not yet sent: (payload, last of its message).
    pending: VecDeque<(Vec<u8>, bool)>,
    in_sendable: bool,
    in_flying: bool,
    /// Oldest unacknowledged and next new sequence number.
    una: u32,
    nxt: u32,
    /// Indexed by `seq % WINDOW`; empty until the first send.
    inflight: Vec<Option<InFlight>>,
}

impl Peer {
    fn room(&self) -> bool {
        self.nxt.wrapping_sub(self.una) < WINDOW
    }
}

/// One node of the hyper-crossbar.
#[derive(Debug)]
pub struct Node {
    cfg: Config,
    striper: Striper,
    /// Peers this node has exchanged packets with, by linear index. A map, not the seed's
    /// array over all nodes, so that a simulation of all 2,560 PACS-CS nodes stays small; ordered
    /// so that iteration is deterministic.
    peers: BTreeMap<usize, Peer>,
    /// Peers with packets in flight, each once (some may have drained since).
    flying: Vec<usize>,
    /// Received frames to pass on: (buffer, rewritten header).
    relays: VecDeque<(BufferId, Header)>,
    /// (peer index, sequence number, queued by fast retransmission) to send again.
    retx: VecDeque<(usize, u32, bool)>,
    /// Peers with pending packets and, when last looked, window room; round robin.
    sendable: VecDeque<usize>,
    /// Peers owed an ACK.
    acks_due: VecDeque<usize>,
    events: VecDeque<Event>,
    stats: Stats,
    /// DATA transmissions so far (first and repeated): the order of [`InFlight::order`].
    sends: u64,
}

impl Node {
    /// A node with no traffic.
    ///
    /// # Errors
    /// [`HxbError::Config`] or [`HxbError::OutsideGrid`] for an unusable configuration.
    pub fn new(cfg: Config) -> Result<Node, HxbError> {
        if cfg.grid.nodes() == 0 {
            return Err(HxbError::Config("the grid has no nodes"));
        }
        if !cfg.grid.contains(cfg.coord) {
            return Err(HxbError::OutsideGrid(cfg.coord, cfg.grid.0));
        }
        if cfg.links_per_dim == 0 || cfg.mtu == 0 || cfg.rto_ps == 0 {
            return Err(HxbError::Config("links per dimension, MTU and retransmission timeout must be positive"));
        }
        Ok(Node {
            striper: Striper::new(cfg.links_per_dim),
            cfg,
            peers: BTreeMap::new(),
            flying: Vec::new(),
            relays: VecDeque::new(),
            retx: VecDeque::new(),
            sendable: VecDeque::new(),
            acks_due: VecDeque::new(),
            events: VecDeque::new(),
            stats: Stats::default(),
            sends: 0,
        })
    }

    /// This node's coordinates.
    pub fn coord(&self) -> Coord {
        self.cfg.coord
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The buffer size [`Node::poll_transmit`] needs: header plus MTU.
    pub fn frame_capacity(&self) -> usize {
        HEADER_LEN + usize::from(self.cfg.mtu)
    }

    /// Whether nothing is queued, in flight, owed or undelivered.
    pub fn is_idle(&self) -> bool {
        self.relays.is_empty()
            && self.retx.is_empty()
            && self.events.is_empty()
            && self.peers.values().all(|p| p.pending.is_empty() && p.una == p.nxt && !p.ack_due)
    }

    fn peer_index(&self, c: Coord) -> Result<usize, HxbError> {
        self.cfg.grid.index(c).ok_or(HxbError::OutsideGrid(c, self.cfg.grid.0))
    }

    /// Queues message `data` for `dst`, cut into packets of at most `mtu` bytes (an empty
    /// message is one empty packet); the last carries the END flag.
    ///
    /// # Errors
    /// [`HxbError::OutsideGrid`] or [`HxbError::SelfSend`].
    pub fn send(&mut self, dst: Coord, data: &[u8]) -> Result<(), HxbError> {
        let p = self.peer_index(dst)?;
        if dst == self.cfg.coord {
            return Err(HxbError::SelfSend(dst));
        }
        let mtu = usize::from(self.cfg.mtu);
        let n = data.len().div_ceil(mtu).max(1);
        let peer = self.peers.entry(p).or_default();
        for i in 0..n {
            let chunk = &data[(i * mtu).min(data.len())..((i + 1) * mtu).min(data.len())];
            peer.pending.push_back((chunk.to_vec(), i + 1 == n));
        }
        if !peer.in_sendable {
            peer.in_sendable = true;
            self.sendable.push_back(p);
        }
        Ok(())
    }

    /// A frame arrived on `port` in the caller's buffer `buffer` (`frame` is its content:
    /// header and payload). Returns whether the node keeps the buffer.
    ///
    /// # Errors
    /// Any header error, [`HxbError::Misaddressed`], [`HxbError::OutsideGrid`] or
    /// [`HxbError::TooManyHops`]; the frame is then ignored and the buffer is free.
    pub fn handle_frame(
        &mut self,
        now_ps: u64,
        port: u16,
        buffer: BufferId,
        frame: &[u8],
    ) -> Result<Disposition, HxbError> {
        let _ = port; // any link of any dimension may carry any packet
        let h = Header::parse(frame)?;
        let me = self.cfg.coord;
        let src = self.peer_index(h.src)?;
        self.peer_index(h.dst)?;
        if h.next != me {
            return Err(HxbError::Misaddressed(h.next, me));
        }
        if h.dst != me {
            if h.hops >= MAX_HOPS {
                return Err(HxbError::TooManyHops(h.src, h.dst, h.hops));
            }
            let (next, _) = me.next_hop(h.dst).expect("dst differs from this node");
            let relayed = Header { next, hops: h.hops + 1, buffer: 0, ..h };
            self.relays.push_back((buffer, relayed));
            return Ok(Disposition::Held);
        }
        self.on_ack(src, h.ack, h.sack, now_ps);
        if h.kind == Kind::Ack {
            return Ok(Disposition::Free);
        }
        let peer = self.peers.entry(src).or_default();
        if !peer.ack_due {
            peer.ack_due = true;
            self.acks_due.push_back(src);
        }
        match peer.rx.store(h.seq, buffer.get()) {
            Stored::Held => {
                while let Some(b) = peer.rx.take_next() {
                    let buffer = BufferId::new(b).expect("the array holds non-zero ids");
                    self.events.push_back(Event::Deliver { from: h.src, buffer });
                    self.stats.delivered += 1;
                }
                Ok(Disposition::Held)
            }
            Stored::Duplicate | Stored::OutOfWindow => {
                self.stats.duplicates += 1;
                Ok(Disposition::Free)
            }
        }
    }

    /// Applies an acknowledgement from peer `p`: everything before `ack` is received, and the
    /// SACK bits mark packets held beyond it. Stale or impossible values are ignored.
    fn on_ack(&mut self, p: usize, ack: u32, sack: u32, _now_ps: u64) {
        let peer = self.peers.entry(p).or_default();
        if ack.wrapping_sub(peer.una) > peer.nxt.wrapping_sub(peer.una) {
            return;
        }
        while peer.una != ack {
            peer.inflight[(peer.una % WINDOW) as usize] = None;
            peer.una = peer.una.wrapping_add(1);
        }
        for i in 0..WINDOW - 1 {
            let seq = ack.wrapping_add(1 + i);
            if sack & (1 << i) != 0 && seq.wrapping_sub(peer.una) < peer.nxt.wrapping_sub(peer.una) {
                if let Some(f) = peer.inflight[(seq % WINDOW) as usize].as_mut() {
                    f.sacked = true;
                }
            }
        }
        // Only for a neighbour on the same switch: a relay stripes the next hop over its own
        // links, so packets that shared a first link may arrive out of order without a loss.
        let me = self.cfg.coord;
        let neighbour = sack != 0 && self.cfg.grid.coord(p).is_some_and(|c| me.next_hop(c).map(|h| h.0) == Some(c));
        if neighbour {
            for seq in lost(peer) {
                let f = peer.inflight[(seq % WINDOW) as usize].as_mut().expect("lost packets are in flight");
                f.fast = true;
                f.queued = true;
                self.retx.push_back((p, seq, true));
            }
        }
        if !peer.pending.is_empty() && peer.room() && !peer.in_sendable {
            peer.in_sendable = true;
            self.sendable.push_back(p);
        }
    }

    /// Queues for retransmission every packet unacknowledged for `rto_ps` or longer. Calling it
    /// early or twice is harmless.
    pub fn handle_timeout(&mut self, now_ps: u64) {
        let peers = &mut self.peers;
        self.flying.retain(|p| {
            let peer = peers.get_mut(p).expect("flying peers exist");
            peer.in_flying = peer.una != peer.nxt;
            peer.in_flying
        });
        for &p in &self.flying {
            let peer = self.peers.get_mut(&p).expect("flying peers exist");
            let mut seq = peer.una;
            while seq != peer.nxt {
                if let Some(f) = peer.inflight[(seq % WINDOW) as usize].as_mut() {
                    if !f.sacked && !f.queued && f.sent_at.saturating_add(self.cfg.rto_ps) <= now_ps {
                        f.queued = true;
                        self.retx.push_back((p, seq, false));
                    }
                }
                seq = seq.wrapping_add(1);
            }
        }
    }

    /// The earliest time a packet's retransmission timer expires [ps].
    pub fn poll_timeout(&self) -> Option<u64> {
        self.flying
            .iter()
            .filter_map(|p| self.peers.get(p))
            .filter(|p| p.una != p.nxt)
            .flat_map(|p| p.inflight.iter().flatten())
            .filter(|f| !f.sacked && !f.queued)
            .map(|f| f.sent_at.saturating_add(self.cfg.rto_ps))
            .min()
    }

    /// The next delivery to the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Writes the next frame to send into `buf` and says where it goes. Order: relays first
    /// (they hold the caller's buffers), then retransmissions, new packets (round robin over
    /// peers, within each peer's window) and last pure ACKs (DATA to a peer already carries its
    /// ACK).
    ///
    /// # Panics
    /// If `buf` is shorter than [`Node::frame_capacity`].
    pub fn poll_transmit(&mut self, now_ps: u64, buf: &mut [u8]) -> Option<Transmit> {
        assert!(buf.len() >= self.frame_capacity(), "transmit buffer shorter than header + MTU");
        let me = self.cfg.coord;
        if let Some((buffer, h)) = self.relays.pop_front() {
            h.emit(buf);
            self.stats.relayed += 1;
            return Some(self.transmit(h.dst, HEADER_LEN, Some(buffer)));
        }
        while let Some((p, seq, fast)) = self.retx.pop_front() {
            let peer = self.peers.entry(p).or_default();
            // Acknowledged meanwhile: the slot is empty or holds a later packet.
            if seq.wrapping_sub(peer.una) >= peer.nxt.wrapping_sub(peer.una) {
                continue;
            }
            let Some(f) = peer.inflight[(seq % WINDOW) as usize].as_mut() else { continue };
            f.queued = false;
            if f.sacked {
                continue;
            }
            f.sent_at = now_ps;
            let (end, len) = (f.end, f.payload.len());
            buf[HEADER_LEN..HEADER_LEN + len].copy_from_slice(&f.payload);
            self.stats.retransmitted += 1;
            self.stats.fast_retransmitted += u64::from(fast);
            return Some(self.sent_data(p, seq, end, len, buf));
        }
        while let Some(p) = self.sendable.pop_front() {
            let peer = self.peers.entry(p).or_default();
            if peer.pending.is_empty() || !peer.room() {
                peer.in_sendable = false;
                continue;
            }
            let (payload, end) = peer.pending.pop_front().expect("not empty");
            let seq = peer.nxt;
            peer.nxt = seq.wrapping_add(1);
            if peer.inflight.is_empty() {
                peer.inflight.resize_with(WINDOW as usize, || None);
            }
            if !peer.in_flying {
                peer.in_flying = true;
                self.flying.push(p);
            }
            let len = payload.len();
            buf[HEADER_LEN..HEADER_LEN + len].copy_from_slice(&payload);
            peer.inflight[(seq % WINDOW) as usize] = Some(InFlight {
                payload,
                end,
                sent_at: now_ps,
                port: 0,
                order: 0,
                sacked: false,
                queued: false,
                fast: false,
            });
            if !peer.pending.is_empty() && peer.room() {
                self.sendable.push_back(p);
            } else {
                peer.in_sendable = false;
            }
            self.stats.sent += 1;
            return Some(self.sent_data(p, seq, end, len, buf));
        }
        while let Some(p) = self.acks_due.pop_front() {
            let peer = self.peers.entry(p).or_default();
            if !peer.ack_due {
                continue; // carried by a DATA packet meanwhile
            }
            peer.ack_due = false;
            let dst = self.cfg.grid.coord(p).expect("peer index in the grid");
            let (next, _) = me.next_hop(dst).expect("a peer is another node");
            let h = Header {
                kind: Kind::Ack,
                end: false,
                hops: 0,
                src: me,
                dst,
                next,
                seq: 0,
                ack: peer.rx.expected(),
                sack: peer.rx.sack(),
                buffer: 0,
                len: 0,
            };
            h.emit(buf);
            self.stats.acks += 1;
            return Some(self.transmit(dst, HEADER_LEN, None));
        }
        None
    }

    /// [`Node::data`], then notes the port and send order of packet `seq` for fast
    /// retransmission.
    fn sent_data(&mut self, p: usize, seq: u32, end: bool, len: usize, buf: &mut [u8]) -> Transmit {
        let t = self.data(p, seq, end, len, buf);
        self.sends += 1;
        let peer = self.peers.get_mut(&p).expect("a peer with packets in flight");
        let f = peer.inflight[(seq % WINDOW) as usize].as_mut().expect("the packet is in flight");
        (f.port, f.order) = (t.port, self.sends);
        t
    }

    /// Writes the header of DATA packet `seq` to peer `p` (payload already in place), carrying
    /// the peer's ACK.
    fn data(&mut self, p: usize, seq: u32, end: bool, len: usize, buf: &mut [u8]) -> Transmit {
        let me = self.cfg.coord;
        let dst = self.cfg.grid.coord(p).expect("peer index in the grid");
        let peer = self.peers.entry(p).or_default();
        peer.ack_due = false;
        let (next, _) = me.next_hop(dst).expect("a peer is another node");
        let h = Header {
            kind: Kind::Data,
            end,
            hops: 0,
            src: me,
            dst,
            next,
            seq,
            ack: peer.rx.expected(),
            sack: peer.rx.sack(),
            buffer: 0,
            len: len as u16,
        };
        h.emit(buf);
        self.transmit(dst, HEADER_LEN + len, None)
    }

    /// The port and next hop toward `dst`, striped over the dimension's links.
    fn transmit(&mut self, dst: Coord, len: usize, relay: Option<BufferId>) -> Transmit {
        let (to, dim) = self.cfg.coord.next_hop(dst).expect("dst is another node");
        Transmit { port: self.striper.port(dim), to, len, relay }
    }
}

/// The packets of `peer` that selective ACKs show lost and that were not sent fast before:
/// unacknowledged, not held by the receiver, not queued, with at least [`DUPTHRESH`] packets
/// sent after them held by the receiver, one of which went on the same port.
fn lost(peer: &Peer) -> Vec<u32> {
    let mut held: Vec<(u64, u16)> = Vec::new();
    let mut holes: Vec<(u32, u64, u16)> = Vec::new();
    let mut seq = peer.una;
    while seq != peer.nxt {
        if let Some(f) = peer.inflight[(seq % WINDOW) as usize].as_ref() {
            if f.sacked {
                held.push((f.order, f.port));
            } else if !f.queued && !f.fast {
                holes.push((seq, f.order, f.port));
            }
        }
        seq = seq.wrapping_add(1);
    }
    holes
        .into_iter()
        .filter(|&(_, order, port)| {
            let later = held.iter().filter(|h| h.0 > order);
            later.clone().count() >= DUPTHRESH && later.into_iter().any(|h| h.1 == port)
        })
        .map(|h| h.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn node(coord: Coord) -> Node {
        Node::new(Config { grid: Grid(Coord::new(3, 3, 3)), coord, links_per_dim: 2, mtu: 64, rto_ps: 1000 }).unwrap()
    }

    fn id(n: u32) -> BufferId {
        BufferId::new(n).unwrap()
    }

    #[test]
    fn a_relay_changes_only_the_header_fields_of_the_hop() {
        let (a, relay, b) = (Coord::new(0, 0, 0), Coord::new(2, 0, 0), Coord::new(2, 1, 0));
        let mut src = node(a);
        src.send(b, b"payload").unwrap();
        let mut buf = vec![0u8; src.frame_capacity()];
        let t = src.poll_transmit(0, &mut buf).unwrap();
        assert_eq!((t.to, t.port / 2), (relay, 0), "X first, on an X port");
        let received = buf[..t.len].to_vec();
        let mut r = node(relay);
        assert_eq!(r.handle_frame(5, t.port, id(9), &received), Ok(Disposition::Held));
        assert_eq!(r.poll_event(), None);
        let mut out = vec![0u8; r.frame_capacity()];
        let t2 = r.poll_transmit(6, &mut out).unwrap();
        assert_eq!((t2.to, t2.port / 2, t2.len, t2.relay), (b, 1, HEADER_LEN, Some(id(9))));
        let differ: Vec<usize> = (0..HEADER_LEN).filter(|&i| out[i] != received[i]).collect();
        assert_eq!(differ, [3, 13], "hops and next.y");
        assert_eq!(r.stats().relayed, 1);
        assert!(r.is_idle());
    }

    #[test]
    fn refusals_leave_the_node_unchanged() {
        let mut n = node(Coord::new(1, 1, 1));
        let mut other = node(Coord::new(0, 0, 0));
        other.send(Coord::new(2, 0, 0), b"x").unwrap();
        let mut buf = vec![0u8; other.frame_capacity()];
        let t = other.poll_transmit(0, &mut buf).unwrap();
        let e = n.handle_frame(1, 0, id(1), &buf[..t.len]).unwrap_err();
        assert_eq!(e.to_string(), "frame for next hop (2,0,0) arrived at node (1,1,1)");
        assert_eq!(
            n.send(Coord::new(1, 1, 1), b"x").unwrap_err().to_string(),
            "node (1,1,1) cannot send a message to itself"
        );
        assert!(n.send(Coord::new(3, 0, 0), b"x").unwrap_err().to_string().contains("outside"));
        assert!(n.is_idle());
        let bad = Config {
            grid: Grid(Coord::new(3, 3, 3)),
            coord: Coord::new(0, 0, 0),
            links_per_dim: 0,
            mtu: 64,
            rto_ps: 1,
        };
        assert!(matches!(Node::new(bad), Err(HxbError::Config(_))));
    }

    proptest! {
        /// Any bytes handed to a node give a result, never a panic; a refused frame leaves
        /// nothing behind.
        #[test]
        fn garbage_frames_never_panic(frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..120), 1..20), seed_frame in any::<bool>()) {
            let mut n = node(Coord::new(1, 0, 0));
            let mut buf = vec![0u8; n.frame_capacity()];
            for (i, mut f) in frames.into_iter().enumerate() {
                if seed_frame && f.len() >= HEADER_LEN {
                    // A valid header with random bytes after it: exercises the state machine.
                    let h = Header { kind: Kind::Data, end: f[0] & 1 == 1, hops: 0, src: Coord::new(f[1] % 3, f[2] % 3, 0),
                        dst: Coord::new(1, 0, 0), next: Coord::new(1, 0, 0), seq: u32::from(f[3] % 40), ack: u32::from(f[4]),
                        sack: u32::from_be_bytes([f[5], f[6], f[7], f[8]]), buffer: 0, len: (f.len() - HEADER_LEN) as u16 };
                    h.emit(&mut f);
                }
                let _ = n.handle_frame(i as u64, 0, id(i as u32 + 1), &f);
                n.handle_timeout(i as u64 * 1000);
                while n.poll_transmit(i as u64, &mut buf).is_some() {}
                while n.poll_event().is_some() {}
            }
        }
    }
}
