//! Deterministic discrete-event kernel for the tca simulator.
//!
//! Contract: simulated time is an integer number of picoseconds ([`SimTime`]); events are
//! delivered in (time, insertion sequence) order, so two runs with the same inputs deliver the
//! same events in the same order and produce byte-identical traces. Nothing here reads the
//! OS clock or a random source.
//!
//! A model is any type implementing [`Model`]: the [`Simulation`] pops the earliest event,
//! advances the clock and hands the event to [`Model::handle`] together with a [`Context`] through
//! which the model schedules further events and records trace spans.
//!
//! Beside the kernel: [`units`] (the one parser of quantities) and [`params`] (the one loader of
//! platform files).

#![warn(missing_docs)]

pub mod harness;
pub mod params;
mod queue;
mod time;
mod trace;
pub mod units;

pub use queue::EventQueue;
pub use time::SimTime;
pub use trace::{exact_us, json_string, Trace, TrackId};

/// A simulated component (or a whole system) reacting to its events.
pub trait Model {
    /// The event type this model schedules and receives.
    type Event;
    /// Called once per event, in (time, insertion sequence) order; `ctx.now()` is the event time.
    fn handle(&mut self, ctx: &mut Context<'_, Self::Event>, event: Self::Event);
}

/// What a model may do while handling an event: read the clock, schedule, trace.
pub struct Context<'a, E> {
    now: SimTime,
    queue: &'a mut EventQueue<E>,
    trace: Option<&'a mut Trace>,
}

impl<E> Context<'_, E> {
    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `now + delay`.
    pub fn schedule_in(&mut self, delay: SimTime, event: E) {
        self.queue.push(self.now + delay, event);
    }

    /// Schedules `event` at the absolute time `at`.
    ///
    /// # Panics
    /// If `at` is in the past: models must never schedule backwards in time.
    pub fn schedule_at(&mut self, at: SimTime, event: E) {
        assert!(at >= self.now, "event scheduled in the past: {at} < {}", self.now);
        self.queue.push(at, event);
    }

    /// Records a span on `track` from `start` to `end` if tracing is on.
    pub fn span(&mut self, track: TrackId, name: &str, start: SimTime, end: SimTime) {
        if let Some(trace) = self.trace.as_deref_mut() {
            trace.span(track, name, start, end);
        }
    }

    /// Whether spans are being recorded (lets models skip building span names).
    pub fn tracing(&self) -> bool {
        self.trace.is_some()
    }
}

/// The event loop: a clock, a queue and an optional trace.
pub struct Simulation<E> {
    now: SimTime,
    queue: EventQueue<E>,
    delivered: u64,
}

impl<E> Default for Simulation<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Simulation<E> {
    /// An empty simulation at time zero.
    pub fn new() -> Self {
        Self { now: SimTime::ZERO, queue: EventQueue::new(), delivered: 0 }
    }

    /// The time of the last delivered event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Number of events delivered so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Schedules an initial event at absolute time `at`.
    pub fn schedule_at(&mut self, at: SimTime, event: E) {
        self.queue.push(at, event);
    }

    /// Delivers events until the queue is empty; returns the time of the last event.
    pub fn run<M: Model<Event = E>>(&mut self, model: &mut M, mut trace: Option<&mut Trace>) -> SimTime {
        while self.step(model, trace.as_deref_mut()).is_some() {}
        self.now
    }

    /// Delivers the earliest pending event, if any; returns its time.
    pub fn step<M: Model<Event = E>>(&mut self, model: &mut M, trace: Option<&mut Trace>) -> Option<SimTime> {
        let (at, event) = self.queue.pop()?;
        debug_assert!(at >= self.now);
        self.now = at;
        self.delivered += 1;
        let mut ctx = Context { now: at, queue: &mut self.queue, trace };
        model.handle(&mut ctx, event);
        Some(at)
    }

    /// The time of the next pending event.
    pub fn next_time(&self) -> Option<SimTime> {
        self.queue.peek_time()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the order of delivery; each `Spawn(n)` schedules two children at the same time.
    struct Recorder {
        seen: Vec<(u64, u32)>,
    }

    impl Model for Recorder {
        type Event = u32;
        fn handle(&mut self, ctx: &mut Context<'_, u32>, event: u32) {
            self.seen.push((ctx.now().as_ps(), event));
            if event < 4 {
                ctx.schedule_in(SimTime::from_ns(1), event * 10 + 1);
                ctx.schedule_in(SimTime::from_ns(1), event * 10 + 2);
            }
        }
    }

    #[test]
    fn same_time_events_run_in_insertion_order() {
        let mut sim = Simulation::new();
        sim.schedule_at(SimTime::ZERO, 1);
        sim.schedule_at(SimTime::ZERO, 2);
        let mut model = Recorder { seen: vec![] };
        let end = sim.run(&mut model, None);
        assert_eq!(end, SimTime::from_ns(1));
        assert_eq!(model.seen, vec![(0, 1), (0, 2), (1000, 11), (1000, 12), (1000, 21), (1000, 22)]);
        assert_eq!(sim.delivered(), 6);
    }

    #[test]
    fn spans_are_recorded_only_with_a_trace() {
        /// Spans each event as "e<n>" and notes whether the context was tracing.
        struct Spanner {
            tracing: Vec<bool>,
        }
        impl Model for Spanner {
            type Event = u32;
            fn handle(&mut self, ctx: &mut Context<'_, u32>, n: u32) {
                self.tracing.push(ctx.tracing());
                let now = ctx.now();
                ctx.span(TrackId(0), &format!("e{n}"), now, now + SimTime::from_ns(2));
            }
        }
        let mut trace = Trace::new();
        trace.track("link");
        let mut sim = Simulation::new();
        for n in 1..=3 {
            sim.schedule_at(SimTime::from_ns(u64::from(n)), n);
        }
        let mut model = Spanner { tracing: vec![] };
        // Event 1 without a trace, event 2 with one, event 3 without again.
        assert_eq!(sim.step(&mut model, None), Some(SimTime::from_ns(1)));
        assert_eq!(sim.step(&mut model, Some(&mut trace)), Some(SimTime::from_ns(2)));
        assert_eq!(sim.run(&mut model, None), SimTime::from_ns(3));
        assert_eq!(model.tracing, [false, true, false]);
        assert_eq!(trace.span_count(), 1);
        let json = trace.to_json();
        assert!(json.contains("\"e2\""), "{json}");
        assert!(!json.contains("\"e1\"") && !json.contains("\"e3\""), "{json}");
    }
}
