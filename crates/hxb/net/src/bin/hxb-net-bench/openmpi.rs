//! The Open MPI baseline: two ranks of `mpi_bw` (examples/c/mpi_bw.c, an osu_bw-style window of
//! MPI_Isend / MPI_Irecv) in the two namespaces, the TCP BTL on the k links.
//!
//! The launch: `mpirun.openmpi` itself runs inside namespace A (`ip netns exec`), with the two
//! namespaces' names as host names and this program as its rsh agent (`hxb-net-bench
//! netns-exec NS CMD`, which runs CMD with `/bin/sh -c` inside NS and inside a UTS namespace of
//! its own whose host name is NS), so each host's `orted` and rank start inside their network
//! namespace and see a host name of their own: with the machine's one host name for both,
//! mpirun now and then hung with one orted gone. The out-of-band wiring of mpirun, the orteds and PMIx goes
//! over a control veth pair between the two namespaces (no rate limit), `btl_tcp_if_include`
//! names the k links, and `pml ob1` with `btl tcp,self` keeps UCX and shared memory out.
//! Nothing is created in the root namespace; deleting the namespaces removes every address.
//! `--bind-to none`: both orteds see the same machine as their own node and would otherwise
//! bind both ranks to core 0; `mpi_yield_when_idle 1`: the two polling ranks give their core
//! up in the progress loop, as Open MPI does by itself when it sees a node oversubscribed (on
//! this 2-core host the kernel's tbf and veth work needs the same cores: without it 4 and 6
//! links gave a half to a sixth of the rate). This program is a child subreaper while mpirun runs, so orteds
//! that outlive mpirun for a moment become its children: it reaps them (and kills any still
//! running after 5 s) before the point is reported, and no Open MPI process outlives a point.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ether_net::Link;

use crate::stream::tx_bytes;

/// The Open MPI launcher of Debian's openmpi-bin.
const MPIRUN: &str = "mpirun.openmpi";
/// The most one mpirun may take, start-up and tear-down included.
const LIMIT: Duration = Duration::from_secs(90);
/// Bytes in flight per window: the same 4 MiB the HXB stream may have outstanding.
const WINDOW_BYTES: usize = 4 << 20;

/// Why the Open MPI baseline cannot run here, if it cannot.
pub fn unavailable(program: &Path) -> Option<String> {
    if Command::new(MPIRUN).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return Some(format!("--baselines openmpi: {MPIRUN} is not installed (make mpi)"));
    }
    if !program.is_file() {
        return Some(format!("--baselines openmpi: {} not found (make examples)", program.display()));
    }
    None
}

/// The rsh agent: `netns-exec NS CMD...` replaces this process with `ip netns exec NS unshare
/// --uts /bin/sh -c "hostname NS && CMD..."`. Only namespaces of a testbed (`tca-...`) are
/// accepted.
pub fn netns_exec(args: &[String]) -> String {
    let Some((ns, cmd)) = args.split_first() else {
        return "netns-exec: usage: hxb-net-bench netns-exec NAMESPACE COMMAND...".into();
    };
    if !ns.starts_with(&format!("{}-", ether_net::PREFIX)) || cmd.is_empty() {
        return format!("netns-exec: {ns:?} is not a testbed namespace, or no command");
    }
    let script = format!("hostname {ns} && {}", cmd.join(" "));
    let err = Command::new("ip").args(["netns", "exec", ns, "unshare", "--uts", "/bin/sh", "-c", &script]).exec();
    format!("netns-exec: cannot run ip: {err}")
}

/// One point measured by mpi_bw.
pub struct Point {
    /// Bytes moved in the timed windows.
    pub bytes: u64,
    /// Seconds of the timed windows (rank 0's MPI_Wtime).
    pub seconds: f64,
    /// Messages per window.
    pub window: usize,
    /// How many of the k links carried at least a tenth of an even share.
    pub links_used: usize,
}

/// Where the ranks run.
pub struct Launch<'a> {
    /// The mpi_bw program.
    pub program: &'a Path,
    /// Namespace of rank 0 (the sender) and of mpirun.
    pub a: &'a str,
    /// Namespace of rank 1.
    pub b: &'a str,
    /// The control interface (the same name in both namespaces) for mpirun's own wiring.
    pub control: &'a str,
    /// The k links the TCP BTL stripes over.
    pub link: &'a Link,
}

/// Messages of `size` bytes from rank 0 to rank 1 for about `seconds` at `capacity` B/s.
pub fn bandwidth(l: &Launch, size: usize, seconds: f64, capacity: f64) -> Result<Point, String> {
    let Launch { program, a, b, control, link } = *l;
    let window = (WINDOW_BYTES / size).clamp(4, 64);
    let iters = ((seconds * capacity / (size * window) as f64).ceil() as usize).max(2);
    let ifs: Vec<&str> = link.pairs.iter().map(|p| p.a.ifname.as_str()).collect();
    let agent = std::env::current_exe().map_err(|e| format!("openmpi: this program's path: {e}"))?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", a, MPIRUN, "-n", "2", "--host", &format!("{a}:1,{b}:1"), "--bind-to", "none"]);
    for (k, v) in [
        ("pml", "ob1".to_string()),
        ("btl", "tcp,self".into()),
        ("btl_tcp_if_include", ifs.join(",")),
        ("oob_tcp_if_include", control.into()),
        ("plm_rsh_agent", format!("{} netns-exec", agent.display())),
        ("plm_rsh_no_tree_spawn", "1".into()),
        ("mpi_yield_when_idle", "1".into()),
    ] {
        cmd.args(["--mca", k, &v]);
    }
    cmd.arg(program).args([size, iters, window, 2].map(|v| v.to_string()));
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let before = tx_bytes(link);
    let (out, err) = run(cmd)?;
    let after = tx_bytes(link);
    let last = out.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    let v: Vec<&str> = last.split_whitespace().collect();
    let (bytes, secs) = match v.as_slice() {
        [s, b, t] if s.parse() == Ok(size) => (b.parse::<u64>().ok(), t.parse::<f64>().ok()),
        _ => (None, None),
    };
    let (Some(bytes), Some(seconds)) = (bytes, secs) else {
        let why = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
        return Err(format!("openmpi {size} B: mpi_bw printed {last:?}: {}", why.trim()));
    };
    if seconds <= 0.0 || bytes != (size * window * iters) as u64 {
        return Err(format!("openmpi {size} B: mpi_bw reports {bytes} B in {seconds} s"));
    }
    let share = bytes / link.pairs.len() as u64;
    let links_used = before.iter().zip(&after).filter(|(x, y)| y.saturating_sub(**x) >= share / 10).count();
    Ok(Point { bytes, seconds, window, links_used })
}

/// Runs mpirun to its end, at most [`LIMIT`]: its stdout and stderr. On time-out the process
/// group (mpirun, the agents it started) gets SIGTERM, which mpirun passes to its daemons,
/// then SIGKILL.
fn run(mut cmd: Command) -> Result<(String, String), String> {
    // SAFETY: a process attribute; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(format!("openmpi: PR_SET_CHILD_SUBREAPER: {}", std::io::Error::last_os_error()));
    }
    let mut child = cmd.spawn().map_err(|e| format!("openmpi: cannot run ip netns exec {MPIRUN}: {e}"))?;
    let mut pipes = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipes.1.read_to_string(&mut s);
        s
    });
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipes.0.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break Some(st);
        }
        if start.elapsed() > LIMIT {
            let group = -(child.id() as libc::pid_t);
            // SAFETY: signals to the process group this function created (process_group(0)).
            unsafe { libc::kill(group, libc::SIGTERM) };
            std::thread::sleep(Duration::from_secs(2));
            // SAFETY: as above.
            unsafe { libc::kill(group, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reap_orphans();
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    match status {
        None => Err(format!("openmpi: {MPIRUN} did not finish within {LIMIT:?}")),
        Some(st) if !st.success() => {
            let why = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
            Err(format!("openmpi: {MPIRUN} failed ({st}): {why}"))
        }
        Some(_) => Ok((out, err)),
    }
}

/// Waits for the processes that were reparented to this one (orteds, agents), at most 5 s,
/// then kills the rest. This program starts no other child processes while mpirun runs.
fn reap_orphans() {
    let start = Instant::now();
    loop {
        let mut status = 0;
        // SAFETY: waitpid on any child, not blocking.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid < 0 {
            return; // ECHILD: none left
        }
        if pid == 0 {
            if start.elapsed() > Duration::from_secs(5) {
                for orphan in children() {
                    // SAFETY: a signal to a child of this process.
                    unsafe { libc::kill(orphan, libc::SIGKILL) };
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// This process's child processes, from /proc/<pid>/stat (field 4 is the parent's pid).
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id().to_string();
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.filter_map(|e| {
        let pid: libc::pid_t = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = stat.rsplit_once(')')?.1;
        (after.split_whitespace().nth(1)? == me).then_some(pid)
    })
    .collect()
}
