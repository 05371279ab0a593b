//! Scenarios of waits and shared copies when a thread or a process stops for a while: a
//! waiter woken before its notification is in the engine, a wait beside a rank that finished,
//! a receiver's waiter stopped in the middle of a share, a receiver that takes no
//! notification while its ring fills, a rank stopped while a peer reads its memory.

use super::{buffer, ck, contents, exchange, fill, fill_at, me_n, ok, Check, Code};
use std::time::Instant;
use tca_proto::Handle;
use tca_proto::{Desc, DmaFlags, Fabric, MemoryType, TcaError};
use tca_shm::ring::RING_SLOTS;
use tca_shm::ShmFabric;

/// The scenario of this module called `name`, run; `None` for a name of none of them.
pub(crate) fn by_name(name: &str, f: &ShmFabric) -> Option<Check> {
    Some(match name {
        "self-notify" => self_notify(f),
        "abandoned-share" => abandoned_share(f),
        "wait-beside-finished" => wait_beside_finished(f),
        "full-ring" => full_ring(f),
        "stalled-holder" => stalled_holder(f),
        _ => return None,
    })
}

/// A chain that notifies this rank itself, large enough for the rank's engine thread to carry
/// it out, kicked again and again: every wait finds its notification (the test sets a short
/// timeout). The thread that carries a run out wakes the waiters only once the notification is
/// in the engine; woken before, a waiter took its look too early and slept until the timeout.
pub(crate) fn self_notify(f: &dyn Fabric) -> Check {
    const BYTES: u64 = 128 << 10;
    let (_, src) = buffer(f, BYTES, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, BYTES, MemoryType::Cpu)?;
    let mut d = Desc::new();
    ok("set_memcpy", d.set_memcpy(&dst, 0, &src, 0, BYTES, DmaFlags::NOTIFY_SELF, 1, 7))?;
    ok("desc_set", f.desc_set(0, &d))?;
    for run in 0..20_000 {
        ok("start", f.start_dma(0))?;
        ok(&format!("wait recv, run {run}"), f.wait_dma_recv(&dst, 1, 7))?;
        ok("wait channel", f.wait_dmac(0))?;
    }
    ok("finalize", f.finalize())
}

/// CPU time of the calling thread.
fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes the clock into `t`.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// 3 ranks: rank 2 finalizes at once; rank 0 reads rank 1's memory while rank 1 is stopped
/// (SIGSTOP from rank 0) for 600 ms. Rank 0's `tcaWaitDMAC` finds rank 2 finished on every
/// sleep slice; it sleeps all the same (marking a rank dead once, not at every look).
pub(crate) fn wait_beside_finished(f: &dyn Fabric) -> Check {
    let (me, _) = me_n(f)?;
    let (_, h) = buffer(f, 4096, MemoryType::Cpu)?;
    let pids = ok("allgather", f.allgather(&std::process::id().to_le_bytes()))?;
    let hs = exchange(f, &h)?;
    if me == 2 {
        return ok("finalize", f.finalize());
    }
    // Rank 2 is gone before rank 0 starts; rank 1 stays until rank 0 tells it (PIO) that its
    // read is over.
    std::thread::sleep(std::time::Duration::from_millis(100));
    let over = [1u8, 2, 3, 4];
    if me == 1 {
        ok("wait for rank 0", f.wait_pio(&h, 2048, &over, Some(0)))?;
    }
    if me == 0 {
        let pid1 = i32::from_le_bytes(pids[4..8].try_into().expect("4 bytes a rank"));
        let mut d = Desc::new();
        ok("set_memcpy", d.set_memcpy(&hs[0], 0, &hs[1], 0, 1024, DmaFlags::NONE, 0, 0))?;
        ok("desc_set", f.desc_set(0, &d))?;
        // SAFETY: signals a rank of this job, which is resumed below.
        unsafe { libc::kill(pid1, libc::SIGSTOP) };
        let resume = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(600));
            // SAFETY: as above.
            unsafe { libc::kill(pid1, libc::SIGCONT) };
        });
        let (wall, cpu) = (Instant::now(), thread_cpu());
        ok("start", f.start_dma(0))?;
        ok("wait channel", f.wait_dmac(0))?;
        let (wall, cpu) = (wall.elapsed(), thread_cpu() - cpu);
        resume.join().map_err(|_| "the resuming thread panicked")?;
        if cpu * 2 > wall {
            return Err(format!("the wait took {wall:?} and used {cpu:?} of CPU: it did not sleep"));
        }
        println!("rank 0: waited {wall:?}, {cpu:?} of CPU");
        let region = ok("pio region", f.set_pio_region(&hs[1], 2048, 4))?;
        ok("tell rank 1", f.send_pio(&region, 0, &over))?;
        ok("commit", f.send_pio_commit())?;
    }
    ok("finalize", f.finalize())
}

/// 2 ranks: rank 0 writes 64 MiB to rank 1, whose waiting thread takes the share of it and
/// is stopped mid-copy (SIGSTOP from rank 0) for longer than the timeout; rank 0 refills its
/// source once its channel wait returns, as a program may. The write must not be reported
/// while the stopped copy can still land: rank 0's channel wait fails, and rank 1 either never
/// gets the notification, or gets it with the message's bytes. A later write to rank 1
/// arrives whole once the copy ended.
pub(crate) fn abandoned_share(f: &ShmFabric) -> Check {
    const LEN: u64 = 64 << 20;
    let (me, _) = me_n(f)?;
    let (_, src) = buffer(f, LEN, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, LEN, MemoryType::Cpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    let pids = ok("allgather", f.allgather(&std::process::id().to_le_bytes()))?;
    fill_at(f, &src, 0, LEN, 1 << 8 | u64::from(me))?;
    ok("barrier", f.barrier())?;
    if me == 0 {
        let mut d = Desc::new();
        ok("set_memcpy", d.set_memcpy(&dsts[1], 0, &src, 0, LEN, DmaFlags::NOTIFY, 1, 1))?;
        ok("desc_set", f.desc_set(0, &d))?;
        // Rank 1 is in its wait (it spins there) when the write starts.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let pid1 = i32::from_le_bytes(pids[4..8].try_into().expect("4 bytes a rank"));
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_micros(300));
            // SAFETY: signals rank 1 of this job, resumed below.
            unsafe { libc::kill(pid1, libc::SIGSTOP) };
            std::thread::sleep(std::time::Duration::from_millis(600));
            // SAFETY: as above.
            unsafe { libc::kill(pid1, libc::SIGCONT) };
        });
        ok("start", f.start_dma(0))?;
        let first = f.wait_dmac(0);
        fill_at(f, &src, 0, LEN, 2 << 8)?;
        stopper.join().map_err(|_| "the stopping thread panicked")?;
        println!("rank 0: the write whose share was stopped: {first:?}");
        if first.is_ok() {
            return Err("tcaWaitDMAC reported the write whose share was stopped as done".into());
        }
        ok("barrier", f.barrier())?;
        let mut d = Desc::new();
        ok("set_memcpy", d.set_memcpy(&dsts[1], 0, &src, 0, 4096, DmaFlags::NOTIFY, 1, 2))?;
        ok("desc_set", f.desc_set(0, &d))?;
        ok("start the next write", f.start_dma(0))?;
        ok("wait for the next write", f.wait_dmac(0))?;
    } else {
        let first = f.wait_dma_recv(&srcs[0], 1, 1);
        let mut want = vec![0u8; LEN as usize];
        fill(&mut want, 1 << 8);
        if first.is_ok() && contents(f, &dst)? != want {
            return Err("the notification came, but not with the message's bytes".into());
        }
        println!("rank 1: the wait for the write: {first:?}, {} shares copied", f.shares_copied());
        ok("barrier", f.barrier())?;
        ok("the next write", f.wait_dma_recv(&srcs[0], 1, 2))?;
        let mut want = vec![0u8; 4096];
        fill(&mut want, 2 << 8);
        if contents(f, &dst)?[..4096] != want[..] {
            return Err("the next write did not arrive whole".into());
        }
    }
    ok("finalize", f.finalize())
}

/// 2 ranks: rank 0 sends notifications to rank 1, which is alive but takes none (it waits
/// for a PIO flag) until rank 0 has filled its ring and one more notification found no room
/// for the whole timeout, once from a run the caller carries out alone, once from a chain
/// large enough for the engine thread, and once from a chain of 20 notifications, which
/// gives up after one timeout, not 20. The channel's `tcaWaitDMAC` says `Timeout`, not
/// `PeerDead`: rank 1 is not marked dead, so once it consumes, the next run reaches it; the
/// notifications that found no room never arrive.
pub(crate) fn full_ring(f: &ShmFabric) -> Check {
    const LARGE: u64 = 256 << 10;
    let (me, _) = me_n(f)?;
    let (_, src) = buffer(f, LARGE, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, 4096 + LARGE, MemoryType::Cpu)?;
    let (_, flag) = buffer(f, 64, MemoryType::Cpu)?;
    let dsts = exchange(f, &dst)?;
    let srcs = exchange(f, &src)?;
    let flags = exchange(f, &flag)?;
    let timeout = f.config().timeout;
    if me == 0 {
        let mut small = Desc::new();
        ok("set_memcpy", small.set_memcpy(&dsts[1], 0, &src, 0, 8, DmaFlags::NOTIFY, 1, 5))?;
        ok("desc_set", f.desc_set(0, &small))?;
        for run in 0..RING_SLOTS {
            ok("start", f.start_dma(0))?;
            ok(&format!("wait channel, run {run}"), f.wait_dmac(0))?;
        }
        let t = Instant::now();
        ok("start into the full ring", f.start_dma(0))?;
        ck("wait channel, the ring full", f.wait_dmac(0), TcaError::Timeout)?;
        if t.elapsed() < timeout {
            return Err(format!("the full ring was given up after {:?}, before the timeout", t.elapsed()));
        }
        let mut large = Desc::new();
        ok("set_memcpy", large.set_memcpy(&dsts[1], 4096, &src, 0, LARGE, DmaFlags::NOTIFY, 1, 6))?;
        ok("desc_set", f.desc_set(1, &large))?;
        ok("start the large run into the full ring", f.start_dma(1))?;
        // The engine thread's push gives up after the timeout, perhaps after this wait ended.
        if f.wait_dmac(1).is_ok() {
            std::thread::sleep(timeout * 3 / 2);
            ck("wait channel again, the ring full", f.wait_dmac(1), TcaError::Timeout)?;
        }
        // A chain of 20 notifications into the full ring waits one timeout in all, not one each.
        let mut many = Desc::new();
        for k in 0..20 {
            ok("set_memcpy", many.set_memcpy(&dsts[1], 16 * k, &src, 16 * k, 8, DmaFlags::NOTIFY, 1, 7))?;
        }
        ok("desc_set", f.desc_set(2, &many))?;
        let t = Instant::now();
        let started = f.start_dma(2);
        let waited = f.wait_dmac(2);
        if t.elapsed() > timeout * 3 {
            return Err(format!("20 notifications into the full ring took {:?} to give up", t.elapsed()));
        }
        if started.is_ok() && waited.is_ok() {
            std::thread::sleep(timeout * 3 / 2);
            ck("wait channel 2 again, the ring full", f.wait_dmac(2), TcaError::Timeout)?;
        }
        tell(f, &flags[1])?;
        ok("start once rank 1 consumes", f.start_dma(0))?;
        ok("wait channel once rank 1 consumes", f.wait_dmac(0))?;
        hear(f, &flag, 1)?;
    } else {
        hear(f, &flag, 0)?;
        for n in 0..=RING_SLOTS {
            ok(&format!("wait recv {n}"), f.wait_dma_recv(&srcs[0], 1, 5))?;
        }
        ck("the notification that found no room", f.wait_dma_recv(&srcs[0], 1, 6), TcaError::Timeout)?;
        ck("one notification too many", f.wait_dma_recv(&srcs[0], 1, 5), TcaError::Timeout)?;
        tell(f, &flags[0])?;
    }
    ok("finalize", f.finalize())
}

const FLAG: [u8; 4] = [7; 4];

/// Sets a peer's flag (its `flag` buffer, by PIO), for [`hear`].
fn tell(f: &dyn Fabric, peer_flag: &Handle) -> Check {
    let region = ok("pio region", f.set_pio_region(peer_flag, 0, 4))?;
    ok("set flag", f.send_pio(&region, 0, &FLAG))?;
    ok("commit", f.send_pio_commit())
}

/// Waits for `peer` to set this rank's flag, again after each timeout (the scenarios stop
/// ranks for longer than it).
fn hear(f: &dyn Fabric, flag: &Handle, peer: u16) -> Check {
    for _ in 0..40 {
        match f.wait_pio(flag, 0, &FLAG, Some(peer)).code() {
            Ok(()) => return Ok(()),
            Err(TcaError::Timeout) => {}
            Err(e) => return Err(format!("wait for rank {peer}'s flag: {e:?}")),
        }
    }
    Err(format!("rank {peer} never set the flag"))
}

/// 2 ranks: rank 0 reads rank 1's memory with a chain of 40 entries issued together
/// (`CONTINUE`), each a proxy read: 80 messages (request and interrupt), more than rank 1's
/// message ring holds, while rank 1 is stopped (SIGSTOP from rank 0) for longer than the
/// timeout. The start does not wait for room, the channel's wait times out, and rank 1 is not
/// taken for dead: resumed, it gets the messages that waited and answers them (those beyond
/// its table of 16 requests with `OutOfMemory`), and a later read brings its bytes.
pub(crate) fn stalled_holder(f: &ShmFabric) -> Check {
    const ENTRIES: u64 = 40;
    const PIECE: u64 = 64;
    let (me, _) = me_n(f)?;
    let (_, src) = buffer(f, ENTRIES * PIECE, MemoryType::Cpu)?;
    let (_, dst) = buffer(f, ENTRIES * PIECE, MemoryType::Cpu)?;
    let (_, flag) = buffer(f, 64, MemoryType::Cpu)?;
    fill_at(f, &src, 0, ENTRIES * PIECE, 5 << 8 | u64::from(me))?;
    let srcs = exchange(f, &src)?;
    let flags = exchange(f, &flag)?;
    let pids = ok("allgather", f.allgather(&std::process::id().to_le_bytes()))?;
    let timeout = f.config().timeout;
    if me == 1 {
        hear(f, &flag, 0)?;
        return ok("finalize", f.finalize());
    }
    let pid1 = i32::from_le_bytes(pids[4..8].try_into().expect("4 bytes a rank"));
    let mut pieces = Desc::new();
    for i in 0..ENTRIES {
        let at = i * PIECE;
        ok("set_memcpy", pieces.set_memcpy(&dst, at, &srcs[1], at, PIECE, DmaFlags::CONTINUE, 0, 0))?;
    }
    ok("desc_set", f.desc_set(0, &pieces))?;
    // SAFETY: signals a rank of this job, which is resumed below.
    unsafe { libc::kill(pid1, libc::SIGSTOP) };
    wait_stopped(pid1)?;
    let t = Instant::now();
    let started = f.start_dma(0);
    let start_took = t.elapsed();
    let waited = f.wait_dmac(0);
    // SAFETY: as above.
    unsafe { libc::kill(pid1, libc::SIGCONT) };
    ok("start, rank 1 stopped", started)?;
    if start_took > timeout / 2 {
        return Err(format!("the start waited {start_took:?} for room in the stopped rank's ring"));
    }
    ck("wait channel, rank 1 stopped", waited, TcaError::Timeout)?;
    let resumed = f.wait_dmac(0).code();
    if !matches!(resumed, Ok(()) | Err(TcaError::OutOfMemory)) {
        return Err(format!("wait channel, rank 1 resumed: {resumed:?}"));
    }
    let mut whole = Desc::new();
    ok("set_memcpy", whole.set_memcpy(&dst, 0, &srcs[1], 0, ENTRIES * PIECE, DmaFlags::NONE, 0, 0))?;
    ok("desc_set", f.desc_set(1, &whole))?;
    ok("read again", f.start_dma(1))?;
    ok("wait again", f.wait_dmac(1))?;
    let mut want = vec![0u8; (ENTRIES * PIECE) as usize];
    fill(&mut want, 5 << 8 | 1);
    if contents(f, &dst)? != want {
        return Err("the read of the resumed rank's memory did not bring its bytes".into());
    }
    println!("rank 0: the start took {start_took:?}; resumed, rank 1 answered {resumed:?}");
    tell(f, &flags[1])?;
    ok("finalize", f.finalize())
}

/// Waits until every thread of process `pid` is stopped (a stop signal takes effect when each
/// thread next enters the kernel, which a loaded machine may delay).
fn wait_stopped(pid: i32) -> Check {
    let stopped = || -> Option<bool> {
        let mut all = true;
        for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
            let stat = std::fs::read_to_string(task.ok()?.path().join("stat")).ok()?;
            let state = stat.rsplit_once(')')?.1.split_whitespace().next()?;
            all &= state == "T";
        }
        Some(all)
    };
    let t = Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(5) {
        if stopped() == Some(true) {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Err(format!("process {pid} did not stop within 5 s of SIGSTOP"))
}
