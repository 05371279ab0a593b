"""``tca bench cg``: the CG solver of examples/c/hapacs/cg.c (seed 001, slide "CG法の性能":
an nd6k-shaped matrix, 18,000 rows and 6,897,316 non-zeros, 1,000 iterations, 1 GPU per node,
the time breakdown of process rank 0), TCA and MPI variants in one run per node count.

The C program prints rank 0's total, computation, halo and reduction times per variant as
``#row`` lines and stops with an error when a variant's solution differs from its serial run.
On the simulator computation costs nothing unless ``compute="declared"`` (each phase then takes
the time a K20X needs to stream its data, cg.c); on the shm fabric it is this host's time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tca import TcaError
from tca.common.plot import check_path, save
from tca.common.report import Row
from tca.peach import cprog, platforms

BENCHMARK = "cg"
SOURCE_DIR = cprog.ROOT / "examples" / "c" / "hapacs"
SOURCES = [SOURCE_DIR / "cg.c", SOURCE_DIR / "cg_matrix.c"]
HEADERS = [SOURCE_DIR / "cg_matrix.h", SOURCE_DIR / "hapacs.h"]
DEFAULT_NODES = [1, 2, 4, 8, 16]
ITERATIONS = 1000  # seed 001, slide "CG法の性能"
PARTS = ("computation", "halo", "reduction")
VARIANTS = ("TCA", "MPI")
SEED_NOTE = "seed 001 CG法の性能: nd6k shape, 1,000 iterations, rank 0's breakdown (no times survive)"


def run(
    platform: str | None,
    nodes: list[int],
    fabric: str = "sim",
    iterations: int = ITERATIONS,
    shape: tuple[int, int, int] | None = None,
    compute: str = "none",
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    """Rows (microseconds, rank 0) of both variants at each node count. ``shape``: (rows, non-zeros,
    band half-width) instead of nd6k's."""
    for n in nodes:
        if not 1 <= n <= 16:
            raise TcaError(f"node count {n} is outside 1..16 (one TCA sub-cluster)")
    if fabric == "sim" and platform is not None:
        platforms.check_nodes(platform, nodes)
    if iterations < 1:
        raise TcaError("--iterations must be at least 1")
    if compute != "none" and fabric != "sim":
        raise TcaError("--compute applies to the sim fabric only")
    exe = cprog.build("cg", SOURCES, fabric, HEADERS)
    args = [str(iterations), *(str(v) for v in shape or ())]
    sim_args = ["--compute", compute] if compute != "none" else []
    kind = "predicted" if fabric == "sim" else "measured"
    name = platform if fabric == "sim" else f"this host ({fabric})"
    rows: list[Row] = []
    for i, n in enumerate(nodes):
        done = cprog.run(exe, n, fabric, args, platform, sim_args)
        if "verified against a serial run" not in done.stdout:
            raise TcaError(f"cg on {n} nodes printed no verification line")
        for r in done.rows:
            rows.append(
                Row(
                    BENCHMARK,
                    name,
                    r["series"],
                    r["x"],
                    "nodes",
                    r["value"] * 1e6,
                    "us",
                    source=SEED_NOTE,
                    kind=kind,
                )
            )
        if progress:
            progress(i + 1, len(nodes))
    return rows


def plot_breakdown(rows: list[Row], path: str | Path, title: str) -> None:
    """Stacked bars of rank 0's computation, halo and reduction, TCA and MPI side by side."""
    path = check_path(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nodes = sorted({int(r.x) for r in rows})
    value = {(r.series, int(r.x)): r.value / 1e3 for r in rows}
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    width = 0.38
    for v, variant in enumerate(VARIANTS):
        bottom = [0.0] * len(nodes)
        for p, part in enumerate(PARTS):
            heights = [value.get((f"{variant} CG {part}", n), 0.0) for n in nodes]
            xs = [i + (v - 0.5) * width for i in range(len(nodes))]
            ax.bar(
                xs,
                heights,
                width,
                bottom=bottom,
                color=f"C{p}",
                hatch="" if variant == "TCA" else "//",
                edgecolor="black",
                linewidth=0.5,
                label=f"{variant} {part}",
            )
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_xticks(range(len(nodes)), [f"{n}\n(TCA | MPI)" for n in nodes])
    ax.set_xlabel("nodes")
    ax.set_ylabel("time of rank 0 (ms)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    save(fig, path)
