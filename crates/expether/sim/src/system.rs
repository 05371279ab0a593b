//! One host and one device joined by a fabric, in virtual time.
//!
//! The host and the device are [`Node`]s: they take TLPs and timer expiries and offer TLPs to
//! send. [`System::run`] interleaves their timers with the fabric's events, earliest first (ties:
//! node timers, then the fabric), and moves TLPs from a node onto the fabric while the fabric
//! has room for them (PCIe back-pressure, [`crate::fabric::LINK_CREDITS`]).

use crate::fabric::{Arrival, Fabric, Side};
use crate::tlp::Tlp;
use crate::SimError;
use base::{EventQueue, SimTime, Trace, TrackId};

/// Timers a node asks for while handling an input.
#[derive(Debug, Default)]
pub struct Timers {
    due: Vec<(SimTime, u64)>,
}

impl Timers {
    /// Fire timer `id` at `at`.
    pub fn at(&mut self, at: SimTime, id: u64) {
        self.due.push((at, id));
    }
}

/// A host or a device.
pub trait Node {
    /// Called once at time zero.
    fn start(&mut self, now: SimTime, timers: &mut Timers);
    /// A TLP reached this node at `now`.
    fn handle_tlp(&mut self, now: SimTime, tlp: Tlp, timers: &mut Timers);
    /// Timer `id` fired at `now`.
    fn handle_timer(&mut self, now: SimTime, id: u64, timers: &mut Timers);
    /// The next TLP to put on the link at `now`, if any.
    fn next_tlp(&mut self, now: SimTime) -> Option<Tlp>;
    /// Spans for a trace since the last call (name, start, end); empty unless asked for.
    fn take_spans(&mut self) -> Vec<(String, SimTime, SimTime)> {
        Vec::new()
    }
}

/// A host, a device and the fabric between them.
pub struct System<H: Node, D: Node> {
    /// The fabric.
    pub fabric: Fabric,
    /// The host side.
    pub host: H,
    /// The device side.
    pub device: D,
    now: SimTime,
    timers: EventQueue<(Side, u64)>,
    scratch: Timers,
    arrivals: Vec<Arrival>,
    buf: Vec<u8>,
    trace: Option<(Trace, Vec<TrackId>)>,
}

impl<H: Node, D: Node> System<H, D> {
    /// A system at time zero; with `trace`, spans of the nodes and of the fabric are recorded.
    pub fn new(fabric: Fabric, host: H, device: D, trace: bool) -> Self {
        let trace = trace.then(|| {
            let mut t = Trace::new();
            t.process("expether");
            let mut tracks = vec![t.track("host I/O"), t.track("device")];
            for side in ["upstream bridge port", "downstream bridge port"] {
                for p in 0..16 {
                    tracks.push(t.track(&format!("{side} {p}")));
                }
            }
            (t, tracks)
        });
        System {
            fabric,
            host,
            device,
            now: SimTime::ZERO,
            timers: EventQueue::new(),
            scratch: Timers::default(),
            arrivals: Vec::new(),
            buf: Vec::new(),
            trace,
        }
    }

    /// The time reached.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// The trace recorded so far, as Chrome trace-event JSON.
    pub fn trace_json(&mut self) -> Option<String> {
        self.collect_spans();
        self.trace.as_ref().map(|(t, _)| t.to_json())
    }

    fn schedule(&mut self, side: Side) {
        for (at, id) in self.scratch.due.drain(..) {
            self.timers.push(at.max(self.now), (side, id));
        }
    }

    fn pump(&mut self) {
        for side in [Side::Host, Side::Device] {
            while self.fabric.room(side) > 0 {
                let next = match side {
                    Side::Host => self.host.next_tlp(self.now),
                    Side::Device => self.device.next_tlp(self.now),
                };
                let Some(tlp) = next else { break };
                tlp.encode(&mut self.buf);
                let bytes = self.buf.clone();
                self.fabric.push(self.now, side, &tlp, bytes);
            }
        }
    }

    fn collect_spans(&mut self) {
        let Some((trace, tracks)) = self.trace.as_mut() else { return };
        for (name, a, b) in self.host.take_spans() {
            trace.span(tracks[0], &name, a, b);
        }
        for (name, a, b) in self.device.take_spans() {
            trace.span(tracks[1], &name, a, b);
        }
        for s in self.fabric.take_spans() {
            trace.span(tracks[s.track.min(tracks.len() - 1)], &s.name, s.start, s.end);
        }
    }

    /// Runs until `done(host)` holds; an error if nothing is left to do before that, or if
    /// virtual time passes `limit`.
    pub fn run(&mut self, done: impl Fn(&H) -> bool, limit: SimTime) -> Result<SimTime, SimError> {
        if self.now == SimTime::ZERO {
            self.host.start(SimTime::ZERO, &mut self.scratch);
            self.schedule(Side::Host);
            self.device.start(SimTime::ZERO, &mut self.scratch);
            self.schedule(Side::Device);
        }
        loop {
            self.pump();
            if done(&self.host) {
                self.collect_spans();
                return Ok(self.now);
            }
            let next = match (self.timers.peek_time(), self.fabric.next_time()) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => return Err(SimError::Stalled(self.now)),
            };
            if next > limit {
                return Err(SimError::TimeLimit(limit));
            }
            self.now = next;
            while self.timers.peek_time() == Some(next) {
                let (_, (side, id)) = self.timers.pop().expect("peeked");
                match side {
                    Side::Host => self.host.handle_timer(next, id, &mut self.scratch),
                    Side::Device => self.device.handle_timer(next, id, &mut self.scratch),
                }
                self.schedule(side);
            }
            if self.fabric.next_time() == Some(next) {
                self.fabric.step(next, &mut self.arrivals);
                let arrivals = std::mem::take(&mut self.arrivals);
                for a in &arrivals {
                    let tlp = Tlp::decode(&a.bytes)?;
                    match a.to {
                        Side::Host => self.host.handle_tlp(a.at, tlp, &mut self.scratch),
                        Side::Device => self.device.handle_tlp(a.at, tlp, &mut self.scratch),
                    }
                    self.schedule(a.to);
                }
                self.arrivals = arrivals;
                self.arrivals.clear();
            }
            if self.trace.is_some() {
                self.collect_spans();
            }
        }
    }
}
