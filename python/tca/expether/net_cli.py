"""``tca expether bench io --fabric net``: the options of the software-ExpEther block-I/O
benchmark, registered under ``tca expether bench`` by :func:`add_net_parser`."""

from __future__ import annotations

import argparse

from tca import TcaError
from tca.cli.options import reject_empty
from tca.cli.output import add_options, check_files, emit
from tca.common.progress import progress_bar


def add_net_parser(bench_subparsers) -> None:
    """Adds ``io`` to the subparsers of ``tca expether bench``."""
    b = bench_subparsers.add_parser(
        "io",
        help="block I/O through software ExpEther between namespaces, with a TCP baseline (needs root)",
    )
    b.add_argument(
        "--fabric", default="net", choices=["net"], help="net: real links between namespaces (default)"
    )
    b.add_argument("--paths", default="1", help="ExpEther paths (veth pairs), a comma list (default 1)")
    b.add_argument("--loss", default="0", help="frame loss injected on receipt at both bridges (e.g. 0.01)")
    b.add_argument("--rate", default="1G", help="tbf rate of every link: 1G, 10G, 500M or none (default 1G)")
    b.add_argument("--mb", type=int, default=64, help="size of the sequential phases in MB (default 64)")
    b.add_argument("--ops", type=int, default=2000, help="commands per 4 KB random phase (default 2000)")
    b.add_argument("--seed", type=int, default=2016, help="seed of the loss injectors and random LBAs")
    add_options(b)
    b.set_defaults(func=cmd_io)


def cmd_io(args: argparse.Namespace) -> int:
    from tca.expether import net_bench

    reject_empty(args)
    if args.fabric != "net":
        raise TcaError("tca expether bench io runs on --fabric net only")
    check_files(args)
    with progress_bar("expether io", not args.json) as update:
        rows, title = net_bench.run(args, update)
    return emit(rows, title, args)
