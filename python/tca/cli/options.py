"""Checks of option values shared by the commands."""

from __future__ import annotations

import argparse

from tca import TcaError


def reject_empty(args: argparse.Namespace) -> None:
    """An option given an empty (or blank) value, ``--workload ""``, is an error naming it.
    For commands whose string values are all options (no positional arguments)."""
    for name, value in vars(args).items():
        if isinstance(value, str) and not value.strip():
            raise TcaError(f"--{name.replace('_', '-')}: empty value (give one, or leave the option out)")
