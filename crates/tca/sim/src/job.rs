//! A simulated job: rank programs run as threads against one virtual clock.
//!
//! A rank's program runs freely in real time between API calls; every call is a request to the
//! simulated world and blocks the rank until the world answers. The world moves only when every
//! rank is blocked (or finished): it takes the new requests in rank order, then advances virtual
//! time, hardware event by hardware event, until some rank's request is answered. So a
//! program's simulated timings and results do not depend on thread scheduling, and two runs are
//! identical.
//!
//! When every rank waits and nothing can change any more, the run is a deadlock: every waiting
//! rank gets [`TcaError::Deadlock`] with a line naming what each rank waits for, instead of
//! hanging.

use crate::world::{Op, Reply, Submitted, Wait, World};
use base::{SimTime, Trace};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tca_model::platform::Platform;
use tca_proto::{FabricError, TcaError};

enum Slot {
    /// Executing the program between calls.
    Running,
    /// Has made a request not yet seen by the world.
    Submitted(Op),
    /// Waiting for the world; `deadline` once known.
    Waiting {
        op_text: String,
        wait: Wait,
        deadline: Option<SimTime>,
        gather: Option<Vec<u8>>,
    },
    /// The answer is ready.
    Ready(Result<Reply, FabricError>),
    Finished,
}

struct State {
    world: World,
    slots: Vec<Slot>,
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
        let world = World::new(platform, ranks, trace.then(Trace::new))?;
        let slots = (0..ranks).map(|_| Slot::Running).collect();
        let wake = (0..ranks).map(|_| Condvar::new()).collect();
        Ok(Arc::new(SimJob { state: Mutex::new(State { world, slots }), wake }))
    }

    /// Ranks of the job.
    pub fn ranks(&self) -> u32 {
        self.lock().slots.len() as u32
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Rank `rank` makes request `op` and blocks until the world answers it.
    pub(crate) fn call(&self, rank: u32, op: Op) -> Result<Reply, FabricError> {
        let mut st = self.lock();
        match st.slots.get(rank as usize) {
            Some(Slot::Running) => st.slots[rank as usize] = Slot::Submitted(op),
            _ => return Err(FabricError::with_detail(TcaError::NotInitialized, format!("rank {rank} is not running"))),
        }
        loop {
            if let Slot::Ready(_) = st.slots[rank as usize] {
                let Slot::Ready(answer) = std::mem::replace(&mut st.slots[rank as usize], Slot::Running) else {
                    unreachable!("checked just above")
                };
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

    /// Rank `rank`'s program has returned (or failed); later calls of it fail.
    pub fn finish(&self, rank: u32) {
        let mut st = self.lock();
        let Some(slot) = st.slots.get_mut(rank as usize) else { return };
        *slot = Slot::Finished;
        if st.idle() && st.slots.iter().any(|s| !matches!(s, Slot::Finished)) {
            st.advance();
        }
        self.wake_ready(&st);
    }

    /// Wakes the ranks whose answer is ready.
    fn wake_ready(&self, st: &State) {
        for (slot, wake) in st.slots.iter().zip(&self.wake) {
            if let Slot::Ready(_) = slot {
                wake.notify_one();
            }
        }
    }

    /// The simulated time now.
    pub fn now(&self) -> SimTime {
        self.lock().world.now
    }

    /// Hardware events delivered so far.
    pub fn events(&self) -> u64 {
        self.lock().world.events()
    }

    /// Chrome trace-event JSON of the hardware, if the job records a trace.
    pub fn trace_json(&self) -> Option<String> {
        self.lock().world.trace.as_ref().map(|t| t.to_json())
    }
}

impl State {
    /// No rank runs its program and none has an answer to pick up: only the world can move.
    fn idle(&self) -> bool {
        !self.slots.iter().any(|s| matches!(s, Slot::Running | Slot::Ready(_)))
    }

    /// Takes new requests in rank order, then runs the world until some rank can continue.
    fn advance(&mut self) {
        self.take_requests();
        loop {
            self.release_collectives();
            self.settle_waits();
            if self.slots.iter().any(|s| matches!(s, Slot::Ready(_))) {
                return;
            }
            let next_deadline = self
                .slots
                .iter()
                .filter_map(|s| match s {
                    Slot::Waiting { deadline, .. } => *deadline,
                    _ => None,
                })
                .min();
            match (next_deadline, self.world.next_event()) {
                (Some(d), Some(e)) if e < d => self.step(),
                (Some(d), _) => self.world.advance_to(d),
                (None, Some(_)) => self.step(),
                (None, None) => return self.deadlock(),
            }
        }
    }

    fn take_requests(&mut self) {
        for rank in 0..self.slots.len() {
            if !matches!(self.slots[rank], Slot::Submitted(_)) {
                continue;
            }
            let Slot::Submitted(op) = std::mem::replace(&mut self.slots[rank], Slot::Running) else {
                unreachable!("checked just above")
            };
            let op_text = op.describe();
            let gather = match &op {
                Op::Allgather { bytes } => Some(bytes.clone()),
                _ => None,
            };
            self.slots[rank] = match self.world.submit(rank as u16, op) {
                Submitted::Done(answer) => Slot::Ready(answer),
                Submitted::Wait(wait) => Slot::Waiting { op_text, wait, deadline: None, gather },
            };
        }
    }

    /// Answers the waits whose condition holds now.
    fn settle_waits(&mut self) {
        let now = self.world.now;
        for slot in &mut self.slots {
            let Slot::Waiting { wait, deadline, .. } = slot else { continue };
            if deadline.is_none() {
                match self.world.ready_at(wait) {
                    Some(Ok(t)) => *deadline = Some(t),
                    Some(Err(e)) => *slot = Slot::Ready(Err(e)),
                    None => {}
                }
            }
            if let Slot::Waiting { wait, deadline: Some(d), .. } = slot {
                if *d <= now {
                    *slot = Slot::Ready(self.world.finish(wait));
                }
            }
        }
    }

    /// Runs one hardware event; a failure of the model ends every wait with it.
    fn step(&mut self) {
        if let Err(e) = self.world.step() {
            for slot in &mut self.slots {
                if let Slot::Waiting { .. } = slot {
                    *slot = Slot::Ready(Err(e.clone()));
                }
            }
        }
    }

    /// A barrier or allgather completes when every rank that has not finished is in it.
    fn release_collectives(&mut self) {
        let in_collective = |s: &Slot| matches!(s, Slot::Waiting { wait: Wait::Collective, .. });
        let waiting = self.slots.iter().filter(|s| in_collective(s)).count();
        if waiting == 0 || waiting < self.slots.len() {
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
    }

    fn deadlock(&mut self) {
        let at = self.world.now;
        let detail = self
            .slots
            .iter()
            .enumerate()
            .map(|(rank, s)| match s {
                Slot::Waiting { op_text, .. } => format!("rank {rank} waits for {op_text}"),
                Slot::Finished => format!("rank {rank} has finished"),
                _ => format!("rank {rank} is running"),
            })
            .collect::<Vec<_>>()
            .join("; ");
        for slot in &mut self.slots {
            if let Slot::Waiting { .. } = slot {
                let detail = format!("at {at}: {detail}");
                *slot = Slot::Ready(Err(FabricError::with_detail(TcaError::Deadlock, detail)));
            }
        }
    }
}
