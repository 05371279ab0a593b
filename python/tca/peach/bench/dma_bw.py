"""``tca bench dma-bw``: the intra-node DMA experiments of seed 000 §4.1 (Fig. 4, 5, 6).

- fig4: bandwidth vs transfer size, 128 chained descriptors (one 4 KiB page of descriptors),
  series CPU-CPU, CPU-GPU, GPU-GPU, and the ideal link bandwidth;
- fig5: one transfer, chaining mode vs register mode, and their ratio;
- fig6: 4 KiB transfers, 1 to 128 descriptors, and CPU-CPU as a percentage of its maximum.

Bandwidth is bytes moved over the time from just before the kick until the polling CPU sees the
channel done, as the seed measures it (seed 000 §4.1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tca import TcaError, _native
from tca.common.report import Row, attach_references

BENCHMARK = "dma-bw"

# (series, source memory, destination memory); GPU-GPU is between two GPUs (seed 000 §4.1.2).
PAIRS = [("CPU-CPU", "cpu", "cpu"), ("CPU-GPU", "cpu", "gpu0"), ("GPU-GPU", "gpu0", "gpu1")]
FIG4_SIZES = [2**k for k in range(3, 21)]  # 8 B .. 1 MiB
FIG5_SIZES = [2**k for k in range(3, 21)]
FIG6_COUNTS = [1, 2, 4, 8, 16, 32, 64, 128]
FIG4_COUNT = 128  # 128 x 32 B descriptors fill one 4 KiB page (seed 000 §4.1.1)
FIG6_SIZE = 4096

EXPERIMENTS = {
    "fig4": "seed 000 §4.1 Fig. 4: intra-node DMA bandwidth, 128 chained transfers",
    "fig5": "seed 000 §4.1.1 Fig. 5: one transfer, chaining (descriptor) vs register mode",
    "fig6": "seed 000 §4.1 Fig. 6: 4 KB transfers, 1-128 descriptors",
}


@dataclass
class Point:
    """One simulation to run: a row's coordinates and the DMA it stands for."""

    series: str
    x: int
    src: str
    dst: str
    mode: str
    size: int
    count: int


def points(experiment: str, sizes: list[int] | None = None) -> list[Point]:
    if experiment == "fig4":
        return [
            Point(s, n, a, b, "chaining", n, FIG4_COUNT) for s, a, b in PAIRS for n in sizes or FIG4_SIZES
        ]
    if experiment == "fig5":
        return [
            Point(m.capitalize(), n, "cpu", "cpu", m, n, 1)
            for m in ("chaining", "register")
            for n in sizes or FIG5_SIZES
        ]
    if experiment == "fig6":
        return [Point(s, c, a, b, "chaining", FIG6_SIZE, c) for s, a, b in PAIRS for c in FIG6_COUNTS]
    raise TcaError(f"unknown experiment '{experiment}' (expected one of: {', '.join(EXPERIMENTS)})")


def run(
    platform: _native.Platform,
    experiment: str,
    sizes: list[int] | None = None,
    trace: _native.Trace | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    """Simulates every point of `experiment` and returns its rows with the seed's values."""
    for n in sizes or []:
        if n <= 0 or n % 4:
            raise TcaError(f"transfer size {n} B is not a positive multiple of 4")
    todo = points(experiment, sizes)
    for p in todo:
        needs = max((int(m[3:]) + 1 for m in (p.src, p.dst) if m.startswith("gpu")), default=0)
        if needs > platform.gpus:
            raise TcaError(
                f"{experiment}'s {p.series} series needs {needs} GPUs per node and {platform.name} has "
                f"{platform.gpus} (seed 000 measured the PEACH2 testbed)"
            )
    x_unit = "descriptors" if experiment == "fig6" else "B"
    rows: list[Row] = []
    for i, p in enumerate(todo):
        if trace is not None:
            trace.process(f"{experiment} {p.series} {p.mode} {p.count} x {p.size} B")
        try:
            r = _native.simulate_dma(platform, p.src, p.dst, p.mode, p.size, p.count, trace)
        except ValueError as e:
            raise TcaError(str(e)) from None
        gbps = r["bytes"] / (r["elapsed_ps"] * 1e-12) / 1e9
        rows.append(Row(BENCHMARK, platform.name, p.series, p.x, x_unit, gbps, "GB/s"))
        if progress:
            progress(i + 1, len(todo))
    rows += derived(platform, experiment, rows)
    attach_references(rows, platform.references(), experiment)
    return rows


def derived(platform: _native.Platform, experiment: str, rows: list[Row]) -> list[Row]:
    """Series the seed states as relations: the ideal, register/chaining, percent of max."""
    out: list[Row] = []
    if experiment == "fig4":
        ideal = platform.ideal_write_bandwidth() / 1e9
        xs = sorted({r.x for r in rows})
        out = [Row(BENCHMARK, platform.name, "Ideal", x, "B", ideal, "GB/s") for x in xs]
    elif experiment == "fig5":
        chain = {r.x: r.value for r in rows if r.series == "Chaining"}
        reg = {r.x: r.value for r in rows if r.series == "Register"}
        out = [
            Row(BENCHMARK, platform.name, "Register/Chaining", x, "B", reg[x] / chain[x], "x")
            for x in sorted(chain)
        ]
    elif experiment == "fig6":
        cpu = {r.x: r.value for r in rows if r.series == "CPU-CPU"}
        peak = max(cpu.values())
        out = [
            Row(BENCHMARK, platform.name, "CPU-CPU % of max", x, "descriptors", 100 * v / peak, "%")
            for x, v in sorted(cpu.items())
        ]
    return out
