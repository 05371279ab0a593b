//! Multi-process runs of the shm fabric: N copies of `tca-shm-scenario`, one per rank, with
//! the variables `tca run` sets. Every run also checks that nothing of the job is left in
//! `/dev/shm`.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::RwLock;

static RUN: AtomicU32 = AtomicU32::new(0);

/// The shared-copy scenarios check that a spinning receiver copies shares of large writes, which
/// it does only while it has a CPU when the writer offers them: they run alone, the other
/// scenarios of this file side by side.
static ALONE: RwLock<()> = RwLock::new(());

struct Outcome {
    codes: Vec<Option<i32>>,
    out: String,
}

fn run(scenario: &str, n: u16, extra: &[(&str, &str)]) -> Outcome {
    run_on(scenario, n, extra, None)
}

/// Runs `n` ranks of `scenario`, each restricted to `cpus` when given.
fn run_on(scenario: &str, n: u16, extra: &[(&str, &str)], cpus: Option<&[usize]>) -> Outcome {
    let alone = scenario == "shared-copy" || scenario == "abandoned-share";
    let _alone = alone.then(|| ALONE.write().unwrap_or_else(|e| e.into_inner()));
    let _beside = (!alone).then(|| ALONE.read().unwrap_or_else(|e| e.into_inner()));
    let job = format!("test{}-{}", std::process::id(), RUN.fetch_add(1, Ordering::Relaxed));
    let children: Vec<_> = (0..n)
        .map(|r| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_tca-shm-scenario"));
            c.arg(scenario)
                .env("TCA_RANK", r.to_string())
                .env("TCA_SIZE", n.to_string())
                .env("TCA_JOB_ID", &job)
                .env("TCA_TIMEOUT_MS", "5000")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (k, v) in extra {
                c.env(k, v);
            }
            if let Some(cpus) = cpus {
                let cpus = cpus.to_vec();
                // SAFETY: sched_setaffinity is async-signal-safe; the set lives on this stack.
                unsafe {
                    use std::os::unix::process::CommandExt;
                    c.pre_exec(move || {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        for &cpu in &cpus {
                            libc::CPU_SET(cpu, &mut set);
                        }
                        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            c.spawn().expect("spawn scenario")
        })
        .collect();
    let mut codes = Vec::new();
    let mut out = String::new();
    for c in children {
        let o = c.wait_with_output().expect("wait");
        codes.push(o.status.code());
        out.push_str(&String::from_utf8_lossy(&o.stdout));
        out.push_str(&String::from_utf8_lossy(&o.stderr));
    }
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|f| f.starts_with(&format!("tca-{job}-")))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}\n{out}");
    Outcome { codes, out }
}

#[test]
fn every_call_on_2_to_8_ranks() {
    for n in [2u16, 3, 4, 8] {
        let o = run("all-calls", n, &[]);
        assert!(o.codes.iter().all(|c| *c == Some(0)), "{n} ranks: {:?}\n{}", o.codes, o.out);
    }
}

#[test]
fn every_call_on_one_rank() {
    let o = run("all-calls", 1, &[]);
    assert_eq!(o.codes, vec![Some(0)], "{}", o.out);
}

#[test]
fn threads_sharing_a_channel_lose_and_double_no_run() {
    for n in [2u16, 3] {
        let o = run("shared-channel", n, &[]);
        assert!(o.codes.iter().all(|c| *c == Some(0)), "{n} ranks: {:?}\n{}", o.codes, o.out);
    }
}

#[test]
fn a_chain_kicked_again_and_again_carries_each_run_once() {
    for n in [2u16, 3] {
        // A short timeout: the scenario waits for a notification that must not come.
        let o = run("repeated-runs", n, &[("TCA_TIMEOUT_MS", "600")]);
        assert!(o.codes.iter().all(|c| *c == Some(0)), "{n} ranks: {:?}\n{}", o.codes, o.out);
    }
}

#[test]
fn a_notification_to_the_rank_itself_is_never_missed() {
    // A missed wake-up shows as a wait that times out: a short timeout finds it quickly.
    let o = run("self-notify", 1, &[("TCA_TIMEOUT_MS", "200")]);
    assert_eq!(o.codes, vec![Some(0)], "{}", o.out);
}

#[test]
fn a_wait_sleeps_beside_a_rank_that_finished() {
    let o = run("wait-beside-finished", 3, &[]);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{:?}\n{}", o.codes, o.out);
}

#[test]
fn a_share_whose_copier_is_stopped_is_never_reported() {
    let o = run("abandoned-share", 2, &[("TCA_TIMEOUT_MS", "300"), ("TCA_SPIN_US", "250000")]);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{:?}\n{}", o.codes, o.out);
    assert!(o.out.contains("1 shares copied"), "the stopped rank took the share: {}", o.out);
}

#[test]
fn a_chain_set_while_the_channel_runs_waits_then_runs() {
    // One rank leaves the engine thread a CPU of its own: it carries the 1 MiB run out.
    for n in [1u16, 2, 4, 8] {
        let o = run("set-while-running", n, &[]);
        assert!(o.codes.iter().all(|c| *c == Some(0)), "{n} ranks: {:?}\n{}", o.codes, o.out);
    }
}

#[test]
fn large_writes_shared_with_a_spinning_receiver_arrive_whole() {
    for n in [2u16, 3] {
        let o = run("shared-copy", n, &[]);
        assert!(o.codes.iter().all(|c| *c == Some(0)), "{n} ranks: {:?}\n{}", o.codes, o.out);
    }
}

#[test]
fn bad_arguments_give_their_codes() {
    let o = run("bad-args", 2, &[]);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{}", o.out);
}

#[test]
fn writes_through_destroyed_or_freed_handles_fail_on_the_writer() {
    for n in [2u16, 3] {
        let o = run("stale-handles", n, &[]);
        assert!(o.codes.iter().all(|c| *c == Some(0)), "{n} ranks: {:?}\n{}", o.codes, o.out);
    }
}

#[test]
fn a_failed_allgather_leaves_the_job_usable() {
    let o = run("collective-mismatch", 3, &[]);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{:?}\n{}", o.codes, o.out);
}

#[test]
fn a_spin_longer_than_the_timeout_is_rejected_at_init() {
    let t = std::time::Instant::now();
    let o = run("all-calls", 2, &[("TCA_SPIN_US", "30000000"), ("TCA_TIMEOUT_MS", "300")]);
    assert_eq!(o.codes, vec![Some(1), Some(1)], "{}", o.out);
    assert!(o.out.contains("TCA_SPIN_US=30000000 is longer than TCA_TIMEOUT_MS=300"), "{}", o.out);
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
}

fn cpus_allowed() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set), 0);
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

#[test]
fn ranks_outnumbering_their_cpus_do_not_spin() {
    let cpu = cpus_allowed()[0];
    // Three ranks on one CPU: every rank sees the same union (1 CPU) and stops spinning.
    let o = run_on("policy", 3, &[], Some(&[cpu]));
    assert_eq!(o.codes, vec![Some(0); 3], "{}", o.out);
    assert_eq!(o.out.matches("cpus=1 oversubscribed=true spin_us=0").count(), 3, "{}", o.out);
    // One rank per CPU (as `--bind-to core` places them) keeps the spin.
    let o = run_on("policy", 1, &[], Some(&[cpu]));
    assert!(o.out.contains("cpus=1 oversubscribed=false spin_us=1000"), "{}", o.out);
    // The whole API works without spinning, within bounded time (every wait is woken).
    let t = std::time::Instant::now();
    let o = run_on("all-calls", 3, &[], Some(&[cpu]));
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{:?}\n{}", o.codes, o.out);
    assert!(t.elapsed() < std::time::Duration::from_secs(60), "{:?}", t.elapsed());
}

#[test]
fn a_killed_peer_fails_the_others_quickly() {
    let o = run("peer-dies", 3, &[("TCA_TIMEOUT_MS", "20000")]);
    // Rank 1 was killed (no exit code); ranks 0 and 2 saw PeerDead in time.
    assert_eq!(o.codes, vec![Some(0), None, Some(0)], "{}", o.out);
    assert!(o.out.contains("PeerDead"), "{}", o.out);
}

#[test]
fn a_silent_peer_times_out() {
    let o = run("silent-peer", 2, &[("TCA_TIMEOUT_MS", "300")]);
    assert_eq!(o.codes, vec![Some(0), Some(0)], "{}", o.out);
    assert!(o.out.contains("Timeout"), "{}", o.out);
}

#[test]
fn a_missing_rank_times_out_at_init() {
    // Only rank 0 of 2 starts.
    let job = format!("test{}-missing", std::process::id());
    let o = Command::new(env!("CARGO_BIN_EXE_tca-shm-scenario"))
        .arg("all-calls")
        .env("TCA_RANK", "0")
        .env("TCA_SIZE", "2")
        .env("TCA_JOB_ID", &job)
        .env("TCA_TIMEOUT_MS", "300")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("timed out") && err.contains("rank 1"), "{err}");
    assert!(!std::path::Path::new(&format!("/dev/shm/tca-{job}-0")).exists());
}

#[test]
fn segments_of_dead_owners_are_swept_at_init() {
    // A rank killed inside tcaInit under mpirun leaves its name: fake one whose owner is a
    // process that has exited, and one being created (no magic yet) that must stay.
    let dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    let mut dead = dead;
    dead.wait().unwrap();
    let stale = format!("/dev/shm/tca-stale{}-0", std::process::id());
    let young = format!("/dev/shm/tca-young{}-0", std::process::id());
    let mut header = vec![0u8; 1 << 20];
    header[0..8].copy_from_slice(b"TCAshm01");
    header[8..12].copy_from_slice(&1u32.to_le_bytes()); // state READY
    header[12..16].copy_from_slice(&dead_pid.to_le_bytes());
    std::fs::write(&stale, &header).unwrap();
    header[0..8].fill(0);
    std::fs::write(&young, &header).unwrap();
    let o = run("bad-args", 2, &[]);
    let stale_left = std::path::Path::new(&stale).exists();
    let young_left = std::path::Path::new(&young).exists();
    let _ = std::fs::remove_file(&young);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{}", o.out);
    assert!(!stale_left, "stale segment of a dead owner survived");
    assert!(young_left, "a segment without a valid header was removed");
}

#[test]
fn memory_handed_out_again_reads_as_zero() {
    let o = run("reused-memory", 1, &[]);
    assert_eq!(o.codes, vec![Some(0)], "{}", o.out);
}

#[test]
fn an_allocation_larger_than_dev_shm_is_out_of_memory() {
    let free = {
        // SAFETY: statvfs fills the zeroed struct.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(c"/dev/shm".as_ptr(), &mut st) }, 0);
        st.f_bavail as u64 * st.f_frsize as u64
    };
    let heap = (free + (2 << 30)).to_string();
    let o = run("shm-full", 1, &[("TCA_SHM_BYTES", heap.as_str())]);
    assert_eq!(o.codes, vec![Some(0)], "{}", o.out);
}

#[test]
fn a_rank_stopped_while_a_peer_reads_its_memory_answers_once_resumed() {
    let o = run("stalled-holder", 2, &[("TCA_TIMEOUT_MS", "500")]);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{:?}\n{}", o.codes, o.out);
}

#[test]
fn a_live_receiver_that_lets_its_ring_fill_times_the_sender_out() {
    let o = run("full-ring", 2, &[("TCA_TIMEOUT_MS", "500")]);
    assert!(o.codes.iter().all(|c| *c == Some(0)), "{:?}\n{}", o.codes, o.out);
}
