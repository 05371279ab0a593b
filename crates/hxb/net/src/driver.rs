//! The endpoint's thread: moves frames between the sockets and the protocol core, feeds it the
//! time, and assembles delivered packets into messages.
//!
//! One loop, in the crate documentation's call order: take new messages from the application;
//! take the frames the kernel has put in each socket's slot ring, passing each slot's id to
//! [`Node::handle_frame`] (the node holds slots, not copies: [`crate::buffers`]); fire the
//! retransmission timer when [`Node::poll_timeout`] has passed; send everything
//! [`Node::poll_transmit`] gives (a relay rewrites the header in the slot the frame arrived in
//! and sends the slot's bytes on); hand delivered packets, read in their slots, to the message
//! being assembled for their sender, and release the slots. With nothing to do it sleeps in one
//! `ppoll` on every socket and on the application's wake-up descriptor until a frame, a message
//! or the next retransmission deadline, so an idle endpoint uses no CPU and a frame is seen as
//! soon as the kernel wakes the thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ether_net::{write_header, Fate, FaultInjector, FrameSocket, MacAddr, HEADER_LEN as ETH_LEN};
use hxb_proto::{Coord, Disposition, Event, Header, HeaderView, Node, Stats, HEADER_LEN};

use crate::buffers::{Buffer, Buffers};
use crate::endpoint::PortSpec;
use crate::wake::Wake;

/// A message and the node it goes to or comes from.
pub(crate) type Message = (Coord, Vec<u8>);

/// Frames taken from one socket before the others get a turn (and ACKs go out).
const BATCH: usize = 32;

/// What the application may see of the driver.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    pub stats: Stats,
    /// The node has nothing queued, in flight or owed.
    pub idle: bool,
    /// Messages taken from the application so far.
    pub taken: u64,
    /// Frames the kernel dropped because the slot at its ring's head was still held.
    pub ring_drops: u64,
    /// Duplicated frames (fault injection) that found no spare buffer.
    pub pool_drops: u64,
    /// Why the thread stopped, if it did on an error.
    pub error: Option<String>,
}

/// State shared with the [`crate::Endpoint`].
#[derive(Debug)]
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub status: Mutex<Status>,
    pub wake: Wake,
}

/// One socket and where its neighbours are.
struct Link {
    port: u16,
    /// Bytes sent on it so far.
    sent: u64,
    socket: FrameSocket,
    neighbours: HashMap<Coord, MacAddr>,
}

pub(crate) struct Driver {
    node: Node,
    links: Vec<Link>,
    /// Index into `links` by protocol port.
    by_port: HashMap<u16, usize>,
    buffers: Buffers,
    faults: Option<FaultInjector>,
    commands: Receiver<Message>,
    messages: Sender<Message>,
    /// Messages being assembled, by sender.
    partial: HashMap<Coord, Vec<u8>>,
    shared: Arc<Shared>,
    start: Instant,
    taken: u64,
    ring_drops: u64,
    /// Links per dimension.
    k: u8,
    last_stats: Instant,
    open: bool,
    /// The transmit buffer: Ethernet header, then what the node writes.
    frame: Vec<u8>,
}

impl Driver {
    pub(crate) fn new(
        (node, links_per_dim): (Node, u8),
        ports: Vec<PortSpec>,
        sockets: Vec<FrameSocket>,
        spares: u32,
        faults: Option<FaultInjector>,
        (commands, messages): (Receiver<Message>, Sender<Message>),
        shared: Arc<Shared>,
    ) -> Driver {
        let links: Vec<Link> = ports
            .into_iter()
            .zip(sockets)
            .map(|(p, socket)| Link { port: p.port, sent: 0, socket, neighbours: p.neighbours.into_iter().collect() })
            .collect();
        let by_port = links.iter().enumerate().map(|(i, l)| (l.port, i)).collect();
        let frame = vec![0u8; ETH_LEN + node.frame_capacity()];
        let node_k = links_per_dim;
        let buffers = Buffers::new(spares, node.frame_capacity());
        Driver {
            node,
            links,
            by_port,
            buffers,
            faults,
            commands,
            messages,
            partial: HashMap::new(),
            shared,
            start: Instant::now(),
            taken: 0,
            ring_drops: 0,
            k: node_k,
            last_stats: Instant::now(),
            open: true,
            frame,
        }
    }

    /// Real time as the protocol core counts it: picoseconds since the endpoint started.
    fn now_ps(&self) -> u64 {
        self.start.elapsed().as_nanos().saturating_mul(1000).min(u64::MAX as u128) as u64
    }

    pub(crate) fn run(mut self) {
        let result = self.serve();
        for l in &self.links {
            self.ring_drops += l.socket.stats().map_or(0, |s| u64::from(s.drops));
        }
        self.publish();
        let mut s = self.shared.status.lock().expect("no panic holding the lock");
        if let Err(e) = result {
            s.error = Some(e);
        }
    }

    fn serve(&mut self) -> Result<(), String> {
        while !self.shared.stop.load(Ordering::Relaxed) {
            let mut busy = self.take_commands()?;
            for i in 0..self.links.len() {
                busy |= self.receive(i)?;
            }
            let now = self.now_ps();
            if self.node.poll_timeout().is_some_and(|t| t <= now) {
                self.node.handle_timeout(now);
            }
            busy |= self.transmit(now)?;
            busy |= self.deliver()?;
            self.publish();
            if !busy {
                self.sleep()?;
            }
        }
        Ok(())
    }

    /// Passes the application's new messages to the node; returns whether there were any.
    fn take_commands(&mut self) -> Result<bool, String> {
        let mut any = false;
        while self.open {
            match self.commands.try_recv() {
                Ok((to, data)) => {
                    self.node.send(to, &data).map_err(|e| e.to_string())?;
                    self.taken += 1;
                    any = true;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => self.open = false,
            }
        }
        Ok(any)
    }

    /// Hands up to [`BATCH`] new frames of link `i` to the node; returns whether there were any.
    fn receive(&mut self, i: usize) -> Result<bool, String> {
        let now = self.now_ps();
        let mut any = false;
        for _ in 0..BATCH {
            let link = &mut self.links[i];
            let Some(slot) = link.socket.take() else { break };
            any = true;
            let port = link.port;
            let data = link.socket.frame(slot);
            let len = ours(data, link.socket.wire_len(slot));
            let Some(len) = len else {
                link.socket.release(slot);
                continue;
            };
            let fate = self.faults.as_mut().map_or(Fate::Once, |f| f.decide(port));
            if fate == Fate::Twice {
                // The copy goes first, into a spare buffer, so that the slot can be held once.
                let copy = &self.links[i].socket.frame(slot)[ETH_LEN..ETH_LEN + len];
                if let Some(id) = self.buffers.store_spare(copy) {
                    let bytes = self.buffers.spare(id);
                    if self.node.handle_frame(now, port, id, bytes) != Ok(Disposition::Held) {
                        self.buffers.release_spare(id);
                    }
                }
            }
            if fate == Fate::Drop {
                self.links[i].socket.release(slot);
                continue;
            }
            let id = Buffers::slot_id(i, slot);
            let bytes = &self.links[i].socket.frame(slot)[ETH_LEN..ETH_LEN + len];
            if self.node.handle_frame(now, port, id, bytes) != Ok(Disposition::Held) {
                self.links[i].socket.release(slot);
            }
        }
        Ok(any)
    }

    /// Sends every frame the node has; returns whether there were any.
    fn transmit(&mut self, now: u64) -> Result<bool, String> {
        let mut any = false;
        while let Some(t) = self.node.poll_transmit(now, &mut self.frame[ETH_LEN..]) {
            any = true;
            let out = self.by_port.get(&t.port).copied();
            let out = out.ok_or_else(|| format!("no interface configured for port {}", t.port))?;
            let out = self.balance(out);
            let link = &self.links[out];
            let mac = link.neighbours.get(&t.to);
            let mac = *mac.ok_or_else(|| format!("no MAC address of {} on port {}", t.to, t.port))?;
            let src = link.socket.mac();
            write_header(&mut self.frame, mac, src);
            let Some(b) = t.relay else {
                link.socket.send(&self.frame[..ETH_LEN + t.len]).map_err(|e| e.to_string())?;
                self.links[out].sent += (ETH_LEN + t.len) as u64;
                continue;
            };
            // A relay: the new headers go into the received buffer, which is sent as it is.
            let head = ETH_LEN + HEADER_LEN;
            let payload = HeaderView::new_checked(&self.frame[ETH_LEN..head]).map(|v| usize::from(v.len()));
            let len = head + payload.map_err(|e| format!("relayed header: {e}"))?;
            match self.buffers.locate(b) {
                Buffer::Slot(i, slot) => {
                    self.links[i].socket.frame_mut(slot)[..head].copy_from_slice(&self.frame[..head]);
                    let bytes = &self.links[i].socket.frame(slot)[..len];
                    self.links[out].socket.send(bytes).map_err(|e| e.to_string())?;
                    self.links[i].socket.release(slot);
                    self.links[out].sent += len as u64;
                }
                Buffer::Spare(id) => {
                    let payload = &self.buffers.spare(id)[HEADER_LEN..];
                    self.frame[head..head + payload.len()].copy_from_slice(payload);
                    self.links[out].socket.send(&self.frame[..len]).map_err(|e| e.to_string())?;
                    self.buffers.release_spare(id);
                    self.links[out].sent += len as u64;
                }
            }
        }
        Ok(any)
    }

    /// The link of the same dimension as link `i` (ports `dim * k ..`) that has sent the fewest
    /// bytes. The core stripes packets round robin (hxb-proto's `Striper`); a message whose
    /// short last packet always falls on the same link would load that link's peers more (a
    /// 64 KiB message is 7 full packets and one of 2,788 B: on 2 links, 4 full packets go to
    /// one and 3 to the other, 91 % of 2 links at best). Balancing bytes keeps the links
    /// equally busy; the seed leaves the rule open (hxb.md §3.6), and the receiver takes any
    /// packet on any link.
    fn balance(&self, i: usize) -> usize {
        let k = u16::from(self.k);
        let dim = self.links[i].port / k;
        let mut best = i;
        for p in dim * k..dim * k + k {
            if let Some(&j) = self.by_port.get(&p) {
                if self.links[j].sent < self.links[best].sent {
                    best = j;
                }
            }
        }
        best
    }

    /// Reads every delivered packet in its buffer into the message of its sender, passing whole
    /// messages to the application; returns whether there were any.
    fn deliver(&mut self) -> Result<bool, String> {
        let mut any = false;
        while let Some(Event::Deliver { from, buffer }) = self.node.poll_event() {
            any = true;
            let located = self.buffers.locate(buffer);
            let bytes = match located {
                Buffer::Slot(i, slot) => &self.links[i].socket.frame(slot)[ETH_LEN..],
                Buffer::Spare(id) => self.buffers.spare(id),
            };
            let h = Header::parse(bytes).map_err(|e| format!("delivered packet: {e}"))?;
            let msg = self.partial.entry(from).or_default();
            msg.extend_from_slice(&bytes[HEADER_LEN..HEADER_LEN + usize::from(h.len)]);
            if h.end {
                let msg = self.partial.remove(&from).unwrap_or_default();
                // A receiver that went away only loses what it would have read.
                let _ = self.messages.send((from, msg));
            }
            match located {
                Buffer::Slot(i, slot) => self.links[i].socket.release(slot),
                Buffer::Spare(id) => self.buffers.release_spare(id),
            }
        }
        Ok(any)
    }

    /// Sleeps until a frame may have arrived, the application sent something, or the next
    /// retransmission deadline (at most 100 ms, to see `stop`).
    fn sleep(&mut self) -> Result<(), String> {
        if self.last_stats.elapsed() >= Duration::from_millis(10) {
            self.last_stats = Instant::now();
            for l in &self.links {
                self.ring_drops += u64::from(l.socket.stats().map_err(|e| e.to_string())?.drops);
            }
            self.publish();
        }
        self.shared.wake.arm();
        // A message sent before the arming was not signalled: look once more.
        if self.take_commands()? {
            self.shared.wake.disarm(false);
            return Ok(());
        }
        let mut wait = Duration::from_millis(100);
        if let Some(t) = self.node.poll_timeout() {
            wait = wait.min(Duration::from_nanos(t.saturating_sub(self.now_ps()) / 1000));
        }
        let mut fds = vec![libc::pollfd { fd: self.shared.wake.fd(), events: libc::POLLIN, revents: 0 }];
        for l in &self.links {
            if l.socket.wakes_spuriously() {
                // The kernel reports POLLIN while the last slot is held: look again shortly.
                wait = wait.min(Duration::from_micros(100));
            } else {
                fds.push(libc::pollfd { fd: l.socket.fd(), events: libc::POLLIN, revents: 0 });
            }
        }
        let ts =
            libc::timespec { tv_sec: wait.as_secs() as libc::time_t, tv_nsec: wait.subsec_nanos() as libc::c_long };
        // SAFETY: a valid array of pollfds and a valid timeout; no signal mask.
        let rc = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(format!("ppoll: {}", std::io::Error::last_os_error()));
        }
        self.shared.wake.disarm(fds[0].revents != 0);
        Ok(())
    }

    fn publish(&self) {
        let mut s = self.shared.status.lock().expect("no panic holding the lock");
        s.stats = self.node.stats();
        s.idle = self.node.is_idle();
        s.taken = self.taken;
        s.ring_drops = self.ring_drops;
        s.pool_drops = self.buffers.drops();
    }
}

/// The length of the HXB packet (header and payload, without Ethernet padding) in `frame`, or
/// `None` if the frame was truncated or is too short to be one.
fn ours(frame: &[u8], wire_len: usize) -> Option<usize> {
    if frame.len() < wire_len || frame.len() < ETH_LEN + HEADER_LEN {
        return None;
    }
    let view = HeaderView::new_checked(&frame[ETH_LEN..]).ok()?;
    let len = HEADER_LEN + usize::from(view.len());
    (ETH_LEN + len <= frame.len()).then_some(len)
}
