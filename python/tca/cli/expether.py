"""``tca expether ...``: ExpEther (seed 002). ``pool``: the device-pool manager; ``bench io
--fabric net`` is registered by :func:`tca.expether.net_cli.add_net_parser`."""

from __future__ import annotations

from tca.expether.net_cli import add_net_parser
from tca.expether.pool import cli as pool


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("expether", help="ExpEther: PCIe over Ethernet (seed 002)")
    sub = p.add_subparsers(dest="expether_command", required=True)
    pool.add_parser(sub)
    bench = sub.add_parser("bench", help="ExpEther benchmarks").add_subparsers(
        dest="benchmark", required=True
    )
    add_net_parser(bench)
