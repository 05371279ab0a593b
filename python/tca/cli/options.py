"""Checks of option values shared by the commands: an empty value, a value given twice in a
list, and ``--sizes`` (a list, or a ``LOW:HIGH`` range of powers of two)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from tca import TcaError
from tca.units import parse_size_arg, parse_sizes


def reject_empty(args: argparse.Namespace) -> None:
    """An option given an empty (or blank) value, ``--workload ""``, is an error naming it.
    For commands whose string values are all options (no positional arguments)."""
    for name, value in vars(args).items():
        if isinstance(value, str) and not value.strip():
            raise TcaError(f"--{name.replace('_', '-')}: empty value (give one, or leave the option out)")


def distinct(values: Iterable, what: str, unit: str = "") -> list:
    """``values`` as a list; one given twice (``--links 2,2``; ``--sizes 1K,1024``) is an error,
    as ``tca bench collective`` refuses a node count given twice."""
    seen: list = []
    for v in values:
        if v in seen:
            raise TcaError(f"{what}: {v}{unit} is given twice")
        seen.append(v)
    return seen


def sizes(text: str, what: str = "--sizes") -> list[int]:
    """A comma list of sizes (``3,64,1K``), or ``LOW:HIGH``: the powers of two from LOW to HIGH,
    both ends powers of two (``4:1M``; ``3:17`` is refused, not read as 3, 6, 12); no size twice."""
    values = parse_sizes(text, what)
    if ":" in text:
        for end in text.split(":"):
            n = parse_size_arg(end, what)
            if n & (n - 1):
                raise TcaError(
                    f"{what}: {text}: a LOW:HIGH range runs over powers of two and {n} B is not one "
                    "(give other sizes as a comma list)"
                )
    return distinct(values, what, " B")
