//! DMA ping-pong between two ranks on a simulated platform, in Rust (see
//! examples/python/pingpong.py for the same program in Python).
//!
//!     cargo run --release -p tca-sim --example pingpong -- [PLATFORM.toml] [SIZE]

use std::path::PathBuf;
use tca_proto::{Desc, DmaFlags, Handle, MemoryType};
use tca_model::platform::Platform;
use tca_sim::{Op, Reply, SimJob};

const ROUND_TRIPS: u32 = 100;

fn call(job: &SimJob, rank: u32, op: Op) -> Reply {
    job.call(rank, op).unwrap_or_else(|e| panic!("rank {rank}: {e}"))
}

fn pingpong(job: &SimJob, me: u32, size: u64) -> f64 {
    let peer = 1 - me;
    let Reply::Handle(send) = call(job, me, Op::Malloc { size, mem: MemoryType::Gpu, gpu: 0 }) else { unreachable!() };
    let Reply::Handle(recv) = call(job, me, Op::Malloc { size, mem: MemoryType::Gpu, gpu: 0 }) else { unreachable!() };
    // Exchange receive handles as bytes, as the original programs did with MPI_Allgather.
    let Reply::Gathered(all) = call(job, me, Op::Allgather { bytes: recv.to_bytes().to_vec() }) else { unreachable!() };
    let peer_recv = Handle::from_bytes(&all[peer as usize]).expect("a handle");
    call(job, me, Op::Write { handle: send, offset: 0, bytes: vec![me as u8 + 1; size as usize] });

    let mut desc = Desc::new();
    desc.set_memcpy(&peer_recv, 0, &send, 0, size, DmaFlags::NOTIFY, 0, me).expect("a valid descriptor");
    call(job, me, Op::SetChain { channel: 0, desc: Box::new(desc) });
    call(job, me, Op::Barrier);

    let Reply::Time(start) = call(job, me, Op::Wtime) else { unreachable!() };
    for _ in 0..ROUND_TRIPS {
        if me == 0 {
            call(job, me, Op::StartDma { channel: 0 });
            call(job, me, Op::WaitRecv { handle: peer_recv, slot: 0, tag: peer });
        } else {
            call(job, me, Op::WaitRecv { handle: peer_recv, slot: 0, tag: peer });
            call(job, me, Op::StartDma { channel: 0 });
        }
    }
    let Reply::Time(end) = call(job, me, Op::Wtime) else { unreachable!() };
    let Reply::Bytes(got) = call(job, me, Op::Read { handle: recv, offset: 0, len: size }) else { unreachable!() };
    assert!(got.iter().all(|&b| b == peer as u8 + 1), "the peer's data arrived");
    (end - start).as_us_f64() / ROUND_TRIPS as f64 / 2.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let path = args.next().map(PathBuf::from).unwrap_or_else(|| root.join("platforms/peach2-testbed-2013.toml"));
    let size: u64 = args.next().map_or(8, |s| s.parse().expect("SIZE in bytes"));
    let platform = Platform::load(&path).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let latency = tca_sim::run(&platform, 2, move |job, rank| pingpong(job, rank, size)).expect("2 nodes");
    println!("{}: GPU-GPU DMA ping-pong, {size} B: {:.2} us one way", platform.name, latency[0]);
}
