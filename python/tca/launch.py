"""``tca run -n N [--fabric shm] PROGRAM ARGS``: start N ranks of a program on this host.

Each rank is a process with ``TCA_RANK``, ``TCA_SIZE``, ``TCA_JOB_ID`` and ``TCA_FABRIC`` in its
environment; the TCA library (libtca.so, the Rust crate tca-shm) reads them in ``tcaInit``.
Like mpirun, the launcher waits for every rank; when one fails (non-zero exit or a signal) it
stops the others (SIGTERM, then SIGKILL after a grace period) and exits with the first failure's
status. Afterwards it removes any ``/dev/shm/tca-<job>-*`` a rank left behind (only possible
when a rank died inside ``tcaInit``).

``--fabric sim --platform P`` runs a Python program written with ``tca.program.main`` once, with
``TCA_FABRIC=sim``, ``TCA_SIZE=N`` and ``TCA_PLATFORM=P``: its N ranks run as threads against the
simulated platform's virtual clock (C programs run on the shm fabric only).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tca import TcaError

MAX_RANKS = 16
SHM_DIR = Path("/dev/shm")
GRACE_S = 2.0


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


def cores_for(nranks: int, bind: str) -> list[set[int] | None]:
    """The CPU set of each rank: ``core`` binds rank r to the r-th allowed CPU (round robin,
    as mpirun's ``--bind-to core``); ``none`` leaves the scheduler free."""
    if bind == "none":
        return [None] * nranks
    cpus = sorted(os.sched_getaffinity(0))
    return [{cpus[r % len(cpus)]} for r in range(nranks)]


def run(
    nranks: int,
    program: list[str],
    fabric: str = "shm",
    timeout_s: float | None = None,
    bind: str = "none",
    platform: str | None = None,
) -> int:
    """Runs ``program`` as ``nranks`` ranks and returns the job's exit status."""
    if not 1 <= nranks <= MAX_RANKS:
        raise TcaError(f"-n {nranks}: a TCA sub-cluster has 1 to {MAX_RANKS} nodes")
    if not program:
        raise TcaError("no program given (usage: tca run -n N PROGRAM [ARGS...])")
    if fabric == "sim":
        return run_simulated(nranks, program, platform or "peach2-testbed-2013", timeout_s)
    if fabric != "shm":
        raise TcaError(f"--fabric {fabric}: expected shm or sim")
    if platform is not None:
        raise TcaError("--platform applies to --fabric sim only")
    if bind not in ("none", "core"):
        raise TcaError(f"--bind-to {bind}: expected none or core")
    job = job_id()
    procs: list[subprocess.Popen] = []
    try:
        for r, cpus in enumerate(cores_for(nranks, bind)):
            env = rank_env(r, nranks, job, fabric)
            pin = None if cpus is None else (lambda c=cpus: os.sched_setaffinity(0, c))
            try:
                procs.append(subprocess.Popen(with_interpreter(program), env=env, preexec_fn=pin))
            except OSError as e:
                raise TcaError(f"cannot start {program[0]}: {e.strerror}") from e
        return wait_all(procs, timeout_s)
    finally:
        stop(procs)
        cleanup(job)


def with_interpreter(program: list[str]) -> list[str]:
    """A ``.py`` file runs with this Python (the one that has ``tca``)."""
    return [sys.executable, *program] if program[0].endswith(".py") else program


def run_simulated(nranks: int, program: list[str], platform: str, timeout_s: float | None) -> int:
    """Runs a ``tca.program`` Python file once; its ranks run on the simulated platform."""
    from tca import platforms

    platforms.resolve(platform)  # a bad name is an error here, not in the program
    if not program[0].endswith(".py"):
        raise TcaError(
            f"--fabric sim runs Python programs written with tca.program ({program[0]} is not a .py file)"
        )
    command = with_interpreter(program)
    env = dict(os.environ, TCA_FABRIC="sim", TCA_SIZE=str(nranks), TCA_PLATFORM=platform)
    for var in ("TCA_RANK", "TCA_JOB_ID"):
        env.pop(var, None)
    try:
        proc = subprocess.Popen(command, env=env)
    except OSError as e:
        raise TcaError(f"cannot start {command[0]}: {e.strerror}") from e
    try:
        return wait_all([proc], timeout_s)
    finally:
        stop([proc])


def wait_all(procs: list[subprocess.Popen], timeout_s: float | None) -> int:
    """Waits for every rank, reaping each as soon as it ends (so that peers see a dead rank at
    once, not a zombie); on the first failure stops the rest. Returns the job's status."""
    start = time.monotonic()
    first_failure = 0
    while True:
        running = [p for p in procs if p.poll() is None]
        failed = [p for p in procs if p.returncode not in (None, 0)]
        if failed and not first_failure:
            first_failure = status_of(failed[0].returncode)
            rank = procs.index(failed[0])
            print(
                f"tca run: rank {rank} exited with status {first_failure}; stopping the others",
                file=sys.stderr,
            )
            stop(procs)
        if not running:
            return first_failure
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            print(f"tca run: job exceeded {timeout_s} s; stopping it", file=sys.stderr)
            stop(procs)
            return 124
        time.sleep(0.005)


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM to every running rank, SIGKILL to those still running after the grace period."""
    live = [p for p in procs if p.poll() is None]
    for p in live:
        p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    for p in live:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def cmd_run(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    return run(
        args.n, program, fabric=args.fabric, timeout_s=args.timeout, bind=args.bind_to, platform=args.platform
    )


def add_parser(subparsers) -> None:
    """Registers ``tca run`` on the CLI's subcommands."""
    p = subparsers.add_parser(
        "run",
        help="start N ranks of a TCA program on this host (shm fabric)",
        description="Start N ranks of PROGRAM on this host with TCA_RANK, TCA_SIZE and "
        "TCA_JOB_ID set; the TCA library joins them over shared memory.",
    )
    p.add_argument("-n", type=int, required=True, metavar="N", help="number of ranks (1-16)")
    p.add_argument("--fabric", default="shm", choices=["shm", "sim"], help="fabric (default: shm)")
    p.add_argument(
        "--bind-to",
        default="none",
        choices=["none", "core"],
        help="core: pin rank r to the r-th CPU, like mpirun --bind-to core (default: none)",
    )
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="stop the job after this long")
    p.add_argument("--platform", help="simulated platform for --fabric sim (default: peach2-testbed-2013)")
    p.add_argument("program", nargs=argparse.REMAINDER, help="program and its arguments")
    p.set_defaults(func=cmd_run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tca-run")
    add_parser(parser.add_subparsers(dest="command", required=True))
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:
        argv = argv[1:]
    args = parser.parse_args(["run", *argv])
    try:
        return args.func(args)
    except TcaError as e:
        print(f"tca run: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
