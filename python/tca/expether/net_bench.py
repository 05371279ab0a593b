"""Software ExpEther's block-I/O benchmark on this host (``tca expether bench io --fabric
net``): runs the Rust program ``expether-io`` (crates/expether/net), which builds two network
namespaces joined by veth pairs, runs the bridges and the emulated NVMe-like device, and
measures the same device over one TCP connection; turns its JSON lines into rows.

Rows (kind "measured", x = ExpEther paths, 1 for TCP): per phase ``"<ExpEther|TCP> <read|write>
<pattern> QD<n>"`` in us (mean time from submission to completion) and the same series + " BW"
in GB/s (IOPS = BW / 4,096 B for the 4 KB phases); ``"<fabric> lost blocks"`` and
``"<fabric> corrupt blocks"``, counts of 4 KB blocks (unit "blocks"), which must be 0.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

from tca import TcaError
from tca.cli.options import distinct
from tca.common.report import Row

ROOT = Path(__file__).resolve().parents[3]
BENCHMARK = "expether-io"
# Generous: the default run takes about 30 s; a hung run is killed and its namespaces removed.
TIMEOUT_S = 240


def _binary() -> Path:
    """The ``expether-io`` program, built by ``cargo build --release -p expether-net`` (``make
    test`` and ``make demo`` do)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / BENCHMARK
    if not exe.is_file():
        raise TcaError(f"{exe} not found: build it with `cargo build --release -p expether-net`")
    return exe


def _fraction(text: str, name: str, high: float) -> float:
    try:
        v = float(text)
    except ValueError:
        raise TcaError(f"--{name} {text!r} is not a number") from None
    if not math.isfinite(v) or not 0 <= v <= high:
        raise TcaError(f"--{name} {text!r} must lie in 0..{high}")
    return v


def _command(args) -> list[str]:
    paths = [p.strip() for p in str(args.paths).split(",")]
    if not paths or not all(p.isdigit() and 1 <= int(p) <= 8 for p in paths):
        raise TcaError(f"--paths {args.paths!r}: a comma list of 1..8")
    distinct((int(p) for p in paths), "--paths")
    loss = _fraction(str(args.loss), "loss", 0.5)
    if not 1 <= args.mb <= 1024:
        raise TcaError(f"--mb {args.mb}: 1..1024")
    if not 1 <= args.ops <= 1_000_000:
        raise TcaError(f"--ops {args.ops}: 1..1000000")
    rate = str(args.rate)
    if rate.lower() != "none" and not (
        rate[:-1].isdigit() and rate[-1].lower() in "gm" and int(rate[:-1]) > 0
    ):
        raise TcaError(f"--rate {rate!r}: like 1G, 10G, 500M or none")
    return [
        "--paths", ",".join(paths), "--loss", repr(loss), "--rate", rate,
        "--mb", str(args.mb), "--ops", str(args.ops), "--seed", str(args.seed),
    ]  # fmt: skip


def _run(exe: Path, options: list[str]) -> list[dict]:
    try:
        proc = subprocess.run([str(exe), *options], capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        subprocess.run([str(exe), "--cleanup"], capture_output=True, timeout=60)
        raise TcaError(
            f"expether-io did not finish within {TIMEOUT_S} s (its namespaces were removed)"
        ) from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        raise TcaError(lines[-1].removeprefix("expether-io: error: "))
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def rows_of(records: list[dict], mb: int) -> list[Row]:
    """Rows from ``expether-io``'s JSON lines."""
    rows: list[Row] = []

    def row(series: str, x: float, value: float, unit: str) -> None:
        rows.append(Row(BENCHMARK, "net", series, x, "paths", value, unit, kind="measured"))

    for r in records:
        fabric, x = r["fabric"], r["paths"]
        if "lost" in r:
            row(f"{fabric} lost blocks", x, r["lost"], "blocks")
            row(f"{fabric} corrupt blocks", x, r["corrupt"], "blocks")
            if r.get("stopped"):
                raise TcaError(f"{fabric} over {x} path(s) stopped early: {r['stopped']}")
            continue
        pattern = r["pattern"].replace("64MB", f"{mb}MB")
        series = f"{fabric} {r['op']} {pattern} QD{r['depth']}"
        row(series, x, r["mean_us"], "us")
        row(f"{series} BW", x, r["gbps"], "GB/s")
    return rows


def run(args, update) -> tuple[list[Row], str]:
    """Runs the benchmark; ``update(done, total)`` reports progress (or is None)."""
    options = _command(args)
    if os.geteuid() != 0:
        raise TcaError(
            "tca expether bench io --fabric net needs root (network namespaces, AF_PACKET sockets)"
        )
    if shutil.which("ip") is None:
        raise TcaError("tca expether bench io --fabric net needs iproute2 (the ip command)")
    exe = _binary()
    if update:
        update(0, 1)
    records = _run(exe, options)
    if update:
        update(1, 1)
    title = (
        f"ExpEther block I/O over veth ({args.rate} per link, loss {args.loss}) vs one TCP connection; "
        "us = mean command latency, IOPS = BW / 4 KB"
    )
    return rows_of(records, args.mb), title
