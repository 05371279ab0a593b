"""The output of ``tca bench collective``: a table per node count, the ratios against the node
count (seed 001's claims), the PEACH2 links whose TLPs stalled, the comparison with the seed,
and the plot.

Seed 001 states two results of the TCA collectives (/work/shared/systems/tca-apps.md §4):

- slide "Allreduceの性能": an 8-byte Allreduce, mean of 50 runs, takes about half the time of
  the MPI implementation (node counts and the MPI are not stated);
- slide "Allgatherの性能": on one HA-PACS/TCA sub-cluster (up to 16 nodes) the gap to MVAPICH2-GDR
  2.0b narrows as the process count grows, because TCA's communication paths collide.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

from tca.common.plot import check_path, save
from tca.common.report import Row, table
from tca.peach.bench.collective import BENCHMARK, Result, Stalls

ALLREDUCE_SOURCE = "seed 001, slide 'Allreduceの性能' (8 B, mean of 50 runs: about half of MPI)"
ALLREDUCE_RATIO = 0.5
# What "about half" is taken to mean when the model is checked (tests/test_bench_collective.py).
ALLREDUCE_TOLERANCE = (0.35, 0.65)
ALLGATHER_SOURCE = "seed 001, slide 'Allgatherの性能' (gap to MVAPICH2-GDR 2.0b narrows as p grows)"
LINKS_SHOWN = 8


def node_counts(rows: list[Row]) -> list[int]:
    return sorted({int(r.series.rsplit("(", 1)[1].split()[0]) for r in rows if r.series.endswith(" nodes)")})


def per_nodes(rows: list[Row], n: int) -> list[Row]:
    return [r for r in rows if r.series.endswith(f"({n} nodes)")]


def summary_sizes(sizes: list[float]) -> list[float]:
    """The sizes the ratio-vs-nodes series are drawn for: all of up to 4, else the smallest,
    the middle one and the largest."""
    sizes = sorted(set(sizes))
    return sizes if len(sizes) <= 4 else [sizes[0], sizes[len(sizes) // 2], sizes[-1]]


def size_text(size: int) -> str:
    """How a summary series names its size: "8 B", "4096 B"."""
    return f"{int(size)} B"


def summary(rows: list[Row], op: str) -> list[Row]:
    """Ratios against the node count: TCA/MPI, and for allgather the advantage MPI/TCA. The
    8-byte allreduce rows carry seed 001's 0.5."""
    ratios = [r for r in rows if r.unit == "x" and r.series.startswith("TCA/MPI") and r.x_unit == "B"]
    if len(node_counts(ratios)) < 2:
        return []
    out: list[Row] = []
    for size in summary_sizes([r.x for r in ratios]):
        for r in ratios:
            if r.x != size:
                continue
            head, nodes = r.series.rsplit(" (", 1)
            n = int(nodes.split()[0])
            label = size_text(size)
            if op == "allgather":
                series = head.replace("TCA/MPI", "MPI/TCA", 1) + f", {label}"
                out.append(Row(BENCHMARK, r.platform, series, n, "nodes", 1 / r.value, "x", kind=r.kind))
            else:
                row = Row(BENCHMARK, r.platform, f"{head}, {label}", n, "nodes", r.value, "x", kind=r.kind)
                if op == "allreduce" and size == 8 and r.kind == "predicted":
                    row.paper, row.source = ALLREDUCE_RATIO, ALLREDUCE_SOURCE
                out.append(row)
    return out


def stall_rows(result: Result, platform: str) -> list[Row]:
    """Stalled TLPs as a percentage of all TLPs of each run, against the node count."""
    return [
        Row(
            BENCHMARK,
            platform,
            "TCA stalled TLPs (% of TLPs)",
            s.nodes,
            "nodes",
            100 * s.stalled_tlps / s.tlps if s.tlps else 0.0,
            "%",
        )
        for s in result.stalls
    ]


def stalls_text(stalls: list[Stalls]) -> str:
    """Per run, the links whose TLPs stalled, most first."""
    if not stalls:
        return ""
    lines = [
        "# Stalled TLPs per PEACH2 link direction (TLPs that found the link busy and queued), each "
        "run as a whole: every size, warm-up and verification calls; MPI does not use PEACH2"
    ]
    for s in stalls:
        busy = sorted(
            (link for link in s.links if link["stalled_tlps"] > 0), key=lambda k: -k["stalled_tlps"]
        )
        lines.append(f"# {s.nodes} nodes: {s.stalled_tlps} of {s.tlps} TLPs stalled on {len(busy)} link(s)")
        for link in busy[:LINKS_SHOWN]:
            lines.append(
                f"    {link['link']:<32} {link['stalled_tlps']:>10} stalled of {link['tlps']:>10} TLPs, "
                f"busy {link['busy_us']:.1f} us"
            )
        if len(busy) > LINKS_SHOWN:
            lines.append(f"    ... and {len(busy) - LINKS_SHOWN} more")
    return "\n".join(lines)


def claims(rows: list[Row], op: str) -> str:
    """Seed 001's statement for this operation and what the run gives."""
    lines = ["# Comparison with seed 001"]
    if any(r.kind == "measured" for r in rows):
        lines.append(
            "#   seed 001's results are of HA-PACS/TCA: compare with --fabric sim --platform ha-pacs-tca "
            "(this run measured this host)"
        )
    elif op == "allreduce":
        lines.append(f"#   seed: {ALLREDUCE_SOURCE}")
        eight = [r for r in rows if r.x_unit == "nodes" and r.series.endswith(", 8 B")]
        if not eight:
            lines.append(
                "#   here: this run has no TCA/MPI ratio of the 8-byte allreduce at two or more node counts"
            )
        lo, hi = ALLREDUCE_TOLERANCE
        for r in sorted(eight, key=lambda r: (r.series, r.x)):
            verdict = "about half" if lo <= r.value <= hi else f"outside {lo}-{hi}"
            lines.append(f"#   here: {r.series} on {int(r.x)} nodes = {r.value:.2f} ({verdict})")
    elif op == "allgather":
        lines.append(f"#   seed: {ALLGATHER_SOURCE}")
        series = sorted({r.series for r in rows if r.x_unit == "nodes" and r.series.startswith("MPI/TCA")})
        if not series:
            lines.append(
                "#   here: this run has no TCA/MPI ratio of the allgather at two or more node counts"
            )
        for s in series:
            pts = sorted((r.x, r.value) for r in rows if r.series == s)
            trend = (
                "shrinks"
                if all(b[1] < a[1] for a, b in zip(pts, pts[1:], strict=False))
                else "does not shrink steadily"
            )
            values = ", ".join(f"{int(x)}: {v:.2f}" for x, v in pts)
            lines.append(f"#   here: {s} by nodes {values} ({trend})")
    else:
        lines.append(f"#   seed 001 reports no measurement of {op}")
    return "\n".join(lines)


def text(result: Result, op: str, title: str, summary_rows: list[Row]) -> str:
    """The whole human-readable report."""
    parts = []
    rows = result.rows
    if op == "barrier":
        parts.append(table(rows, title))
    else:
        for n in node_counts(rows):
            # The node count is in the title: the columns drop it.
            shown = [replace(r, series=r.series.removesuffix(f" ({n} nodes)")) for r in per_nodes(rows, n)]
            parts.append(table(shown, f"{title}, {n} nodes"))
    extra = summary_rows + stall_rows(result, rows[0].platform if rows else "")
    if extra:
        parts.append(table(extra, f"{title}: ratios against the node count"))
    if result.stalls:
        parts.append(stalls_text(result.stalls))
    for note in result.notes:
        parts.append(f"# Note: {note}")
    parts.append(claims(summary_rows or rows, op))
    return "\n\n".join(parts)


def plot(rows: list[Row], path: str | Path, title: str) -> None:
    """One panel per node count: time against size, TCA solid, MPI dashed; a last panel with
    the ratios against the node count (the seed's claims). One size only, and the barrier:
    time against nodes (and the ratios)."""
    path = check_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = [r for r in rows if r.unit == "us" and " max" not in r.series]
    by_size = [r for r in means if r.x_unit == "B"]
    ratios = [r for r in rows if r.x_unit == "nodes" and r.unit == "x"]
    against_nodes: list[list[Row]] = []  # panels with the node count on the x axis
    if len({r.x for r in by_size}) == 1:
        # One size: a panel per node count would hold one point; draw time against nodes.
        times = [
            replace(r, series=f"{r.series.rsplit(' (', 1)[0]}, {size_text(int(r.x))}", x=n, x_unit="nodes")
            for n in node_counts(by_size)
            for r in per_nodes(by_size, n)
        ]
        by_size, against_nodes = [], [times, ratios]
    elif by_size:
        against_nodes = [ratios]
    else:
        against_nodes = [[r for r in means if r.x_unit == "nodes"]]
    against_nodes = [p for p in against_nodes if p]
    counts = node_counts(by_size)
    panels = len(counts) + len(against_nodes)
    fig, axes = plt.subplots(max(panels, 1), 1, figsize=(7.5, 3.8 * max(panels, 1)), squeeze=False)
    for ax, n in zip(axes[:, 0], counts, strict=False):
        _lines(ax, per_nodes(by_size, n))
        ax.set_xlabel("Message size (B)")
        ax.set_ylabel("Latency (us)")
        ax.set_yscale("log")
        ax.set_title(f"{n} nodes", fontsize=9)
    for ax, panel in zip(axes[len(counts) :, 0], against_nodes, strict=True):
        _lines(ax, panel)
        ax.set_xlabel("Nodes")
        ax.set_ylabel("Latency (us)" if panel[0].unit == "us" else "Ratio (x)")
    first = axes[0, 0]
    first.set_title(
        textwrap.fill(title, 80) + ("\n" + first.get_title() if first.get_title() else ""), fontsize=9
    )
    save(fig, path)


def _lines(ax, rows: list[Row]) -> None:
    """A line per series (TCA solid, MPI and ratios dashed), the seed's values as markers."""
    series: list[str] = []
    for r in rows:
        if r.series not in series:
            series.append(r.series)
    for i, s in enumerate(series):
        pts = sorted((r.x, r.value) for r in rows if r.series == s)
        style = "-" if s.startswith("TCA ") else "--"
        ax.plot(
            [p[0] for p in pts], [p[1] for p in pts], style, marker="o", markersize=3, color=f"C{i}", label=s
        )
        seed = [(r.x, r.paper) for r in rows if r.series == s and r.paper is not None]
        if seed:
            ax.plot(
                [p[0] for p in seed],
                [p[1] for p in seed],
                "o",
                color=f"C{i}",
                markersize=9,
                markerfacecolor="none",
                markeredgewidth=2,
                label=f"{s} (seed)",
            )
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
