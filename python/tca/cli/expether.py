"""``tca expether ...``: ExpEther (seed 002). ``pool``: the device-pool manager."""

from __future__ import annotations

from tca.expether.pool import cli as pool


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("expether", help="ExpEther: PCIe over Ethernet (seed 002)")
    sub = p.add_subparsers(dest="expether_command", required=True)
    pool.add_parser(sub)
