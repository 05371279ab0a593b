//! The "hold" benchmark of event queues, callable from Python so that the benchmark script
//! measures tca's queue and SimPy in the same run.

use base::{EventQueue, SimTime};
use pyo3::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Events per second of the hold model: `pending` events in the queue; each step pops the
/// earliest and pushes one at a random later time (uniform 1..1000 ns), `steps` times.
#[pyfunction]
#[pyo3(signature = (pending, steps, seed = 1))]
pub fn hold_model_rate(py: Python<'_>, pending: usize, steps: u64, seed: u64) -> f64 {
    py.allow_threads(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut q = EventQueue::with_capacity(pending + 1);
        for i in 0..pending {
            q.push(SimTime::from_ps(rng.gen_range(1..1_000_000)), i as u32);
        }
        let start = Instant::now();
        for _ in 0..steps {
            let (t, e) = q.pop().expect("the hold model keeps the queue full");
            q.push(t + SimTime::from_ps(rng.gen_range(1_000..1_000_000)), e);
        }
        steps as f64 / start.elapsed().as_secs_f64()
    })
}
