//! Simulator speed: every rank of HA-PACS/TCA sends a buffer to the next rank of the ring with a
//! notification, for a number of iterations; prints hardware events per second of wall time.
//!
//!     RANKS=16 cargo run --release -p tca-sim --example ring -- [ITERATIONS] [SIZE]

use std::path::PathBuf;
use std::time::Instant;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, FabricResult, Handle, MemoryType};
use tca_sim::{SimJob, SimRank};

fn ring(r: &SimRank, iterations: u32, size: u64) -> FabricResult<()> {
    let (me, ranks) = (r.rank(), r.job().ranks());
    let (next, prev) = ((me + 1) % ranks, (me + ranks - 1) % ranks);
    let alloc = || -> FabricResult<Handle> {
        let addr = r.malloc(size, MemoryType::Gpu)?;
        r.create_handle(addr, size, MemoryType::Gpu)
    };
    let (send, recv) = (alloc()?, alloc()?);
    let all = r.allgather(&recv.to_bytes())?;
    let n = recv.to_bytes().len();
    let handle_of = |rank: u32| Handle::from_bytes(&all[rank as usize * n..(rank as usize + 1) * n]);
    let (next_recv, prev_recv) = (handle_of(next)?, handle_of(prev)?);
    let mut desc = Desc::new();
    desc.set_memcpy(&next_recv, 0, &send, 0, size, DmaFlags::NOTIFY, 0, me)?;
    r.desc_set(0, &desc)?;
    r.barrier()?;
    for _ in 0..iterations {
        r.start_dma(0)?;
        r.wait_dma_recv(&prev_recv, 0, prev)?;
        r.wait_dmac(0)?;
    }
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: u32 = args.next().map_or(20, |s| s.parse().expect("ITERATIONS"));
    let size: u64 = args.next().map_or(65536, |s| s.parse().expect("SIZE in bytes"));
    let ranks: u32 = std::env::var("RANKS").map_or(16, |s| s.parse().expect("RANKS"));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let platform = Platform::load(&root.join("platforms/ha-pacs-tca.toml")).expect("platform");
    let job = SimJob::new(&platform, ranks, false).expect("a job");
    let start = Instant::now();
    let threads: Vec<_> = (0..ranks)
        .map(|rank| {
            let r = SimRank::new(job.clone(), rank).expect("a rank");
            std::thread::spawn(move || {
                let result = ring(&r, iterations, size);
                r.job().finish(rank);
                result
            })
        })
        .collect();
    for t in threads {
        t.join().expect("rank thread").expect("ring");
    }
    let wall = start.elapsed().as_secs_f64();
    let events = job.events();
    let rate = events as f64 / wall / 1e6;
    println!(
        "{ranks} ranks, {iterations} iterations of {size} B: {events} events in {wall:.3} s: {rate:.2} M events/s"
    );
}
