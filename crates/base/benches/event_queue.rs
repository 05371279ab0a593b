//! Event-queue throughput on the classic "hold" model: with N events pending, pop the earliest
//! and push one at a random later time. Reports events per second at N = 1e3, 1e5, 1e6.
//! Run with `make bench` (or `cargo bench -p base`).

use base::{EventQueue, SimTime};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;

const STEPS: u64 = 100_000;

fn filled(pending: usize) -> (EventQueue<u32>, ChaCha8Rng) {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut q = EventQueue::with_capacity(pending + 1);
    for i in 0..pending {
        q.push(SimTime::from_ps(rng.gen_range(1..1_000_000)), i as u32);
    }
    (q, rng)
}

fn hold(c: &mut Criterion) {
    let mut group = c.benchmark_group("hold");
    group.throughput(Throughput::Elements(STEPS));
    group.sample_size(10);
    for pending in [1_000usize, 100_000, 1_000_000] {
        group.bench_function(format!("pending={pending}"), |b| {
            b.iter_batched(
                || filled(pending),
                |(mut q, mut rng)| {
                    for _ in 0..STEPS {
                        let (t, e) = q.pop().unwrap();
                        q.push(t + SimTime::from_ps(rng.gen_range(1_000..1_000_000)), e);
                    }
                    black_box(q.len())
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
