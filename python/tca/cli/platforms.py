"""``tca platforms [--show NAME]``: the platform files and their parameters with sources."""

from __future__ import annotations

import argparse

from tca.peach import platforms


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("platforms", help="list platforms, or show one's parameters with sources")
    p.add_argument("--show", metavar="NAME", help="print every parameter of a platform with its source")
    p.set_defaults(func=cmd_platforms)


def cmd_platforms(args: argparse.Namespace) -> int:
    if args.show:
        p = platforms.load(args.show)
        print(f"# {p.name}: {p.description}\n# source: {p.source}")
        print(f"# {'parameter':<40}{'value':<14}source")
        for prm in p.parameters():
            cal = f"  [calibrated on {prm['calibrated']}]" if prm["calibrated"] else ""
            print(f"  {prm['key']:<40}{prm['value']:<14}{prm['source']}{cal}")
        return 0
    for path in platforms.available():
        p = platforms.load(str(path))
        print(f"{p.name:<28}{p.description}")
    return 0
