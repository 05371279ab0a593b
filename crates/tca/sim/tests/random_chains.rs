//! Property: random descriptor chains (contiguous and block-stride entries, local and remote
//! sources) executed on the simulated cluster leave memory exactly as a plain memcpy model does.

use proptest::prelude::*;
use std::path::Path;
use tca_model::platform::Platform;
use tca_proto::{Desc, DmaFlags, Fabric, Handle, MemoryType};

const SRC: u64 = 4096;
const DST: u64 = 16384;

/// One transfer: source node, source offset, block width and count, source pitch, and its
/// destination node. Sizes in 4-byte words.
#[derive(Debug, Clone)]
struct Transfer {
    src_node: u32,
    src_off: u64,
    width: u64,
    count: u64,
    src_pitch_extra: u64,
    dst_node: u32,
}

fn transfer() -> impl Strategy<Value = Transfer> {
    (0u32..2, 0u64..64, 1u64..32, 1u64..4, 0u64..8, 0u32..2).prop_map(
        |(src_node, src_off, width, count, extra, dst_node)| Transfer {
            src_node,
            src_off: src_off * 4,
            width: width * 4,
            count,
            src_pitch_extra: extra * 4,
            dst_node,
        },
    )
}

fn pattern(node: u32) -> Vec<u8> {
    (0..SRC).map(|i| ((i * 31 + node as u64 * 97) % 251) as u8).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn chains_deliver_what_memcpy_would(transfers in proptest::collection::vec(transfer(), 1..6)) {
        // Destinations are laid out one after another so no two overlap; the low 4 address
        // bits of each destination match its source (the TCA constraint).
        let mut next_dst = [0u64; 2];
        let mut plan = Vec::new();
        for t in &transfers {
            let pitch = t.width + t.src_pitch_extra;
            if t.src_off + (t.count - 1) * pitch + t.width > SRC {
                continue;
            }
            let cursor = &mut next_dst[t.dst_node as usize];
            let dst_off = cursor.next_multiple_of(16) + (t.src_off % 16);
            let span = (t.count - 1) * pitch + t.width;
            if dst_off + span > DST {
                continue;
            }
            *cursor = dst_off + span;
            plan.push((t.clone(), dst_off, pitch));
        }
        prop_assume!(!plan.is_empty());
        let platform = Platform::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../platforms/peach2-testbed-2013.toml")).unwrap();
        let plan2 = plan.clone();
        let results = tca_sim::run(&platform, 2, move |r| {
            let rank = r.rank();
            let alloc = |size, mem| r.create_handle(r.malloc(size, mem).unwrap(), size, mem).unwrap();
            let src = alloc(SRC, MemoryType::Cpu);
            let dst = alloc(DST, MemoryType::Gpu);
            r.write(&src, 0, &pattern(rank)).unwrap();
            let mut both = src.to_bytes().to_vec();
            both.extend_from_slice(&dst.to_bytes());
            let all = r.allgather(&both).unwrap();
            let srcs: Vec<Handle> = all.chunks(64).map(|b| Handle::from_bytes(&b[..32]).unwrap()).collect();
            let dsts: Vec<Handle> = all.chunks(64).map(|b| Handle::from_bytes(&b[32..]).unwrap()).collect();
            if rank == 0 {
                let mut d = Desc::new();
                for (t, dst_off, pitch) in &plan2 {
                    let (s, x) = (&srcs[t.src_node as usize], &dsts[t.dst_node as usize]);
                    if t.count == 1 {
                        d.set_memcpy(x, *dst_off, s, t.src_off, t.width, DmaFlags::NONE, 0, 0).unwrap();
                    } else {
                        d.set_memcpy_2d(x, *dst_off, *pitch, s, t.src_off, *pitch, t.width, t.count, DmaFlags::NONE, 0, 0).unwrap();
                    }
                }
                r.desc_set(0, &d).unwrap();
                r.start_dma(0).unwrap();
                r.wait_dmac(0).unwrap();
                // Sent is not landed: give the last writes time to arrive.
                r.compute(50e-6).unwrap();
            }
            r.barrier().unwrap();
            let mut b = vec![0; DST as usize];
            r.read(&dst, 0, &mut b).unwrap();
            b
        }).unwrap();
        let mut expected = vec![vec![0u8; DST as usize]; 2];
        for (t, dst_off, pitch) in &plan {
            let src = pattern(t.src_node);
            for k in 0..t.count {
                let (s, d) = ((t.src_off + k * pitch) as usize, (dst_off + k * pitch) as usize);
                expected[t.dst_node as usize][d..d + t.width as usize].copy_from_slice(&src[s..s + t.width as usize]);
            }
        }
        prop_assert_eq!(&results[0], &expected[0]);
        prop_assert_eq!(&results[1], &expected[1]);
    }
}
