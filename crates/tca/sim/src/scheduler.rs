//! The ranks of a simulated job and the world they act on, as a state machine that owns no
//! clock and no thread: a driver submits each rank's request, runs the world forward and hands
//! out the answers. [`crate::SimJob`] drives it with one thread per rank (the world moves when
//! every rank waits); a driver inside another simulator (SimGrid SMPI, crate `tca-smpi`)
//! drives it from that simulator's clock, so TCA and MPI traffic share one virtual time.
//!
//! Call order: [`Scheduler::submit`] a request (the world's clock must already be at the
//! request's time: [`Scheduler::run_until`]); [`Scheduler::take_answer`] when
//! [`Scheduler::has_answer`]; between requests, [`Scheduler::run_until`] the driver's time, or
//! [`Scheduler::step`] to [`Scheduler::next_wake`] when nothing else can happen first.

use crate::stats::JobStats;
use crate::world::{Op, Reply, Submitted, Wait, World};
use base::{SimTime, Trace};
use tca_model::platform::Platform;
use tca_model::LinkStats;
use tca_proto::{FabricError, TcaError};

enum Slot {
    /// Executing the program between calls.
    Running,
    /// Waiting for the world; `deadline` once known; `seen`, the change counter of its node
    /// that its condition reads, when it was last looked at.
    Waiting {
        op_text: String,
        wait: Wait,
        deadline: Option<SimTime>,
        seen: Option<u64>,
        gather: Option<Vec<u8>>,
    },
    /// The answer is ready.
    Ready(Result<Reply, FabricError>),
    Finished,
}

/// The world and what each rank is doing (see the module documentation).
pub struct Scheduler {
    world: World,
    slots: Vec<Slot>,
    /// `world.changes` when the waits were last looked at.
    looked_at: Option<u64>,
    /// A request came since collectives were last looked at.
    collectives_dirty: bool,
    /// Some rank has finished: waits on it may fail ([`Scheduler::fail_waits_on_finalized_peers`]).
    some_finished: bool,
    /// The earliest deadline of a waiting rank, and the ranks with an answer ready, as of the
    /// last change of a slot (kept so that a hardware event costs no look at every rank).
    earliest: Option<SimTime>,
    ready: usize,
    /// The program's call each rank's requests are made inside ([`Scheduler::call_within`]).
    within: Vec<Option<&'static str>>,
}

impl Scheduler {
    /// A job of `ranks` ranks on `platform` (rank i on node i); `trace` records hardware spans.
    ///
    /// # Errors
    /// No rank, or more ranks than the platform has nodes.
    pub fn new(platform: &Platform, ranks: u32, trace: bool) -> Result<Scheduler, FabricError> {
        let world = World::new(platform, ranks, trace.then(Trace::new))?;
        Ok(Scheduler {
            world,
            slots: (0..ranks).map(|_| Slot::Running).collect(),
            looked_at: None,
            collectives_dirty: false,
            some_finished: false,
            earliest: None,
            ready: 0,
            within: vec![None; ranks as usize],
        })
    }

    /// Ranks of the job.
    pub fn ranks(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The world's time.
    pub fn now(&self) -> SimTime {
        self.world.now
    }

    /// Hardware events delivered so far.
    pub fn events(&self) -> u64 {
        self.world.events()
    }

    /// Chrome trace-event JSON of the hardware, if the job records a trace.
    pub fn trace_json(&self) -> Option<String> {
        self.world.trace.as_ref().map(|t| t.to_json())
    }

    /// Spans the trace did not keep (it keeps the first [`base::Trace::DEFAULT_MAX_SPANS`]).
    pub fn trace_dropped(&self) -> u64 {
        self.world.trace.as_ref().map_or(0, Trace::dropped)
    }

    /// What every link direction of the hardware carried so far: TLPs, TLPs that queued
    /// behind another, busy time ([`tca_model::Cluster::link_stats`]).
    pub fn link_stats(&self) -> Vec<LinkStats> {
        self.world.cluster.link_stats()
    }

    /// The job's statistics now, `wall` being the wall-clock time it took.
    pub fn stats(&self, wall: std::time::Duration) -> JobStats {
        JobStats {
            ranks: self.ranks(),
            virtual_time: self.now(),
            events: self.events(),
            wall,
            links: self.link_stats(),
        }
    }

    /// Whether `rank` runs its program (it may make a request).
    pub fn is_running(&self, rank: u32) -> bool {
        matches!(self.slots.get(rank as usize), Some(Slot::Running))
    }

    /// Rank `rank` makes request `op` at the world's time; its answer is ready at once or when
    /// the world reaches the time its condition holds.
    ///
    /// # Errors
    /// The rank is not running its program (finished, or already waiting).
    pub fn submit(&mut self, rank: u32, op: Op) -> Result<(), FabricError> {
        if !self.is_running(rank) {
            let detail = format!("rank {rank} is not running");
            return Err(FabricError::with_detail(TcaError::NotInitialized, detail));
        }
        let op_text = match self.within.get(rank as usize).copied().flatten() {
            Some(call) => format!("{} inside {call}", op.describe()),
            None => op.describe(),
        };
        let gather = match &op {
            Op::Allgather { bytes } => Some(bytes.clone()),
            _ => None,
        };
        self.slots[rank as usize] = match self.world.submit(rank as u16, op) {
            Submitted::Done(answer) => Slot::Ready(answer),
            Submitted::Wait(wait) => Slot::Waiting { op_text, wait, deadline: None, seen: None, gather },
        };
        self.collectives_dirty = true;
        self.recount();
        Ok(())
    }

    /// Whether `rank`'s answer is ready.
    pub fn has_answer(&self, rank: u32) -> bool {
        matches!(self.slots.get(rank as usize), Some(Slot::Ready(_)))
    }

    /// Whether some rank's answer is ready.
    pub fn has_answers(&self) -> bool {
        self.ready > 0
    }

    /// Ranks whose answer is ready.
    pub fn answered(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().enumerate().filter(|(_, s)| matches!(s, Slot::Ready(_))).map(|(r, _)| r as u32)
    }

    /// Takes `rank`'s ready answer; the rank runs its program again.
    pub fn take_answer(&mut self, rank: u32) -> Option<Result<Reply, FabricError>> {
        let slot = self.slots.get_mut(rank as usize)?;
        if !matches!(slot, Slot::Ready(_)) {
            return None;
        }
        let answer = match std::mem::replace(slot, Slot::Running) {
            Slot::Ready(answer) => answer,
            _ => unreachable!("checked just above"),
        };
        self.recount();
        // The rank may run on another thread and reads what the model copied.
        self.world.memory.publish();
        Some(answer)
    }

    /// Rank `rank`'s program has returned (or failed); later requests of it fail.
    pub fn finish(&mut self, rank: u32) {
        if let Some(slot) = self.slots.get_mut(rank as usize) {
            *slot = Slot::Finished;
            self.some_finished = true;
            self.world.engines[rank as usize].finalize();
            self.collectives_dirty = true;
            // Waits on this rank look again.
            self.world.changes += 1;
            self.recount();
        }
    }

    /// Whether `rank` has finished (`tcaFinalize`).
    pub fn has_finished(&self, rank: u32) -> bool {
        matches!(self.slots.get(rank as usize), Some(Slot::Finished))
    }

    /// Whether every rank has finished.
    pub fn all_finished(&self) -> bool {
        self.slots.iter().all(|s| matches!(s, Slot::Finished))
    }

    /// No rank runs its program and none has an answer to pick up: only the world can move.
    pub fn idle(&self) -> bool {
        !self.slots.iter().any(|s| matches!(s, Slot::Running | Slot::Ready(_)))
    }

    /// Answers the waits whose condition holds at the world's time.
    pub fn settle(&mut self) {
        if std::mem::take(&mut self.collectives_dirty) {
            self.release_collectives();
        }
        let now = self.world.now;
        // Nothing changed since the last look and no deadline is due: no rank can be answered.
        if self.looked_at == Some(self.world.changes) && self.earliest.is_none_or(|d| d > now) {
            return;
        }
        self.looked_at = Some(self.world.changes);
        // Most looks answer no wait: the slots' earliest deadline and ready count then stand.
        let mut changed = false;
        for (node, slot) in self.slots.iter_mut().enumerate() {
            let Slot::Waiting { wait, deadline, seen, .. } = slot else { continue };
            if deadline.is_none() {
                let counter = match wait {
                    Wait::Value { .. } => self.world.memory_changes[node],
                    _ => self.world.control_changes[node],
                };
                if *seen != Some(counter) {
                    *seen = Some(counter);
                    match self.world.ready_at(wait) {
                        Some(Ok(t)) => *deadline = Some(t),
                        Some(Err(e)) => *slot = Slot::Ready(Err(e)),
                        None => continue,
                    }
                    changed = true;
                }
            }
            if let Slot::Waiting { wait, deadline: Some(d), .. } = slot {
                if *d <= now {
                    *slot = Slot::Ready(self.world.finish(wait));
                    changed = true;
                }
            }
        }
        if self.fail_waits_on_finalized_peers() || changed {
            self.recount();
        }
    }

    /// A wait for a value or a notification whose sender has finalized fails once nothing of
    /// the sender's is still on the way, as on shm, where it fails once the sender has left
    /// the job. Returns whether one failed.
    fn fail_waits_on_finalized_peers(&mut self) -> bool {
        if !self.some_finished {
            return false;
        }
        let mut failed = false;
        for node in 0..self.slots.len() {
            let Slot::Waiting { wait, deadline: None, .. } = &self.slots[node] else { continue };
            let (peer, what) = match wait {
                Wait::Value { peer: Some(p), .. } => (*p, "the value arrived"),
                Wait::Recv { handle, .. } => (handle.node, "sending the notification"),
                _ => continue,
            };
            if usize::from(peer) != node && self.has_finished(u32::from(peer)) && !self.world.in_flight_of(peer) {
                let detail = format!("rank {peer} finalized before {what}");
                self.slots[node] = Slot::Ready(Err(FabricError::with_detail(TcaError::PeerDead, detail)));
                failed = true;
            }
        }
        failed
    }

    /// Takes the earliest deadline and the ready answers again after slots changed.
    fn recount(&mut self) {
        let (mut earliest, mut ready) = (None::<SimTime>, 0);
        for s in &self.slots {
            match s {
                Slot::Waiting { deadline: Some(d), .. } => earliest = Some(earliest.map_or(*d, |e| e.min(*d))),
                Slot::Ready(_) => ready += 1,
                _ => {}
            }
        }
        (self.earliest, self.ready) = (earliest, ready);
    }

    /// The earliest deadline of a waiting rank.
    fn next_deadline(&self) -> Option<SimTime> {
        self.earliest
    }

    /// The earliest time at which something happens without a new request: a hardware event
    /// or a wait's deadline; `None` when nothing ever will.
    pub fn next_wake(&self) -> Option<SimTime> {
        let deadline = self.next_deadline();
        match (deadline, self.world.next_event()) {
            (Some(d), Some(e)) => Some(d.min(e)),
            (d, e) => d.or(e),
        }
    }

    /// Moves to [`Scheduler::next_wake`]: runs the next hardware event, or jumps to the next
    /// deadline when it comes first (a deadline wins a tie), then settles the waits. Returns
    /// `false` when nothing is left to happen.
    pub fn step(&mut self) -> bool {
        self.step_within(SimTime::MAX)
    }

    /// As [`Scheduler::step`]; hardware events that make nothing happen, after the first, are
    /// run in the same step up to time `last` and before the next deadline.
    fn step_within(&mut self, last: SimTime) -> bool {
        let deadline = self.next_deadline();
        match (deadline, self.world.next_event()) {
            (Some(d), Some(e)) if e < d => self.step_event(last.min(d - SimTime::from_ps(1))),
            (Some(d), _) => self.world.advance_to(d.max(self.world.now)),
            (None, Some(_)) => self.step_event(last),
            (None, None) => return false,
        }
        self.settle();
        true
    }

    /// Runs everything due up to time `t`, then moves the world's clock to `t` (if later).
    pub fn run_until(&mut self, t: SimTime) {
        self.run_until_unless(t, || false);
    }

    /// As [`Scheduler::run_until`], unless `stop` says so between two steps (a run being
    /// stopped, whose driver then wants the state as it is); returns whether it got to `t`.
    pub fn run_until_unless(&mut self, t: SimTime, stop: impl Fn() -> bool) -> bool {
        self.settle();
        while self.next_wake().is_some_and(|w| w <= t) {
            if stop() {
                return false;
            }
            self.step_within(t);
        }
        if t > self.world.now {
            self.world.advance_to(t);
            self.settle();
        }
        true
    }

    /// Runs one hardware event; a failure of the model ends every wait with it.
    fn step_event(&mut self, last: SimTime) {
        if let Err(e) = self.world.step_quietly_to(last) {
            for slot in &mut self.slots {
                if let Slot::Waiting { .. } = slot {
                    *slot = Slot::Ready(Err(e.clone()));
                }
            }
            self.recount();
        }
    }

    /// A barrier or allgather completes when every rank that has not finished is in it.
    fn release_collectives(&mut self) {
        let in_collective = |s: &Slot| matches!(s, Slot::Waiting { wait: Wait::Collective, .. });
        let waiting = self.slots.iter().filter(|s| in_collective(s)).count();
        if waiting == 0 {
            return;
        }
        // A rank that finished never joins: the others lose a peer, as on shm.
        if let Some(gone) = self.slots.iter().position(|s| matches!(s, Slot::Finished)) {
            let detail = format!("rank {gone} finalized before this collective");
            for slot in self.slots.iter_mut().filter(|s| in_collective(s)) {
                *slot = Slot::Ready(Err(FabricError::with_detail(TcaError::PeerDead, detail.clone())));
            }
            self.recount();
            return;
        }
        if waiting < self.slots.len() {
            return;
        }
        let gathered: Vec<Vec<u8>> = self
            .slots
            .iter()
            .map(|s| match s {
                Slot::Waiting { gather, .. } => gather.clone().unwrap_or_default(),
                _ => Vec::new(),
            })
            .collect();
        let gathers = self.slots.iter().filter(|s| matches!(s, Slot::Waiting { gather: Some(_), .. })).count();
        let mismatch = (gathers != 0 && gathers != waiting) || gathered.windows(2).any(|w| w[0].len() != w[1].len());
        for slot in &mut self.slots {
            if let Slot::Waiting { gather, .. } = slot {
                let reply = match gather {
                    _ if mismatch => Err(FabricError::with_detail(
                        TcaError::OutOfBounds,
                        "collective mismatch: ranks called tcaBarrier and tcaAllgather, or passed different sizes",
                    )),
                    Some(_) => Ok(Reply::Gathered(gathered.clone())),
                    None => Ok(Reply::Unit),
                };
                *slot = Slot::Ready(reply);
            }
        }
        self.recount();
    }

    /// Rank `rank`'s requests from now on are made inside the program's call `within`
    /// (`tcaCollAllreduce`, say), which a deadlock report names beside the wait; `None`: its own.
    pub fn call_within(&mut self, rank: u32, within: Option<&'static str>) {
        if let Some(w) = self.within.get_mut(rank as usize) {
            *w = within;
        }
    }

    /// What each rank does now, for a deadlock report: "rank 0 waits for tcaWaitDMAC(channel
    /// 0); rank 1 has finished; ...". `outside(rank)` names what a rank that is not in a TCA
    /// call is doing (the thread driver knows it runs; a driver inside MPI knows it is in MPI,
    /// or has returned from `main`).
    pub fn describe(&self, outside: &dyn Fn(u32) -> &'static str) -> String {
        self.slots
            .iter()
            .enumerate()
            .map(|(rank, s)| match s {
                Slot::Waiting { op_text, .. } => format!("rank {rank} waits for {op_text}"),
                Slot::Finished => format!("rank {rank} has finished"),
                _ => format!("rank {rank} {}", outside(rank as u32)),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Nothing can change any more: every waiting rank gets [`TcaError::Deadlock`] naming what
    /// each rank waits for (see [`Scheduler::describe`]); returns that report.
    pub fn deadlock(&mut self, outside: &dyn Fn(u32) -> &'static str) -> String {
        let detail = format!("at {}: {}", self.world.now, self.describe(outside));
        for slot in &mut self.slots {
            if let Slot::Waiting { .. } = slot {
                *slot = Slot::Ready(Err(FabricError::with_detail(TcaError::Deadlock, detail.clone())));
            }
        }
        self.recount();
        detail
    }
}
