"""The ``tca`` command line (DESIGN.md, "Interfaces").

    tca platforms [--show NAME]
    tca bench dma-bw --platform P --experiment fig4|fig5|fig6 [--sizes 8:1M] [--json]
                     [--plot FILE.png] [--trace FILE.json]
    tca demo [--out DIR]

Errors in input print one line on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tca import TcaError, _native, launch, platforms, report
from tca.bench import block_stride, dma_bw, local_copy, pingpong
from tca.progress import progress_bar
from tca.victream import cli as victream_cli


def parse_sizes(text: str) -> list[int]:
    """``8:1M`` (powers of two from 8 B to 1 MiB) or ``64,4096,1K`` (a list)."""

    def one(tok: str) -> int:
        m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", tok, re.IGNORECASE)
        if not m:
            raise TcaError(f"bad size '{tok}' (examples: 8, 4K, 1M)")
        return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]

    if ":" in text:
        lo, hi = (one(t) for t in text.split(":", 1))
        if lo <= 0 or hi < lo:
            raise TcaError(f"bad size range '{text}' (expected LOW:HIGH with 0 < LOW <= HIGH)")
        sizes, n = [], lo
        while n <= hi:
            sizes.append(n)
            n *= 2
        return sizes
    return [one(t) for t in text.split(",")]


def cmd_platforms(args: argparse.Namespace) -> int:
    if args.show:
        p = platforms.load(args.show)
        print(f"# {p.name}: {p.description}\n# source: {p.source}")
        print(f"# {'parameter':<40}{'value':<14}source")
        for prm in p.parameters():
            cal = f"  [calibrated on {prm['calibrated']}]" if prm["calibrated"] else ""
            print(f"  {prm['key']:<40}{prm['value']:<14}{prm['source']}{cal}")
        return 0
    for path in platforms.available():
        p = platforms.load(str(path))
        print(f"{p.name:<28}{p.description}")
    return 0


def run_dma_bw(
    platform: str, experiment: str, sizes: list[int] | None, trace_path: str | None, show_progress: bool
) -> tuple[list[report.Row], str]:
    p = platforms.load(platform)
    trace = _native.Trace() if trace_path else None
    with progress_bar(f"dma-bw {experiment}", show_progress) as update:
        rows = dma_bw.run(p, experiment, sizes, trace, update)
    if trace is not None:
        try:
            trace.write(trace_path)
        except ValueError as e:
            raise TcaError(str(e)) from None
        if trace.dropped:
            print(
                f"tca: trace kept the first {trace.span_count} spans, dropped {trace.dropped}",
                file=sys.stderr,
            )
    title = f"tca bench dma-bw {experiment} on {p.name}: {dma_bw.EXPERIMENTS[experiment]}"
    return rows, title


def show(rows: list[report.Row], title: str, plot_path: str | Path | None = None) -> None:
    """The OSU-style table and the comparison with the seed; a PNG plot too if asked."""
    if plot_path:
        from tca.plot import plot

        plot(rows, plot_path, title)
    print(report.table(rows, title))
    print()
    print(report.comparison(rows))


def emit(rows: list[report.Row], title: str, args: argparse.Namespace) -> int:
    """A benchmark's output as DESIGN.md fixes it: JSON rows and nothing else, or the table."""
    if not args.json:
        show(rows, title, args.plot)
        return 0
    if args.plot:
        from tca.plot import plot

        plot(rows, args.plot, title)
    print(report.to_json(rows))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.experiment not in dma_bw.EXPERIMENTS:
        raise TcaError(
            f"unknown experiment '{args.experiment}' (expected one of: {', '.join(dma_bw.EXPERIMENTS)})"
        )
    sizes = parse_sizes(args.sizes) if args.sizes else None
    if sizes and args.experiment == "fig6":
        raise TcaError("--sizes does not apply to fig6 (4 KB transfers, 1-128 descriptors)")
    rows, title = run_dma_bw(args.platform, args.experiment, sizes, args.trace, not args.json)
    return emit(rows, title, args)


def cmd_pingpong(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.sizes) if args.sizes else None
    if args.fabric == "shm":
        # This machine, for real: the C ping-pong on the shm fabric beside MPI-3 RMA (Open MPI,
        # MPICH) and the memcpy / plain-store floors, all in this one run.
        from tca import shm_bench

        argv = ["--max", str(max(sizes)) if sizes else "4M"] + (["--json"] if args.json else [])
        return shm_bench.main(argv)
    if args.platform is None:
        raise TcaError("--platform is required with --fabric sim")
    baselines = []
    if args.baseline:
        from tca.baselines import BASELINES

        names = list(BASELINES) if args.baseline == "all" else args.baseline.split(",")
        for n in names:
            if n not in BASELINES:
                raise TcaError(f"unknown baseline '{n}' (expected {', '.join(BASELINES)} or all)")
        baselines = names
    p = platforms.load(args.platform)
    if args.trace and (sizes is None or len(sizes) != 1):
        raise TcaError("--trace records one message size: give exactly one with --sizes")
    with progress_bar(f"pingpong {args.mode} {args.pair}", not args.json) as update:
        rows = pingpong.run(p, args.pair, args.mode, sizes, baselines, update, trace=args.trace)
    title = (
        f"tca bench pingpong on {p.name}: {args.mode} {args.pair}, one-way latency and bandwidth "
        "(seed 000 §4.2-4.3 method: round trips / 2)"
    )
    return emit(rows, title, args)


def cmd_block_stride(args: argparse.Namespace) -> int:
    try:
        sizes = [int(t) for t in args.n.split(",")] if args.n else None
    except ValueError:
        raise TcaError(f"bad --n '{args.n}' (expected a list such as 2,4,8)") from None
    p = platforms.load(args.platform)
    with progress_bar("block-stride", not args.json) as update:
        rows = block_stride.run(p, sizes, update)
    title = (
        f"tca bench block-stride on {p.name}: face exchange of an N^3 cube of doubles (tcaDescSetMemcpy2D)"
    )
    return emit(rows, title, args)


def cmd_local_copy(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.sizes) if args.sizes else None
    p = platforms.load(args.platform)
    with progress_bar("local-copy", not args.json) as update:
        rows = local_copy.run(p, sizes, not args.no_baseline, update)
    title = (
        f"tca bench local-copy on {p.name}: host <-> GPU inside a node, "
        "TCA API vs cudaMemcpy (seed 003 Fig. 2-3)"
    )
    return emit(rows, title, args)


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

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
    real_and_simulated(section)
    return 0


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "pingpong.py"


def example_latency(launch: list[str], size: int) -> float:
    """One-way latency [us] the Python ping-pong example prints when `tca run` starts it."""
    command = [sys.executable, "-m", "tca", "run", "-n", "2", *launch, str(EXAMPLE), str(size)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    m = re.search(r"([0-9.]+) us one way", out.stdout)
    if out.returncode != 0 or not m:
        raise TcaError(f"{' '.join(command[3:])} failed: {(out.stderr or out.stdout).strip()[-300:]}")
    return float(m.group(1))


def real_and_simulated(section: Callable[[list[report.Row], str, str], None]) -> None:
    """The same ping-pong program for real on this host and on the simulated HA-PACS/TCA, then
    this host's shm fabric against MPI-3 RMA (issue: real fabric; docs/shm-fabric.md)."""
    print("The same program, examples/python/pingpong.py, for real on this host (tca run -n 2:")
    print("shared-memory fabric, real time) and on the simulated HA-PACS/TCA (tca run --fabric sim).\n")
    rows: list[report.Row] = []
    sizes = [8, 4096, 65536, 1 << 20]
    with progress_bar("pingpong shm vs sim", True) as update:
        for i, size in enumerate(sizes):
            here = example_latency(["--bind-to", "core"], size)
            there = example_latency(["--fabric", "sim", "--platform", "ha-pacs-tca"], size)
            rows += report.latency_and_bandwidth("pingpong", "this host", "this host (shm)", size, here)
            rows += report.latency_and_bandwidth(
                "pingpong", "ha-pacs-tca", "HA-PACS/TCA (simulated)", size, there
            )
            if update:
                update(i + 1, len(sizes))
    section(
        rows, "One Python ping-pong program: this host (shm) vs simulated HA-PACS/TCA", "pingpong-shm-vs-sim"
    )
    from tca import shm_bench

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tca", description="Tightly Coupled Accelerators: simulated platforms and benchmarks."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("platforms", help="list platforms, or show one's parameters with sources")
    p.add_argument("--show", metavar="NAME", help="print every parameter of a platform with its source")
    p.set_defaults(func=cmd_platforms)

    p = sub.add_parser("bench", help="run a benchmark on a simulated platform")
    bench = p.add_subparsers(dest="benchmark", required=True)
    d = bench.add_parser("dma-bw", help="intra-node DMA bandwidth (seed 000 §4.1, Fig. 4-6)")
    d.add_argument("--platform", required=True, help="platform name or .toml file")
    d.add_argument("--experiment", required=True, help="fig4, fig5 or fig6")
    d.add_argument("--sizes", help="transfer sizes: LOW:HIGH powers of two or a list (fig4, fig5)")
    d.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    d.add_argument("--plot", metavar="FILE.png", help="write a PNG plot")
    d.add_argument("--trace", metavar="FILE.json", help="write a Chrome trace-event file (Perfetto)")
    d.set_defaults(func=cmd_bench)

    pp = bench.add_parser("pingpong", help="ping-pong between two nodes (seed 000 Fig. 7-10, 001, 003)")
    pp.add_argument("--platform", help="platform name or .toml file (--fabric sim)")
    pp.add_argument(
        "--fabric",
        default="sim",
        choices=["sim", "shm"],
        help="sim: a simulated platform (default); shm: this machine, beside MPI-3 RMA",
    )
    pp.add_argument(
        "--pair", default="cpu-cpu", help="source-destination memory: cpu-cpu, cpu-gpu, gpu-cpu, gpu-gpu"
    )
    pp.add_argument("--mode", default="dma-register", help="pio, dma (chaining) or dma-register")
    pp.add_argument("--baseline", help="cuda-peer, cuda-peer-uva, mvapich2, mvapich2-gdr (comma list) or all")
    pp.add_argument("--sizes", help="message sizes: LOW:HIGH powers of two or a list (default 8:4M)")
    pp.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    pp.add_argument("--plot", metavar="FILE.png", help="write a PNG plot")
    pp.add_argument("--trace", metavar="FILE.json", help="write a Chrome trace-event file (one size only)")
    pp.set_defaults(func=cmd_pingpong)

    bs = bench.add_parser(
        "block-stride", help="3-D stencil face exchange with block-stride DMA (seed 000 §3.7)"
    )
    bs.add_argument("--platform", required=True, help="platform name or .toml file")
    bs.add_argument("--n", help="cube edges, a comma list (default 2,4,...,256)")
    bs.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    bs.add_argument("--plot", metavar="FILE.png", help="write a PNG plot")
    bs.set_defaults(func=cmd_block_stride)

    lc = bench.add_parser(
        "local-copy", help="host <-> GPU inside a node, TCA vs cudaMemcpy (seed 003 Fig. 2-3)"
    )
    lc.add_argument("--platform", required=True, help="platform name or .toml file")
    lc.add_argument("--sizes", help="copy sizes: LOW:HIGH powers of two or a list (default 4:4M)")
    lc.add_argument("--no-baseline", action="store_true", help="leave out the cudaMemcpy model")
    lc.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    lc.add_argument("--plot", metavar="FILE.png", help="write a PNG plot")
    lc.set_defaults(func=cmd_local_copy)

    p = sub.add_parser("demo", help="the main demonstration: seed 000 Fig. 4-6 on the simulated testbed")
    p.add_argument("--out", default="out", help="directory for the plots (default: out)")
    p.add_argument("--platform", default="peach2-testbed-2013", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_demo)
    launch.add_parser(sub)
    victream_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TcaError as e:
        print(f"tca: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
