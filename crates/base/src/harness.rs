//! A virtual-time harness for sans-I/O protocol cores: N endpoints exchanging frames over links.
//!
//! An endpoint is anything implementing [`Endpoint`] (an adapter around a protocol core, in the
//! quinn-proto manner: `handle_*(now, ..)` inputs, `poll_*` outputs). A [`Link`] joins two or
//! more endpoint ports, like a cable or a switch without output contention: a frame sent on a
//! port is serialized at the sender's egress rate, then arrives at the addressed endpoint after
//! the link latency. Each link has fault knobs ([`LinkConfig`]: loss, duplication, reordering,
//! fixed extra delay) drawn from one seeded ChaCha generator, and an optional scripted
//! [`FaultInjector`] that sees every frame first.
//!
//! Determinism: time is integer picoseconds ([`SimTime`]), events are delivered in (time,
//! insertion sequence) order through the [`EventQueue`], and randomness comes only from the seed,
//! so a run with the same inputs is bit-reproducible.
//!
//! Call order: build with [`Harness::new`], add endpoints and links, act on endpoints through
//! [`Harness::act`] (which flushes their output), then [`Harness::run`] until idle or a time
//! limit. After every input the harness drains [`Endpoint::poll_transmit`] and re-arms the
//! endpoint's timer from [`Endpoint::poll_timeout`]; stale timer events are ignored, so an
//! endpoint never sees a timeout earlier than the deadline it asked for.

use crate::{EventQueue, SimTime};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A protocol endpoint driven by the harness.
pub trait Endpoint {
    /// What travels on a link.
    type Frame: Clone;
    /// A frame arrived on `port` at `now`.
    fn handle_frame(&mut self, now: SimTime, port: usize, frame: Self::Frame);
    /// The deadline from [`Endpoint::poll_timeout`] has passed (`now` is at or after it).
    fn handle_timeout(&mut self, now: SimTime);
    /// The next frame to send, if any.
    fn poll_transmit(&mut self, now: SimTime) -> Option<Transmit<Self::Frame>>;
    /// The next time [`Endpoint::handle_timeout`] should be called.
    fn poll_timeout(&self) -> Option<SimTime>;
}

/// A frame leaving an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit<F> {
    /// The sender's port the frame leaves on.
    pub port: usize,
    /// The endpoint (index) the frame is addressed to; it must be attached to the same link.
    pub to: usize,
    /// Bytes on the wire [bytes], for serialization.
    pub bytes: u64,
    /// The frame.
    pub frame: F,
}

/// Timing and random faults of one link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Propagation plus switching delay from the end of serialization to arrival.
    pub latency: SimTime,
    /// Egress rate of each attached port [bytes/s]; 0 means no serialization delay.
    pub bytes_per_second: u64,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame arrives twice.
    pub duplicate: f64,
    /// Probability that a frame is held back by a uniform extra delay in `0..=reorder_delay`,
    /// letting later frames overtake it.
    pub reorder: f64,
    /// The largest extra delay of a reordered frame.
    pub reorder_delay: SimTime,
    /// Extra delay added to every frame.
    pub extra_delay: SimTime,
}

impl LinkConfig {
    /// A fault-free link with this latency and egress rate [bytes/s].
    pub fn new(latency: SimTime, bytes_per_second: u64) -> Self {
        Self {
            latency,
            bytes_per_second,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: SimTime::ZERO,
            extra_delay: SimTime::ZERO,
        }
    }
}

/// What the fault injector does to one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Deliver normally (the link's random knobs still apply).
    Pass,
    /// Lose the frame.
    Drop,
    /// Deliver the frame twice.
    Duplicate,
    /// Deliver it this much later than normal.
    Delay(SimTime),
}

/// A frame as the fault injector sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// The link index.
    pub link: usize,
    /// Frames sent on this link before this one.
    pub index: u64,
    /// The sending endpoint.
    pub from: usize,
    /// The addressed endpoint.
    pub to: usize,
    /// Bytes on the wire.
    pub bytes: u64,
}

/// A scripted fault decision per frame (e.g. "drop the 3rd frame of link 0").
pub type FaultInjector = Box<dyn FnMut(&FrameInfo) -> Fault>;

/// Counters of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames handed to the link.
    pub sent: u64,
    /// Frames lost (random or injected).
    pub dropped: u64,
    /// Extra copies delivered.
    pub duplicated: u64,
    /// Frames given an extra reordering delay.
    pub delayed: u64,
    /// Frames addressed to an endpoint not on the link (discarded).
    pub misrouted: u64,
}

/// Frames joined by a link.
pub struct Link {
    config: LinkConfig,
    /// Attached (endpoint, port) pairs.
    members: Vec<(usize, usize)>,
    injector: Option<FaultInjector>,
    stats: LinkStats,
}

impl Link {
    /// The counters so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }
}

enum Event<F> {
    Arrive { to: usize, port: usize, frame: F },
    Timer { endpoint: usize },
}

/// Per endpoint: its ports' links and egress clocks, and its armed timer.
struct Slot {
    /// `ports[p]` = (link, time the port's egress is free again).
    ports: Vec<Option<(usize, SimTime)>>,
    armed: Option<SimTime>,
}

/// Endpoints, links, a virtual clock and a seeded random source.
pub struct Harness<E: Endpoint> {
    endpoints: Vec<E>,
    slots: Vec<Slot>,
    links: Vec<Link>,
    queue: EventQueue<Event<E::Frame>>,
    now: SimTime,
    rng: ChaCha8Rng,
}

impl<E: Endpoint> Harness<E> {
    /// An empty harness at time zero whose random faults come from `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            endpoints: Vec::new(),
            slots: Vec::new(),
            links: Vec::new(),
            queue: EventQueue::new(),
            now: SimTime::ZERO,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// Adds an endpoint; returns its index.
    pub fn add_endpoint(&mut self, endpoint: E) -> usize {
        self.endpoints.push(endpoint);
        self.slots.push(Slot { ports: Vec::new(), armed: None });
        self.endpoints.len() - 1
    }

    /// Adds a link joining the (endpoint, port) pairs; returns its index.
    ///
    /// # Panics
    /// If an endpoint index is unknown or a port is already attached to a link.
    pub fn add_link(&mut self, config: LinkConfig, members: &[(usize, usize)]) -> usize {
        let id = self.links.len();
        for &(e, p) in members {
            let ports = &mut self.slots[e].ports;
            if ports.len() <= p {
                ports.resize(p + 1, None);
            }
            assert!(ports[p].is_none(), "port {p} of endpoint {e} is already attached");
            ports[p] = Some((id, SimTime::ZERO));
        }
        self.links.push(Link { config, members: members.to_vec(), injector: None, stats: LinkStats::default() });
        id
    }

    /// Installs a scripted fault injector on `link`, replacing any earlier one.
    pub fn set_injector(&mut self, link: usize, injector: FaultInjector) {
        self.links[link].injector = Some(injector);
    }

    /// The fault knobs of `link`, to change them during a run.
    pub fn link_config_mut(&mut self, link: usize) -> &mut LinkConfig {
        &mut self.links[link].config
    }

    /// The links, in index order.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// The current virtual time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Endpoint `i`, to read its state.
    pub fn endpoint(&self, i: usize) -> &E {
        &self.endpoints[i]
    }

    /// Runs `f` on endpoint `i` at the current time (an application command), then sends
    /// what it wants to send and re-arms its timer.
    pub fn act<R>(&mut self, i: usize, f: impl FnOnce(&mut E, SimTime) -> R) -> R {
        let r = f(&mut self.endpoints[i], self.now);
        self.flush(i);
        r
    }

    /// Delivers events until none is left or the next one is later than `limit`; returns
    /// whether the harness went idle (no pending frame or timer).
    pub fn run(&mut self, limit: SimTime) -> bool {
        while let Some(t) = self.queue.peek_time() {
            if t > limit {
                return false;
            }
            self.step();
        }
        true
    }

    /// Delivers the earliest pending event; returns its time.
    pub fn step(&mut self) -> Option<SimTime> {
        let (at, event) = self.queue.pop()?;
        self.now = at;
        match event {
            Event::Arrive { to, port, frame } => {
                self.endpoints[to].handle_frame(at, port, frame);
                self.flush(to);
            }
            Event::Timer { endpoint } => {
                // Only the latest armed deadline counts; earlier timer events are stale.
                if self.slots[endpoint].armed == Some(at) {
                    self.slots[endpoint].armed = None;
                    self.endpoints[endpoint].handle_timeout(at);
                    self.flush(endpoint);
                }
            }
        }
        Some(at)
    }

    /// Sends everything endpoint `i` has to send and re-arms its timer.
    fn flush(&mut self, i: usize) {
        while let Some(t) = self.endpoints[i].poll_transmit(self.now) {
            self.send(i, t);
        }
        if let Some(at) = self.endpoints[i].poll_timeout() {
            let at = at.max(self.now);
            if self.slots[i].armed != Some(at) {
                self.slots[i].armed = Some(at);
                self.queue.push(at, Event::Timer { endpoint: i });
            }
        }
    }

    fn send(&mut self, from: usize, t: Transmit<E::Frame>) {
        let Some((link_id, free_at)) = self.slots[from].ports.get(t.port).copied().flatten() else {
            panic!("endpoint {from} sent on port {} which no link joins", t.port);
        };
        let link = &mut self.links[link_id];
        let cfg = &link.config;
        let start = free_at.max(self.now);
        let done =
            if cfg.bytes_per_second == 0 { start } else { start + SimTime::for_bytes(t.bytes, cfg.bytes_per_second) };
        self.slots[from].ports[t.port] = Some((link_id, done));
        let info = FrameInfo { link: link_id, index: link.stats.sent, from, to: t.to, bytes: t.bytes };
        link.stats.sent += 1;
        let Some(&(_, port)) = link.members.iter().find(|m| m.0 == t.to) else {
            link.stats.misrouted += 1;
            return;
        };
        let fault = link.injector.as_mut().map_or(Fault::Pass, |f| f(&info));
        let mut arrive = done + cfg.latency + cfg.extra_delay;
        let mut copies = 1;
        match fault {
            Fault::Drop => copies = 0,
            Fault::Duplicate => copies = 2,
            Fault::Delay(d) => arrive += d,
            Fault::Pass => {
                if self.rng.gen_bool(cfg.loss) {
                    copies = 0;
                } else if self.rng.gen_bool(cfg.duplicate) {
                    copies = 2;
                }
                if self.rng.gen_bool(cfg.reorder) {
                    link.stats.delayed += 1;
                    arrive += SimTime::from_ps(self.rng.gen_range(0..=cfg.reorder_delay.as_ps()));
                }
            }
        }
        if copies == 0 {
            link.stats.dropped += 1;
            return;
        }
        if copies == 2 {
            link.stats.duplicated += 1;
            self.queue.push(arrive, Event::Arrive { to: t.to, port, frame: t.frame.clone() });
        }
        self.queue.push(arrive, Event::Arrive { to: t.to, port, frame: t.frame });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends `count` numbered frames to endpoint `peer` at start (port 0), records arrivals, and
    /// keeps one timer at 1 ms.
    struct Echo {
        peer: usize,
        to_send: Vec<u32>,
        got: Vec<(u64, u32)>,
        timeouts: u32,
    }

    impl Endpoint for Echo {
        type Frame = u32;
        fn handle_frame(&mut self, now: SimTime, _port: usize, frame: u32) {
            self.got.push((now.as_ps(), frame));
        }
        fn handle_timeout(&mut self, _now: SimTime) {
            self.timeouts += 1;
        }
        fn poll_transmit(&mut self, _now: SimTime) -> Option<Transmit<u32>> {
            let frame = self.to_send.pop()?;
            Some(Transmit { port: 0, to: self.peer, bytes: 1000, frame })
        }
        fn poll_timeout(&self) -> Option<SimTime> {
            (self.timeouts == 0).then_some(SimTime::from_us(1000))
        }
    }

    fn pair(seed: u64, config: LinkConfig) -> Harness<Echo> {
        let mut h = Harness::new(seed);
        let a = h.add_endpoint(Echo { peer: 1, to_send: (0..50).rev().collect(), got: vec![], timeouts: 0 });
        let b = h.add_endpoint(Echo { peer: 0, to_send: vec![], got: vec![], timeouts: 0 });
        h.add_link(config, &[(a, 0), (b, 0)]);
        h.act(a, |_, _| ());
        h
    }

    #[test]
    fn frames_serialize_then_travel() {
        // 1000 bytes at 1 GB/s = 1 us each; 2 us latency.
        let mut h = pair(1, LinkConfig::new(SimTime::from_us(2), 1_000_000_000));
        assert!(h.run(SimTime::from_us(10_000)));
        let got = &h.endpoint(1).got;
        assert_eq!(got.len(), 50);
        assert_eq!(got[0], (SimTime::from_us(3).as_ps(), 0));
        assert_eq!(got[49], (SimTime::from_us(52).as_ps(), 49));
        assert_eq!(h.endpoint(0).timeouts, 1);
        assert_eq!(h.now(), SimTime::from_us(1000));
    }

    #[test]
    fn faults_are_seeded_and_counted() {
        let mut cfg = LinkConfig::new(SimTime::from_us(2), 1_000_000_000);
        (cfg.loss, cfg.duplicate, cfg.reorder, cfg.reorder_delay) = (0.2, 0.2, 0.3, SimTime::from_us(20));
        let run = |seed| {
            let mut h = pair(seed, cfg.clone());
            h.run(SimTime::MAX);
            (h.endpoint(1).got.clone(), h.links()[0].stats())
        };
        let (got, stats) = run(7);
        assert_eq!(run(7).0, got, "same seed, same run");
        assert_ne!(run(8).0, got, "another seed, another run");
        assert_eq!(stats.sent, 50);
        assert!(stats.dropped > 0 && stats.duplicated > 0 && stats.delayed > 0, "{stats:?}");
        assert_eq!(got.len() as u64, 50 - stats.dropped + stats.duplicated);
        assert!(got.windows(2).any(|w| w[0].1 > w[1].1), "some frames overtaken");
    }

    #[test]
    fn the_injector_decides_first() {
        let mut h = Harness::new(0);
        let a = h.add_endpoint(Echo { peer: 1, to_send: (0..4).rev().collect(), got: vec![], timeouts: 0 });
        let b = h.add_endpoint(Echo { peer: 0, to_send: vec![], got: vec![], timeouts: 0 });
        let l = h.add_link(LinkConfig::new(SimTime::from_ns(100), 0), &[(a, 0), (b, 0)]);
        h.set_injector(
            l,
            Box::new(|f| match f.index {
                0 => Fault::Delay(SimTime::from_ns(50)),
                1 => Fault::Drop,
                2 => Fault::Duplicate,
                _ => Fault::Pass,
            }),
        );
        h.act(a, |_, _| ());
        h.run(SimTime::MAX);
        let frames: Vec<u32> = h.endpoint(b).got.iter().map(|g| g.1).collect();
        assert_eq!(frames, [2, 2, 3, 0]);
        assert_eq!(h.links()[l].stats(), LinkStats { sent: 4, dropped: 1, duplicated: 1, delayed: 0, misrouted: 0 });
    }
}
