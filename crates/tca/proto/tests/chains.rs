//! Property: any chain of memcpy and 2D entries, run by the engine over the in-test memcpy
//! fabric, leaves every node's memory exactly as a plain sequential memcpy model computed
//! straight from the API arguments, and delivers exactly the notifications the flags ask for.

mod common;

use common::{Cluster, Completion};
use proptest::prelude::*;
use std::collections::BTreeMap;
use tca_proto::{Desc, DmaFlags, WaitStatus};

const NODES: u16 = 3;
/// Bytes of each node's single region.
const REGION: u64 = 16 * 1024;

#[derive(Debug, Clone)]
struct Entry {
    src_node: u16,
    dst_node: u16,
    /// Common low bits of both offsets (the 4-bit alignment rule), a multiple of 4.
    shift: u64,
    src_block: u64,
    dst_block: u64,
    width: u64,
    count: u64,
    src_pitch: u64,
    dst_pitch: u64,
    two_d: bool,
    flags: DmaFlags,
    slot: u32,
    tag: u32,
}

fn entry(proxies: bool) -> impl Strategy<Value = Entry> {
    let src_nodes = if proxies { 0..NODES } else { 0..1 };
    (
        (src_nodes, 0..NODES, 0u64..4, 0u64..700, 0u64..700),
        (1u64..=32, 1u64..=8, 0u64..16, 0u64..8, 0u64..8, any::<bool>()),
        (0u32..64, 0u32..4, 0u32..4),
    )
        .prop_map(
            move |((src_node, dst_node, shift, sb, db), (w, count, extra, bs, bd, two_d), (fl, slot, tag))| {
                let width = 4 * w;
                let base_pitch = width + 4 * extra;
                let mut flags = DmaFlags::from_bits(fl & 0x3d).unwrap();
                if src_node != 0 {
                    // A proxy read's data is written by another node later; without CONTINUE
                    // the chain waits for it, so the sequential model still holds.
                    flags = DmaFlags::from_bits(flags.bits() & !DmaFlags::CONTINUE.bits()).unwrap();
                }
                Entry {
                    src_node,
                    dst_node,
                    shift: 4 * shift,
                    src_block: sb,
                    dst_block: db,
                    width,
                    count: if two_d { count } else { 1 },
                    src_pitch: base_pitch + 16 * bs,
                    dst_pitch: base_pitch + 16 * bd,
                    two_d,
                    flags,
                    slot,
                    tag,
                }
            },
        )
}

fn fill(seed: u64, node: u16, buf: &mut [u8]) {
    let mut x = seed ^ (u64::from(node) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

fn run(entries: &[Entry], seed: u64, completion: Completion) -> Result<(), TestCaseError> {
    let mut c = Cluster::new(NODES, REGION as usize, completion);
    for n in 0..NODES {
        fill(seed, n, c.mem.get_mut(&n).unwrap());
    }
    let handles: Vec<_> = (0..NODES).map(|n| c.handle(n, 0, REGION)).collect();
    let mut model = c.mem.clone();
    let mut expected_notes: BTreeMap<(u16, u16, u32), u32> = BTreeMap::new();

    let mut d = Desc::new();
    for e in entries {
        let (src_off, dst_off) = (16 * e.src_block + e.shift, 16 * e.dst_block + e.shift);
        let (dst, src) = (&handles[e.dst_node as usize], &handles[e.src_node as usize]);
        if e.two_d {
            d.set_memcpy_2d(
                dst,
                dst_off,
                e.dst_pitch,
                src,
                src_off,
                e.src_pitch,
                e.width,
                e.count,
                e.flags,
                e.slot,
                e.tag,
            )
        } else {
            d.set_memcpy(dst, dst_off, src, src_off, e.width, e.flags, e.slot, e.tag)
        }
        .map_err(|err| TestCaseError::fail(format!("{e:?} rejected: {err}")))?;

        // The plain model: burst i copies width bytes at off + i * pitch, in order.
        for i in 0..e.count {
            let s = (src_off + i * if e.count > 1 { e.src_pitch } else { 0 }) as usize;
            let t = (dst_off + i * if e.count > 1 { e.dst_pitch } else { 0 }) as usize;
            let bytes = model[&e.src_node][s..s + e.width as usize].to_vec();
            model.get_mut(&e.dst_node).unwrap()[t..t + e.width as usize].copy_from_slice(&bytes);
        }
        if e.flags.contains(DmaFlags::NOTIFY) {
            *expected_notes.entry((e.dst_node, e.slot as u16, e.tag)).or_default() += 1;
        }
        if e.flags.contains(DmaFlags::NOTIFY_SELF) {
            *expected_notes.entry((0, e.slot as u16, e.tag)).or_default() += 1;
        }
    }

    c.engines[0].set_chain(2, &d).unwrap();
    c.engines[0].handle_start(2).unwrap();
    c.drive();

    prop_assert_eq!(c.engines[0].wait_dma_channel(2), Ok(WaitStatus::Ready));
    for n in 0..NODES {
        prop_assert!(c.mem[&n] == model[&n], "node {} memory differs from the memcpy model", n);
    }
    for n in 0..NODES {
        for slot in 0..64u16 {
            for tag in 0..4u32 {
                let want = expected_notes.get(&(n, slot, tag)).copied().unwrap_or(0);
                prop_assert_eq!(c.engines[n as usize].arrived(0, slot, tag), want);
            }
        }
    }
    let done = c.log.iter().filter(|(_, a)| matches!(a, tca_proto::Action::ChannelDone { channel: 2 })).count();
    prop_assert_eq!(done, 1);
    Ok(())
}

fn completion() -> impl Strategy<Value = Completion> {
    prop_oneof![Just(Completion::Immediate), Just(Completion::Deferred), Just(Completion::Reversed)]
}

proptest! {
    /// Local sources only, any flags (CONTINUE included), any completion order.
    #[test]
    fn local_chains_deliver_the_memcpy_model(
        entries in prop::collection::vec(entry(false), 1..40),
        seed: u64,
        completion in completion(),
    ) {
        run(&entries, seed, completion)?;
    }

    /// Sources on any node: remote ones are read by proxy write.
    #[test]
    fn chains_with_remote_reads_deliver_the_memcpy_model(
        entries in prop::collection::vec(entry(true), 1..20),
        seed: u64,
        completion in completion(),
    ) {
        run(&entries, seed, completion)?;
    }
}
