//! DMA ping-pong between two ranks on a simulated platform, in Rust (see
//! examples/python/pingpong.py for the same program in Python).
//!
//!     cargo run --release -p tca-sim --example pingpong -- [PLATFORM.toml] [SIZE]

use std::path::PathBuf;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, FabricResult, Handle, MemoryType};
use tca_sim::SimRank;

const ROUND_TRIPS: u32 = 100;

fn pingpong(r: &SimRank, size: u64) -> FabricResult<f64> {
    let (me, peer) = (r.rank(), 1 - r.rank());
    let alloc = || -> FabricResult<Handle> {
        let addr = r.malloc(size, MemoryType::Gpu)?;
        r.create_handle(addr, size, MemoryType::Gpu)
    };
    let (send, recv) = (alloc()?, alloc()?);
    // Exchange receive handles as bytes, as the original programs did with MPI_Allgather.
    let all = r.allgather(&recv.to_bytes())?;
    let n = recv.to_bytes().len();
    let peer_recv = Handle::from_bytes(&all[peer as usize * n..(peer as usize + 1) * n])?;
    r.write(&send, 0, &vec![me as u8 + 1; size as usize])?;

    let mut desc = Desc::new();
    desc.set_memcpy(&peer_recv, 0, &send, 0, size, DmaFlags::NOTIFY, 0, me)?;
    r.desc_set(0, &desc)?;
    r.barrier()?;

    let start = r.wtime()?;
    for _ in 0..ROUND_TRIPS {
        if me == 0 {
            r.start_dma(0)?;
            r.wait_dma_recv(&peer_recv, 0, peer)?;
        } else {
            r.wait_dma_recv(&peer_recv, 0, peer)?;
            r.start_dma(0)?;
        }
    }
    let end = r.wtime()?;
    let mut got = vec![0; size as usize];
    r.read(&recv, 0, &mut got)?;
    assert!(got.iter().all(|&b| b == peer as u8 + 1), "the peer's data arrived");
    Ok((end - start) * 1e6 / f64::from(ROUND_TRIPS) / 2.0)
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
    let latency = tca_sim::run(&platform, 2, move |r| pingpong(r, size)).expect("2 nodes");
    match &latency[0] {
        Ok(us) => println!("{}: GPU-GPU DMA ping-pong, {size} B: {us:.2} us one way", platform.name),
        Err(e) => {
            eprintln!("pingpong: {e}");
            std::process::exit(1)
        }
    }
}
