"""``tca victream ...``: implemented by :mod:`tca.victream.apps.cli`, imported only when the
command runs (the runtime and NumPy stay out of every other command's start-up)."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "victream",
        help="out-of-core multi-GPU DAG runtime (seed 002 ch. 5-6)",
        add_help=False,  # --help goes to the Victream parser with the rest
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_victream)


def cmd_victream(args: argparse.Namespace) -> int:
    from tca.cli import Parser
    from tca.victream.apps import cli

    parser = Parser(prog="tca")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    inner = parser.parse_args(["victream", *args.rest])
    return inner.func(inner)
