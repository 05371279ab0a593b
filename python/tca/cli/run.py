"""``tca run -n N [--fabric shm|sim --platform P] PROGRAM [ARGS...]``: the launcher
(:mod:`tca.peach.launch`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tca import TcaError
from tca.common.outfile import writable_file
from tca.peach import launch


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "run",
        help="start N ranks of a TCA program on this host (shm fabric) or on a simulated platform",
        description="Start N ranks of PROGRAM on this host with TCA_RANK, TCA_SIZE and "
        "TCA_JOB_ID set; the TCA library joins them over shared memory. With --fabric sim, run "
        "them on a simulated platform instead: a Python program of tca.peach.program as threads, "
        "a C program built with `tca cc` under SimGrid SMPI (MPI, CUDA and TCA on one "
        "virtual clock). SIGTERM, SIGINT and SIGHUP are forwarded to the ranks.",
    )
    p.add_argument("-n", type=int, required=True, metavar="N", help=f"number of ranks (1-{launch.MAX_RANKS})")
    p.add_argument("--fabric", default="shm", choices=["shm", "sim"], help="fabric (default: shm)")
    p.add_argument(
        "--bind-to",
        default="none",
        choices=["none", "core"],
        help="core: pin rank r to the r-th CPU, like mpirun --bind-to core (shm fabric; default: none)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="stop the job after this long (status 124); on the simulator, --trace and --stats-json "
        "are written up to the virtual time reached",
    )
    p.add_argument("--platform", help="simulated platform for --fabric sim (default: peach2-testbed-2013)")
    c = p.add_argument_group("C programs on the simulator (built with `tca cc`, run under SimGrid SMPI)")
    c.add_argument(
        "--compute",
        choices=["none", "declared", "measured"],
        help="what computation between calls costs in simulated time: none (default; two runs print "
        "the same), declared (SMPI_SAMPLE_DELAY / smpi_execute), measured (SMPI times the code); "
        "smpi_execute_flops counts in every mode",
    )
    c.add_argument("--no-gdr", action="store_true", help="MPI on GPU buffers without GPUDirect RDMA")
    c.add_argument("--trace", metavar="FILE.json", help="Chrome trace of the simulated TCA hardware")
    c.add_argument("--stats", action="store_true", help="one line of simulator statistics on stderr")
    c.add_argument(
        "--stats-json",
        metavar="FILE.json",
        help="as --stats, and write the statistics with per-link counters (TLPs, stalled TLPs, busy "
        "time of every link direction) to FILE.json",
    )
    p.add_argument("program", nargs=argparse.REMAINDER, help="program and its arguments")
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    # Checked before the run, which may take long: the files are written at its end.
    if args.trace is not None:
        writable_file(args.trace, "--trace", (".json",))
    if args.stats_json is not None:
        writable_file(args.stats_json, "--stats-json", (".json",))
        if args.trace is not None and Path(args.trace).resolve() == Path(args.stats_json).resolve():
            raise TcaError(f"--trace and --stats-json name the same file ({args.trace}): give two")
    given = (
        args.compute is not None
        or args.no_gdr
        or args.trace is not None
        or args.stats
        or args.stats_json is not None
    )
    sim = (
        launch.SimOptions(
            args.compute or "none",
            not args.no_gdr,
            args.trace and Path(args.trace),
            args.stats,
            args.stats_json and Path(args.stats_json),
        )
        if given
        else None
    )
    return launch.run(
        args.n,
        program,
        fabric=args.fabric,
        timeout_s=args.timeout,
        bind=args.bind_to,
        platform=args.platform,
        sim=sim,
    )
