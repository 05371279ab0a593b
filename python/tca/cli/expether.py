"""``tca expether ...``: ExpEther, PCIe over Ethernet (seed 002)."""

from __future__ import annotations

from tca.expether.bench_cli import add_bench_parser


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("expether", help="ExpEther: PCIe over Ethernet (seed 002)")
    sub = p.add_subparsers(dest="expether_command", required=True)
    add_bench_parser(sub)
