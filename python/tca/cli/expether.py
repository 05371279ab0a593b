"""``tca expether ...``: ExpEther, PCIe over Ethernet (seed 002). ``pool``: the device-pool
manager; ``bench aggregation|latency``: the simulated prototype
(:func:`tca.expether.bench_cli.add_bench_parser`); ``bench io --fabric net``: software ExpEther
on this host (:func:`tca.expether.net_cli.add_net_parser`)."""

from __future__ import annotations

from tca.expether.bench_cli import add_bench_parser
from tca.expether.net_cli import add_net_parser
from tca.expether.pool import cli as pool


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("expether", help="ExpEther: PCIe over Ethernet (seed 002)")
    sub = p.add_subparsers(dest="expether_command", required=True)
    pool.add_parser(sub)
    add_net_parser(add_bench_parser(sub))
