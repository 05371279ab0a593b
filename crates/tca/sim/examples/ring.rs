//! Simulator speed on a 16-node run (RANKS): every rank of HA-PACS/TCA sends a buffer to the next
//! rank of the ring with a notification, for a number of iterations; prints hardware events
//! per second of wall-clock time.
//!
//!     cargo run --release -p tca-sim --example ring -- [ITERATIONS] [SIZE]   (RANKS=16 by default)

use std::path::PathBuf;
use std::time::Instant;
use tca_proto::{Desc, DmaFlags, Handle, MemoryType};
use tca_model::platform::Platform;
use tca_sim::{Op, Reply, SimJob};

fn call(job: &SimJob, rank: u32, op: Op) -> Reply {
    job.call(rank, op).unwrap_or_else(|e| panic!("rank {rank}: {e}"))
}

fn ring(job: &SimJob, me: u32, ranks: u32, iterations: u32, size: u64) {
    let next = (me + 1) % ranks;
    let prev = (me + ranks - 1) % ranks;
    let Reply::Handle(send) = call(job, me, Op::Malloc { size, mem: MemoryType::Gpu, gpu: 0 }) else { panic!() };
    let Reply::Handle(recv) = call(job, me, Op::Malloc { size, mem: MemoryType::Gpu, gpu: 0 }) else { panic!() };
    let Reply::Gathered(all) = call(job, me, Op::Allgather { bytes: recv.to_bytes().to_vec() }) else { panic!() };
    let next_recv = Handle::from_bytes(&all[next as usize]).expect("a handle");
    let prev_recv = Handle::from_bytes(&all[prev as usize]).expect("a handle");
    let mut desc = Desc::new();
    desc.set_memcpy(&next_recv, 0, &send, 0, size, DmaFlags::NOTIFY, 0, me).expect("a descriptor");
    call(job, me, Op::SetChain { channel: 0, desc: Box::new(desc) });
    call(job, me, Op::Barrier);
    for _ in 0..iterations {
        call(job, me, Op::StartDma { channel: 0 });
        call(job, me, Op::WaitRecv { handle: prev_recv, slot: 0, tag: prev });
        call(job, me, Op::WaitDmac { channel: 0 });
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: u32 = args.next().map_or(20, |s| s.parse().expect("ITERATIONS"));
    let size: u64 = args.next().map_or(65536, |s| s.parse().expect("SIZE in bytes"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let platform = Platform::load(&root.join("platforms/ha-pacs-tca.toml")).expect("platform");
    let ranks: u32 = std::env::var("RANKS").map_or(16, |s| s.parse().expect("RANKS"));
    let job = SimJob::new(&platform, ranks, false).expect("16 nodes");
    let start = Instant::now();
    let threads: Vec<_> = (0..ranks)
        .map(|r| {
            let job = job.clone();
            std::thread::spawn(move || ring(&job, r, ranks, iterations, size))
        })
        .collect();
    for t in threads {
        t.join().expect("rank");
    }
    let wall = start.elapsed().as_secs_f64();
    let events = job.events();
    println!("{ranks} ranks, {iterations} iterations of {size} B: {events} events in {wall:.3} s: {:.2} M events/s", events as f64 / wall / 1e6);
}
