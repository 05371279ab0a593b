//! What the protocol core costs per DMA run of one 8-byte write with a notification, as a
//! memory fabric's caller drives it: the general way (`handle_start`, the actions polled, the
//! write reported done, the answer polled) against one `start_posted`. The fabric's own work
//! (the copy, the notification) is not in it. Run with `cargo bench -p tca-proto`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tca_proto::{Action, Desc, DmaFlags, DmaMode, Engine, Handle, MemoryType};

const RUNS: u64 = 10_000;

fn engine(mode: DmaMode) -> Engine {
    let mut e = Engine::new(0, 2).unwrap();
    let src = e.create_handle(0x1000, 4096, MemoryType::Gpu).unwrap();
    let dst = Handle { node: 1, addr: (1 << 40) + 0x1000, size: 4096, mem: MemoryType::Gpu, id: 1 };
    let mut d = Desc::new();
    d.set_memcpy(&dst, 64, &src, 0, 8, DmaFlags::NOTIFY, 0, 1).unwrap();
    d.set_mode(Some(mode)).unwrap();
    e.set_chain(0, &d).unwrap();
    e
}

fn general_run(e: &mut Engine) {
    e.handle_start(0).unwrap();
    let mut token = None;
    while let Some(a) = e.poll_action() {
        if let Action::Write(w) = a {
            token = Some(w.token);
        }
    }
    e.handle_write_done(token.unwrap()).unwrap();
    while let Some(a) = e.poll_action() {
        black_box(a);
    }
}

fn runs(c: &mut Criterion) {
    let mut group = c.benchmark_group("one-write run");
    group.throughput(Throughput::Elements(RUNS));
    for mode in [DmaMode::Register, DmaMode::Chaining] {
        let mut e = engine(mode);
        group.bench_function(format!("general, {}", mode.name()), |b| {
            b.iter(|| (0..RUNS).for_each(|_| general_run(&mut e)))
        });
        let mut e = engine(mode);
        group.bench_function(format!("posted, {}", mode.name()), |b| {
            b.iter(|| (0..RUNS).for_each(|_| assert!(black_box(e.start_posted(0).unwrap()).is_some())))
        });
    }
    group.finish();
}

criterion_group!(benches, runs);
criterion_main!(benches);
