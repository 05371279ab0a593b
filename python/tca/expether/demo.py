"""The ExpEther part of ``tca demo``: one §4.2 result of seed 002 on the simulated prototype
(adaptive TLP aggregation, Fig. 4.10), and software ExpEther between two network namespaces of
this host under 1 % frame loss, beside the same device over TCP, with every block verified."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tca import TcaError
from tca.cli.output import show
from tca.common.progress import progress_bar
from tca.common.report import Row
from tca.expether import net_bench, sim_bench


def section(out: Path) -> None:
    print("ExpEther (seed 002 §4.2.2, Fig. 4.10): adaptive TLP aggregation on the simulated prototype")
    print("(FPGA bridges, 2 x 10GbE, RAID-0 of 1-4 SATA SSDs, 128 B payloads, up to 10 TLPs per frame).\n")
    args = argparse.Namespace(benchmark="aggregation", platform="expether-prototype", drives=None, trace=None)
    rows, title = sim_bench.run(args)
    show(rows, title, out / "expether-aggregation.png")
    print(f"# plot: {out / 'expether-aggregation.png'}\n")

    print("Software ExpEther on this host: an NVMe-like block device in one network namespace reached")
    print("from another over 1 and 2 veth paths (1 Gb/s each) with 1 % frame loss injected at both")
    print("bridges, beside the same device over one TCP connection; every block is verified.\n")
    if os.geteuid() != 0:
        print("# software ExpEther: skipped (not root: namespaces and AF_PACKET need it)\n")
        return
    args = argparse.Namespace(paths="1,2", loss="0.01", rate="1G", mb=16, ops=500, seed=2016)
    try:
        with progress_bar("expether io", True) as update:
            rows, _ = net_bench.run(args, update)
    except TcaError as e:
        print(f"# software ExpEther: skipped ({e})\n")
        return
    print(summary(rows))


def summary(rows: list[Row]) -> str:
    """One line per fabric and path count: sequential bandwidth, 4 KB latency, lost, corrupt."""

    def value(fabric: str, x: float, words: list[str], bw: bool = False) -> float | None:
        for r in rows:
            w = r.series.split()
            if r.x == x and w[0] == fabric and all(k in w for k in words) and (w[-1] == "BW") == bw:
                return r.value
        return None

    def cell(v: float | None, fmt: str) -> str:
        return "-" if v is None else format(v, fmt)

    lines = [
        f"{'fabric':<10}{'paths':>6}{'seq read GB/s':>15}{'seq write GB/s':>16}"
        f"{'4K read QD1 us':>16}{'4K write QD1 us':>17}{'lost':>6}{'corrupt':>9}"
    ]
    for fabric, x in sorted({(r.series.split()[0], r.x) for r in rows}):
        lines.append(
            f"{fabric:<10}{x:>6.0f}"
            f"{cell(value(fabric, x, ['read', 'sequential'], bw=True), '.3f'):>15}"
            f"{cell(value(fabric, x, ['write', 'sequential'], bw=True), '.3f'):>16}"
            f"{cell(value(fabric, x, ['read', '4KB', 'QD1']), '.0f'):>16}"
            f"{cell(value(fabric, x, ['write', '4KB', 'QD1']), '.0f'):>17}"
            f"{cell(value(fabric, x, ['lost']), '.0f'):>6}{cell(value(fabric, x, ['corrupt']), '.0f'):>9}"
        )
    return "\n".join(lines) + "\n(lost and corrupt: 4 KB blocks, all verified; both must be 0)\n"
