//! One ExpEther bridge over real links: an [`expether_proto::Bridge`] driven over k
//! [`ether_net::FrameSocket`]s (path `i` is socket `i`, opened for every EtherType so the VLAN
//! tag reaches the bridge), in real time, on the caller's thread.
//!
//! [`Port::pump`] is one turn of the crate documentation's call order: offer queued TLPs to the
//! bridge (a full queue is back-pressure: they wait here); take every frame waiting on every
//! socket (after the receive fault injector, if any) into [`expether_proto::Bridge::handle_frame`],
//! read in its ring slot and released at once;
//! fire [`expether_proto::Bridge::handle_timeout`] once [`expether_proto::Bridge::poll_timeout`]
//! has passed; send each frame [`expether_proto::Bridge::poll_transmit`] gives on the socket of
//! its path; collect delivered TLPs. With nothing to do it sleeps in `ppoll` on all sockets
//! until a frame comes, the next retransmission deadline or the caller's limit. Time is
//! picoseconds of [`std::time::Instant`] since the port opened.
//!
//! Pacing: the bridge runs with `line_rate` 0 and the links pace it: each socket's `send`
//! blocks while its tbf queue is full, and go-back-N's window bounds what is in flight.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ether_net::{run_in, wait_any, Fate, FaultInjector, FrameSocket, RxFaults, SlotSpec};
use expether_proto::{Bridge, Config, Event, ExpError, Mac, Stats};

use crate::ExpNetError;

/// Frames taken from one socket per turn, so that sending is not starved.
const RX_BURST: usize = 256;
/// Bytes of each socket's receive ring: room for thousands of frames while the thread is busy.
const RING_BYTES: u32 = 8 << 20;
/// Room in a slot besides the frame: the kernel's header and sockaddr_ll (frame at offset 66).
const SLOT_HEADROOM: u32 = 80;

/// What a port needs.
#[derive(Debug, Clone)]
pub struct PortConfig {
    /// The bridge; its `paths` must equal the number of interfaces and its `line_rate` is set
    /// to 0 here (the links pace it).
    pub bridge: Config,
    /// The peer bridge's MAC address.
    pub peer: Mac,
    /// The namespace the interfaces are in.
    pub netns: String,
    /// One interface per path, in path order.
    pub ifnames: Vec<String>,
    /// Faults injected on receipt (`port` is the path); `None` for none.
    pub faults: Option<RxFaults>,
    /// Hand the bridge only frames whose source is `peer`, ignoring the rest: several ports of
    /// one bridge MAC on one interface, one per peer, then keep their go-back-N state apart
    /// (the bridge keeps it per peer anyway) and each can be dropped alone.
    pub peer_only: bool,
}

/// Counters of the port besides the bridge's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames sent on the sockets.
    pub frames_sent: u64,
    /// Frames received on the sockets.
    pub frames_received: u64,
    /// Received frames dropped by the fault injector.
    pub frames_dropped: u64,
    /// Received frames the fault injector handed to the bridge a second time.
    pub frames_duplicated: u64,
    /// Frames the kernel dropped because a receive ring was full.
    pub ring_drops: u64,
    /// Received frames the bridge refused (not ExpEther, another bridge or VLAN).
    pub frames_refused: u64,
    /// Of those, frames refused because they carried another VLAN (§3.3.1).
    pub frames_other_vlan: u64,
    /// Frames from another source than the peer, not handed to the bridge (`peer_only`).
    pub frames_ignored: u64,
}

/// The bridge, its sockets and the TLPs waiting on either side of it.
#[derive(Debug)]
pub struct Port {
    bridge: Bridge,
    peer: Mac,
    sockets: Vec<FrameSocket>,
    faults: Option<FaultInjector>,
    peer_only: bool,
    start: Instant,
    out: VecDeque<Vec<u8>>,
    delivered: VecDeque<Vec<u8>>,
    frame: Vec<u8>,
    tlp: Vec<u8>,
    stats: PortStats,
}

impl Port {
    /// Opens one socket per interface inside `cfg.netns`.
    pub fn open(cfg: PortConfig) -> Result<Port, ExpNetError> {
        let mut bc = cfg.bridge;
        bc.line_rate = 0;
        if usize::from(bc.paths) != cfg.ifnames.len() {
            return Err(ExpNetError::Config(format!("{} paths but {} interfaces", bc.paths, cfg.ifnames.len())));
        }
        let bridge = Bridge::new(bc)?;
        let faults = cfg.faults.map(FaultInjector::new).transpose()?;
        let max = bridge.config().max_frame;
        let ring = ring_for(max);
        let names = cfg.ifnames.clone();
        let open = move || names.iter().map(|n| FrameSocket::open_all(n, ring)).collect::<Result<Vec<_>, _>>();
        let sockets = run_in(&cfg.netns, open)??;
        Ok(Port {
            bridge,
            peer: cfg.peer,
            sockets,
            faults,
            peer_only: cfg.peer_only,
            start: Instant::now(),
            out: VecDeque::new(),
            delivered: VecDeque::new(),
            frame: vec![0; max],
            tlp: vec![0; max],
            stats: PortStats::default(),
        })
    }

    /// Real time as the bridge counts it: picoseconds since the port opened.
    pub fn now_ps(&self) -> u64 {
        self.start.elapsed().as_nanos().saturating_mul(1000).min(u128::from(u64::MAX)) as u64
    }

    /// Queues a TLP for the peer (sent by the next [`Port::pump`]s, in order).
    pub fn push(&mut self, tlp: Vec<u8>) {
        self.out.push_back(tlp);
    }

    /// The next TLP delivered in order from the peer.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }

    /// Whether nothing waits to be sent, is in flight or waits to be taken.
    pub fn idle(&self) -> bool {
        self.out.is_empty()
            && self.delivered.is_empty()
            && self.bridge.queued(self.peer) == 0
            && self.bridge.in_flight(self.peer) == 0
    }

    /// The bridge's counters.
    pub fn bridge_stats(&self) -> Stats {
        self.bridge.stats()
    }

    /// The port's own counters without the kernel's ring drops (no system call).
    pub fn counters(&self) -> PortStats {
        self.stats
    }

    /// The port's own counters (reads the kernel's ring counters, hence `&mut`).
    pub fn stats(&mut self) -> Result<PortStats, ExpNetError> {
        for s in &self.sockets {
            self.stats.ring_drops += u64::from(s.stats()?.drops);
        }
        Ok(self.stats)
    }

    /// One turn (see the module docs); if it had nothing to do, waits up to `wait` for a frame
    /// or the next deadline. Returns whether anything was received, sent or delivered.
    ///
    /// # Errors
    /// A socket failure, or the path to the peer declared failed.
    pub fn pump(&mut self, wait: Duration) -> Result<bool, ExpNetError> {
        let mut busy = self.offer()?;
        for i in 0..self.sockets.len() {
            busy |= self.receive(i)?;
        }
        let now = self.now_ps();
        if self.bridge.poll_timeout().is_some_and(|t| t <= now) {
            self.bridge.handle_timeout(now);
        }
        loop {
            let offered = self.offer()?;
            let mut sent = false;
            while let Some(t) = self.bridge.poll_transmit(now, &mut self.frame) {
                self.sockets[t.path].send(&self.frame[..t.len])?;
                self.stats.frames_sent += 1;
                sent = true;
            }
            busy |= offered | sent;
            if !sent || self.out.is_empty() {
                break;
            }
        }
        while let Some(d) = self.bridge.poll_tlp(&mut self.tlp)? {
            self.delivered.push_back(self.tlp[..d.len].to_vec());
            busy = true;
        }
        if let Some(Event::PathFailed { peer, .. }) = self.bridge.poll_event() {
            return Err(ExpNetError::PathFailed(peer));
        }
        if !busy && !wait.is_zero() {
            let deadline = self.bridge.poll_timeout().map(|t| Duration::from_nanos(t.saturating_sub(now) / 1000));
            let sockets: Vec<&FrameSocket> = self.sockets.iter().collect();
            wait_any(&sockets, deadline.map_or(wait, |d| d.min(wait)))?;
        }
        Ok(busy)
    }

    /// Moves queued TLPs into the bridge until its queue is full; returns whether any moved.
    fn offer(&mut self) -> Result<bool, ExpNetError> {
        let mut moved = false;
        while let Some(t) = self.out.front() {
            match self.bridge.send_tlp(self.peer, t) {
                Ok(()) => {
                    self.out.pop_front();
                    moved = true;
                }
                Err(ExpError::QueueFull(_)) => break,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(moved)
    }

    /// Takes the frames waiting on socket `i`; returns whether there were any.
    fn receive(&mut self, i: usize) -> Result<bool, ExpNetError> {
        let mut any = false;
        for _ in 0..RX_BURST {
            let Some(slot) = self.sockets[i].take() else { break };
            any = true;
            self.stats.frames_received += 1;
            let fate = self.faults.as_mut().map_or(Fate::Once, |f| f.decide(i as u16));
            let times = match fate {
                Fate::Drop => 0,
                Fate::Once => 1,
                Fate::Twice => 2,
            };
            self.stats.frames_dropped += u64::from(fate == Fate::Drop);
            self.stats.frames_duplicated += u64::from(fate == Fate::Twice);
            let socket = &self.sockets[i];
            let truncated = socket.wire_len(slot) > socket.frame(slot).len();
            let other = self.peer_only && socket.frame(slot).get(6..12) != Some(&self.peer.0[..]);
            self.stats.frames_ignored += u64::from(other);
            for _ in 0..times * usize::from(!other) {
                let now = self.now_ps();
                match (truncated, self.bridge.handle_frame(now, socket.frame(slot))) {
                    (false, Ok(())) => {}
                    (_, r) => {
                        self.stats.frames_refused += 1;
                        self.stats.frames_other_vlan += u64::from(matches!(r, Err(ExpError::OtherVlan(..))));
                    }
                }
            }
            self.sockets[i].release(slot);
        }
        Ok(any)
    }
}

/// A ring of about [`RING_BYTES`] whose slots hold a frame of `max_frame` bytes and its tag.
fn ring_for(max_frame: usize) -> SlotSpec {
    let slot_size = (max_frame as u32 + SLOT_HEADROOM + 4).next_multiple_of(16).max(2048);
    let slots = (RING_BYTES / slot_size / 4 * 4).clamp(4, 65536);
    SlotSpec { slot_size, slots }
}
