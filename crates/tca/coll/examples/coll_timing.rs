//! Times the collectives on the simulated HA-PACS/TCA: mean of 50 calls (ITERS) after a warm-up, per
//! node count and size. `cargo run --release -p tca-coll --example coll_timing -- allreduce 8`
//! (op: allreduce, allgather, bcast, reduce, barrier; sizes in bytes).

use std::path::Path;
use tca_coll::{Coll, Config, DataType, Op};
use tca_model::platform::Platform;
use tca_proto::Fabric;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let op = args.first().cloned().unwrap_or_else(|| "allreduce".into());
    let sizes: Vec<usize> = args.iter().skip(1).map(|s| s.parse().expect("a size in bytes")).collect();
    let sizes = if sizes.is_empty() { vec![8] } else { sizes };
    let iters: u32 = std::env::var("ITERS").ok().map_or(50, |s| s.parse().expect("a count"));
    let limit = std::env::var("PIO_LIMIT").ok().map(|s| s.parse::<usize>().expect("bytes"));
    let direct = std::env::var("DIRECT_LIMIT").ok().map(|s| s.parse::<usize>().expect("bytes"));
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/ha-pacs-tca.toml");
    let platform = Platform::load(&path).expect("platform");
    for &size in &sizes {
        for nodes in [2u32, 4, 8, 16] {
            let name = op.clone();
            let t = tca_sim::run(&platform, nodes, move |r| {
                let mut cfg = Config::default();
                if let Some(l) = limit {
                    cfg.pio_limit = l;
                }
                if let Some(d) = direct {
                    cfg.direct_limit = d;
                }
                let mut c = Coll::new(r, cfg).expect("set-up");
                let send = vec![1u8; size];
                let mut recv = vec![0u8; size * nodes as usize];
                let mut once = |c: &mut Coll| match name.as_str() {
                    "allreduce" => c.allreduce(r, &send, &mut recv[..size], DataType::Byte, Op::Sum),
                    "reduce" => c.reduce(r, &send, &mut recv[..size], DataType::Byte, Op::Sum, 0),
                    "allgather" => c.allgather(r, &send, &mut recv),
                    "bcast" => c.bcast(r, &mut recv[..size], 0),
                    "barrier" => c.barrier(r),
                    other => panic!("unknown collective {other}"),
                };
                once(&mut c).expect("warm-up");
                c.barrier(r).unwrap();
                let t0 = r.wtime().unwrap();
                for _ in 0..iters {
                    once(&mut c).expect("collective");
                }
                (r.wtime().unwrap() - t0) / f64::from(iters) * 1e6
            })
            .expect("run");
            let worst = t.iter().copied().fold(0.0, f64::max);
            println!("{op} {size} B {nodes} nodes: {worst:.3} us");
        }
    }
}
