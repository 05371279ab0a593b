"""The PM/Ethernet-HXB part of ``tca demo``: seed 004 Table 4 on the simulated 2006 testbed
beside HXB, MPTCP and TCP over real k-link veth links on this host, in one table and one plot."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from tca import TcaError
from tca.common.progress import progress_bar
from tca.common.report import Row
from tca.hxb import net_bench, sim_bench

PLATFORM = "hxb-testbed-2006"
SIM_LINKS = [2, 4, 6, 8, 9]
NET_LINKS = [1, 2, 4, 6]
SIZE = 1 << 20


def _args(**kw) -> argparse.Namespace:
    base = dict(
        benchmark="bandwidth",
        platform=None,
        links=None,
        sizes=None,
        mpi=False,
        relays="0,1,2",
        dims="1,2,3",
        rate=None,
        loss=None,
        baselines=None,
        json=False,
        plot=None,
        trace=None,
    )
    base.update(kw)
    return argparse.Namespace(**base)


def _points(rows: list[Row], series: str, x: int, links: list[int]) -> dict[int, Row]:
    """The row of series ``series.format(k)`` at ``x`` for each k that has one."""
    at = {(r.series, r.x): r for r in rows}
    return {k: at[(series.format(k), x)] for k in links if (series.format(k), x) in at}


def table4(out: Path) -> None:
    print("PM/Ethernet-HXB (seed 004 Table 4): one-way bandwidth of 1 MiB messages over k GbE links,")
    print(f"simulated on {PLATFORM} (Table 3), beside the same protocol core over k real veth links")
    print("(1 Gb/s tbf each) between two network namespaces of this host, with MPTCP (k subflows)")
    print("and one TCP connection over the same links.\n")
    sim_rows, _ = sim_bench.run(
        _args(platform=PLATFORM, links=",".join(map(str, SIM_LINKS)), sizes="4,1M"), None
    )
    net_rows: list[Row] = []
    why = ""
    if os.geteuid() != 0:
        why = "not root (namespaces and AF_PACKET need it)"
    else:
        try:
            with progress_bar("hxb over veth links", True) as update:
                net_rows, _ = net_bench.run(
                    _args(fabric="net", links=",".join(map(str, NET_LINKS)), sizes=str(SIZE)), update
                )
        except TcaError as e:
            why = str(e)
    model_bw = _points(sim_rows, "HXB x{}", SIZE, SIM_LINKS)
    model_eff = _points(sim_rows, "HXB x{} efficiency", SIZE, SIM_LINKS)
    model_lat = _points(sim_rows, "HXB x{} processing latency", 4, SIM_LINKS)
    here = {
        "HXB": _points(net_rows, "HXB {} links efficiency", SIZE, NET_LINKS),
        "MPTCP": _points(net_rows, "MPTCP {} links efficiency", SIZE, NET_LINKS),
        "TCP": _points(net_rows, "TCP {} links (uses 1) efficiency", SIZE, NET_LINKS),
    }
    print(
        f"{'links':>5}  {'seed MB/s (%)':>14}  {'model MB/s (%)':>15}  {'seed us':>7}  {'model us':>8}  "
        f"{'here: HXB %':>11}  {'MPTCP %':>7}  {'TCP %':>5}"
    )
    for k in sorted(set(SIM_LINKS) | set(NET_LINKS)):
        bw, e, lat = model_bw.get(k), model_eff.get(k), model_lat.get(k)
        seed = f"{bw.paper * 1e3:.0f} ({e.paper:.0f})" if bw and e and bw.paper and e.paper else "-"
        model = f"{bw.value * 1e3:.0f} ({e.value:.1f})" if bw and e else "-"
        seed_us = f"{lat.paper:.2f}" if lat and lat.paper else "-"
        model_us = f"{lat.value:.2f}" if lat else "-"
        cells = [f"{here[n][k].value:.1f}" if k in here[n] else "-" for n in ("HXB", "MPTCP", "TCP")]
        sim = f"{k:>5}  {seed:>14}  {model:>15}  {seed_us:>7}  {model_us:>8}"
        print(f"{sim}  {cells[0]:>11}  {cells[1]:>7}  {cells[2]:>5}")
    print("(% of k x 125 MB/s; 'us': processing latency, 4-byte messages; 'here': % of k x 1 Gb/s")
    print(" measured on this host)")
    if why:
        print(f"# real links: skipped ({why})")
    _plot(model_eff, here, out / "hxb-table4.png")
    print(f"# plot: {out / 'hxb-table4.png'}\n")


def _plot(model: dict[int, Row], here: dict[str, dict[int, Row]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ks = sorted(model)
    ax.plot(ks, [model[k].value for k in ks], "-", color="C0", label=f"HXB, simulated {PLATFORM}")
    seed = [k for k in ks if model[k].paper]
    ax.plot(seed, [model[k].paper for k in seed], "o", color="C0", label="seed 004 Table 4")
    for i, (name, pts) in enumerate(here.items(), start=1):
        if pts:
            kk = sorted(pts)
            ax.plot(
                kk,
                [pts[k].value for k in kk],
                "s--",
                color=f"C{i}",
                label=f"{name}, this host (veth, 1 Gb/s)",
            )
    ax.set_xlabel("links")
    ax.set_ylabel("% of k x link rate")
    ax.set_ylim(0, 105)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title("PM/Ethernet-HXB one-way bandwidth, 1 MiB messages (seed 004 Table 4)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
