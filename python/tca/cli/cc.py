"""``tca cc [compiler options] FILE.c ... -o PROGRAM``: the compiler wrapper for C programs on
the simulator (:mod:`tca.peach.cc`)."""

from __future__ import annotations

import argparse
import subprocess

from tca.peach import cc


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "cc",
        help="compile a C program (MPI + CUDA + TCA) for the simulator, like smpicc",
        description="Compile and link a C program that uses MPI, the CUDA runtime and the TCA API "
        "for `tca run --fabric sim`: SimGrid's smpicc with tca-api.h, the simulated cuda_runtime.h, "
        "libtca, libtcacudart and libtcasmpi. Options and files are passed to the compiler.",
        usage="tca cc [compiler options] FILE.c ... -o PROGRAM",
        prefix_chars="\0",  # every argument belongs to the compiler
        add_help=False,
    )
    p.add_argument("args", nargs=argparse.REMAINDER, help="compiler options and files")
    p.set_defaults(func=cmd_cc, parser=p)


def cmd_cc(args: argparse.Namespace) -> int:
    if list(args.args) in (["-h"], ["--help"]):
        args.parser.print_help()
        return 0
    return subprocess.run(cc.command(list(args.args)), check=False).returncode
