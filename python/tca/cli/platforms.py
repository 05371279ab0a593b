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
        params = p.parameters()
        key_w = max(len(prm["key"]) for prm in params) + 2
        value_w = 16  # a longer value (the cable list) puts its source on the next line
        print(f"# {'parameter':<{key_w}}{'value':<{value_w}}source")
        for prm in params:
            notes = f"  [calibrated on {prm['calibrated']}]" if prm["calibrated"] else ""
            if prm["unused"]:
                notes += f"  [not used: {prm['unused']}]"
            value = prm["value"]
            if len(value) >= value_w:
                value += "\n" + " " * (2 + key_w + value_w)
            print(f"  {prm['key']:<{key_w}}{value:<{value_w}}{prm['source']}{notes}")
        return 0
    for path in platforms.available():
        p = platforms.load(str(path))
        print(f"{p.name:<28}{p.description}")
    return 0
