"""``tca run -n N [--fabric shm|sim --platform P] PROGRAM [ARGS...]``: the launcher
(:mod:`tca.peach.launch`)."""

from __future__ import annotations

import argparse

from tca.peach import launch


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="start N ranks of a TCA program on this host (shm fabric)",
        description="Start N ranks of PROGRAM on this host with TCA_RANK, TCA_SIZE and "
        "TCA_JOB_ID set; the TCA library joins them over shared memory. SIGTERM, SIGINT and "
        "SIGHUP are forwarded to the ranks.",
    )
    p.add_argument("-n", type=int, required=True, metavar="N", help=f"number of ranks (1-{launch.MAX_RANKS})")
    p.add_argument("--fabric", default="shm", choices=["shm", "sim"], help="fabric (default: shm)")
    p.add_argument(
        "--bind-to",
        default="none",
        choices=["none", "core"],
        help="core: pin rank r to the r-th CPU, like mpirun --bind-to core (default: none)",
    )
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="stop the job after this long")
    p.add_argument("--platform", help="simulated platform for --fabric sim (default: peach2-testbed-2013)")
    p.add_argument("program", nargs=argparse.REMAINDER, help="program and its arguments")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    return launch.run(
        args.n, program, fabric=args.fabric, timeout_s=args.timeout, bind=args.bind_to, platform=args.platform
    )
