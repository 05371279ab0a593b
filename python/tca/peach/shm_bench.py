"""Ping-pong on this machine: the shm fabric against MPI-3 RMA and two floors, in one run.

    python -m tca.peach.shm_bench [--max 4M] [--scale 1.0] [--rounds 5] [--json]
    (or: make bench-shm)

Runs, in rounds, the C programs of ``examples/c`` (built by ``make examples`` into
``target/c``): ``pingpong`` in modes pio, dma (register mode) and dma-chain (chaining mode)
under ``tca run -n 2 --bind-to core``; ``mpi_rma_pingpong`` under ``mpirun.openmpi`` and
``mpirun.mpich`` (MPI_Win_allocate, passive target, MPI_Put + MPI_Win_flush + a flag,
osu_put_latency iteration counts); and two floors without any library: ``store_pingpong``
(the same ping-pong as plain stores between two forked processes) and ``memcpy_floor`` (a
single-threaded memcpy loop). For each series and size it keeps the best of the rounds (each
round's value is a mean over the iterations), then prints one OSU-style table of one-way
latency, the bandwidth each gives, and the ratios the project's goals are stated in: 8-byte
PIO latency against MPI-3 RMA, 4 MB DMA bandwidth against single-threaded memcpy. All series
run on this machine in this invocation, so the ratios compare like with like.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tca import TcaError
from tca.common.report import Row, to_json
from tca.units import parse_size_arg

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("TCA_C_BIN", ROOT / "target" / "c"))


def series_commands(max_bytes: int, scale: float) -> dict[str, list[str]]:
    """The command of every series that can run here (MPI series only where installed)."""
    # Every launcher pins rank r to CPU r (Open MPI's default for 2 ranks; MPICH and tca run
    # are asked to), so that the series differ only in how the bytes move.
    launch = [sys.executable, "-m", "tca", "run", "-n", "2", "--bind-to", "core"]
    args = [str(max_bytes), str(scale)]
    cmds = {
        "shm PIO": [*launch, str(BIN / "pingpong"), "pio", *args],
        "shm DMA register": [*launch, str(BIN / "pingpong"), "dma", *args],
        "shm DMA chaining": [*launch, str(BIN / "pingpong"), "dma-chain", *args],
    }
    for mpi, name in (("openmpi", "Open MPI"), ("mpich", "MPICH")):
        exe = BIN / f"mpi_rma_pingpong.{mpi}"
        if shutil.which(f"mpirun.{mpi}") and exe.exists():
            extra = ["--bind-to", "core"] if mpi == "openmpi" else ["-bind-to", "core"]
            cmds[f"MPI-3 RMA {name}"] = [f"mpirun.{mpi}", *extra, "-n", "2", str(exe), *args]
    cmds["plain stores"] = [str(BIN / "store_pingpong"), *args]
    cmds["memcpy"] = [str(BIN / "memcpy_floor"), *args]
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


def measure(max_bytes: int, scale: float, rounds: int) -> dict[str, dict[int, float]]:
    """Best (lowest) mean latency per series and size over `rounds` alternating rounds."""
    cmds = series_commands(max_bytes, scale)
    best: dict[str, dict[int, float]] = {name: {} for name in cmds}
    for r in range(rounds):
        for name, cmd in cmds.items():
            print(f"# round {r + 1}/{rounds}: {name}", file=sys.stderr, flush=True)
            try:
                table = run_series(cmd, timeout_s=180)
            except RuntimeError as e:  # one series failing (or hanging) leaves the others
                print(f"# {name}: {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
                continue
            for size, us in table.items():
                if size not in best[name] or us < best[name][size]:
                    best[name][size] = us
    return best


def gbps(size: int, us: float) -> float:
    return size / us / 1e3


def ratios(best: dict[str, dict[int, float]], max_bytes: int) -> list[tuple[str, float, str]]:
    """The goal ratios: (description, value, goal)."""
    out = []
    pio8 = best["shm PIO"].get(8)
    if pio8 and best.get("plain stores", {}).get(8):
        out.append(("8 B latency, shm PIO / plain stores (floor)", pio8 / best["plain stores"][8], "-"))
    for name in ("MPI-3 RMA Open MPI", "MPI-3 RMA MPICH"):
        if pio8 and best.get(name, {}).get(8):
            out.append((f"8 B latency, shm PIO / {name}", pio8 / best[name][8], "<= 0.5"))
    big = max_bytes
    mc = best["memcpy"].get(big)
    for name in ("shm DMA register", "shm DMA chaining"):
        if mc and best[name].get(big):
            r = gbps(big, best[name][big]) / gbps(big, mc)
            out.append((f"{big} B bandwidth, {name} / memcpy", r, ">= 0.8"))
    for name in ("MPI-3 RMA Open MPI", "MPI-3 RMA MPICH"):
        if best.get(name, {}).get(big) and best["shm DMA register"].get(big):
            r = gbps(big, best["shm DMA register"][big]) / gbps(big, best[name][big])
            out.append((f"{big} B bandwidth, shm DMA register / {name}", r, "-"))
    return out


def print_table(best: dict[str, dict[int, float]], max_bytes: int) -> None:
    names = list(best)
    sizes = sorted({s for rows in best.values() for s in rows})
    print("# One-way latency (us), ping-pong between 2 ranks on this host; best of the rounds' means")
    print(f"# {'Size':>9}" + "".join(f"{n:>20}" for n in names))
    for s in sizes:
        print(f"{s:>11}" + "".join(f"{best[n][s]:>20.3f}" if s in best[n] else f"{'-':>20}" for n in names))
    print()
    print("# Bandwidth (GB/s) = size / one-way latency")
    print(f"# {'Size':>9}" + "".join(f"{n:>20}" for n in names))
    for s in sizes:
        if s >= 4096:
            print(
                f"{s:>11}"
                + "".join(f"{gbps(s, best[n][s]):>20.3f}" if s in best[n] else f"{'-':>20}" for n in names)
            )
    print()
    print("# Ratios (goals from the issue; benchmarks, not tests)")
    for what, value, goal in ratios(best, max_bytes):
        print(f"{what:<58} {value:8.3f}   goal {goal}")


def json_rows(best: dict[str, dict[int, float]]) -> list[Row]:
    """The measured latencies as benchmark rows (DESIGN.md, "Benchmark output")."""
    return [
        Row("pingpong", "this host (shm)", name, size, "B", us, "us", kind="measured")
        for name, table in best.items()
        for size, us in sorted(table.items())
    ]


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
    best = measure(max_bytes, args.scale, args.rounds)
    if args.json:
        print(to_json(json_rows(best)))
    else:
        print_table(best, max_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
