"""A benchmark's output as DESIGN.md fixes it: the OSU-style table and the comparison with the
seed, or (``--json``) one JSON array of rows and nothing else; a plot with ``--plot``."""

from __future__ import annotations

import argparse
from pathlib import Path

from tca.common import report
from tca.common.outfile import writable_file
from tca.common.plot import check_path, plot


def add_options(parser: argparse.ArgumentParser, trace: str | None = None) -> None:
    """``--json`` and ``--plot`` on a benchmark; ``--trace`` too when ``trace`` says what it holds."""
    parser.add_argument("--json", action="store_true", help="print rows as one JSON array and nothing else")
    parser.add_argument("--plot", metavar="FILE.png", help="write a PNG plot")
    if trace:
        parser.add_argument("--trace", metavar="FILE.json", help=trace)


def check_files(args: argparse.Namespace) -> None:
    """Rejects a bad ``--plot`` or ``--trace`` path before the benchmark runs."""
    if args.plot:
        check_path(args.plot)
    if getattr(args, "trace", None):
        writable_file(args.trace, "--trace", (".json",))


def show(rows: list[report.Row], title: str, plot_path: str | Path | None = None) -> None:
    """The OSU-style table and the comparison with the seed; a plot too if asked."""
    if plot_path:
        plot(rows, plot_path, title)
    print(report.table(rows, title))
    print()
    print(report.comparison(rows))


def emit(rows: list[report.Row], title: str, args: argparse.Namespace) -> int:
    """JSON rows and nothing else, or the table and comparison."""
    if not args.json:
        show(rows, title, args.plot)
        return 0
    text = report.to_json(rows)  # strict JSON, checked before anything is written
    if args.plot:
        plot(rows, args.plot, title)
    print(text)
    return 0
