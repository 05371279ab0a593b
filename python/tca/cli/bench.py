"""``tca bench NAME``: the benchmarks of the simulated platforms (and of this host's shm fabric)."""

from __future__ import annotations

import argparse
import sys

from tca import TcaError, _native
from tca.cli.options import reject_empty
from tca.cli.options import sizes as distinct_sizes
from tca.cli.output import add_options, check_files, emit
from tca.common import report
from tca.common.progress import progress_bar
from tca.peach import platforms
from tca.peach.bench import block_stride, dma_bw, local_copy, pingpong
from tca.units import parse_counts


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("bench", help="run a benchmark on a simulated platform")
    bench = p.add_subparsers(dest="benchmark", required=True)

    d = bench.add_parser("dma-bw", help="intra-node DMA bandwidth (seed 000 §4.1, Fig. 4-6)")
    d.add_argument("--platform", required=True, help="platform name or .toml file")
    d.add_argument("--experiment", required=True, help="fig4, fig5 or fig6")
    d.add_argument("--sizes", help="transfer sizes: LOW:HIGH powers of two or a list (fig4, fig5)")
    add_options(d, trace="write a Chrome trace-event file (Perfetto)")
    d.set_defaults(func=cmd_dma_bw)

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
    add_options(pp, trace="write a Chrome trace-event file (one size only)")
    pp.set_defaults(func=cmd_pingpong)

    bs = bench.add_parser(
        "block-stride", help="3-D stencil face exchange with block-stride DMA (seed 000 §3.7)"
    )
    bs.add_argument("--platform", required=True, help="platform name or .toml file")
    bs.add_argument("--n", help="cube edges N >= 2, a comma list (default 2,4,...,256)")
    add_options(bs)
    bs.set_defaults(func=cmd_block_stride)

    lc = bench.add_parser(
        "local-copy", help="host <-> GPU inside a node, TCA vs cudaMemcpy (seed 003 Fig. 2-3)"
    )
    lc.add_argument("--platform", required=True, help="platform name or .toml file")
    lc.add_argument("--sizes", help="copy sizes: LOW:HIGH powers of two or a list (default 4:4M)")
    lc.add_argument("--no-baseline", action="store_true", help="leave out the cudaMemcpy model")
    add_options(lc)
    lc.set_defaults(func=cmd_local_copy)

    co = bench.add_parser(
        "collective", help="TCA collectives (tcaColl*) vs MPI collectives in one run (seed 001)"
    )
    co.add_argument("--op", required=True, help="allreduce, allgather, bcast, reduce or barrier")
    co.add_argument("--platform", help="platform name or .toml file (--fabric sim)")
    co.add_argument(
        "--fabric",
        default="sim",
        choices=["sim", "shm"],
        help="sim: the simulated platform, MPI = SMPI with MVAPICH2's collectives (default); "
        "shm: this machine, against Open MPI and MPICH",
    )
    co.add_argument("--nodes", default="2,4,8,16", help="node counts, a comma list (default 2,4,8,16)")
    co.add_argument("--sizes", help="message sizes: LOW:HIGH powers of two or a list (default 8:64K)")
    co.add_argument("--memory", default="host", help="host (default) or gpu (cudaMalloc) buffers")
    co.add_argument("--iterations", type=int, default=50, help="timed calls per size (default 50, seed 001)")
    co.add_argument("--warmup", type=int, default=5, help="untimed calls before them (default 5)")
    co.add_argument("--mpi-only", action="store_true", help="time the MPI collective alone")
    add_options(co, trace="write a Chrome trace-event file of the PEACH2 hardware (one node count)")
    co.set_defaults(func=cmd_collective)
    hm = bench.add_parser(
        "himeno", help="Himeno 3-D Jacobi on GPU buffers, halo by TCA reflect and by MPI (seed 001)"
    )
    hm.add_argument("--platform", required=True, help="platform name or .toml file")
    hm.add_argument(
        "--sizes", default="S,M,L", help="Himeno sizes, a list of XS, S, M, L, XL (default S,M,L)"
    )
    hm.add_argument("--nodes", default="4", help="node counts, a comma list (default 4)")
    hm.add_argument(
        "--fabric",
        default="sim",
        choices=["sim", "shm", "shm-openmpi", "shm-mpich"],
        help="sim: the simulated platform (default); shm: this host under mpirun (measured)",
    )
    hm.add_argument("--iterations", type=int, help="iterations per size (default 10 for S, 5 for M, 3 for L)")
    add_options(hm)
    hm.set_defaults(func=cmd_himeno)
    add_app_parsers(bench)
    for sub in bench.choices.values():
        sub.set_defaults(func=refusing_empty_values(sub.get_default("func")))


def refusing_empty_values(cmd):
    """``cmd``, after refusing an option given an empty value (``--plot ""`` wrote nothing)."""

    def run(args: argparse.Namespace) -> int:
        reject_empty(args)
        return cmd(args)

    return run


def add_app_parsers(bench) -> None:
    """``tca bench cg`` and ``tca bench qcd-halo``: the C applications (examples/c/hapacs)."""
    fabrics = ["sim", "shm", "shm-openmpi", "shm-mpich"]
    fabric_help = "sim: simulated platform (default); shm (= shm-openmpi), shm-mpich: this host under mpirun"
    cg = bench.add_parser("cg", help="CG on an nd6k-shaped matrix, TCA vs MPI (seed 001)")
    cg.add_argument("--platform", help="platform name or .toml file (--fabric sim)")
    cg.add_argument("--nodes", default="1,2,4,8,16", help="node counts, a comma list (default 1,2,4,8,16)")
    cg.add_argument("--iterations", type=int, default=1000, help="CG iterations (default 1000, seed 001)")
    cg.add_argument("--shape", help="ROWS,NNZ,BAND instead of nd6k's 18000,6897316,400 (rows and band even)")
    cg.add_argument(
        "--compute",
        choices=["none", "declared"],
        help="charge computation on the simulator (default declared: a K20X streaming the data)",
    )
    cg.add_argument("--fabric", default="sim", choices=fabrics, help=fabric_help)
    add_options(cg)
    cg.set_defaults(func=cmd_cg)

    q = bench.add_parser("qcd-halo", help="8^4 Wilson-Dirac halo exchange: RMA layer vs MPI P2P (seed 001)")
    q.add_argument("--platform", help="platform name or .toml file (--fabric sim)")
    q.add_argument("--grids", default="1x2,2x2,2x4,4x4", help="(x,y) process grids (default 1x2,2x2,2x4,4x4)")
    q.add_argument("--iterations", type=int, default=100, help="timed exchanges per method (default 100)")
    q.add_argument("--fabric", default="sim", choices=fabrics, help=fabric_help)
    add_options(q)
    q.set_defaults(func=cmd_qcd_halo)


def app_fabric(args: argparse.Namespace) -> str:
    fabric = "shm-openmpi" if args.fabric == "shm" else args.fabric
    if fabric == "sim" and args.platform is None:
        raise TcaError("--platform is required with --fabric sim")
    if fabric != "sim" and args.platform:
        raise TcaError("--platform applies to --fabric sim only")
    return fabric


def cmd_cg(args: argparse.Namespace) -> int:
    from tca.peach.bench import cg

    fabric = app_fabric(args)
    nodes = parse_counts(args.nodes, "--nodes")
    shape = tuple(parse_counts(args.shape, "--shape")) if args.shape else None
    if shape is not None and len(shape) != 3:
        raise TcaError("--shape takes ROWS,NNZ,BAND")
    check_files(args)
    compute = args.compute or ("declared" if fabric == "sim" else "none")
    with progress_bar("cg", not args.json) as update:
        rows = cg.run(args.platform, nodes, fabric, args.iterations, shape, compute, update)
    where = args.platform if fabric == "sim" else f"this host ({fabric})"
    charged = "declared" if compute == "declared" else "not charged" if fabric == "sim" else "measured"
    title = f"tca bench cg on {where}: rank 0's time, {args.iterations} CG iterations (computation {charged})"
    if args.plot:
        cg.plot_breakdown(rows, args.plot, title)
    args.plot = None
    return emit(rows, title, args)


def cmd_qcd_halo(args: argparse.Namespace) -> int:
    from tca.peach.bench import qcd_halo

    fabric = app_fabric(args)
    grids = qcd_halo.parse_grids(args.grids)
    check_files(args)
    with progress_bar("qcd-halo", not args.json) as update:
        rows = qcd_halo.run(args.platform, grids, fabric, args.iterations, progress=update)
    where = args.platform if fabric == "sim" else f"this host ({fabric})"
    title = f"tca bench qcd-halo on {where}: 8^4 Wilson-Dirac halo exchange per (x,y) grid, time per exchange"
    return emit(rows, title, args)


def run_dma_bw(
    platform: str, experiment: str, sizes: list[int] | None, trace_path: str | None, show_progress: bool
) -> tuple[list[report.Row], str]:
    """The rows and title of one dma-bw experiment (also used by ``tca demo``)."""
    if experiment not in dma_bw.EXPERIMENTS:
        raise TcaError(
            f"unknown experiment '{experiment}' (expected one of: {', '.join(dma_bw.EXPERIMENTS)})"
        )
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


def cmd_dma_bw(args: argparse.Namespace) -> int:
    sizes = distinct_sizes(args.sizes) if args.sizes else None
    if sizes and args.experiment == "fig6":
        raise TcaError("--sizes does not apply to fig6 (4 KB transfers, 1-128 descriptors)")
    check_files(args)
    rows, title = run_dma_bw(args.platform, args.experiment, sizes, args.trace, not args.json)
    return emit(rows, title, args)


def cmd_pingpong(args: argparse.Namespace) -> int:
    sizes = distinct_sizes(args.sizes) if args.sizes else None
    check_files(args)
    if args.fabric == "shm":
        # This machine, for real: the C ping-pong on the shm fabric beside MPI-3 RMA (Open MPI,
        # MPICH) and the memcpy / plain-store floors, all in this one run.
        from tca.peach import shm_bench

        if args.plot or args.trace or args.platform:
            raise TcaError("--fabric shm takes --sizes and --json only")
        return shm_bench.main(
            ["--max", str(max(sizes)) if sizes else "4M"] + (["--json"] if args.json else [])
        )
    if args.platform is None:
        raise TcaError("--platform is required with --fabric sim")
    baselines = []
    if args.baseline:
        from tca.peach.baselines import BASELINES

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


def parse_edges(text: str) -> list[int]:
    """``--n 2,4,8``: cube edges, each at least 2."""
    try:
        edges = [int(t) for t in text.split(",")]
    except ValueError:
        raise TcaError(f"bad --n '{text}' (expected a list such as 2,4,8)") from None
    return edges


def cmd_block_stride(args: argparse.Namespace) -> int:
    edges = parse_edges(args.n) if args.n else None
    check_files(args)
    p = platforms.load(args.platform)
    with progress_bar("block-stride", not args.json) as update:
        rows = block_stride.run(p, edges, update)
    title = (
        f"tca bench block-stride on {p.name}: face exchange of an N^3 cube of doubles (tcaDescSetMemcpy2D)"
    )
    return emit(rows, title, args)


def cmd_local_copy(args: argparse.Namespace) -> int:
    sizes = distinct_sizes(args.sizes) if args.sizes else None
    check_files(args)
    p = platforms.load(args.platform)
    with progress_bar("local-copy", not args.json) as update:
        rows = local_copy.run(p, sizes, not args.no_baseline, update)
    title = (
        f"tca bench local-copy on {p.name}: host <-> GPU inside a node, "
        "TCA API vs cudaMemcpy (seed 003 Fig. 2-3)"
    )
    return emit(rows, title, args)


def cmd_collective(args: argparse.Namespace) -> int:
    from tca.peach.bench import collective, collective_report

    if args.op == "barrier" and args.sizes:
        raise TcaError("--sizes does not apply to the barrier (no data)")
    cfg = collective.Config(
        op=args.op,
        nodes=parse_counts(args.nodes, "--nodes"),
        sizes=distinct_sizes(args.sizes) if args.sizes else collective.DEFAULT_SIZES,
        fabric=args.fabric,
        platform=args.platform,
        memory=args.memory,
        iterations=args.iterations,
        warmup=args.warmup,
        trace=args.trace,
        mpi_only=args.mpi_only,
    )
    check_files(args)
    with progress_bar(f"collective {args.op}", not args.json) as update:
        result = collective.run(cfg, update)
    rows = result.rows + collective_report.summary(result.rows, args.op)
    rows += collective_report.stall_rows(result, rows[0].platform)
    where = f"{rows[0].platform}" if args.fabric == "sim" else "this host's shm fabric"
    title = (
        f"tca bench collective {args.op} on {where}: {'MPI only' if args.mpi_only else 'TCA vs MPI'}, "
        f"{args.memory} buffers, "
        f"mean of {args.iterations} calls per size"
    )
    if args.plot:
        collective_report.plot(rows, args.plot, title)
    if args.json:
        print(report.to_json(rows))
    else:
        print(collective_report.text(result, args.op, title, collective_report.summary(result.rows, args.op)))
    return 0


def cmd_himeno(args: argparse.Namespace) -> int:
    from tca.peach.bench import himeno

    sizes = himeno.parse_sizes(args.sizes)
    try:
        nodes = [int(t) for t in args.nodes.split(",")]
    except ValueError:
        raise TcaError(f"bad --nodes '{args.nodes}' (expected a list such as 4 or 2,4)") from None
    check_files(args)
    with progress_bar("himeno", not args.json) as update:
        rows = himeno.run(args.platform, sizes, nodes, args.fabric, args.iterations, update)
    where = f"{args.platform} (simulated)" if args.fabric == "sim" else f"this host ({args.fabric})"
    # Interior points: the size's points less the boundary on each side.
    run = ", ".join(f"{s} {'x'.join(str(n - 2) for n in himeno.SIZES[s])}" for s in sizes)
    title = (
        f"tca bench himeno on {where}: time per iteration of the Himeno benchmark "
        f"on GPU buffers, halo by TCA reflect and by MPI; x = interior points ({run})"
    )
    return emit(rows, title, args)
