"""``tca demo [--out DIR]``: the main demonstration. Seed 000 Fig. 4-6 on the simulated 2013
testbed, the GPU-GPU ping-pong of HA-PACS/TCA and PEACH3 against MPI models, and one Python
program run for real on this host and on the simulated HA-PACS/TCA."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from tca import TcaError
from tca.cli.bench import run_dma_bw
from tca.cli.output import show
from tca.common import report
from tca.common.outfile import writable_dir
from tca.common.progress import progress_bar
from tca.peach import platforms, sim
from tca.peach.bench import dma_bw, pingpong

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "python" / "pingpong.py"
SIZES = [8, 4096, 65536, 1 << 20]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "demo", help="the main demonstration: seed 000 Fig. 4-6 on the simulated testbed"
    )
    p.add_argument("--out", default="out", help="directory for the plots (default: out)")
    p.add_argument("--platform", default="peach2-testbed-2013", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    out = writable_dir(args.out, "--out")

    def section(rows: list[report.Row], title: str, name: str) -> None:
        show(rows, title, out / f"{name}.png")
        print(f"# plot: {out / f'{name}.png'}\n")

    print("tca demo: the simulated 2013 PEACH2 testbed (seed 000 §4.1), intra-node DMA.\n")
    for experiment in dma_bw.EXPERIMENTS:
        rows, title = run_dma_bw(args.platform, experiment, None, None, True)
        section(rows, title, f"dma-bw-{experiment}")

    print("GPU-GPU ping-pong between two nodes of HA-PACS/TCA (seed 001): PEACH2 DMA against")
    print("MVAPICH2-GDR 2.0b over InfiniBand QDR x2 (a model), with and without GPUDirect RDMA.\n")
    ha_pacs = platforms.load("ha-pacs-tca")
    with progress_bar("pingpong ha-pacs-tca", True) as update:
        rows = pingpong.run(ha_pacs, "gpu-gpu", "dma-register", None, ["mvapich2-gdr", "mvapich2"], update)
    section(rows, "HA-PACS/TCA GPU-GPU ping-pong: PEACH2 vs MVAPICH2-GDR (seed 001)", "pingpong-ha-pacs-tca")
    peach2 = [r for r in rows if r.series.startswith("TCA")]

    print("PEACH3 (seed 003): GPU-GPU ping-pong on the Gen3 testbed beside PEACH2 on HA-PACS/TCA")
    print("and MPI over InfiniBand with GPUDirect RDMA switched off above 512 KB (a model).\n")
    peach3 = platforms.load("peach3-testbed")
    with progress_bar("pingpong peach3-testbed", True) as update:
        rows = pingpong.run(peach3, "gpu-gpu", "dma-register", None, ["mvapich2-gdr"], update)
    for r in rows:
        r.series = r.series.replace("TCA", "PEACH3", 1).replace("MVAPICH2-GDR", "MPI/IB", 1)
    for r in peach2:
        rows.append(
            replace(
                r,
                series=r.series.replace("TCA", "PEACH2 (HA-PACS/TCA)", 1),
                paper=None,
                source=None,
                kind="predicted",
            )
        )
    section(rows, "PEACH3 vs PEACH2 and MPI/IB, GPU-GPU ping-pong (seed 003 Fig. 4-5)", "pingpong-peach3")

    print("The same program, examples/python/pingpong.py, for real on this host (tca run -n 2:")
    print("shared-memory fabric, real time) and on the simulated HA-PACS/TCA (tca.peach.sim).\n")
    section(
        real_and_simulated(SIZES),
        "One Python ping-pong program: this host (shm) vs simulated HA-PACS/TCA",
        "pingpong-shm-vs-sim",
    )
    shm_against_mpi()
    collectives(out)
    from tca.expether import demo as expether_demo
    from tca.hxb import demo as hxb_demo

    hxb_demo.table4(out)
    expether_demo.section(out)
    return 0


def collectives(out: Path) -> None:
    """The collective library against MVAPICH2 on simulated HA-PACS/TCA (seed 001)."""
    import shutil

    from tca.peach.bench import collective, collective_report

    if shutil.which("smpirun") is None:
        print("# collectives: SimGrid SMPI is not installed (make smpi); skipped")
        return
    print("The collective library of seed 001 on simulated HA-PACS/TCA: an 8-byte Allreduce by")
    print("PIO stores against MVAPICH2's over InfiniBand (SimGrid SMPI), same program, same clock.\n")
    cfg = collective.Config(
        op="allreduce", nodes=[2, 4, 8, 16], sizes=[8], fabric="sim", platform="ha-pacs-tca"
    )
    with progress_bar("collective allreduce", True) as update:
        result = collective.run(cfg, update)
    summary = collective_report.summary(result.rows, "allreduce")
    title = "TCA vs MVAPICH2 8-byte Allreduce on simulated HA-PACS/TCA (seed 001)"
    print(collective_report.text(result, "allreduce", title, summary))
    collective_report.plot(result.rows + summary, out / "collective-allreduce.png", title)
    print(f"# plot: {out / 'collective-allreduce.png'}\n")


def example() -> ModuleType:
    """examples/python/pingpong.py as a module (its ``pingpong(ctx, size)`` rank program)."""
    spec = importlib.util.spec_from_file_location("tca_example_pingpong", EXAMPLE)
    if spec is None or spec.loader is None or not EXAMPLE.is_file():
        raise TcaError(f"{EXAMPLE}: the example program is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measured_on_this_host(size: int) -> list[report.Row]:
    """The example's rows for one size, run for real by ``tca run -n 2`` (its ``--json``)."""
    command = [
        sys.executable,
        "-m",
        "tca",
        "run",
        "-n",
        "2",
        "--bind-to",
        "core",
        str(EXAMPLE),
        str(size),
        "--json",
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), env.get("PYTHONPATH")]))
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        raise TcaError(f"{' '.join(command[3:])}: did not finish in 300 s") from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise TcaError(f"{' '.join(command[3:])} failed ({out.returncode}): {last}")
    rows = report.from_json(out.stdout)
    for r in rows:
        r.platform, r.kind = "this host", "measured"
        r.series = r.series.replace("GPU-GPU DMA", "this host (shm)", 1)
    return rows


def real_and_simulated(sizes: list[int]) -> list[report.Row]:
    """One ping-pong program: on this host's shm fabric and on the simulated HA-PACS/TCA."""
    program = example().pingpong
    platform = platforms.load("ha-pacs-tca")
    rows: list[report.Row] = []
    with progress_bar("pingpong shm vs sim", True) as update:
        for i, size in enumerate(sizes):
            rows += measured_on_this_host(size)
            simulated = sim.run(platform, 2, lambda ctx, size=size: program(ctx, size))[0]
            rows += report.latency_and_bandwidth(
                "pingpong", "ha-pacs-tca", "HA-PACS/TCA (simulated)", size, simulated
            )
            if update:
                update(i + 1, len(sizes))
    return rows


def shm_against_mpi() -> None:
    """This host's shm fabric (PIO) against MPI-3 RMA, 8 B, one run each."""
    from tca.peach import shm_bench

    if not (shm_bench.BIN / "pingpong").exists():
        print("# shm vs MPI-3 RMA: the C benchmarks are not built (make examples); skipped")
        return
    print("This host's shm fabric (PIO) against MPI-3 RMA (MPI_Put + MPI_Win_flush + flag), 8 B,")
    print("C programs of examples/c, one run each (`make bench-shm` for every size and 5 rounds):\n")
    commands = shm_bench.series_commands(8, 0.5)
    latency = {}
    for name in ("shm PIO", "MPI-3 RMA Open MPI", "MPI-3 RMA MPICH"):
        if name not in commands:
            print(f"# {name}: not installed here (make mpi); skipped")
            continue
        try:
            latency[name] = shm_bench.run_series(commands[name], timeout_s=30)[8]
        except (RuntimeError, KeyError) as e:
            print(f"# {name}: {str(e).splitlines()[0]}")
    for name, us in latency.items():
        print(f"  {name:<22}{us:>8.3f} us one way")
    for mpi in ("MPI-3 RMA Open MPI", "MPI-3 RMA MPICH"):
        if "shm PIO" in latency and mpi in latency:
            print(f"  shm PIO / {mpi}: {latency['shm PIO'] / latency[mpi]:.2f}")
