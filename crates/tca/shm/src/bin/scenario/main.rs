//! One rank of a test scenario on the shm fabric: `tca-shm-scenario NAME`, started N times by
//! `tca run`, mpirun or the crate's integration tests (which set `TCA_RANK`, `TCA_SIZE`,
//! `TCA_JOB_ID`). Exits 0 when every check of the scenario held on this rank, 1 otherwise,
//! printing what failed.
//!
//! Every scenario uses the fabric only through [`tca_proto::Fabric`], as the C ABI does.
//!
//! Scenarios: `all-calls` (every call, data integrity over sizes, alignments, block-stride,
//! both DMA modes, reads of a peer's memory and PIO, checksummed; calls after finalize),
//! `bad-args` (every bad argument gives its code), `reused-memory` (memory handed out again
//! reads as zero), `stale-handles` (writes through destroyed or freed handles fail on the
//! writer's side), `collective-mismatch` (a failed allgather leaves the job usable),
//! `peer-dies` (rank 1 is killed; the others must fail with PeerDead quickly), `silent-peer`
//! (rank 1 never sends; the others must time out), `shm-full` (an allocation larger than
//! `/dev/shm` fails cleanly), `policy` (prints how waits behave),
//! `shared-channel` (two threads of each rank start and wait on one channel: every kick is
//! run or refused as busy, and every run's notification arrives once), `repeated-runs` (a
//! chain kicked again and again carries fresh bytes and one notification each time; set again,
//! it is replaced; its handles destroyed or freed, it fails), `set-while-running` (a chain
//! started again or set right after its start waits for the run), `shared-copy` (ping-pong of
//! large writes of odd sizes and offsets, whose copies a waiting receiver shares: every byte
//! arrives, and the receivers did share).

use std::process::ExitCode;
use std::time::Instant;
use tca_proto::{Desc, DmaFlags, DmaMode, Fabric, FabricError, Handle, MemoryType, TcaError, HANDLE_BYTES};
use tca_shm::ShmFabric;

mod stalls;

type Check = Result<(), String>;

/// The error code of a result, for comparisons (the detail line is for people).
trait Code<T> {
    fn code(self) -> Result<T, TcaError>;
}

impl<T> Code<T> for Result<T, FabricError> {
    fn code(self) -> Result<T, TcaError> {
        self.map_err(|e| e.error)
    }
}

impl<T> Code<T> for Result<T, TcaError> {
    fn code(self) -> Result<T, TcaError> {
        self
    }
}

fn ck<T: std::fmt::Debug>(what: &str, got: impl Code<T>, want: TcaError) -> Check {
    match got.code() {
        Err(e) if e == want => Ok(()),
        other => Err(format!("{what}: expected {want:?}, got {other:?}")),
    }
}

fn ok<T>(what: &str, r: impl Code<T>) -> Result<T, String> {
    r.code().map_err(|e| format!("{what}: {e:?} ({e})"))
}

/// A deterministic payload: byte i of (seed) is a hash of both.
fn fill(buf: &mut [u8], seed: u64) {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

/// Fletcher-style checksum of a byte range.
fn checksum(buf: &[u8]) -> u64 {
    let (mut a, mut b) = (1u64, 0u64);
    for &x in buf {
        a = (a + u64::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

fn exchange(f: &dyn Fabric, h: &Handle) -> Result<Vec<Handle>, String> {
    let all = ok("allgather", f.allgather(&h.to_bytes()))?;
    all.chunks(HANDLE_BYTES).map(|c| ok("handle from bytes", Handle::from_bytes(c))).collect()
}

/// The whole buffer of one of this rank's handles.
fn contents(f: &dyn Fabric, h: &Handle) -> Result<Vec<u8>, String> {
    let mut v = vec![0u8; h.size as usize];
    ok("read", f.read(h, 0, &mut v))?;
    Ok(v)
}

/// Fills `len` bytes at `off` of an own buffer with the payload of `seed`.
fn fill_at(f: &dyn Fabric, h: &Handle, off: u64, len: u64, seed: u64) -> Check {
    let mut v = vec![0u8; len as usize];
    fill(&mut v, seed);
    ok("write", f.write(h, off, &v))
}

fn me_n(f: &dyn Fabric) -> Result<(u16, u16), String> {
    Ok((ok("node id", f.node_id())?, ok("node count", f.node_count())?))
}

const BUF: u64 = 1 << 20;

/// An own buffer of `size` bytes and its handle.
fn buffer(f: &dyn Fabric, size: u64, mem: MemoryType) -> Result<(u64, Handle), String> {
    let p = ok("malloc", f.malloc(size, mem))?;
    Ok((p, ok("create handle", f.create_handle(p, size, mem))?))
}

fn all_calls(f: &dyn Fabric) -> Check {
    let (me, n) = me_n(f)?;
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    let (src_p, src) = buffer(f, BUF, MemoryType::Cpu)?;
    let (dst_p, dst) = buffer(f, BUF, MemoryType::Gpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    if dsts[me as usize] != dst || srcs[me as usize] != src {
        return Err("allgather returned another handle for this rank".into());
    }
    dma_sizes_and_modes(f, &src, &dst, &dsts[next as usize], &srcs[prev as usize])?;
    dma_long_chain(f, &src, &dst, &dsts[next as usize], &srcs[prev as usize])?;
    dma_proxy_reads(f, &src, &dst, &srcs[prev as usize])?;
    ok("zero flag", f.write(&dst, 0, &[0; 4]))?;
    ok("barrier", f.barrier())?;
    pio_round_trips(f, &dst, &dsts[next as usize], prev)?;
    ok("destroy", f.destroy_handle(&src))?;
    ck("destroy twice", f.destroy_handle(&src), TcaError::InvalidHandle)?;
    ok("destroy dst", f.destroy_handle(&dst))?;
    ok("free", f.free(src_p))?;
    ok("free", f.free(dst_p))?;
    ok("barrier", f.barrier())?;
    let pio = ok("pio region", f.set_pio_region(&dsts[next as usize], 0, 64));
    ok("finalize", f.finalize())?;
    after_finalize(f, pio.ok())
}

/// Every call after tcaFinalize fails with NotInitialized.
fn after_finalize(f: &dyn Fabric, pio: Option<tca_proto::PioRegion>) -> Check {
    let nope = TcaError::NotInitialized;
    ck("malloc after finalize", f.malloc(64, MemoryType::Cpu), nope)?;
    ck("node id after finalize", f.node_id(), nope)?;
    ck("node count after finalize", f.node_count(), nope)?;
    ck("commit after finalize", f.send_pio_commit(), nope)?;
    if let Some(pio) = pio {
        ck("send pio after finalize", f.send_pio(&pio, 0, &[1, 2, 3, 4]), nope)?;
    }
    ck("barrier after finalize", f.barrier(), nope)?;
    ck("finalize twice", f.finalize(), nope)
}

/// Contiguous DMA over sizes and alignments, both modes, into the next rank.
fn dma_sizes_and_modes(f: &dyn Fabric, src: &Handle, dst: &Handle, next_dst: &Handle, prev_src: &Handle) -> Check {
    let me = ok("node id", f.node_id())?;
    let prev = prev_src.node;
    let mut round = 0u32;
    for &size in &[4u64, 8, 60, 64, 256, 4096, 65_536 + 12, 1 << 19] {
        for &align in &[0u64, 4, 16 + 8, 1000] {
            for mode in [DmaMode::Register, DmaMode::Chaining] {
                round += 1;
                fill_at(f, src, align, size, u64::from(round) << 8 | u64::from(me))?;
                let mut d = Desc::new();
                ok("mode", d.set_mode(Some(mode)))?;
                ok("set_memcpy", d.set_memcpy(next_dst, align, src, align, size, DmaFlags::NOTIFY, 1, round))?;
                ok("desc_set", f.desc_set(0, &d))?;
                ok("start", f.start_dma(0))?;
                ok("wait channel", f.wait_dmac(0))?;
                ok("wait recv", f.wait_dma_recv(prev_src, 1, round))?;
                let mut want = vec![0u8; size as usize];
                fill(&mut want, u64::from(round) << 8 | u64::from(prev));
                let mut got = vec![0u8; size as usize];
                ok("read", f.read(dst, align, &mut got))?;
                if checksum(&got) != checksum(&want) || got != want {
                    return Err(format!("DMA {size} B at +{align} ({mode:?}) corrupted"));
                }
                ok("barrier", f.barrier())?;
            }
        }
    }
    Ok(())
}

/// A chain of 40 entries (chaining mode, descriptor fetches), each with its own tag, plus a
/// block-stride entry; NOTIFY_SELF on the last.
fn dma_long_chain(f: &dyn Fabric, src: &Handle, dst: &Handle, next_dst: &Handle, prev_src: &Handle) -> Check {
    let me = ok("node id", f.node_id())?;
    fill_at(f, src, 0, BUF, 7_000 + u64::from(me))?;
    let mut d = Desc::new();
    for i in 0..40u64 {
        let flags = if i % 2 == 0 { DmaFlags::CONTINUE } else { DmaFlags::NOTIFY };
        ok("chain entry", d.set_memcpy(next_dst, i * 1024, src, i * 1024, 1000, flags, 2, i as u32))?;
    }
    // 64 bursts of 48 bytes, source pitch 128, destination pitch 64 (rows of a 2D array).
    let flags = DmaFlags::NOTIFY | DmaFlags::NOTIFY_SELF;
    ok("2d", d.set_memcpy_2d(next_dst, 768 * 1024, 64, src, 256 * 1024, 128, 48, 64, flags, 3, 99))?;
    if d.mode() != DmaMode::Chaining {
        return Err("41 entries should be chaining mode".into());
    }
    ok("desc_set 41", f.desc_set(2, &d))?;
    ok("start 41", f.start_dma(2))?;
    ok("self notify", f.wait_dma_recv(dst, 3, 99))?;
    ok("wait ch2", f.wait_dmac(2))?;
    for i in (1..40u32).step_by(2) {
        ok("chain notify", f.wait_dma_recv(prev_src, 2, i))?;
    }
    ok("2d notify", f.wait_dma_recv(prev_src, 3, 99))?;
    let mut want = vec![0u8; BUF as usize];
    fill(&mut want, 7_000 + u64::from(prev_src.node));
    let got = contents(f, dst)?;
    for i in 0..40usize {
        let r = i * 1024..i * 1024 + 1000;
        if got[r.clone()] != want[r] {
            return Err(format!("chain entry {i} corrupted"));
        }
    }
    for row in 0..64usize {
        if got[768 * 1024 + row * 64..][..48] != want[256 * 1024 + row * 128..][..48] {
            return Err(format!("block-stride row {row} corrupted"));
        }
        if got[768 * 1024 + row * 64 + 48..][..16] != [0u8; 16][..] && row < 63 {
            // The gap bytes were never written (zero-filled segment).
            return Err(format!("block-stride gap after row {row} written"));
        }
    }
    Ok(())
}

/// Reads of the previous rank's memory (proxy write, seed 000 §3.5): contiguous and
/// block-stride, into this rank's buffer, NOTIFY_SELF.
fn dma_proxy_reads(f: &dyn Fabric, src: &Handle, dst: &Handle, prev_src: &Handle) -> Check {
    let me = ok("node id", f.node_id())?;
    ok("barrier", f.barrier())?;
    fill_at(f, src, 0, BUF, 9_000 + u64::from(me))?;
    ok("barrier", f.barrier())?;
    let mut d = Desc::new();
    ok("read", d.set_memcpy(dst, 4096, prev_src, 8192, 65_536, DmaFlags::NONE, 0, 0))?;
    ok("read 2d", d.set_memcpy_2d(dst, 128 * 1024, 32, prev_src, 0, 96, 32, 100, DmaFlags::NOTIFY_SELF, 4, 7))?;
    ok("read chain", f.desc_set(1, &d))?;
    ok("read start", f.start_dma(1))?;
    ok("read wait", f.wait_dmac(1))?;
    ok("read notify", f.wait_dma_recv(dst, 4, 7))?;
    let mut want = vec![0u8; BUF as usize];
    fill(&mut want, 9_000 + u64::from(prev_src.node));
    let got = contents(f, dst)?;
    if got[4096..4096 + 65_536] != want[8192..8192 + 65_536] {
        return Err("proxy read corrupted".into());
    }
    for row in 0..100usize {
        if got[128 * 1024 + row * 32..][..32] != want[row * 96..][..32] {
            return Err(format!("block-stride proxy read row {row} corrupted"));
        }
    }
    Ok(())
}

/// PIO: payload then a flag word, each committed, into the next rank; poll our own flag.
fn pio_round_trips(f: &dyn Fabric, dst: &Handle, next_dst: &Handle, prev: u16) -> Check {
    let me = ok("node id", f.node_id())?;
    let pio = ok("pio region", f.set_pio_region(next_dst, 0, 4096))?;
    for (k, &size) in [4usize, 8, 100, 2048].iter().enumerate() {
        let mut payload = vec![0u8; size];
        fill(&mut payload, 31 * k as u64 + u64::from(me));
        ok("send pio", f.send_pio(&pio, 8, &payload))?;
        ok("commit", f.send_pio_commit())?;
        ok("send pio flag", f.send_pio(&pio, 0, &(k as u32 + 1).to_le_bytes()))?;
        ok("commit", f.send_pio_commit())?;
        ok("wait pio", f.wait_pio(dst, 0, &(k as u32 + 1).to_le_bytes(), Some(prev)))?;
        let mut want = vec![0u8; size];
        fill(&mut want, 31 * k as u64 + u64::from(prev));
        let mut got = vec![0u8; size];
        ok("read", f.read(dst, 8, &mut got))?;
        if got != want {
            return Err(format!("PIO {size} B corrupted"));
        }
        ok("barrier", f.barrier())?;
    }
    Ok(())
}

fn bad_args(f: &dyn Fabric) -> Check {
    let (me, n) = me_n(f)?;
    let (p, h) = buffer(f, 4096, MemoryType::Cpu)?;
    let all = exchange(f, &h)?;
    let peer = all[((me + 1) % n) as usize];
    ck("malloc 0", f.malloc(0, MemoryType::Cpu), TcaError::ZeroSize)?;
    ck("malloc huge", f.malloc(1 << 45, MemoryType::Cpu), TcaError::OutOfMemory)?;
    let stack = [0u8; 64];
    let stack_addr = stack.as_ptr() as u64;
    ck("handle of stack memory", f.create_handle(stack_addr, 64, MemoryType::Cpu), TcaError::InvalidHandle)?;
    ck("handle past block", f.create_handle(p, 8192, MemoryType::Cpu), TcaError::InvalidHandle)?;
    ck("free stack", f.free(stack_addr), TcaError::InvalidHandle)?;
    ck("free inside block", f.free(p + 64), TcaError::InvalidHandle)?;
    let mut d = Desc::new();
    ck("odd size", d.set_memcpy(&peer, 0, &h, 0, 6, DmaFlags::NONE, 0, 0), TcaError::SizeNotMultipleOf4)?;
    ck("misaligned", d.set_memcpy(&peer, 4, &h, 0, 8, DmaFlags::NONE, 0, 0), TcaError::AlignmentMismatch)?;
    ck("out of bounds", d.set_memcpy(&peer, 4000, &h, 4000, 128, DmaFlags::NONE, 0, 0), TcaError::OutOfBounds)?;
    ck("bad slot", d.set_memcpy(&peer, 0, &h, 0, 8, DmaFlags::NONE, 64, 0), TcaError::InvalidSlot)?;
    let bad_flags = d.set_memcpy(&peer, 0, &h, 0, 8, DmaFlags::USE_NOTIFY_INTERNAL, 0, 0);
    ck("bad flags", bad_flags, TcaError::InvalidFlagCombination)?;
    ck("empty chain", f.desc_set(0, &d), TcaError::InvalidDescriptor)?;
    ck("start unset", f.start_dma(1), TcaError::ChannelNotSet)?;
    ck("bad channel", f.start_dma(4), TcaError::InvalidChannel)?;
    ck("bad channel wait", f.wait_dmac(9), TcaError::InvalidChannel)?;
    // A forged handle pointing at the peer's segment header.
    let forged = Handle { addr: peer.addr & !((1 << 40) - 1), ..peer };
    let mut d2 = Desc::new();
    ok("forged set", d2.set_memcpy(&forged, 0, &h, 0, 64, DmaFlags::NONE, 0, 0))?;
    ck("forged handle", f.desc_set(0, &d2), TcaError::InvalidHandle)?;
    ck("forged pio", f.set_pio_region(&forged, 0, 64), TcaError::InvalidHandle)?;
    // A forged size on a live id: not the handle the owner registered.
    let bigger = Handle { size: 8192, ..peer };
    ck("forged size pio", f.set_pio_region(&bigger, 4096, 64), TcaError::InvalidHandle)?;
    let mut bytes = h.to_bytes();
    bytes[0] = b'X';
    ck("bad bytes", Handle::from_bytes(&bytes), TcaError::InvalidHandle)?;
    let pio = ok("pio", f.set_pio_region(&peer, 0, 64))?;
    ck("pio odd", f.send_pio(&pio, 0, &[1, 2, 3]), TcaError::SizeNotMultipleOf4)?;
    ck("pio past", f.send_pio(&pio, 64, &[0; 4]), TcaError::OutOfBounds)?;
    ck("pio window", f.set_pio_region(&peer, 4090, 64), TcaError::OutOfBounds)?;
    ck("wait foreign", f.wait_pio(&peer, 0, &[1, 0, 0, 0], Some(0)), TcaError::InvalidHandle)?;
    ck("wait odd offset", f.wait_pio(&h, 2, &[1, 0, 0, 0], Some(0)), TcaError::AlignmentMismatch)?;
    ck("wait odd length", f.wait_pio(&h, 0, &[1, 0, 0], None), TcaError::SizeNotMultipleOf4)?;
    ck("wait nothing", f.wait_pio(&h, 0, &[], None), TcaError::ZeroSize)?;
    ck("recv bad slot", f.wait_dma_recv(&peer, 64, 0), TcaError::InvalidSlot)?;
    ck("write to a peer", f.write(&peer, 0, &[0; 4]), TcaError::InvalidHandle)?;
    ck("read past", f.read(&h, 4090, &mut [0; 8]), TcaError::OutOfBounds)?;
    ck("gather too big", f.allgather(&vec![0; 70_000]), TcaError::TooLarge)?;
    ok("barrier after a failed gather", f.barrier())?;
    // A read of a peer's memory (proxy write) whose source the peer destroyed after this
    // rank set the chain: refused at the kick.
    let (_, hq) = buffer(f, 4096, MemoryType::Cpu)?;
    let qs = exchange(f, &hq)?;
    let mut d5 = Desc::new();
    ok("read set", d5.set_memcpy(&h, 0, &qs[((me + 1) % n) as usize], 0, 64, DmaFlags::NONE, 0, 0))?;
    ok("read chain", f.desc_set(1, &d5))?;
    ok("barrier", f.barrier())?;
    ok("destroy q", f.destroy_handle(&hq))?;
    ok("barrier", f.barrier())?;
    ck("read of a destroyed handle", f.start_dma(1), TcaError::InvalidHandle)?;
    ok("destroy", f.destroy_handle(&h))?;
    let mut d4 = Desc::new();
    ok("dead src", d4.set_memcpy(&peer, 0, &h, 0, 64, DmaFlags::NONE, 0, 0))?;
    ck("destroyed handle", f.desc_set(0, &d4), TcaError::InvalidHandle)?;
    ok("barrier", f.barrier())
}

/// Writes through a peer's handle after the peer destroyed it, or freed its memory, fail on
/// the writer's side, and the owner's next allocation at the same address stays untouched;
/// the same for this rank's own handle used as a DMA source after tcaFree.
fn stale_handles(f: &dyn Fabric) -> Check {
    let (me, n) = me_n(f)?;
    let next = ((me + 1) % n) as usize;
    let (p, h) = buffer(f, 4096, MemoryType::Cpu)?;
    let (q, hq) = buffer(f, 4096, MemoryType::Cpu)?;
    let (_, mine) = buffer(f, 4096, MemoryType::Cpu)?;
    let peers = exchange(f, &h)?;
    let peers_q = exchange(f, &hq)?;
    // Set up every write while the handles live.
    let pio = ok("pio region", f.set_pio_region(&peers[next], 0, 4096))?;
    let pio_q = ok("pio region q", f.set_pio_region(&peers_q[next], 0, 4096))?;
    let mut d = Desc::new();
    ok("set", d.set_memcpy(&peers[next], 0, &mine, 0, 4096, DmaFlags::NONE, 0, 0))?;
    ok("desc_set", f.desc_set(0, &d))?;
    let mut dq = Desc::new();
    ok("set q", dq.set_memcpy(&peers_q[next], 0, &mine, 0, 4096, DmaFlags::NONE, 0, 0))?;
    ok("desc_set q", f.desc_set(1, &dq))?;
    ok("pio while live", f.send_pio(&pio, 0, &[7; 8]))?;
    ok("barrier", f.barrier())?;
    // The owners destroy h (keeping its memory) and free q's memory without destroying hq,
    // then allocate again: the first-fit heap hands out q's address once more.
    ok("destroy", f.destroy_handle(&h))?;
    ok("free q", f.free(q))?;
    let (q2, hq2) = buffer(f, 4096, MemoryType::Cpu)?;
    if q2 != q {
        return Err(format!("the heap did not reuse the freed block ({q:#x} then {q2:#x})"));
    }
    ok("fill", f.write(&hq2, 0, &[0x5a; 4096]))?;
    ok("barrier", f.barrier())?;
    let invalid = TcaError::InvalidHandle;
    ck("PIO through a destroyed handle", f.send_pio(&pio, 0, &[1; 8]), invalid)?;
    ck("PIO through a freed handle", f.send_pio(&pio_q, 0, &[1; 8]), invalid)?;
    ck("DMA into a destroyed handle", f.start_dma(0), invalid)?;
    ck("DMA into a freed handle", f.start_dma(1), invalid)?;
    ck("new region on a destroyed handle", f.set_pio_region(&peers[next], 0, 64), invalid)?;
    ck("destroy after free", f.destroy_handle(&hq), invalid)?;
    // This rank's own handle as a DMA source after tcaFree.
    let (s, hs) = buffer(f, 4096, MemoryType::Cpu)?;
    let live = exchange(f, &hq2)?;
    let mut ds = Desc::new();
    ok("set own", ds.set_memcpy(&live[next], 0, &hs, 0, 64, DmaFlags::NONE, 0, 0))?;
    ok("desc_set own", f.desc_set(2, &ds))?;
    ok("free own", f.free(s))?;
    ck("DMA from a freed own handle", f.start_dma(2), invalid)?;
    ok("barrier", f.barrier())?;
    // Nothing reached the new allocation.
    if contents(f, &hq2)? != vec![0x5a; 4096] {
        return Err("a write through a stale handle reached the new allocation".into());
    }
    if contents(f, &h).is_ok() {
        return Err("read through a destroyed own handle succeeded".into());
    }
    ok("barrier", f.barrier())?;
    let _ = p;
    Ok(())
}

/// Ranks pass different lengths to allgather: it fails on every rank, and the next
/// collectives work.
fn collective_mismatch(f: &dyn Fabric) -> Check {
    let (me, n) = me_n(f)?;
    let mine = vec![me as u8; 8 + 4 * me as usize];
    ck("allgather of different lengths", f.allgather(&mine), TcaError::OutOfBounds)?;
    ok("barrier after a failed allgather", f.barrier())?;
    let all = ok("allgather after a failed one", f.allgather(&[me as u8; 4]))?;
    let want: Vec<u8> = (0..n).flat_map(|r| [r as u8; 4]).collect();
    if all != want {
        return Err(format!("allgather after a failed one gave {all:?}"));
    }
    // One rank passes more than the bootstrap buffer holds.
    let big = if me == 0 { vec![0; 70_000] } else { vec![0; 8] };
    let want = if me == 0 { TcaError::TooLarge } else { TcaError::OutOfBounds };
    ck("allgather with one rank too large", f.allgather(&big), want)?;
    ok("barrier", f.barrier())
}

/// Bytes free in /dev/shm.
fn shm_free() -> u64 {
    // SAFETY: statvfs fills the zeroed struct; the path is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c"/dev/shm".as_ptr(), &mut st) != 0 {
            return 0;
        }
        st.f_bavail as u64 * st.f_frsize as u64
    }
}

/// Run with a heap larger than /dev/shm (TCA_SHM_BYTES): an allocation that does not fit is
/// OutOfMemory at tcaMalloc, not a SIGBUS at the first store.
fn shm_full(f: &ShmFabric) -> Check {
    let too_big = shm_free() + (1 << 30);
    if f.config().heap_bytes < too_big {
        return Err(format!("heap {} B is not above /dev/shm's free {} B", f.config().heap_bytes, too_big));
    }
    ck("malloc beyond /dev/shm", f.malloc(too_big, MemoryType::Cpu), TcaError::OutOfMemory)?;
    let (p, h) = buffer(f, 1 << 20, MemoryType::Cpu)?;
    ok("write", f.write(&h, 0, &vec![0xab; 1 << 20]))?;
    ok("free", f.free(p))
}

/// Memory handed out again reads as zero, as fresh memory does: blocks of a few bytes, of pages
/// and a part, of many pages (given back to /dev/shm), and a replaced descriptor table.
fn reused_memory(f: &dyn Fabric) -> Check {
    let zero = |h: &Handle, what: &str| -> Check {
        let dirty = contents(f, h)?.iter().filter(|&&b| b != 0).count();
        if dirty != 0 {
            return Err(format!("{what}: {dirty} of {} bytes are not zero", h.size));
        }
        Ok(())
    };
    for size in [200u64, 3 * 4096 + 100, 4 << 20] {
        for mem in [MemoryType::Cpu, MemoryType::Gpu] {
            let what = format!("{size} B of {mem:?} memory");
            let (p, h) = buffer(f, size, mem)?;
            zero(&h, &format!("{what}, fresh"))?;
            ok("write", f.write(&h, 0, &vec![0x77; size as usize]))?;
            ok("free", f.free(p))?;
            let (again, h) = buffer(f, size, mem)?;
            if again != p {
                return Err(format!("{what}: allocated at {again:#x} after {p:#x} was freed"));
            }
            zero(&h, &format!("{what}, handed out again"))?;
            ok("free", f.free(again))?;
        }
    }
    let (_, buf) = buffer(f, 4096, MemoryType::Cpu)?;
    let mut chain = Desc::new();
    ok("mode", chain.set_mode(Some(DmaMode::Chaining)))?;
    for i in 1..64 {
        ok("set_memcpy", chain.set_memcpy(&buf, 64 * i, &buf, 0, 64, DmaFlags::NONE, 0, 0))?;
    }
    ok("desc_set", f.desc_set(0, &chain))?;
    let mut single = Desc::new();
    ok("set_memcpy", single.set_memcpy(&buf, 64, &buf, 0, 64, DmaFlags::NONE, 0, 0))?;
    // The register-mode chain replaces the table, which goes back to the heap.
    ok("desc_set again", f.desc_set(0, &single))?;
    let (_, h) = buffer(f, 63 * 32, MemoryType::Cpu)?;
    zero(&h, "the memory of a replaced descriptor table")?;
    ok("finalize", f.finalize())
}

fn peer_dies(f: &dyn Fabric) -> Check {
    let (_, h) = buffer(f, 4096, MemoryType::Cpu)?;
    let all = exchange(f, &h)?;
    let me = ok("node id", f.node_id())?;
    if me == 1 {
        // SAFETY: raise is async-signal-safe; the process ends here, as a crash would.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let t = Instant::now();
    let r = f.wait_dma_recv(&all[1], 0, 1);
    let ms = t.elapsed().as_millis();
    println!("rank {me}: wait for dead rank 1 -> {:?} after {ms} ms", r.clone().code());
    ck("wait for dead peer", r, TcaError::PeerDead)?;
    if ms > 3000 {
        return Err(format!("dead peer noticed only after {ms} ms"));
    }
    // A read of the dead rank's memory fails too, at once.
    let mut d = Desc::new();
    ok("read set", d.set_memcpy(&h, 0, &all[1], 0, 64, DmaFlags::NONE, 0, 0))?;
    ok("read chain", f.desc_set(0, &d))?;
    ck("read from dead peer", f.start_dma(0), TcaError::PeerDead)
}

fn silent_peer(f: &ShmFabric) -> Check {
    let (_, h) = buffer(f, 4096, MemoryType::Cpu)?;
    let all = exchange(f, &h)?;
    let me = ok("node id", f.node_id())?;
    if me == 1 {
        // Alive but never sends: stay until the others gave up.
        std::thread::sleep(f.config().timeout * 3);
        return Ok(());
    }
    let t = Instant::now();
    let r = f.wait_dma_recv(&all[1], 0, 1);
    println!("rank {me}: wait for silent rank 1 -> {:?} after {:?}", r.clone().code(), t.elapsed());
    ck("wait for silent peer", r, TcaError::Timeout)
}

fn policy(f: &ShmFabric) -> Check {
    let p = f.policy();
    println!(
        "rank {}: cpus={} oversubscribed={} spin_us={}",
        f.config().rank,
        p.cpus,
        p.oversubscribed,
        p.spin.as_micros()
    );
    ok("barrier", f.barrier())
}

/// Two threads start and wait on channel 0 at once (an 8-byte run to the next rank, which a
/// caller carries out alone); the next rank then consumes exactly the runs counted.
fn shared_channel(f: &ShmFabric) -> Check {
    // Both threads together kick fewer runs than a notification ring holds: the next rank
    // consumes none until it has kicked its own.
    const KICKS: u32 = 400;
    let (me, n) = me_n(f)?;
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let (_, src) = buffer(f, 64, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, 64, MemoryType::Cpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    ok("fill", f.write(&src, 0, &u64::from(me + 1).to_le_bytes()))?;
    let mut d = Desc::new();
    ok("set_memcpy", d.set_memcpy(&dsts[next as usize], 0, &src, 0, 8, DmaFlags::NOTIFY, 3, 77))?;
    ok("desc_set", f.desc_set(0, &d))?;
    ok("barrier", f.barrier())?;
    let kicker = || -> Result<u32, String> {
        let mut runs = 0;
        for _ in 0..KICKS {
            match f.start_dma(0).code() {
                Ok(()) => runs += 1,
                Err(TcaError::ChannelBusy) => {}
                Err(e) => return Err(format!("start: {e:?}")),
            }
            ok("wait channel", f.wait_dmac(0))?;
        }
        Ok(runs)
    };
    let (a, b) = std::thread::scope(|s| {
        let t = s.spawn(kicker);
        let b = kicker();
        (t.join().unwrap_or_else(|_| Err("thread panicked".into())), b)
    });
    let runs = a? + b?;
    if runs < KICKS {
        return Err(format!("only {runs} of {} kicks ran", 2 * KICKS));
    }
    let counts = ok("allgather", f.allgather(&runs.to_le_bytes()))?;
    let from_prev = u32::from_le_bytes(counts[prev as usize * 4..][..4].try_into().unwrap_or_default());
    for i in 0..from_prev {
        ok(&format!("notification {i} of {from_prev}"), f.wait_dma_recv(&srcs[prev as usize], 3, 77))?;
    }
    let mut got = [0u8; 8];
    ok("read", f.read(&dst, 0, &mut got))?;
    if u64::from_le_bytes(got) != u64::from(prev + 1) {
        return Err(format!("payload {got:?} from rank {prev}"));
    }
    ok("barrier", f.barrier())?;
    ok("finalize", f.finalize())
}

/// A chain set once and kicked again and again (repeated without the engine,
/// `tca_shm::replay`): every run carries the source's bytes of that moment and one
/// notification; a chain set again replaces the repeated run; a run into a handle its owner
/// destroyed since, or from a freed own handle, fails as a first run would.
fn repeated_runs(f: &dyn Fabric) -> Check {
    let (me, n) = me_n(f)?;
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let (_, src) = buffer(f, 4096, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, 4096, MemoryType::Cpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    let from_prev = &srcs[prev as usize];
    let arrived = |off: u64, seed: u64, what: &str| -> Check {
        let mut want = vec![0u8; 64];
        fill(&mut want, seed << 8 | u64::from(prev));
        let mut got = vec![0u8; 64];
        ok("read", f.read(&dst, off, &mut got))?;
        if got != want {
            return Err(format!("{what}: the payload of rank {prev} did not arrive"));
        }
        Ok(())
    };
    for mode in [DmaMode::Register, DmaMode::Chaining] {
        let mut d = Desc::new();
        ok("mode", d.set_mode(Some(mode)))?;
        ok("set_memcpy", d.set_memcpy(&dsts[next as usize], 0, &src, 0, 64, DmaFlags::NOTIFY, 2, 9))?;
        ok("desc_set", f.desc_set(1, &d))?;
        for round in 0..50u64 {
            fill_at(f, &src, 0, 64, round << 8 | u64::from(me))?;
            ok("start", f.start_dma(1))?;
            ok("wait channel", f.wait_dmac(1))?;
            ok("wait recv", f.wait_dma_recv(from_prev, 2, 9))?;
            arrived(0, round, &format!("{mode:?} run {round}"))?;
            // The next fill must not reach the previous rank before it has checked.
            ok("barrier", f.barrier())?;
        }
    }
    // No notification is left over: one run, one notification (the test sets a short
    // timeout).
    ck("no extra notification", f.wait_dma_recv(from_prev, 2, 9), TcaError::Timeout)?;
    // Another chain on the channel: its own offset and tag.
    let mut d = Desc::new();
    ok("set_memcpy", d.set_memcpy(&dsts[next as usize], 128, &src, 0, 64, DmaFlags::NOTIFY, 2, 10))?;
    ok("desc_set again", f.desc_set(1, &d))?;
    fill_at(f, &src, 0, 64, 77 << 8 | u64::from(me))?;
    ok("start new chain", f.start_dma(1))?;
    ok("wait channel", f.wait_dmac(1))?;
    ok("wait recv new tag", f.wait_dma_recv(from_prev, 2, 10))?;
    arrived(128, 77, "the chain set again")?;
    ok("start new chain again", f.start_dma(1))?;
    ok("wait recv new tag again", f.wait_dma_recv(from_prev, 2, 10))?;
    ok("barrier", f.barrier())?;
    // The destination's owner destroys it; this rank's own source is freed on channel 2.
    ok("destroy", f.destroy_handle(&dst))?;
    let (s2, h2) = buffer(f, 64, MemoryType::Cpu)?;
    ok("barrier", f.barrier())?;
    ck("repeat into a destroyed handle", f.start_dma(1), TcaError::InvalidHandle)?;
    let mut d3 = Desc::new();
    let (_, live) = buffer(f, 64, MemoryType::Cpu)?;
    let lives = exchange(f, &live)?;
    ok("set_memcpy", d3.set_memcpy(&lives[next as usize], 0, &h2, 0, 64, DmaFlags::NONE, 0, 0))?;
    ok("desc_set", f.desc_set(2, &d3))?;
    ok("start", f.start_dma(2))?;
    ok("wait channel", f.wait_dmac(2))?;
    ok("free own source", f.free(s2))?;
    ck("repeat from a freed own handle", f.start_dma(2), TcaError::InvalidHandle)?;
    ok("barrier", f.barrier())
}

/// Each rank sets a chain that reads 1 MiB from the previous rank (a proxy read: the run waits
/// for that rank's driver) on channel 0, starts it twice, and at once, the run in flight, sets
/// a 4 KiB chain to the next rank on the same channel: each must succeed once the run before
/// it is over; both chains' data must arrive.
fn set_while_running(f: &dyn Fabric) -> Check {
    const BIG: u64 = 1 << 20;
    const SMALL: u64 = 4096;
    let (me, n) = me_n(f)?;
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let (_, src) = buffer(f, BIG + SMALL, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, BIG + SMALL, MemoryType::Gpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    let seed = |rank: u16, round: u32| u64::from(rank) << 32 | u64::from(round);
    for round in 0..8u32 {
        fill_at(f, &src, 0, BIG + SMALL, seed(me, round))?;
        ok("barrier", f.barrier())?;
        let (mut read, mut write) = (Desc::new(), Desc::new());
        let flags = DmaFlags::NOTIFY;
        ok("set_memcpy", read.set_memcpy(&dst, 0, &srcs[prev as usize], 0, BIG, DmaFlags::NONE, 0, 0))?;
        ok("set_memcpy", write.set_memcpy(&dsts[next as usize], BIG, &src, BIG, SMALL, flags, 2, round))?;
        ok("desc_set", f.desc_set(0, &read))?;
        ok("start", f.start_dma(0))?;
        ok("start again while the channel runs", f.start_dma(0))?;
        ok("desc_set while the channel runs", f.desc_set(0, &write))?;
        ok("start the second chain", f.start_dma(0))?;
        ok("wait channel", f.wait_dmac(0))?;
        ok("notification of the second chain", f.wait_dma_recv(&srcs[prev as usize], 2, round))?;
        let mut want = vec![0u8; (BIG + SMALL) as usize];
        fill(&mut want, seed(prev, round));
        if contents(f, &dst)? != want {
            return Err(format!("round {round}: the data from rank {prev} differ"));
        }
        // Nobody refills a source before its readers are done.
        ok("barrier", f.barrier())?;
    }
    ok("finalize", f.finalize())
}

/// Ranks 2k and 2k+1 ping-pong writes from 32 KiB to 1 MiB plus a few bytes, at offsets that
/// are not multiples of 64, each with a notification the receiver waits for (so a spinning
/// receiver copies a share of each, `tca_shm::shared_copy`); every payload is checked. With
/// spinning waits, the receivers must have copied shares.
fn shared_copy(f: &ShmFabric) -> Check {
    const MAX: u64 = (1 << 20) + 4096;
    let (me, n) = me_n(f)?;
    let peer = me ^ 1;
    let (_, src) = buffer(f, MAX, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, MAX, MemoryType::Gpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    if peer < n {
        let mut round = 0u32;
        for (len, off) in [(32 << 10, 0), ((32 << 10) + 4, 12), (100_000, 36), ((1 << 20) + 68, 1000)] {
            for _ in 0..8 {
                round += 1;
                let seed = u64::from(round) << 16 | u64::from(me);
                fill_at(f, &src, off, len, seed)?;
                let mut d = Desc::new();
                ok("set_memcpy", d.set_memcpy(&dsts[peer as usize], off, &src, off, len, DmaFlags::NOTIFY, 1, round))?;
                ok("desc_set", f.desc_set(0, &d))?;
                for turn in [me == 0, me == 1] {
                    if turn {
                        // Let the receiver reach its wait (it spins 1 ms there): a write started
                        // before it waits is not shared, and the ranks leave the barrier together.
                        std::thread::sleep(std::time::Duration::from_micros(200));
                        ok("start", f.start_dma(0))?;
                        ok("wait channel", f.wait_dmac(0))?;
                    } else {
                        ok("notification", f.wait_dma_recv(&srcs[peer as usize], 1, round))?;
                        let mut want = vec![0u8; len as usize];
                        fill(&mut want, u64::from(round) << 16 | u64::from(peer));
                        let got = contents(f, &dst)?;
                        if got[off as usize..(off + len) as usize] != want[..] {
                            return Err(format!("{len} B at {off}, round {round}: the data from rank {peer} differ"));
                        }
                    }
                }
                // Nobody refills a source before its reader is done.
                ok("barrier", f.barrier())?;
            }
        }
        if !f.policy().spin.is_zero() && f.shares_copied() == 0 {
            return Err("waits spin, yet no share of a large write was copied".into());
        }
        println!("rank {me}: copied {} shares", f.shares_copied());
    } else {
        for _ in 0..32 {
            ok("barrier", f.barrier())?;
        }
    }
    ok("finalize", f.finalize())
}

fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_default();
    let f = match ShmFabric::init() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("init: {e}");
            return ExitCode::from(1);
        }
    };
    let (rank, size) = (f.config().rank, f.config().size);
    let r = match name.as_str() {
        "all-calls" => all_calls(&f),
        "bad-args" => bad_args(&f),
        "stale-handles" => stale_handles(&f),
        "collective-mismatch" => collective_mismatch(&f),
        "peer-dies" => peer_dies(&f),
        "silent-peer" => silent_peer(&f),
        "shm-full" => shm_full(&f),
        "reused-memory" => reused_memory(&f),
        "policy" => policy(&f),
        "shared-channel" => shared_channel(&f),
        "repeated-runs" => repeated_runs(&f),
        "set-while-running" => set_while_running(&f),
        "shared-copy" => shared_copy(&f),
        other => stalls::by_name(other, &f).unwrap_or_else(|| Err(format!("unknown scenario {other:?}"))),
    };
    match r {
        Ok(()) => {
            println!("rank {rank} of {size}: {name} ok");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {rank} of {size}: {name} FAILED: {e}");
            ExitCode::from(1)
        }
    }
}
