"""Benchmark results: rows, OSU-style tables, the comparison with the seed, JSON.

A row is the unit every benchmark produces (DESIGN.md, "Benchmark output")::

    {"benchmark", "platform", "series", "x", "x_unit", "value", "unit",
     "paper", "source", "kind"}

``paper`` and ``source`` are the seed's value and where it is stated, when the seed states
one for this point; ``kind`` is ``calibrated`` (a parameter was fitted to this number),
``predicted`` (model output not fitted to it) or ``measured`` (real hardware).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from tca import TcaError


@dataclass
class Row:
    benchmark: str
    platform: str
    series: str
    x: float
    x_unit: str
    value: float
    unit: str
    paper: float | None = None
    source: str | None = None
    kind: str = "predicted"


def latency_and_bandwidth(
    benchmark: str, platform: str, series: str, size: int, latency_us: float, kind: str = "predicted"
) -> list[Row]:
    """A message size's two rows, as the seeds plot them: latency [us] and size / latency
    [GB/s] (series name + " BW"); ``kind`` is "measured" for a run on real hardware."""
    return [
        Row(benchmark, platform, series, size, "B", latency_us, "us", kind=kind),
        Row(benchmark, platform, f"{series} BW", size, "B", size / latency_us / 1e3, "GB/s", kind=kind),
    ]


def attach_references(rows: list[Row], references: list[dict], experiment: str) -> None:
    """Fills ``paper``, ``source`` and ``kind`` from the platform's ``[[reference]]`` entries.
    A reference value that is not a finite positive number is an error, not a NaN in a table."""
    for ref in references:
        if ref["experiment"] != experiment:
            continue
        if not math.isfinite(ref["value"]) or ref["value"] <= 0:
            raise TcaError(
                f"reference {ref['benchmark']} {ref['experiment']} '{ref['series']}' at x = {ref['x']}: "
                f"value {ref['value']} must be a finite positive number"
            )
        for row in rows:
            if row.benchmark == ref["benchmark"] and row.series == ref["series"] and row.x == ref["x"]:
                row.paper, row.source, row.kind = ref["value"], ref["source"], ref["kind"]


def to_json(rows: list[Row]) -> str:
    """The rows as one strict JSON array (DESIGN.md: no NaN); a non-finite number is an error
    naming its row."""
    for r in rows:
        for name in ("x", "value", "paper"):
            v = getattr(r, name)
            if v is not None and not math.isfinite(v):
                raise TcaError(
                    f"{r.benchmark} '{r.series}' at x = {r.x}: {name} is {v}, which JSON cannot hold"
                )
    return json.dumps([asdict(r) for r in rows], indent=1, allow_nan=False)


def from_json(text: str) -> list[Row]:
    """Rows from :func:`to_json`'s output (a program's ``--json`` run); a one-line TcaError if
    the text is not such an array."""
    try:
        return [Row(**item) for item in json.loads(text)]
    except (ValueError, TypeError) as e:
        raise TcaError(f"not an array of result rows: {str(e).splitlines()[0]}") from None


def _fmt(value: float, unit: str) -> str:
    if unit == "GB/s":
        return f"{value:.3f}"
    if unit == "us":
        return f"{value:.2f}"
    return f"{value:.2f}"


def _fmt_x(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def table(rows: list[Row], title: str) -> str:
    """One OSU-style table: a column per series (in order of appearance), a line per x."""
    series: list[str] = []
    for r in rows:
        if r.series not in series:
            series.append(r.series)
    xs = sorted({r.x for r in rows})
    by_key = {(r.series, r.x): r for r in rows}
    x_unit = rows[0].x_unit if rows else ""
    x_label = "Size" if x_unit == "B" else x_unit.capitalize()
    headers = [f"{x_label} ({x_unit})"] + [f"{s} ({_unit_of(rows, s)})" for s in series]
    widths = [max(12, len(h) + 2) for h in headers]
    out = [f"# {title}", "# " + "".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for x in xs:
        cells = [_fmt_x(x)]
        for s in series:
            r = by_key.get((s, x))
            cells.append(_fmt(r.value, r.unit) if r else "-")
        out.append("  " + "".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(out)


def _unit_of(rows: list[Row], series: str) -> str:
    return next(r.unit for r in rows if r.series == series)


def comparison(rows: list[Row]) -> str:
    """The seed's stated values beside the model's, with the ratio and the kind of each."""
    compared = [r for r in rows if r.paper is not None]
    if not compared:
        return "# No value of the seed to compare with."
    # Columns as wide as their longest entry: a long series name or x never runs into the next.
    xs = [f"{_fmt_x(r.x)} {r.x_unit}" for r in compared]
    series_w = max(20, *(len(r.series) for r in compared))
    x_w = max(10, *(len(x) for x in xs))
    lines = [
        "# Comparison with the seed (calibrated: a parameter was fitted to this number;"
        " predicted: it was not)",
        f"# {'Series':<{series_w}} {'x':>{x_w}}  {'Model':>10}  {'Seed':>10}  {'Model/Seed':>10}  "
        f"{'Kind':<11} Source",
    ]
    for r, x in zip(compared, xs, strict=True):
        ratio = r.value / r.paper if r.paper else float("nan")
        lines.append(
            f"  {r.series:<{series_w}} {x:>{x_w}}  {_fmt(r.value, r.unit) + ' ' + r.unit:>10}  "
            f"{_fmt(r.paper, r.unit) + ' ' + r.unit:>10}  {ratio:>10.2f}  {r.kind:<11} {r.source}"
        )
    return "\n".join(lines)
