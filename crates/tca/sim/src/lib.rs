//! The TCA API on a simulated cluster: rank programs run as threads against one virtual clock.
//!
//! Each rank runs on its own node of a platform. A rank's program runs freely in real time
//! between API calls; every call is a request to the simulated world and blocks the rank until
//! the world answers. The world moves only when every rank is blocked (or finished): it takes the
//! new requests in rank order, then advances virtual time, hardware event by hardware event,
//! until some rank's request is answered. So a program's simulated timings and results do not
//! depend on thread scheduling, and two runs are identical.
//!
//! When every rank waits and nothing can change any more, the run is a deadlock: every waiting
//! rank gets [`FabricError::Deadlock`] naming what each rank waits for, instead of hanging.

mod memory;
mod world;

pub use world::{FabricError, Op, Reply, World};

/// Runs `program(job, rank)` for every rank of a new job on `platform`, each in its own thread
/// against the job's virtual clock, and returns the programs' results by rank.
///
/// # Errors
/// More ranks than the platform has nodes.
///
/// # Panics
/// If a rank's program panics (the panic is resumed on the calling thread).
pub fn run<T, F>(platform: &Platform, ranks: u32, program: F) -> Result<Vec<T>, FabricError>
where
    T: Send + 'static,
    F: Fn(&SimJob, u32) -> T + Send + Sync + 'static,
{
    let job = SimJob::new(platform, ranks, false)?;
    let program = Arc::new(program);
    let threads: Vec<_> = (0..ranks)
        .map(|rank| {
            let (job, program) = (job.clone(), program.clone());
            std::thread::spawn(move || {
                // Finish the rank even if its program panics, so the others see a deadlock
                // instead of waiting forever.
                struct Finish(Arc<SimJob>, u32);
                impl Drop for Finish {
                    fn drop(&mut self) {
                        self.0.finish(self.1);
                    }
                }
                let _finish = Finish(job.clone(), rank);
                program(&job, rank)
            })
        })
        .collect();
    Ok(threads.into_iter().map(|t| t.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect())
}

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use tca_model::platform::Platform;
use base::SimTime;
use world::{Submitted, Wait};

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
    wake: Condvar,
}

impl SimJob {
    /// A job of `ranks` ranks on `platform`; `trace` records hardware spans.
    ///
    /// # Errors
    /// More ranks than the platform has nodes.
    pub fn new(platform: &Platform, ranks: u32, trace: bool) -> Result<Arc<SimJob>, FabricError> {
        let world = World::new(platform, ranks, trace)?;
        let slots = (0..ranks).map(|_| Slot::Running).collect();
        Ok(Arc::new(SimJob { state: Mutex::new(State { world, slots }), wake: Condvar::new() }))
    }

    pub fn ranks(&self) -> u32 {
        self.lock().slots.len() as u32
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Rank `rank` makes request `op` and blocks until the world answers it.
    pub fn call(&self, rank: u32, op: Op) -> Result<Reply, FabricError> {
        let mut st = self.lock();
        st.slots[rank as usize] = Slot::Submitted(op);
        loop {
            if let Slot::Ready(_) = st.slots[rank as usize] {
                let Slot::Ready(answer) = std::mem::replace(&mut st.slots[rank as usize], Slot::Running) else {
                    unreachable!()
                };
                return answer;
            }
            if st.idle() {
                st.advance();
                self.wake.notify_all();
                continue;
            }
            st = self.wake.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Rank `rank`'s program has returned (or failed).
    pub fn finish(&self, rank: u32) {
        let mut st = self.lock();
        st.slots[rank as usize] = Slot::Finished;
        if st.idle() && st.slots.iter().any(|s| !matches!(s, Slot::Finished)) {
            st.advance();
        }
        self.wake.notify_all();
    }

    /// Hardware events delivered so far.
    pub fn events(&self) -> u64 {
        self.lock().world.events()
    }

    /// The simulated time now.
    pub fn now(&self) -> SimTime {
        self.lock().world.now()
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
        for rank in 0..self.slots.len() {
            if let Slot::Submitted(_) = self.slots[rank] {
                let Slot::Submitted(op) = std::mem::replace(&mut self.slots[rank], Slot::Running) else {
                    unreachable!()
                };
                let op_text = op.describe();
                let gather = match &op {
                    Op::Allgather { bytes } => Some(bytes.clone()),
                    _ => None,
                };
                self.slots[rank] = match self.world.submit(rank as u32, op) {
                    Submitted::Done(answer) => Slot::Ready(answer),
                    Submitted::Wait(wait) => Slot::Waiting { op_text, wait, deadline: None, gather },
                };
            }
        }
        loop {
            self.release_collectives();
            let now = self.world.now();
            for slot in &mut self.slots {
                if let Slot::Waiting { wait, deadline, .. } = slot {
                    if deadline.is_none() {
                        *deadline = self.world.ready_at(wait);
                    }
                    if deadline.is_some_and(|d| d <= now) {
                        *slot = Slot::Ready(Ok(Reply::Unit));
                    }
                }
            }
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
                (Some(d), Some(e)) if e < d => self.world.step(),
                (Some(d), _) => self.world.advance_to(d),
                (None, Some(_)) => self.world.step(),
                (None, None) => return self.deadlock(),
            }
        }
    }

    /// A barrier or allgather completes when every rank that has not finished is in it.
    fn release_collectives(&mut self) {
        let in_collective = |s: &Slot| matches!(s, Slot::Waiting { wait: Wait::Collective, .. });
        let live = self.slots.iter().filter(|s| !matches!(s, Slot::Finished)).count();
        let waiting = self.slots.iter().filter(|s| in_collective(s)).count();
        if waiting == 0 || waiting < live || self.slots.iter().any(|s| matches!(s, Slot::Finished)) {
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
        for slot in &mut self.slots {
            if let Slot::Waiting { gather, .. } = slot {
                let reply = if gather.is_some() { Reply::Gathered(gathered.clone()) } else { Reply::Unit };
                *slot = Slot::Ready(Ok(reply));
            }
        }
    }

    fn deadlock(&mut self) {
        let at = self.world.now();
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
                *slot = Slot::Ready(Err(FabricError::Deadlock { at, detail: detail.clone() }));
            }
        }
    }
}
