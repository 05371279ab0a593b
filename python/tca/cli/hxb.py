"""``tca hxb bench bandwidth|latency|neighbour``: PM/Ethernet-HXB (seed 004) on a simulated
platform (``--platform``) or over real links between network namespaces on this host
(``--fabric net``). The benchmark modules are imported only when the command runs."""

from __future__ import annotations

import argparse

from tca import TcaError
from tca.cli.options import reject_empty
from tca.cli.output import add_options, check_files, emit
from tca.common.progress import progress_bar

FABRICS = ["sim", "net"]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("hxb", help="PM/Ethernet-HXB multi-link Ethernet messaging (seed 004)")
    sub = p.add_subparsers(dest="hxb_command", required=True)
    bench = sub.add_parser("bench", help="bandwidth, latency or neighbour exchange").add_subparsers(
        dest="benchmark", required=True
    )
    helps = {
        "bandwidth": "one-way bandwidth against message size and link count (Tables 4, 7)",
        "latency": "half round-trip time through 0, 1 and 2 relays (Table 6)",
        "neighbour": "send, receive and bidirectional to the neighbours in 1-3 dimensions (Table 5)",
        "budget": "per-packet time budget of k links, formula and with framing (Table 2; --fabric sim)",
    }
    for name, text in helps.items():
        b = bench.add_parser(name, help=text)
        b.add_argument("--platform", help="platform name or .toml file (--fabric sim)")
        b.add_argument(
            "--fabric",
            default="sim",
            choices=FABRICS,
            help="sim: a simulated platform (default); net: real links between namespaces on this host",
        )
        b.add_argument("--links", help="links per dimension, a comma list (e.g. 2,4,6,8,9)")
        b.add_argument(
            "--sizes",
            help="message sizes: a list, or LOW:HIGH, the powers of two from LOW to HIGH (e.g. 4:1M)",
        )
        if name == "latency":
            b.add_argument("--relays", default="0,1,2", help="relay counts, a comma list (default 0,1,2)")
        if name == "neighbour":
            b.add_argument("--dims", default="1,2,3", help="dimension counts, a comma list (default 1,2,3)")
        if name == "bandwidth":
            b.add_argument("--mpi", action="store_true", help="also MPI-level bandwidth (Table 7)")
        b.add_argument("--rate", help="--fabric net: tbf rate per link (default 1G)")
        b.add_argument("--loss", help="--fabric net: injected frame loss, fractions (e.g. 0.001,0.01)")
        b.add_argument(
            "--baselines",
            help="--fabric net: peers over the same links beside HXB: mptcp,tcp (default), openmpi",
        )
        add_options(b, trace="write a Chrome trace-event file (--fabric sim, one point)")
        b.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    reject_empty(args)
    if args.fabric == "sim":
        if args.platform is None:
            raise TcaError("--platform is required with --fabric sim")
        for option in ("rate", "loss", "baselines"):
            if getattr(args, option) is not None:
                raise TcaError(f"--{option} applies to --fabric net only")
        from tca.hxb import sim_bench as module
    else:
        if args.benchmark == "budget":
            raise TcaError("budget applies to --fabric sim only")
        if args.platform is not None:
            raise TcaError("--platform applies to --fabric sim only")
        if getattr(args, "trace", None):
            raise TcaError("--trace applies to --fabric sim only")
        from tca.hxb import net_bench as module
    check_files(args)
    with progress_bar(f"hxb {args.benchmark}", not args.json) as update:
        rows, title = module.run(args, update)
    return emit(rows, title, args)
