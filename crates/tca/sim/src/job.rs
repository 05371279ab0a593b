//! A simulated job: rank programs run as threads against one virtual clock.
//!
//! A rank's program runs freely in real time between API calls; every call is a request to the
//! simulated world and blocks the rank until the world answers. The world moves only when every
//! rank is blocked (or finished): the requests were taken as they came, and the world advances
//! virtual time, hardware event by hardware event, until some rank's request is answered. So a
//! program's simulated timings and results do not depend on thread scheduling, and two runs are
//! identical.
//!
//! When every rank waits and nothing can change any more, the run is a deadlock: every waiting
//! rank gets [`TcaError::Deadlock`] with a line naming what each rank waits for, instead of
//! hanging.

use crate::scheduler::Scheduler;
use crate::stats::JobStats;
use crate::world::{Op, Reply};
use crate::Driver;
use base::SimTime;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tca_model::platform::Platform;
use tca_model::LinkStats;
use tca_proto::{FabricError, TcaError};

struct State {
    scheduler: Scheduler,
    /// Requests made while other ranks ran, taken in rank order when the world next moves
    /// (so the order does not depend on which thread came first).
    submitted: Vec<Option<Op>>,
}

/// A simulated run shared by its rank threads.
pub struct SimJob {
    state: Mutex<State>,
    /// One per rank: a rank sleeps on its own and is woken only when its answer is ready.
    wake: Vec<Condvar>,
}

impl SimJob {
    /// A job of `ranks` ranks on `platform` (rank i on node i); `trace` records hardware spans.
    ///
    /// # Errors
    /// No rank, or more ranks than the platform has nodes.
    pub fn new(platform: &Platform, ranks: u32, trace: bool) -> Result<Arc<SimJob>, FabricError> {
        let scheduler = Scheduler::new(platform, ranks, trace)?;
        let submitted = (0..ranks).map(|_| None).collect();
        let wake = (0..ranks).map(|_| Condvar::new()).collect();
        Ok(Arc::new(SimJob { state: Mutex::new(State { scheduler, submitted }), wake }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes the ranks whose answer is ready.
    fn wake_ready(&self, st: &State) {
        for rank in st.scheduler.answered() {
            self.wake[rank as usize].notify_one();
        }
    }

    /// Ranks of the job.
    pub fn ranks(&self) -> u32 {
        self.lock().scheduler.ranks()
    }

    /// Rank `rank`'s program has returned (or failed); later calls of it fail.
    pub fn finish(&self, rank: u32) {
        let mut st = self.lock();
        if rank >= st.scheduler.ranks() {
            return;
        }
        st.submitted[rank as usize] = None;
        st.scheduler.finish(rank);
        if st.idle() && !st.scheduler.all_finished() {
            st.advance();
        }
        self.wake_ready(&st);
    }

    /// The simulated time now.
    pub fn now(&self) -> SimTime {
        self.lock().scheduler.now()
    }

    /// Hardware events delivered so far.
    pub fn events(&self) -> u64 {
        self.lock().scheduler.events()
    }

    /// Chrome trace-event JSON of the hardware, if the job records a trace.
    pub fn trace_json(&self) -> Option<String> {
        self.lock().scheduler.trace_json()
    }

    /// Spans the trace did not keep ([`Scheduler::trace_dropped`]).
    pub fn trace_dropped(&self) -> u64 {
        self.lock().scheduler.trace_dropped()
    }

    /// What every link direction carried so far ([`Scheduler::link_stats`]).
    pub fn link_stats(&self) -> Vec<LinkStats> {
        self.lock().scheduler.link_stats()
    }

    /// The job's statistics now, `wall` being the wall-clock time it took ([`JobStats`]).
    pub fn stats(&self, wall: std::time::Duration) -> JobStats {
        self.lock().scheduler.stats(wall)
    }
}

impl Driver for SimJob {
    fn ranks(&self) -> u32 {
        SimJob::ranks(self)
    }

    fn finish(&self, rank: u32) {
        SimJob::finish(self, rank);
    }

    fn call_within(&self, rank: u32, within: Option<&'static str>) {
        self.lock().scheduler.call_within(rank, within);
    }

    fn call(&self, rank: u32, op: Op) -> Result<Reply, FabricError> {
        let mut st = self.lock();
        let free = st.scheduler.is_running(rank) && st.submitted.get(rank as usize).is_some_and(Option::is_none);
        if !free {
            return Err(FabricError::with_detail(TcaError::NotInitialized, format!("rank {rank} is not running")));
        }
        st.submitted[rank as usize] = Some(op);
        loop {
            if let Some(answer) = st.scheduler.take_answer(rank) {
                return answer;
            }
            if st.idle() {
                st.advance();
                self.wake_ready(&st);
                continue;
            }
            st = self.wake[rank as usize].wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}

impl State {
    /// No rank runs its program (requests not yet taken count as waiting) and none has an
    /// answer to pick up: only the world can move.
    fn idle(&self) -> bool {
        (0..self.scheduler.ranks()).all(|r| {
            self.submitted[r as usize].is_some() || !(self.scheduler.is_running(r) || self.scheduler.has_answer(r))
        })
    }

    /// Takes new requests in rank order, then runs the world until some rank can continue.
    fn advance(&mut self) {
        let requests: VecDeque<(u32, Op)> =
            (0..self.scheduler.ranks()).filter_map(|r| self.submitted[r as usize].take().map(|op| (r, op))).collect();
        for (rank, op) in requests {
            self.scheduler.submit(rank, op).expect("a running rank");
        }
        self.scheduler.settle();
        while !self.scheduler.has_answers() {
            if !self.scheduler.step() {
                // Every waiting rank's answer carries the report.
                self.scheduler.deadlock(&|_| "is running");
                return;
            }
        }
    }
}
