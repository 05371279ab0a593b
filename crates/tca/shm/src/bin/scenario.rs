//! One rank of a test scenario on the shm fabric: `tca-shm-scenario NAME`, started N times by
//! `tca run`, mpirun or the crate's integration tests (which set `TCA_RANK`, `TCA_SIZE`,
//! `TCA_JOB_ID`). Exits 0 when every check of the scenario held on this rank, 1 otherwise,
//! printing what failed.
//!
//! Scenarios: `all-calls` (every call, data integrity over sizes, alignments, block-stride,
//! both DMA modes, reads of a peer's memory and PIO, checksummed), `bad-args` (every bad argument gives its code),
//! `peer-dies` (rank 1 is killed; the others must fail with PeerDead quickly), `silent-peer`
//! (rank 1 never sends; the others must time out), `shm-full` (an allocation larger than
//! `/dev/shm` fails cleanly).

use std::process::ExitCode;
use std::time::Instant;
use tca_proto::{Desc, DmaFlags, DmaMode, Handle, MemoryType, TcaError, HANDLE_BYTES};
use tca_shm::Fabric;

type Check = Result<(), String>;

fn ck<T: std::fmt::Debug>(what: &str, got: Result<T, TcaError>, want: TcaError) -> Check {
    match got {
        Err(e) if e == want => Ok(()),
        other => Err(format!("{what}: expected {want:?}, got {other:?}")),
    }
}

fn ok<T>(what: &str, r: Result<T, TcaError>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e:?} ({e})"))
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

fn exchange(f: &Fabric, h: &Handle) -> Result<Vec<Handle>, String> {
    let n = f.size() as usize;
    let mut all = vec![0u8; HANDLE_BYTES * n];
    ok("allgather", f.allgather(&h.to_bytes(), &mut all))?;
    all.chunks(HANDLE_BYTES).map(|c| ok("handle from bytes", Handle::from_bytes(c))).collect()
}

fn slice<'a>(f: &Fabric, h: &Handle) -> Result<&'a mut [u8], String> {
    let p = ok("local_ptr", f.local_ptr(h))?;
    // SAFETY: the handle covers h.size bytes of this rank's heap; the scenario only touches
    // it between the exchanges that order the ranks' accesses.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, h.size as usize) })
}

const BUF: u64 = 1 << 20;

fn all_calls(f: &Fabric) -> Check {
    let (me, n) = (f.rank(), f.size());
    let next = (me + 1) % n;
    let prev = (me + n - 1) % n;
    let src_p = ok("malloc src", f.malloc(BUF, MemoryType::Cpu))?;
    let dst_p = ok("malloc dst", f.malloc(BUF, MemoryType::Gpu))?;
    let src = ok("create src", f.create_handle(src_p, BUF, MemoryType::Cpu))?;
    let dst = ok("create dst", f.create_handle(dst_p, BUF, MemoryType::Gpu))?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    if dsts[me as usize] != dst || srcs[me as usize] != src {
        return Err("allgather returned another handle for this rank".into());
    }
    // Contiguous DMA over sizes and alignments, both modes, into the next rank.
    let mut round = 0u32;
    for &size in &[4u64, 8, 60, 64, 256, 4096, 65_536 + 12, 1 << 19] {
        for &align in &[0u64, 4, 16 + 8, 1000] {
            for mode in [DmaMode::Register, DmaMode::Chaining] {
                round += 1;
                let s = slice(f, &src)?;
                fill(&mut s[align as usize..(align + size) as usize], u64::from(round) << 8 | u64::from(me));
                let mut d = Desc::new();
                ok("mode", d.set_mode(Some(mode)))?;
                ok(
                    "set_memcpy",
                    d.set_memcpy(&dsts[next as usize], align, &src, align, size, DmaFlags::NOTIFY, 1, round),
                )?;
                ok("set_chain", f.set_chain(0, &d))?;
                ok("start", f.start_dma(0))?;
                ok("wait channel", f.wait_dma_channel(0))?;
                ok("wait recv", f.wait_dma_recv(&srcs[prev as usize], 1, round))?;
                // The sender's checksum travels by PIO-free means: recompute from the seed.
                let mut want = vec![0u8; size as usize];
                fill(&mut want, u64::from(round) << 8 | u64::from(prev));
                let got = &slice(f, &dst)?[align as usize..(align + size) as usize];
                if checksum(got) != checksum(&want) || got != &want[..] {
                    return Err(format!("DMA {size} B at +{align} ({mode:?}) corrupted"));
                }
                ok("barrier", f.barrier())?;
            }
        }
    }
    // A chain of 40 entries (chaining mode, descriptor fetches), each with its own tag, plus
    // a block-stride entry; NOTIFY_SELF on the last.
    let s = slice(f, &src)?;
    fill(s, 7_000 + u64::from(me));
    let mut d = Desc::new();
    for i in 0..40u64 {
        let flags = if i % 2 == 0 { DmaFlags::CONTINUE } else { DmaFlags::NOTIFY };
        ok("chain entry", d.set_memcpy(&dsts[next as usize], i * 1024, &src, i * 1024, 1000, flags, 2, i as u32))?;
    }
    // 64 bursts of 48 bytes, source pitch 128, destination pitch 64 (rows of a 2D array).
    ok(
        "2d",
        d.set_memcpy_2d(
            &dsts[next as usize],
            768 * 1024,
            64,
            &src,
            256 * 1024,
            128,
            48,
            64,
            DmaFlags::NOTIFY | DmaFlags::NOTIFY_SELF,
            3,
            99,
        ),
    )?;
    if d.mode() != DmaMode::Chaining {
        return Err("41 entries should be chaining mode".into());
    }
    ok("set_chain 41", f.set_chain(2, &d))?;
    ok("start 41", f.start_dma(2))?;
    ok("self notify", f.wait_dma_recv(&dst, 3, 99))?;
    ok("wait ch2", f.wait_dma_channel(2))?;
    for i in (1..40u32).step_by(2) {
        ok("chain notify", f.wait_dma_recv(&srcs[prev as usize], 2, i))?;
    }
    ok("2d notify", f.wait_dma_recv(&srcs[prev as usize], 3, 99))?;
    let mut want = vec![0u8; BUF as usize];
    fill(&mut want, 7_000 + u64::from(prev));
    let got = slice(f, &dst)?;
    for i in 0..40usize {
        let r = i * 1024..i * 1024 + 1000;
        if got[r.clone()] != want[r] {
            return Err(format!("chain entry {i} corrupted"));
        }
    }
    for row in 0..64usize {
        let g = &got[768 * 1024 + row * 64..][..48];
        let w = &want[256 * 1024 + row * 128..][..48];
        if g != w {
            return Err(format!("block-stride row {row} corrupted"));
        }
        if got[768 * 1024 + row * 64 + 48..][..16] != [0u8; 16][..] && row < 63 {
            // The gap bytes were never written (zero-filled segment).
            return Err(format!("block-stride gap after row {row} written"));
        }
    }
    // Reads of the previous rank's memory (proxy write, seed 000 §3.5): contiguous and
    // block-stride, into this rank's buffer, NOTIFY_SELF.
    ok("barrier", f.barrier())?;
    fill(slice(f, &src)?, 9_000 + u64::from(me));
    ok("barrier", f.barrier())?;
    let mut d = Desc::new();
    ok("read", d.set_memcpy(&dst, 4096, &srcs[prev as usize], 8192, 65_536, DmaFlags::NONE, 0, 0))?;
    ok(
        "read 2d",
        d.set_memcpy_2d(&dst, 128 * 1024, 32, &srcs[prev as usize], 0, 96, 32, 100, DmaFlags::NOTIFY_SELF, 4, 7),
    )?;
    ok("read chain", f.set_chain(1, &d))?;
    ok("read start", f.start_dma(1))?;
    ok("read wait", f.wait_dma_channel(1))?;
    ok("read notify", f.wait_dma_recv(&dst, 4, 7))?;
    let mut want = vec![0u8; BUF as usize];
    fill(&mut want, 9_000 + u64::from(prev));
    let got = slice(f, &dst)?;
    if got[4096..4096 + 65_536] != want[8192..8192 + 65_536] {
        return Err("proxy read corrupted".into());
    }
    for row in 0..100usize {
        if got[128 * 1024 + row * 32..][..32] != want[row * 96..][..32] {
            return Err(format!("block-stride proxy read row {row} corrupted"));
        }
    }
    ok("barrier", f.barrier())?;
    slice(f, &dst)?[..4].fill(0);
    ok("barrier", f.barrier())?;
    // PIO: payload then a flag word, each committed, into the next rank; poll our own flag.
    let pio = ok("pio region", f.pio_region(&dsts[next as usize], 0, 4096))?;
    for (k, &size) in [4usize, 8, 100, 2048].iter().enumerate() {
        let mut payload = vec![0u8; size];
        fill(&mut payload, 31 * k as u64 + u64::from(me));
        ok("send pio", f.send_pio(&pio, 8, &payload))?;
        f.pio_commit();
        ok("send pio flag", f.send_pio(&pio, 0, &(k as u32 + 1).to_le_bytes()))?;
        f.pio_commit();
        ok("wait pio", f.wait_pio_u32(&dst, 0, k as u32 + 1, prev))?;
        let mut want = vec![0u8; size];
        fill(&mut want, 31 * k as u64 + u64::from(prev));
        if slice(f, &dst)?[8..8 + size] != want[..] {
            return Err(format!("PIO {size} B corrupted"));
        }
        ok("barrier", f.barrier())?;
    }
    ok("destroy", f.destroy_handle(&src))?;
    ck("destroy twice", f.destroy_handle(&src), TcaError::InvalidHandle)?;
    ok("destroy dst", f.destroy_handle(&dst))?;
    ok("free", f.free(src_p))?;
    ok("free", f.free(dst_p))?;
    ok("barrier", f.barrier())?;
    ok("finalize", f.finalize())?;
    ck("after finalize", f.malloc(64, MemoryType::Cpu), TcaError::NotInitialized)
}

fn bad_args(f: &Fabric) -> Check {
    let (me, n) = (f.rank(), f.size());
    let p = ok("malloc", f.malloc(4096, MemoryType::Cpu))?;
    let h = ok("create", f.create_handle(p, 4096, MemoryType::Cpu))?;
    let all = exchange(f, &h)?;
    let peer = all[((me + 1) % n) as usize];
    ck("malloc 0", f.malloc(0, MemoryType::Cpu), TcaError::ZeroSize)?;
    ck("malloc huge", f.malloc(1 << 45, MemoryType::Cpu), TcaError::OutOfMemory)?;
    let mut stack = [0u8; 64];
    ck("handle of stack memory", f.create_handle(stack.as_mut_ptr(), 64, MemoryType::Cpu), TcaError::InvalidHandle)?;
    ck("handle past block", f.create_handle(p, 8192, MemoryType::Cpu), TcaError::InvalidHandle)?;
    ck("free stack", f.free(stack.as_mut_ptr()), TcaError::InvalidHandle)?;
    ck("free inside block", f.free(p.wrapping_add(64)), TcaError::InvalidHandle)?;
    let mut d = Desc::new();
    ck("odd size", d.set_memcpy(&peer, 0, &h, 0, 6, DmaFlags::NONE, 0, 0), TcaError::SizeNotMultipleOf4)?;
    ck("misaligned", d.set_memcpy(&peer, 4, &h, 0, 8, DmaFlags::NONE, 0, 0), TcaError::AlignmentMismatch)?;
    ck("out of bounds", d.set_memcpy(&peer, 4000, &h, 4000, 128, DmaFlags::NONE, 0, 0), TcaError::OutOfBounds)?;
    ck("bad slot", d.set_memcpy(&peer, 0, &h, 0, 8, DmaFlags::NONE, 64, 0), TcaError::InvalidSlot)?;
    ck(
        "bad flags",
        d.set_memcpy(&peer, 0, &h, 0, 8, DmaFlags::USE_NOTIFY_INTERNAL, 0, 0),
        TcaError::InvalidFlagCombination,
    )?;
    ck("empty chain", f.set_chain(0, &d), TcaError::InvalidDescriptor)?;
    ck("start unset", f.start_dma(1), TcaError::ChannelNotSet)?;
    ck("bad channel", f.start_dma(4), TcaError::InvalidChannel)?;
    ck("bad channel wait", f.wait_dma_channel(9), TcaError::InvalidChannel)?;
    // A forged handle pointing at the peer's segment header.
    let forged = Handle { addr: peer.addr & !((1 << 40) - 1), ..peer };
    let mut d2 = Desc::new();
    ok("forged set", d2.set_memcpy(&forged, 0, &h, 0, 64, DmaFlags::NONE, 0, 0))?;
    ck("forged handle", f.set_chain(0, &d2), TcaError::InvalidHandle)?;
    ck("forged pio", f.pio_region(&forged, 0, 64), TcaError::InvalidHandle)?;
    let mut bytes = h.to_bytes();
    bytes[0] = b'X';
    ck("bad bytes", Handle::from_bytes(&bytes), TcaError::InvalidHandle)?;
    let pio = ok("pio", f.pio_region(&peer, 0, 64))?;
    ck("pio odd", f.send_pio(&pio, 0, &[1, 2, 3]), TcaError::SizeNotMultipleOf4)?;
    ck("pio past", f.send_pio(&pio, 64, &[0; 4]), TcaError::OutOfBounds)?;
    ck("pio window", f.pio_region(&peer, 4090, 64), TcaError::OutOfBounds)?;
    ck("wait foreign", f.wait_pio_u32(&peer, 0, 1, 0), TcaError::InvalidHandle)?;
    ck("wait odd offset", f.wait_pio_u32(&h, 2, 1, 0), TcaError::AlignmentMismatch)?;
    ck("recv bad slot", f.wait_dma_recv(&peer, 64, 0), TcaError::InvalidSlot)?;
    ck("gather too big", f.allgather(&vec![0; 70_000], &mut []), TcaError::TooLarge)?;
    // A read of a peer's memory (proxy write) whose source the peer destroyed: the peer
    // refuses it and the run fails with the peer's reason.
    let q = ok("malloc q", f.malloc(4096, MemoryType::Cpu))?;
    let hq = ok("create q", f.create_handle(q, 4096, MemoryType::Cpu))?;
    let qs = exchange(f, &hq)?;
    ok("destroy q", f.destroy_handle(&hq))?;
    ok("barrier", f.barrier())?;
    let mut d5 = Desc::new();
    ok("read set", d5.set_memcpy(&h, 0, &qs[((me + 1) % n) as usize], 0, 64, DmaFlags::NONE, 0, 0))?;
    ok("read chain", f.set_chain(1, &d5))?;
    ok("read start", f.start_dma(1))?;
    ck("read of a destroyed handle", f.wait_dma_channel(1), TcaError::InvalidHandle)?;
    ok("destroy", f.destroy_handle(&h))?;
    let mut d4 = Desc::new();
    ok("dead src", d4.set_memcpy(&peer, 0, &h, 0, 64, DmaFlags::NONE, 0, 0))?;
    ck("destroyed handle", f.set_chain(0, &d4), TcaError::InvalidHandle)?;
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
fn shm_full(f: &Fabric) -> Check {
    let too_big = shm_free() + (1 << 30);
    if f.config().heap_bytes < too_big {
        return Err(format!("heap {} B is not above /dev/shm's free {} B", f.config().heap_bytes, too_big));
    }
    ck("malloc beyond /dev/shm", f.malloc(too_big, MemoryType::Cpu), TcaError::OutOfMemory)?;
    let p = ok("small malloc", f.malloc(1 << 20, MemoryType::Cpu))?;
    // SAFETY: 1 MiB block of this rank's heap, backed by the allocation.
    unsafe { std::ptr::write_bytes(p, 0xab, 1 << 20) };
    ok("free", f.free(p))
}

fn peer_dies(f: &Fabric) -> Check {
    let p = ok("malloc", f.malloc(4096, MemoryType::Cpu))?;
    let h = ok("create", f.create_handle(p, 4096, MemoryType::Cpu))?;
    let all = exchange(f, &h)?;
    if f.rank() == 1 {
        // SAFETY: raise is async-signal-safe; the process ends here, as a crash would.
        unsafe { libc::raise(libc::SIGKILL) };
    }
    let t = Instant::now();
    let r = f.wait_dma_recv(&all[1], 0, 1);
    let ms = t.elapsed().as_millis();
    println!("rank {}: wait for dead rank 1 -> {r:?} after {ms} ms", f.rank());
    ck("wait for dead peer", r, TcaError::PeerDead)?;
    if ms > 3000 {
        return Err(format!("dead peer noticed only after {ms} ms"));
    }
    // A read of the dead rank's memory fails too, at once.
    let mut d = Desc::new();
    ok("read set", d.set_memcpy(&h, 0, &all[1], 0, 64, DmaFlags::NONE, 0, 0))?;
    ok("read chain", f.set_chain(0, &d))?;
    ck("read from dead peer", f.start_dma(0), TcaError::PeerDead)
}

fn silent_peer(f: &Fabric) -> Check {
    let p = ok("malloc", f.malloc(4096, MemoryType::Cpu))?;
    let h = ok("create", f.create_handle(p, 4096, MemoryType::Cpu))?;
    let all = exchange(f, &h)?;
    if f.rank() == 1 {
        // Alive but never sends: stay until the others gave up.
        std::thread::sleep(f.config().timeout * 3);
        return Ok(());
    }
    let t = Instant::now();
    let r = f.wait_dma_recv(&all[1], 0, 1);
    println!("rank {}: wait for silent rank 1 -> {r:?} after {:?}", f.rank(), t.elapsed());
    ck("wait for silent peer", r, TcaError::Timeout)
}

fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_default();
    let f = match Fabric::init() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("init: {e}");
            return ExitCode::from(1);
        }
    };
    let r = match name.as_str() {
        "all-calls" => all_calls(&f),
        "bad-args" => bad_args(&f),
        "peer-dies" => peer_dies(&f),
        "silent-peer" => silent_peer(&f),
        "shm-full" => shm_full(&f),
        other => Err(format!("unknown scenario {other:?}")),
    };
    match r {
        Ok(()) => {
            println!("rank {} of {}: {name} ok", f.rank(), f.size());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rank {} of {}: {name} FAILED: {e}", f.rank(), f.size());
            ExitCode::from(1)
        }
    }
}
