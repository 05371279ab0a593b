"""Starting the N ranks of a program on this host (``tca run``, see :mod:`tca.cli.run`).

Each rank is a process with ``TCA_RANK``, ``TCA_SIZE``, ``TCA_JOB_ID`` and ``TCA_FABRIC`` in its
environment; the TCA library (libtca.so, the Rust crate tca-shm) reads them in ``tcaInit``.
Like mpirun, the launcher waits for every rank; when one fails (non-zero exit or a signal) it
names the rank that failed first and how, stops the others (SIGTERM, then SIGKILL after a grace
period) and exits with that rank's status. SIGTERM, SIGINT and SIGHUP sent to the launcher are
forwarded to the ranks, which get the same grace period. Afterwards it removes any
``/dev/shm/tca-<job>-*`` a rank left behind (only possible when a rank died inside ``tcaInit``).

``--fabric sim --platform P`` runs a Python program written with ``tca.peach.program.main`` once, with
``TCA_FABRIC=sim``, ``TCA_SIZE=N`` and ``TCA_PLATFORM=P``: its N ranks run as threads against the
simulated platform's virtual clock. A C program built with ``tca cc`` runs under SimGrid
SMPI (``smpimain``, as ``smpirun`` starts it) on the platform :mod:`tca.peach.smpi_platform`
generates (MPI costs of MVAPICH2 on the platform's InfiniBand), with ``TCA_FABRIC=smpi``: its
TCA calls drive the simulated fabric on SimGrid's clock (:mod:`tca.peach.cc`).
"""

from __future__ import annotations

import functools
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tca import TcaError

MAX_RANKS = 16
SHM_DIR = Path("/dev/shm")
GRACE_S = 2.0
# The simulation of a C program, stopped, writes its trace and statistics first (a trace of a
# million spans takes seconds).
SIM_GRACE_S = 10.0
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def default_signals() -> None:
    """Gives the signals the launcher forwards their default disposition (for a child about to
    run `tca run` whose parent may have inherited them ignored, as under nohup)."""
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_DFL)


def job_id() -> str:
    """A job id unique on this host: names the shared segments ``tca-<job>-<rank>``."""
    return f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def rank_env(rank: int, size: int, job: str, fabric: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(TCA_RANK=str(rank), TCA_SIZE=str(size), TCA_JOB_ID=job, TCA_FABRIC=fabric)
    return env


def cleanup(job: str) -> list[str]:
    """Removes leftover segments of ``job``; returns their names."""
    removed = []
    for p in SHM_DIR.glob(f"tca-{job}-*"):
        try:
            p.unlink()
            removed.append(p.name)
        except FileNotFoundError:
            pass
    return removed


def status_of(code: int) -> int:
    """A shell-style exit status for a Popen return code (signals as 128 + n)."""
    return 128 - code if code < 0 else code


def how(code: int) -> str:
    """How a process ended, in words: "exited with status 3", "was killed by SIGKILL"."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name} (status {128 - code})"
    return f"exited with status {code}"


def cores_for(nranks: int, bind: str) -> list[set[int] | None]:
    """The CPU set of each rank: ``core`` binds rank r to the r-th allowed CPU (round robin,
    as mpirun's ``--bind-to core``); ``none`` leaves the scheduler free."""
    if bind == "none":
        return [None] * nranks
    cpus = sorted(os.sched_getaffinity(0))
    return [{cpus[r % len(cpus)]} for r in range(nranks)]


def check_timeout(timeout_s: float | None) -> None:
    if timeout_s is not None and not (math.isfinite(timeout_s) and timeout_s > 0):
        raise TcaError(f"--timeout {timeout_s}: expected a finite number of seconds greater than 0")


def run(
    nranks: int,
    program: list[str],
    fabric: str = "shm",
    timeout_s: float | None = None,
    bind: str = "none",
    platform: str | None = None,
    sim: SimOptions | None = None,
) -> int:
    """Runs ``program`` as ``nranks`` ranks and returns the job's exit status."""
    if not 1 <= nranks <= MAX_RANKS:
        raise TcaError(f"-n {nranks}: a TCA sub-cluster has 1 to {MAX_RANKS} nodes")
    if not program:
        raise TcaError("no program given (usage: tca run -n N PROGRAM [ARGS...])")
    if not program[0]:
        raise TcaError("the program's name is empty (usage: tca run -n N PROGRAM [ARGS...])")
    check_timeout(timeout_s)
    if fabric == "sim":
        if bind != "none":
            raise TcaError(
                f"--bind-to {bind} applies to --fabric shm only: the simulator's ranks share one process"
            )
        return run_simulated(
            nranks, program, "peach2-testbed-2013" if platform is None else platform, timeout_s, sim
        )
    if fabric != "shm":
        raise TcaError(f"--fabric {fabric}: expected shm or sim")
    if platform is not None or sim is not None:
        raise TcaError(
            "--platform, --compute, --no-gdr, --trace, --stats and --stats-json apply to --fabric sim only"
        )
    if bind not in ("none", "core"):
        raise TcaError(f"--bind-to {bind}: expected none or core")
    exe = on_path(program[0])
    if os.path.isfile(exe) and os.access(exe, os.R_OK):
        if links_simgrid(exe):
            raise TcaError(
                f"{program[0]} was built with `tca cc` for the simulator: run it with --fabric sim "
                "--platform P, or build it with mpicc for the shm fabric"
            )
        if nranks > 1 and (links(exe, b"libmpi.so") or links(exe, b"libmpich.so")):
            # Each process would be a one-rank MPI job of its own, while tcaInit joins them.
            raise TcaError(
                f"{program[0]} is an MPI program: start it with mpirun (mpirun -n {nranks} "
                f"{program[0]}): libtca joins its ranks on the shm fabric; tca run would start "
                f"{nranks} separate one-rank MPI jobs"
            )
    job = job_id()
    with Job() as ranks:
        try:
            for r, cpus in enumerate(cores_for(nranks, bind)):
                env = rank_env(r, nranks, job, fabric)
                pin = None if cpus is None else (lambda c=cpus: os.sched_setaffinity(0, c))
                ranks.start(with_interpreter(program), env, pin)
            return ranks.wait(timeout_s)
        finally:
            ranks.stop()
            cleanup(job)


def on_path(name: str) -> str:
    """Where a program runs from: a bare name is found on the PATH, as a shell and mpirun find
    it (the name itself when it is not there)."""
    return name if "/" in name else shutil.which(name) or name


def with_interpreter(program: list[str]) -> list[str]:
    """A ``.py`` file runs with this Python (the one that has ``tca``)."""
    return [sys.executable, *program] if program[0].endswith(".py") else program


@dataclass(frozen=True)
class SimOptions:
    """How a C program runs on the simulator (``tca run --fabric sim``)."""

    compute: str = "none"  # none | declared | measured (tca.peach.smpi_platform.COMPUTE_MODES)
    gdr: bool = True  # MVAPICH2 with GPUDirect RDMA
    trace: Path | None = None  # Chrome trace of the TCA hardware
    stats: bool = False  # a line of simulator statistics on stderr
    stats_json: Path | None = None  # and the statistics with per-link counters as JSON there


def links(program: str, library: bytes) -> bool:
    """Whether ``program`` is an ELF file that names ``library`` (``b"libsimgrid.so"``) among
    its libraries."""
    try:
        with open(program, "rb") as f:
            head = f.read(4)
            return head == b"\x7fELF" and library in f.read()
    except OSError as e:
        raise TcaError(f"{program}: {e.strerror}") from e


def links_simgrid(program: str) -> bool:
    """Whether ``program`` is an SMPI program (it names libsimgrid among its libraries)."""
    return links(program, b"libsimgrid.so")


def run_smpi(
    nranks: int, program: list[str], platform: str, timeout_s: float | None, opts: SimOptions
) -> int:
    """Runs a C program built with ``tca cc`` under SimGrid SMPI on the simulated platform."""
    import tempfile

    from tca.peach import platforms, smpi_platform

    program = [on_path(program[0]), *program[1:]]
    if not links_simgrid(program[0]):
        raise TcaError(
            f"{program[0]} was not built with `tca cc` (it does not link SimGrid); "
            "build it with `tca cc`, or run it on the shm fabric"
        )
    if not os.access(program[0], os.X_OK):
        # SimGrid loads the program as a library, which needs no execute bit; mpirun does.
        raise TcaError(f"cannot start {program[0]}: Permission denied (not executable)")
    if "--" in program[1:]:
        raise TcaError("a program on the simulator cannot get the argument `--`: SimGrid drops it")
    path = platforms.resolve(platform)
    outputs = [f for f in (opts.trace, opts.stats_json) if f is not None]
    for f in outputs:
        # A file of an earlier run must not pass for this run's when this one writes none.
        Path(f).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="tca-smpi-", dir=smpi_tmpdir()) as work:
        setup = smpi_platform.prepare(path, nranks, Path(work), compute=opts.compute, gdr=opts.gdr)
        env = dict(os.environ, **setup.env, TCA_FABRIC="smpi", TCA_PLATFORM=str(path))
        for var in ("TCA_RANK", "TCA_SIZE", "TCA_JOB_ID", "TCA_TRACE", "TCA_SIM_STATS"):
            env.pop(var, None)
        if opts.trace is not None:
            env["TCA_TRACE"] = str(Path(opts.trace).resolve())
        if opts.stats:
            env["TCA_SIM_STATS"] = "1"
        if opts.stats_json is not None:
            env["TCA_SIM_STATS"] = str(Path(opts.stats_json).resolve())
        # A bare name not on the PATH is in this directory, as mpirun finds it.
        exe = str(Path(program[0]).resolve())
        # Stopped, the simulation writes its trace and statistics before it ends.
        with Job(SIM_GRACE_S) as job:
            try:
                job.start(
                    smpi_platform.smpimain_command(setup, [exe, *program[1:]]),
                    env,
                    None,
                    "the simulation (SimGrid's smpimain)",
                )
                status = job.wait(timeout_s)
            finally:
                job.stop()
    for f in outputs:
        if not Path(f).exists():
            print(
                f"tca run: {f} was not written: no rank joined the TCA job (tcaInit), or the run "
                "ended before it could be written",
                file=sys.stderr,
                flush=True,
            )
    return status


def smpi_tmpdir() -> str:
    """Where the simulation's files go: the usual temporary directory, unless its path has
    white space, which SimGrid's --cfg options cannot carry; then /tmp."""
    import tempfile

    usual = tempfile.gettempdir()
    if not any(c.isspace() for c in usual):
        return usual
    if os.path.isdir("/tmp") and os.access("/tmp", os.W_OK | os.X_OK):
        return "/tmp"
    raise TcaError(
        f"the temporary directory {usual!r} has white space, which SimGrid cannot take: set TMPDIR"
    )


def run_simulated(
    nranks: int, program: list[str], platform: str, timeout_s: float | None, opts: SimOptions | None = None
) -> int:
    """Runs a ``tca.peach.program`` Python file once, or a C program built with ``tca cc``; its
    ranks run on the simulated platform."""
    from tca.peach import platforms

    platforms.resolve(platform)  # a bad name is an error here, not in the program
    if not program[0].endswith(".py"):
        return run_smpi(nranks, program, platform, timeout_s, opts or SimOptions())
    if opts is not None and opts != SimOptions():
        raise TcaError(
            "--compute, --no-gdr, --trace, --stats and --stats-json apply to C programs on the simulator"
        )
    env = dict(os.environ, TCA_FABRIC="sim", TCA_SIZE=str(nranks), TCA_PLATFORM=platform)
    for var in ("TCA_RANK", "TCA_JOB_ID"):
        env.pop(var, None)
    with Job() as job:
        try:
            job.start(with_interpreter(program), env, None)
            return job.wait(timeout_s)
        finally:
            job.stop()


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (the state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pids: list[int]) -> list[tuple[int, str]]:
    """The processes below ``pids`` (their children, the children's children, ...), from
    ``/proc``, each with its start time, which tells it from a later process of the same id."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append((int(entry.name), fields[19]))
    found, todo = [], list(pids)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def still_running(procs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Those of ``procs`` that run (not ended, not a zombie, not another process since)."""
    return [
        (pid, start)
        for pid, start in procs
        if (f := _stat(pid)) is not None and f[0] != "Z" and f[19] == start
    ]


def signal_pids(procs: list[tuple[int, str]], signum: int) -> None:
    for pid, _ in still_running(procs):
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


@functools.cache
def _prctl():
    """libc's prctl, looked up once."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


class Job:
    """The processes of one job, reaped as soon as each ends (so that peers see a dead rank at
    once, not a zombie, and the launcher knows which rank failed first).

    Stopping the job stops what its processes started too (a rank that is a script, say), as
    mpirun does; and a process gets SIGTERM when the launcher dies, even by SIGKILL (a CI
    runner's timeout, the OOM killer), so that nothing of the job runs on unseen.

    As a context manager it forwards SIGTERM, SIGINT and SIGHUP to the processes while it is
    open: the first such signal also ends :meth:`wait`, which then gives the processes the grace
    period and returns 128 + the signal."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.procs: list[subprocess.Popen] = []
        self.names: list[str] = []
        self.pidfds: dict[int, int] = {}  # pidfd -> index in procs
        self.signalled: int | None = None
        self.grace_s = grace_s
        self._saved: dict[int, object] = {}

    def __enter__(self) -> Job:
        for sig in FORWARDED:
            # A signal ignored on the way in (nohup, a shell's `&`) stays ignored, by the
            # processes too.
            if signal.getsignal(sig) != signal.SIG_IGN:
                self._saved[sig] = signal.signal(sig, self._forward)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        for fd in self.pidfds:
            os.close(fd)

    def _forward(self, signum: int, _frame: object) -> None:
        if self.signalled is None:
            self.signalled = signum
        for p in self.procs:
            self._signal(p, signum)

    @staticmethod
    def _signal(p: subprocess.Popen, signum: int) -> None:
        if p.returncode is None:
            try:
                p.send_signal(signum)
            except ProcessLookupError:
                pass

    def start(self, command: list[str], env: dict[str, str], preexec, name: str | None = None) -> None:
        """Starts one process; ``name`` is how messages call it (default: rank N)."""
        self.names.append(name or f"rank {len(self.procs)}")
        prctl, launcher = _prctl(), os.getpid()

        def in_child() -> None:
            prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
            if os.getppid() != launcher:  # the launcher died before the call
                os._exit(128 + signal.SIGTERM)
            if preexec is not None:
                preexec()

        try:
            p = subprocess.Popen(command, env=env, preexec_fn=in_child)
        except OSError as e:
            raise TcaError(f"cannot start {command[0]}: {e.strerror}") from e
        self.procs.append(p)
        try:
            self.pidfds[os.pidfd_open(p.pid)] = len(self.procs) - 1
        except (AttributeError, OSError):  # no pidfd here: wait() polls instead
            pass

    def _reap(self) -> list[int]:
        """Collects every process that ended since the last call; returns their indexes."""
        ended = []
        for i, p in enumerate(self.procs):
            if p.returncode is None and p.poll() is not None:
                ended.append(i)
        return ended

    def _sleep(self, seconds: float) -> None:
        """Until a process ends or `seconds` pass (at most 50 ms, so that a forwarded signal
        is noticed soon)."""
        seconds = min(seconds, 0.05)
        if len(self.pidfds) == len(self.procs):
            poller = select.poll()
            for fd, i in self.pidfds.items():
                if self.procs[i].returncode is None:
                    poller.register(fd, select.POLLIN)
            poller.poll(seconds * 1000)
        else:
            time.sleep(min(seconds, 0.002))

    def wait(self, timeout_s: float | None) -> int:
        """Waits for every process; on the first failure stops the rest and names the rank.
        Returns the job's status."""
        start = time.monotonic()
        first: tuple[int, int] | None = None  # (rank, return code)
        while True:
            ended = self._reap()
            failed = [i for i in ended if self.procs[i].returncode != 0]
            if failed and first is None and self.signalled is None:
                # Ranks that end in the same wake-up: a rank killed by a signal is the cause,
                # the others exit because they saw it die.
                rank = min(failed, key=lambda i: (self.procs[i].returncode >= 0, i))
                first = (rank, self.procs[rank].returncode)
                others = "; stopping the others" if len(self.procs) > 1 else ""
                print(f"tca run: {self.names[rank]} {how(first[1])}{others}", file=sys.stderr, flush=True)
                self.stop()
            if self.signalled is not None:
                print(
                    f"tca run: got {signal.Signals(self.signalled).name}; stopping the ranks",
                    file=sys.stderr,
                    flush=True,
                )
                self.stop(already_signalled=True)
                return 128 + self.signalled
            if all(p.returncode is not None for p in self.procs):
                return status_of(first[1]) if first else 0
            if timeout_s is not None and time.monotonic() - start > timeout_s:
                print(f"tca run: job exceeded {timeout_s:g} s; stopping it", file=sys.stderr, flush=True)
                self.stop()
                return 124
            remaining = 1.0 if timeout_s is None else timeout_s - (time.monotonic() - start)
            self._sleep(max(remaining, 0.0))

    def stop(self, already_signalled: bool = False) -> None:
        """SIGTERM to every running process (unless a forwarded signal already went), SIGKILL
        to those still running after the grace period."""
        live = [p for p in self.procs if p.poll() is None]
        # Found before the processes end: then their children would have another parent.
        below = descendants([p.pid for p in live]) if live else []
        if not already_signalled:
            for p in live:
                self._signal(p, signal.SIGTERM)
        signal_pids(below, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for p in live:
            try:
                p.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        while still_running(below) and time.monotonic() < deadline:
            time.sleep(0.01)
        signal_pids(below, signal.SIGKILL)
