"""The ``bench`` subcommands of ``tca expether``: the simulated prototype of seed 002 §4.2.
``add_bench_parser`` is all that python/tca/cli/expether.py calls; the benchmark module is
imported only when the command runs."""

from __future__ import annotations

import argparse

from tca.cli.options import reject_empty
from tca.cli.output import add_options, check_files, emit
from tca.common.progress import progress_bar


def add_bench_parser(subparsers):
    """Adds ``bench aggregation|latency``; returns the subparsers of ``bench`` for more."""
    bench = subparsers.add_parser("bench", help="ExpEther benchmarks (simulated prototype, this host)")
    sub = bench.add_subparsers(dest="benchmark", required=True)
    helps = {
        "aggregation": "gain of adaptive TLP aggregation with 1-4 SSDs in RAID-0 (Fig. 4.10)",
        "latency": "latency of one I/O at a time with and without aggregation (Table 4.1)",
    }
    for name, text in helps.items():
        b = sub.add_parser(name, help=text)
        b.add_argument(
            "--platform",
            default="expether-prototype",
            help="ExpEther platform name (platforms/expether) or .toml file (default expether-prototype)",
        )
        if name == "aggregation":
            b.add_argument("--drives", type=int, help="SSDs in the RAID-0 up to this many (default: all)")
        else:
            b.add_argument(
                "--sizes",
                help="transfer sizes, multiples of 4 KiB: a list, or LOW:HIGH, the powers of two from LOW "
                "to HIGH (default 4K,64M)",
            )
        add_options(b, trace="write a Chrome trace-event file of one run")
        b.set_defaults(func=cmd_bench)
    return sub


def cmd_bench(args: argparse.Namespace) -> int:
    from tca.expether import sim_bench

    reject_empty(args)
    check_files(args)
    with progress_bar(f"expether {args.benchmark}", not args.json) as update:
        rows, title = sim_bench.run(args, update)
    return emit(rows, title, args)
