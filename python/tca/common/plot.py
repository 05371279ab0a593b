"""PNG plots of benchmark rows: the model as lines, the seed's values as markers."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tca import TcaError
from tca.common.outfile import writable_file
from tca.common.report import Row

# Formats written without extra packages; DESIGN.md asks for PNG, the others help papers.
FORMATS = (".png", ".pdf", ".svg")


def check_path(path: str | Path) -> Path:
    """``path`` if a plot can be written there (see :func:`tca.common.outfile.writable_file`)."""
    return writable_file(path, "--plot", FORMATS)


def plot(rows: list[Row], path: str | Path, title: str) -> None:
    """Writes one PNG (or PDF, SVG); a second panel holds series in other units (ratios,
    percentages)."""
    path = check_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units: list[str] = []
    for r in rows:
        if r.unit not in units:
            units.append(r.unit)
    fig, axes = plt.subplots(len(units), 1, figsize=(7.5, 4.2 * len(units)), squeeze=False)
    for ax, unit in zip(axes[:, 0], units, strict=True):
        in_unit = [r for r in rows if r.unit == unit]
        series: list[str] = []
        for r in in_unit:
            if r.series not in series:
                series.append(r.series)
        for i, s in enumerate(series):
            pts = sorted((r.x, r.value) for r in in_unit if r.series == s)
            color = f"C{i}"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-", color=color, label=f"{s} (model)")
            seed = [(r.x, r.paper) for r in in_unit if r.series == s and r.paper is not None]
            if seed:
                ax.plot(
                    [p[0] for p in seed],
                    [p[1] for p in seed],
                    "o",
                    color=color,
                    markersize=8,
                    markerfacecolor="none",
                    markeredgewidth=2,
                    label=f"{s} (seed)",
                )
        x_unit = in_unit[0].x_unit
        ax.set_xscale("log", base=2)
        if unit == "us":  # latencies span three decades
            ax.set_yscale("log")
        ax.set_xlabel(f"{'Transfer size' if x_unit == 'B' else x_unit.capitalize()} ({x_unit})")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0, 0].set_title(textwrap.fill(title, 80), fontsize=10)
    save(fig, path)


def save(fig, path: str | Path) -> None:
    """Writes ``fig`` as a PNG at ``path`` and closes it; a write error is one line."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise TcaError(f"cannot write plot {path}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
