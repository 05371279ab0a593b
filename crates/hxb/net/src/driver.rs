//! The endpoint's thread: moves frames between the sockets and the protocol core, feeds it the
//! time, and assembles delivered packets into messages.
//!
//! One loop, in the crate documentation's call order: take new messages from the application;
//! take one retired ring block per socket, copying each frame into a pool buffer and passing
//! its id to [`Node::handle_frame`]; fire the retransmission timer when
//! [`Node::poll_timeout`] has passed; send everything [`Node::poll_transmit`] gives; hand
//! delivered packets to the message being assembled for their sender. With nothing to do, it
//! waits up to 1 ms on one socket's ring (in turn), so an idle endpoint uses no CPU.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ether_net::{write_header, MacAddr, PacketSocket, HEADER_LEN as ETH_LEN};
use hxb_proto::{Coord, Disposition, Event, Header, HeaderView, Node, Stats, HEADER_LEN};

use crate::endpoint::PortSpec;
use crate::faults::{Fate, Injector};
use crate::pool::Pool;

/// A message and the node it goes to or comes from.
pub(crate) type Message = (Coord, Vec<u8>);

/// What the application may see of the driver.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    pub stats: Stats,
    /// The node has nothing queued, in flight or owed.
    pub idle: bool,
    /// Messages taken from the application so far.
    pub taken: u64,
    pub pool_drops: u64,
    /// Why the thread stopped, if it did on an error.
    pub error: Option<String>,
}

/// State shared with the [`crate::Endpoint`].
#[derive(Debug)]
pub(crate) struct Shared {
    pub stop: AtomicBool,
    pub status: Mutex<Status>,
}

/// One socket and where its neighbours are.
struct Link {
    port: u16,
    socket: PacketSocket,
    neighbours: HashMap<Coord, MacAddr>,
}

pub(crate) struct Driver {
    node: Node,
    links: Vec<Link>,
    /// Index into `links` by protocol port.
    by_port: HashMap<u16, usize>,
    pool: Pool,
    faults: Option<Injector>,
    commands: Receiver<Message>,
    messages: Sender<Message>,
    /// Messages being assembled, by sender.
    partial: HashMap<Coord, Vec<u8>>,
    shared: Arc<Shared>,
    start: Instant,
    taken: u64,
    pool_drops: u64,
    /// The socket to wait on next when idle.
    turn: usize,
}

impl Driver {
    pub(crate) fn new(
        node: Node,
        ports: Vec<PortSpec>,
        sockets: Vec<PacketSocket>,
        buffers: u32,
        faults: Option<Injector>,
        (commands, messages): (Receiver<Message>, Sender<Message>),
        shared: Arc<Shared>,
    ) -> Driver {
        let links: Vec<Link> = ports
            .into_iter()
            .zip(sockets)
            .map(|(p, socket)| Link { port: p.port, socket, neighbours: p.neighbours.into_iter().collect() })
            .collect();
        let by_port = links.iter().enumerate().map(|(i, l)| (l.port, i)).collect();
        let pool = Pool::new(buffers, node.frame_capacity());
        Driver {
            node,
            links,
            by_port,
            pool,
            faults,
            commands,
            messages,
            partial: HashMap::new(),
            shared,
            start: Instant::now(),
            taken: 0,
            pool_drops: 0,
            turn: 0,
        }
    }

    /// Real time as the protocol core counts it: picoseconds since the endpoint started.
    fn now_ps(&self) -> u64 {
        self.start.elapsed().as_nanos().saturating_mul(1000).min(u64::MAX as u128) as u64
    }

    pub(crate) fn run(mut self) {
        let result = self.serve();
        let mut s = self.shared.status.lock().expect("no panic holding the lock");
        if let Err(e) = result {
            s.error = Some(e);
        }
    }

    fn serve(&mut self) -> Result<(), String> {
        let mut frame = vec![0u8; ETH_LEN + self.node.frame_capacity()];
        let mut open = true;
        while !self.shared.stop.load(Ordering::Relaxed) {
            let mut busy = false;
            while open {
                match self.commands.try_recv() {
                    Ok((to, data)) => {
                        self.node.send(to, &data).map_err(|e| e.to_string())?;
                        self.taken += 1;
                        busy = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => open = false,
                }
            }
            for i in 0..self.links.len() {
                busy |= self.receive(i, Duration::ZERO)?;
            }
            let now = self.now_ps();
            if self.node.poll_timeout().is_some_and(|t| t <= now) {
                self.node.handle_timeout(now);
            }
            while let Some(t) = self.node.poll_transmit(now, &mut frame[ETH_LEN..]) {
                let link = self.by_port.get(&t.port).map(|&i| &self.links[i]);
                let link = link.ok_or_else(|| format!("no interface configured for port {}", t.port))?;
                let mac = link.neighbours.get(&t.to);
                let mac = *mac.ok_or_else(|| format!("no MAC address of {} on port {}", t.to, t.port))?;
                write_header(&mut frame, mac, link.socket.mac());
                let mut len = ETH_LEN + t.len;
                if let Some(b) = t.relay {
                    let payload = &self.pool.get(b)[HEADER_LEN..];
                    frame[len..len + payload.len()].copy_from_slice(payload);
                    len += payload.len();
                    self.pool.release(b);
                }
                link.socket.send(&frame[..len]).map_err(|e| e.to_string())?;
                busy = true;
            }
            while let Some(Event::Deliver { from, buffer }) = self.node.poll_event() {
                let bytes = self.pool.get(buffer);
                let h = Header::parse(bytes).map_err(|e| format!("delivered packet: {e}"))?;
                let msg = self.partial.entry(from).or_default();
                msg.extend_from_slice(&bytes[HEADER_LEN..]);
                if h.end {
                    let msg = self.partial.remove(&from).unwrap_or_default();
                    // A receiver that went away only loses what it would have read.
                    let _ = self.messages.send((from, msg));
                }
                self.pool.release(buffer);
            }
            self.publish();
            if !busy && !self.links.is_empty() {
                self.turn = (self.turn + 1) % self.links.len();
                self.receive(self.turn, Duration::from_millis(1))?;
            } else if !busy {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(())
    }

    /// Takes at most one retired block of link `i`, waiting up to `wait`; returns whether one came.
    fn receive(&mut self, i: usize, wait: Duration) -> Result<bool, String> {
        let now = self.now_ps();
        let link = &mut self.links[i];
        let port = link.port;
        let Some(block) = link.socket.recv_block(wait).map_err(|e| e.to_string())? else { return Ok(false) };
        for f in block.frames() {
            if f.data.len() < f.wire_len || f.data.len() < ETH_LEN + HEADER_LEN {
                continue; // truncated by the ring or too short to be ours
            }
            let hxb = &f.data[ETH_LEN..];
            // Drop Ethernet padding after the payload the header announces.
            let Ok(view) = HeaderView::new_checked(hxb) else { continue };
            let len = HEADER_LEN + usize::from(view.len());
            if len > hxb.len() {
                continue;
            }
            let fate = self.faults.as_mut().map_or(Fate::Once, |f| f.decide(port));
            let copies = match fate {
                Fate::Drop => 0,
                Fate::Once => 1,
                Fate::Twice => 2,
            };
            for _ in 0..copies {
                let Some(id) = self.pool.store(&hxb[..len]) else {
                    self.pool_drops += 1; // every buffer held: the sender retransmits
                    continue;
                };
                match self.node.handle_frame(now, port, id, self.pool.get(id)) {
                    Ok(Disposition::Held) => {}
                    Ok(Disposition::Free) | Err(_) => self.pool.release(id),
                }
            }
        }
        Ok(true)
    }

    fn publish(&self) {
        let mut s = self.shared.status.lock().expect("no panic holding the lock");
        s.stats = self.node.stats();
        s.idle = self.node.is_idle();
        s.taken = self.taken;
        s.pool_drops = self.pool_drops;
    }
}
