"""``--plot``: a timeline per scheduler, one row per device lane (swap-in, run, swap-out)."""

from __future__ import annotations

from pathlib import Path

from tca.common.plot import save
from tca.victream.core.spans import Lane

LANES = (Lane.IN, Lane.RUN, Lane.OUT)
COLORS = {Lane.IN: "C0", Lane.RUN: "C2", Lane.OUT: "C3", Lane.FILE_READ: "C7", Lane.FILE_WRITE: "C8"}


def plot(summaries, path: str | Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        len(summaries),
        1,
        figsize=(9, 1.2 + 1.1 * len(summaries[0].devices) * len(summaries)),
        squeeze=False,
        sharex=True,
    )
    for ax, s in zip(axes[:, 0], summaries, strict=True):
        labels = []
        y = 0
        for g, d in enumerate(s.devices):
            for lane in LANES:
                spans = [
                    (sp.start_ps / 1e12, (sp.end_ps - sp.start_ps) / 1e12)
                    for sp in s.spans
                    if sp.device == g and sp.lane == lane
                ]
                ax.broken_barh(spans, (y + 0.1, 0.8), color=COLORS[lane])
                labels.append(f"{d.name} {lane.value}")
                y += 1
        ax.set_yticks([i + 0.5 for i in range(y)], labels, fontsize=7)
        ax.set_ylim(0, y)
        ax.invert_yaxis()
        ax.set_title(
            f"{s.scheduler}: {s.elapsed_s:.3f} s, swap {(s.swap_in + s.swap_out) / 2**20:.0f} MiB", fontsize=9
        )
        ax.grid(True, axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title, fontsize=10)
    save(fig, path)
