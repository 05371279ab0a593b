"""Ping-pong on this machine: the shm fabric against MPI-3 RMA, OpenSHMEM, UCX and two floors,
in one run.

    python -m tca.peach.shm_bench [--max 4M] [--scale 1.0] [--rounds 5] [--json]
    (or: make bench-shm, tca bench pingpong --fabric shm)

Runs, in rounds, the C programs of ``examples/c`` (built by ``make examples`` into
``target/c``): ``pingpong`` in modes pio, dma (register mode) and dma-chain (chaining mode)
under ``tca run -n 2 --bind-to core``; ``mpi_rma_pingpong`` under ``mpirun.openmpi`` and
``mpirun.mpich`` (MPI_Win_allocate, passive target, MPI_Put + MPI_Win_flush + a flag,
osu_put_latency iteration counts); ``shmem_pingpong`` under ``oshrun`` (Open MPI's OpenSHMEM:
shmem_putmem + shmem_quiet + a flag put + shmem_quiet, shmem_wait_until; ``--mca osc ^rdma``);
``ucx_pingpong`` (UCP put over posix shared memory, two forked processes); and two floors
without any library: ``store_pingpong`` (the same ping-pong as plain stores between two forked
processes) and ``memcpy_floor`` (a single-threaded memcpy loop). Two Python series compare the
Python ranks: the TCA Python API's DMA ping-pong against mpi4py's Send/Recv under Open MPI
(:mod:`tca.peach.bench.py_pingpong`, 8 B to 4 KiB). Every series pins its two
ranks to two CPUs. A series whose program is not built (``make mpi`` installs MPI, OpenSHMEM
and UCX) is skipped with a message.

The rounds are interleaved (round r runs every series once, starting at a different series
each round), so that a slow spell of the machine touches all series alike. Each round's value
is a mean over the iterations; the tables give the median and the minimum over the rounds per
series and size.

The ratios the project's goals are stated in are paired: each is taken within one round,
between series that run next to each other (the list below puts every compared pair side by
side), and the table gives the median over the rounds. This machine's speed changes in steps
that last minutes (the store floor at 8 B moves between about 0.05 and 0.2 us), so a ratio of
two medians can compare a series measured in one step with another measured in the other; a
ratio within one round compares them at one speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import signal
import statistics
import subprocess
import sys
from pathlib import Path

from tca import TcaError
from tca.common.report import Row, to_json
from tca.units import parse_size_arg

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("TCA_C_BIN", ROOT / "target" / "c"))


def series_commands(max_bytes: int, scale: float) -> dict[str, list[str]]:
    """The command of every series that can run here (the others are left out; see
    :func:`missing_series`)."""
    return {name: cmd for name, cmd in _all_series(max_bytes, scale).items() if cmd is not None}


def missing_series(max_bytes: int = 8, scale: float = 1.0) -> list[str]:
    """Names of the series whose program or launcher is not installed here."""
    return [name for name, cmd in _all_series(max_bytes, scale).items() if cmd is None]


def _all_series(max_bytes: int, scale: float) -> dict[str, list[str] | None]:
    # Every launcher pins rank r to CPU r (Open MPI's default for 2 ranks; MPICH and tca run
    # are asked to; the forked programs pin themselves), so that the series differ only in how
    # the bytes move.
    launch = [sys.executable, "-m", "tca", "run", "-n", "2", "--bind-to", "core"]
    args = [str(max_bytes), str(scale)]
    # Series compared by a goal are neighbours, so that a round measures them seconds apart:
    # the floors, PIO, DMA, the peers, then the Python pair.
    cmds: dict[str, list[str] | None] = {
        "memcpy": [str(BIN / "memcpy_floor"), *args],
        "plain stores": [str(BIN / "store_pingpong"), *args],
        "shm PIO": [*launch, str(BIN / "pingpong"), "pio", *args],
        "shm DMA register": [*launch, str(BIN / "pingpong"), "dma", *args],
        "shm DMA chaining": [*launch, str(BIN / "pingpong"), "dma-chain", *args],
    }
    exe = BIN / "ucx_pingpong"
    cmds["UCX UCP put"] = [str(exe), *args] if exe.exists() else None
    for mpi, name in (("openmpi", "Open MPI"), ("mpich", "MPICH")):
        exe = BIN / f"mpi_rma_pingpong.{mpi}"
        extra = ["--bind-to", "core"] if mpi == "openmpi" else ["-bind-to", "core"]
        ok = shutil.which(f"mpirun.{mpi}") and exe.exists()
        cmds[f"MPI-3 RMA {name}"] = [f"mpirun.{mpi}", *extra, "-n", "2", str(exe), *args] if ok else None
    exe = BIN / "shmem_pingpong"
    ok = shutil.which("oshrun") and exe.exists()
    # Open MPI's rdma one-sided component does not let OSHMEM jobs end cleanly here.
    shmem = ["oshrun", "--bind-to", "core", "--mca", "osc", "^rdma", "-n", "2", str(exe), *args]
    cmds["OpenSHMEM"] = shmem if ok else None
    py = str(Path(__file__).resolve().parent / "bench" / "py_pingpong.py")
    cmds["Python shm DMA"] = [*launch, py, "tca", *args]
    ok = shutil.which("mpirun.openmpi") and importlib.util.find_spec("mpi4py") is not None
    mpi4py = ["mpirun.openmpi", "--bind-to", "core", "-n", "2", sys.executable, py, "mpi4py", *args]
    cmds["Python mpi4py Send/Recv"] = mpi4py if ok else None
    return cmds


def parse_table(text: str) -> dict[int, float]:
    """Size [B] -> latency [us] from an OSU-style table."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            rows[int(parts[0])] = float(parts[1])
    return rows


def run_series(cmd: list[str], timeout_s: float = 180) -> dict[int, float]:
    """Runs one series; after `timeout_s` its whole process group (launcher and ranks) is
    killed and RuntimeError says so."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # No idle BLAS threads in the launcher's Python (they spin for a while after start-up, on
    # the CPUs the ranks are pinned to).
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    p = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    try:
        out, err = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise RuntimeError(f"{' '.join(cmd)} did not finish in {timeout_s:.0f} s") from None
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{err[-2000:]}")
    return parse_table(out)


# Series -> size -> round -> one-way latency [us].
Samples = dict[str, dict[int, dict[int, float]]]


def measure(max_bytes: int, scale: float, rounds: int) -> Samples:
    """Every round's mean latency per series and size, over `rounds` interleaved rounds."""
    cmds = series_commands(max_bytes, scale)
    names = list(cmds)
    samples: Samples = {name: {} for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            print(f"# round {r + 1}/{rounds}: {name}", file=sys.stderr, flush=True)
            try:
                table = run_series(cmds[name], timeout_s=180)
            except RuntimeError as e:  # one series failing (or hanging) leaves the others
                print(f"# {name}: {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
                continue
            for size, us in table.items():
                samples[name].setdefault(size, {})[r] = us
    return samples


def summary(samples: Samples, how=statistics.median) -> dict[str, dict[int, float]]:
    """One value per series and size: `how` of the rounds' values."""
    return {name: {size: how(v.values()) for size, v in rows.items()} for name, rows in samples.items()}


def gbps(size: int, us: float) -> float:
    return size / us / 1e3


SHM = ("shm PIO", "shm DMA register", "shm DMA chaining")
PEERS = ("MPI-3 RMA Open MPI", "MPI-3 RMA MPICH", "OpenSHMEM", "UCX UCP put")
FLOORS = ("plain stores", "memcpy")


def paired(samples: Samples, size: int, num: tuple[str, ...], den: tuple[str, ...]) -> float | None:
    """The median over the rounds of (best of `num`) / (best of `den`) at `size`, each ratio
    taken within one round; None when no round measured both sides."""
    values = []
    rounds = {r for name in num + den for r in samples.get(name, {}).get(size, {})}
    for r in sorted(rounds):
        top = [samples[n][size][r] for n in num if r in samples.get(n, {}).get(size, {})]
        bottom = [samples[n][size][r] for n in den if r in samples.get(n, {}).get(size, {})]
        if top and bottom and min(bottom) > 0:
            values.append(min(top) / min(bottom))
    return statistics.median(values) if values else None


def ratios(samples: Samples, max_bytes: int) -> list[tuple[str, int, float, str]]:
    """The goal ratios, paired within rounds (:func:`paired`): (description, size, value,
    goal)."""
    out = []

    def add(desc: str, size: int, num: tuple[str, ...], den: tuple[str, ...], goal: str) -> None:
        r = paired(samples, size, num, den)
        if r is not None:
            out.append((desc, size, r, goal))

    pio, dma = ("shm PIO",), ("shm DMA register",)
    add("8 B latency, shm PIO / plain stores (floor)", 8, pio, ("plain stores",), "<= 1.3")
    for name in PEERS:
        add(f"8 B latency, shm PIO / {name}", 8, pio, (name,), "< 1" if "UCX" in name else "<= 0.5")
    for size in (8, 64, 4096):
        add(f"{size} B latency, shm DMA register / shm PIO", size, dma, pio, "<= 2")
    for size in (65536, 1 << 20, 4 << 20):
        if size <= max_bytes:
            add(f"{size} B latency, shm DMA register / better floor", size, dma, FLOORS, "<= 1.05")
    add(
        "8 B latency, Python shm DMA / Python mpi4py Send/Recv",
        8,
        ("Python shm DMA",),
        ("Python mpi4py Send/Recv",),
        "<= 1.5",
    )
    # Bandwidth: memcpy's latency over DMA's is DMA's bandwidth over memcpy's.
    add(f"{max_bytes} B bandwidth, shm DMA register / memcpy", max_bytes, ("memcpy",), dma, ">= 0.95")
    med = summary(samples)
    for size in sorted({s for rows in samples.values() for s in rows}):
        theirs = {n: med[n][size] for n in PEERS if size in med.get(n, {})}
        if theirs:
            best = min(theirs, key=theirs.get)
            add(f"{size} B latency, best shm / best peer (by median: {best})", size, SHM, PEERS, "< 1")
    return out


def meets(value: float, goal: str) -> bool:
    """Whether `value` meets a goal written as "<= 1.3", "< 1" or ">= 0.95"."""
    op, bound = goal.split()
    return {"<=": value <= float(bound), "<": value < float(bound), ">=": value >= float(bound)}[op]


def _table(title: str, vals: dict[str, dict[int, float]], fmt, sizes: list[int]) -> None:
    names = list(vals)
    width = max(18, *(len(n) + 2 for n in names))
    print(title)
    print(f"# {'Size':>9}" + "".join(f"{n:>{width}}" for n in names))
    for s in sizes:
        cells = (f"{fmt(s, vals[n][s]):>{width}.3f}" if s in vals[n] else f"{'-':>{width}}" for n in names)
        print(f"{s:>11}" + "".join(cells))
    print()


def print_table(samples: Samples, max_bytes: int) -> None:
    med, low = summary(samples), summary(samples, min)
    sizes = sorted({s for rows in med.values() for s in rows})
    rounds = max((len(v) for rows in samples.values() for v in rows.values()), default=0)
    what = f"ping-pong between 2 ranks on this host, {rounds} interleaved rounds"
    _table(f"# One-way latency (us), median of the rounds; {what}", med, lambda s, us: us, sizes)
    _table("# One-way latency (us), minimum of the rounds", low, lambda s, us: us, sizes)
    big = [s for s in sizes if s >= 4096]
    _table("# Bandwidth (GB/s) = size / median one-way latency", med, gbps, big)
    print("# Ratios within each round, median over the rounds (goals from the issue; benchmarks, not tests)")
    for desc, _, value, goal in ratios(samples, max_bytes):
        verdict = "met" if meets(value, goal) else "missed"
        print(f"{desc:<76} {value:8.3f}   goal {goal:<7} {verdict}")


def json_rows(samples: Samples, max_bytes: int) -> list[Row]:
    """The measured latencies as benchmark rows (DESIGN.md, "Benchmark output"): the median of
    the rounds as series NAME, the minimum as series "NAME min"; then every goal ratio as
    series "ratio: DESCRIPTION (goal GOAL)", unit "x"."""
    rows = []
    for how, suffix in ((statistics.median, ""), (min, " min")):
        for name, table in summary(samples, how).items():
            for size, us in sorted(table.items()):
                rows.append(
                    Row("pingpong", "this host (shm)", name + suffix, size, "B", us, "us", kind="measured")
                )
    for desc, size, value, goal in ratios(samples, max_bytes):
        series = f"ratio: {desc} (goal {goal})"
        rows.append(Row("pingpong", "this host (shm)", series, size, "B", value, "x", kind="measured"))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tca.peach.shm_bench", description=__doc__.splitlines()[0])
    p.add_argument("--max", default="4M", help="largest message (default 4M)")
    p.add_argument("--scale", type=float, default=1.0, help="iteration-count factor (default 1.0)")
    p.add_argument("--rounds", type=int, default=5, help="rounds of every series (default 5)")
    p.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    args = p.parse_args(argv)
    try:
        max_bytes = parse_size_arg(args.max, "--max")
    except TcaError as e:
        print(f"shm_bench: error: {e}", file=sys.stderr)
        return 2
    if not (BIN / "pingpong").exists():
        print(f"shm_bench: {BIN / 'pingpong'} missing: run `make examples` first", file=sys.stderr)
        return 2
    for name in missing_series():
        print(f"# {name}: not installed here (make mpi, then make examples): skipped", file=sys.stderr)
    samples = measure(max_bytes, args.scale, args.rounds)
    if args.json:
        print(to_json(json_rows(samples, max_bytes)))
    else:
        print_table(samples, max_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
