"""``tca victream ...``: benchmarks of the schedulers and the optimal-schedule search.

tca victream bench --workload logreg|sort|blur|matmul|pansharpen --devices N
                   --device-memory 64MiB --bus-bandwidth 2GB/s --data 512MiB
                   --scheduler fifo,ptask,locality,victream [--mode auto|virtual|cupy|sim]
                   [--partition auto|16MiB] [--iterations K] [--check] [--json] [--plot FILE]
tca victream bench --attach expether [--platform expether-40gbe] --workload W|all
                   --devices 1,2,3,4 [--json] [--plot FILE]
tca victream optimal --workload logreg|blur4|blur5|matmul|all --mode sim [--json]
"""

from __future__ import annotations

import argparse
import time

from tca import TcaError
from tca.cli.options import distinct, reject_empty
from tca.common.report import Row, to_json
from tca.units import parse_bytes
from tca.victream.api.context import MODES
from tca.victream.apps import bench
from tca.victream.apps.workloads import WORKLOADS
from tca.victream.core.scheduler import POLICIES


def add_parser(subparsers) -> None:
    """Registers ``tca victream`` on the main CLI's subparsers."""
    p = subparsers.add_parser("victream", help="out-of-core multi-GPU DAG runtime (seed 002 ch. 5-6)")
    sub = p.add_subparsers(dest="victream_command", required=True)

    b = sub.add_parser("bench", help="compare the schedulers on a workload (seed 002 §6.1.2)")
    b.add_argument("--workload", default="logreg", help=f"one of: {', '.join(WORKLOADS)} (default logreg)")
    b.add_argument(
        "--devices", help="number of devices (default 3); with --attach expether a list (default 1,2,3,4)"
    )
    b.add_argument("--device-memory", help="memory per device (default 64MiB)")
    b.add_argument("--bus-bandwidth", help="bus bandwidth per direction (default 2GB/s)")
    b.add_argument("--bus-latency", help="bus latency per transfer (default 10us)")
    b.add_argument("--data", help="input data size (default 512MiB)")
    b.add_argument("--partition", help="partition size (default auto: min(256MiB, device memory / 16))")
    b.add_argument(
        "--attach",
        default="local",
        help="local, or expether: Victream's performance with the GPUs behind ExpEther relative to "
        "local GPUs, in sim mode, beside seed 002 Table 6.3",
    )
    b.add_argument(
        "--platform",
        help="with --attach expether: the ExpEther platform, a name or .toml file (default expether-40gbe)",
    )
    b.add_argument(
        "--scheduler", default=",".join(POLICIES), help="comma-separated schedulers (default: all)"
    )
    b.add_argument(
        "--mode",
        default="auto",
        help=f"one of: {', '.join(MODES)}, auto (default: cupy if a GPU is usable, else virtual)",
    )
    b.add_argument("--iterations", type=int, help="iterations (logreg, blur, matmul)")
    b.add_argument("--compute-speed", type=float, help="device compute speed factor (default 1)")
    b.add_argument("--seed", type=int, help="seed of the synthetic data (default 1)")
    b.add_argument("--check", action="store_true", help="compare every result with the NumPy reference")
    b.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    b.add_argument("--plot", metavar="FILE.png", help="write a timeline of every scheduler")
    b.set_defaults(func=cmd_bench)

    o = sub.add_parser("optimal", help="Victream against the optimal and worst schedules (seed 002 §6.2)")
    o.add_argument("--workload", default="all", help="logreg, blur4, blur5, matmul or all (default all)")
    o.add_argument("--mode", default="sim", help="sim (the search runs in simulation only)")
    o.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    o.set_defaults(func=cmd_optimal)


# bench options of the local comparison of schedulers, and their defaults
LOCAL_DEFAULTS = {
    "devices": "3",
    "device_memory": "64MiB",
    "bus_bandwidth": "2GB/s",
    "bus_latency": "10us",
    "data": "512MiB",
    "partition": "auto",
    "compute_speed": 1.0,
    "seed": 1,
}


def cmd_bench(args: argparse.Namespace) -> int:
    reject_empty(args)
    if args.mode not in ("auto", *MODES):
        raise TcaError(f"unknown mode '{args.mode}' (expected one of: auto, {', '.join(MODES)})")
    if args.attach == "expether":
        return cmd_bench_expether(args)
    if args.attach != "local":
        raise TcaError(f"unknown attachment '{args.attach}' (expected local or expether)")
    if args.platform is not None:
        raise TcaError("--platform needs --attach expether (the ExpEther platform the GPUs sit behind)")
    if args.mode == "sim":
        # sim mode moves no data: nothing is generated and no result computed
        if args.check:
            raise TcaError(
                "--check needs results to compare, and --mode sim computes none (--mode virtual or cupy)"
            )
        if args.seed is not None:
            raise TcaError(
                "--seed seeds the synthetic data, and --mode sim generates none (--mode virtual or cupy)"
            )
    for k, v in LOCAL_DEFAULTS.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    try:
        args.devices = int(args.devices)
    except ValueError:
        raise TcaError(
            f"--devices: expected one number, got '{args.devices}' (lists need --attach expether)"
        ) from None
    if args.mode == "auto":
        from tca.victream.runtime.devices import cupy_available

        args.mode = "cupy" if cupy_available()[0] else "virtual"
    if args.devices < 1:
        raise TcaError("--devices must be at least 1")
    if args.iterations is not None and args.iterations < 1:
        raise TcaError("--iterations must be at least 1")
    parse_bytes(args.device_memory, "--device-memory")
    parse_bytes(args.data, "--data")
    if args.plot:
        from tca.common.plot import check_path

        check_path(args.plot)  # before the benchmark runs: a bad path costs nothing
    cfg = bench.BenchConfig(
        workload=args.workload,
        devices=args.devices,
        device_memory=args.device_memory,
        bus_bandwidth=args.bus_bandwidth,
        bus_latency=args.bus_latency,
        data=args.data,
        partition=args.partition,
        schedulers=tuple(
            distinct((s.strip() for s in args.scheduler.split(",") if s.strip()), "--scheduler")
        ),
        mode=args.mode,
        iterations=args.iterations,
        compute_speed=args.compute_speed,
        seed=args.seed,
        check=args.check,
    )
    if not cfg.schedulers:
        raise TcaError("--scheduler needs at least one scheduler")
    summaries = bench.run(cfg, progress=not args.json)
    if args.plot:
        from tca.victream.apps.timeline import plot

        plot(summaries, args.plot, f"tca victream bench {cfg.workload} ({cfg.mode}, {cfg.devices} devices)")
    if args.json:
        print(to_json(bench.rows(cfg, summaries)))
    else:
        print(bench.table(cfg, summaries))
        if args.plot:
            print(f"# plot: {args.plot}")
    return 0


def cmd_bench_expether(args: argparse.Namespace) -> int:
    """Table 6.3: ExpEther/local per workload and GPU count, in sim mode."""
    from tca.cli import output
    from tca.expether.sim_bench import same_values
    from tca.victream.apps import expether as E

    given = [
        f"--{k.replace('_', '-')}" for k in LOCAL_DEFAULTS if k != "devices" and getattr(args, k) is not None
    ]
    given += [
        o
        for o, v in (
            ("--scheduler", args.scheduler != ",".join(POLICIES)),
            ("--iterations", args.iterations),
            ("--check", args.check),
        )
        if v
    ]
    if given:
        raise TcaError(
            f"--attach expether runs the seed's §6.1 set-up with the victream scheduler: {', '.join(given)} "
            f"{'does' if len(given) == 1 else 'do'} not apply"
        )
    if args.mode not in ("auto", "sim"):
        raise TcaError("--attach expether is a sim-mode model (--mode sim)")
    platform = args.platform or "expether-40gbe"
    workloads = list(E.WORKLOADS) if args.workload == "all" else [args.workload]
    devices = _int_list(args.devices or "1,2,3,4", "--devices")
    output.check_files(args)
    points = E.run(workloads, devices, platform)
    rows = E.rows(points, platform)
    title = (
        f"tca victream bench --attach expether ({platform}): Victream with the GPUs behind ExpEther "
        "relative to GPUs in I/O slots, sim mode (seed 002 §6.3, Table 6.3)"
    )
    if not same_values(platform, E.MEASURED_ON):
        title += f"; not compared: Table 6.3 is of {E.MEASURED_ON}"
    return output.emit(rows, title, args)


def _int_list(text: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise TcaError(f"{what}: expected comma-separated numbers, got '{text}'") from None
    if not out:
        raise TcaError(f"{what}: no number given")
    return distinct(out, what)


def cmd_optimal(args: argparse.Namespace) -> int:
    from tca.victream.apps.optimal import CASES, search

    reject_empty(args)
    if args.mode != "sim":
        raise TcaError("the optimal-schedule search runs in sim mode only (--mode sim)")
    names = list(CASES) if args.workload == "all" else [args.workload]
    for n in names:
        if n not in CASES:
            raise TcaError(f"unknown case '{n}' (expected one of: {', '.join(CASES)}, all)")
    results, rows = [], []
    if not args.json:
        print(
            "# tca victream optimal: Victream against all schedules in simulation "
            "(seed 002 §6.2, Table 6.1-6.2)"
        )
        print(
            f"# {'Case':<8}{'Subtasks':>9}{'Victream (s)':>14}{'Best (s)':>10}{'Worst (s)':>11}"
            f"{'Gap to best':>13}{'Seed gap':>10}{'Below worst':>13}{'States':>9}{'Search (s)':>12}"
        )
    for n in names:
        t = time.perf_counter()
        r = search(CASES[n])
        dt = time.perf_counter() - t
        results.append(r)
        src = "seed 002 §6.2, Fig. 6.9"
        rows += [
            Row(f"victream-optimal {n}", "sim Table 6.1", "victream", 0, "case", r.victream_s, "s"),
            Row(f"victream-optimal {n}", "sim Table 6.1", "best", 0, "case", r.best_s, "s"),
            Row(f"victream-optimal {n}", "sim Table 6.1", "worst", 0, "case", r.worst_s, "s"),
            Row(
                f"victream-optimal {n}",
                "sim Table 6.1",
                "gap to best",
                0,
                "case",
                100 * r.gap_to_best,
                "%",
                paper=100 * CASES[n].seed_gap,
                source=src,
            ),
        ]
        if not args.json:
            print(
                f"  {n:<8}{r.subtasks:>9}{r.victream_s:>14.3f}{r.best_s:>10.3f}{r.worst_s:>11.3f}"
                f"{100 * r.gap_to_best:>12.1f}%{100 * CASES[n].seed_gap:>9.0f}%{100 * r.gap_to_worst:>12.1f}%"
                f"{r.states:>9}{dt:>12.1f}",
                flush=True,
            )
    if args.json:
        print(to_json(rows))
    else:
        print(
            "# Gap to best: Victream's time over the optimum; below worst: how much shorter than the worst."
        )
        print(
            "# Seed gap: seed 002 §6.2 / Fig. 6.9 (logistic regression and blur(4) optimal, blur(5) +2 %, "
            "matrix multiplication +10 %)."
        )
    return 0
