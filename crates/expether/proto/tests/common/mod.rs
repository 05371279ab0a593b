//! The ExpEther core on the virtual-time harness: bridges joined by one link (a switch without
//! output contention), each with an application that offers numbered TLPs and records what
//! PCIe receives.

#![allow(dead_code)]

use base::harness::{Endpoint, Harness, LinkConfig, Transmit};
use base::SimTime;
use expether_proto::{Bridge, Config, Event, ExpError, Mac};
use std::collections::VecDeque;

/// The MAC of bridge `i`.
pub fn mac(i: usize) -> Mac {
    Mac([2, 0, 0, 0, 0, i as u8 + 1])
}

/// The index of the bridge with MAC `m`.
pub fn index(m: Mac) -> usize {
    m.0[5] as usize - 1
}

/// A TLP numbered `n` from `src` to `dst`, `len` bytes (at least 6).
pub fn tlp(src: usize, dst: usize, n: u32, len: usize) -> Vec<u8> {
    let mut t = vec![(n % 251) as u8; len.max(6)];
    t[0] = src as u8;
    t[1] = dst as u8;
    t[2..6].copy_from_slice(&n.to_be_bytes());
    t
}

/// One bridge and its PCIe side.
pub struct Node {
    pub bridge: Bridge,
    /// TLPs the device or host still has to hand to the bridge, in order.
    pub pending: VecDeque<(Mac, Vec<u8>)>,
    /// TLPs handed to PCIe, with the time.
    pub received: Vec<(SimTime, Mac, Vec<u8>)>,
    pub events: Vec<Event>,
    pub errors: Vec<ExpError>,
    /// Times of every DATA frame sent, with its TLP count.
    pub sent: Vec<(SimTime, u8)>,
    /// The endpoint every frame is handed to (a switch), instead of the addressed bridge.
    pub via: Option<usize>,
    tx: Vec<u8>,
}

impl Node {
    pub fn new(cfg: Config) -> Node {
        let tx = vec![0; cfg.max_frame];
        Node {
            bridge: Bridge::new(cfg).expect("valid configuration"),
            pending: VecDeque::new(),
            received: vec![],
            events: vec![],
            errors: vec![],
            sent: vec![],
            via: None,
            tx,
        }
    }

    /// TLPs received from bridge `from`, in order.
    pub fn from(&self, from: usize) -> Vec<Vec<u8>> {
        self.received.iter().filter(|r| r.1 == mac(from)).map(|r| r.2.clone()).collect()
    }

    /// Hands pending TLPs to the bridge in order until it pushes back.
    fn offer(&mut self) {
        while let Some((dst, t)) = self.pending.front() {
            match self.bridge.send_tlp(*dst, t) {
                Ok(()) => {
                    self.pending.pop_front();
                }
                Err(ExpError::QueueFull(_)) => break,
                Err(e) => {
                    self.errors.push(e);
                    self.pending.pop_front();
                }
            }
        }
    }

    fn drain(&mut self, now: SimTime) {
        let mut buf = [0u8; 9000];
        while let Some(d) = self.bridge.poll_tlp(&mut buf).expect("buffer large enough") {
            self.received.push((now, d.from, buf[..d.len].to_vec()));
        }
        while let Some(e) = self.bridge.poll_event() {
            self.events.push(e);
        }
    }
}

impl Endpoint for Node {
    type Frame = Vec<u8>;

    fn handle_frame(&mut self, now: SimTime, _port: usize, frame: Vec<u8>) {
        if let Err(e) = self.bridge.handle_frame(now.as_ps(), &frame) {
            self.errors.push(e);
        }
        self.drain(now);
    }

    fn handle_timeout(&mut self, now: SimTime) {
        self.bridge.handle_timeout(now.as_ps());
        self.drain(now);
    }

    fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit<Vec<u8>>> {
        self.offer();
        let t = self.bridge.poll_transmit(now.as_ps(), &mut self.tx)?;
        self.drain(now);
        if let Ok(h) = expether_proto::Header::parse(&self.tx[..t.len]) {
            if h.kind == expether_proto::Kind::Data {
                self.sent.push((now, h.count));
            }
        }
        Some(Transmit {
            port: t.path,
            to: self.via.unwrap_or(index(t.to)),
            bytes: t.wire_bytes as u64,
            frame: self.tx[..t.len].to_vec(),
        })
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.bridge.poll_timeout().map(SimTime::from_ps)
    }
}

/// 10GbE [bytes/s].
pub const TEN_GBE: u64 = 1_250_000_000;

/// `n` bridges on one VLAN joined by one link of `link`; `tune` adjusts each configuration.
pub fn net(n: usize, seed: u64, link: LinkConfig, tune: impl Fn(&mut Config)) -> Harness<Node> {
    let mut h = Harness::new(seed);
    for i in 0..n {
        let mut cfg = Config::new(mac(i), 5);
        cfg.line_rate = link.bytes_per_second;
        tune(&mut cfg);
        h.add_endpoint(Node::new(cfg));
    }
    let members: Vec<(usize, usize)> = (0..n).map(|i| (i, 0)).collect();
    h.add_link(link, &members);
    h
}

/// Queues `count` TLPs of `len` bytes from `src` to `dst`, numbered from `first`, and flushes.
pub fn offer(h: &mut Harness<Node>, src: usize, dst: usize, first: u32, count: u32, len: usize) {
    h.act(src, |n, _| {
        for k in first..first + count {
            n.pending.push_back((mac(dst), tlp(src, dst, k, len)));
        }
    });
}
