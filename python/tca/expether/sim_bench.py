"""``tca expether bench aggregation|latency``: the simulated ExpEther prototype of seed 002
(crates/expether/sim through ``tca._native``), with the seed's numbers beside the model's.

- ``aggregation`` (Fig. 4.10): a RAID-0 of 1-4 SATA SSDs over one 10GbE path, 128 B max
  payload, at most 10 TLPs per frame; rows per SSD count: the gain of aggregation [%] and the
  bandwidth with and without it [GB/s], for reads and writes.
- ``latency`` (Table 4.1): one I/O at a time on the RAID-0, mean latency [us] against transfer
  size, read and write, with aggregation ("aggregation") and with one TLP per frame.

The seed measured both on the prototype, ``expether-prototype``: its numbers are attached (and
rows called calibrated) only on a platform with that platform's values; on another one
(``expether-40gbe``, an edited file) every row is predicted and none is compared.

``run(args, update)`` returns ``(rows, title)``; a bad platform or option is a TcaError.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tca import TcaError
from tca.cli import options
from tca.common.report import Row
from tca.peach import platforms

SEED = "seed 002"
FIG_4_10 = f"{SEED} §4.2.2, Fig. 4.10"
TABLE_4_1 = f"{SEED} §4.2.2, Table 4.1"
MEASURED_ON = "expether-prototype"  # the platform of Fig. 4.10 and Table 4.1
NOT_COMPARED = f" (not compared: the seed's numbers are of {MEASURED_ON})"

# Fig. 4.10 (expether.md §9.7): the gain with 4 SSDs; reads calibrated (bridge.extra_header).
AGGREGATION_PAPER = {("read", 4): (41.0, "calibrated"), ("write", 4): (37.0, "predicted")}

# Table 4.1 [us], by (direction, bytes, aggregation); 4 KB without aggregation calibrated
# (raid.drive_read_latency, raid.drive_write_latency).
LATENCY_PAPER = {
    ("read", 4096, True): 70.68,
    ("read", 4096, False): 69.5,
    ("read", 64 << 20, True): 65180.0,
    ("read", 64 << 20, False): 91622.0,
    ("write", 4096, True): 98.18,
    ("write", 4096, False): 98.21,
    ("write", 64 << 20, True): 65038.0,
    ("write", 64 << 20, False): 89993.0,
}


def _native():
    try:
        from tca import _native
    except ImportError as e:
        raise TcaError(f"the simulator is not built ({e}); run 'make native'") from e
    return _native


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        raise TcaError(str(e)) from e


def same_values(platform: str, reference: str) -> bool:
    """Whether the ExpEther ``platform`` (a name or .toml file) has every parameter value of the
    platform ``reference``: the seed's numbers measured on ``reference`` are compared only there."""
    native = _native()

    def values(name: str) -> dict[str, str]:
        info = _call(native.expether_platform, str(platforms.resolve(name, "expether")))
        return {key: value for key, value, _source, _calibrated in info["parameters"]}

    return values(platform) == values(reference)


def latency_series(direction: str, aggregation: bool) -> str:
    """The series of a Table 4.1 row: it names "aggregation" only when TLPs are aggregated."""
    return f"{direction}, aggregation" if aggregation else f"{direction}, one TLP per frame"


def aggregation_rows(platform: str, drives: int | None) -> tuple[list[Row], str]:
    native = _native()
    name = _call(native.expether_platform, platform)["name"]
    compared = same_values(platform, MEASURED_ON)
    rows = []
    for p in _call(native.expether_aggregation, platform, drives):
        direction = "write" if p["write"] else "read"
        n = p["drives"]
        paper, kind = AGGREGATION_PAPER.get((direction, n), (None, "predicted"))
        if not compared:
            paper, kind = None, "predicted"
        rows.append(
            Row(
                "aggregation",
                name,
                f"{direction} gain",
                n,
                "SSDs",
                p["gain"],
                "%",
                paper,
                FIG_4_10 if paper is not None else None,
                kind,
            )
        )
        for label, key in (("aggregation", "with"), ("one TLP per frame", "without")):
            rows.append(Row("aggregation", name, f"{direction} {label}", n, "SSDs", p[key] / 1e9, "GB/s"))
    title = f"ExpEther adaptive TLP aggregation, RAID-0 of SATA SSDs ({FIG_4_10}) on {name}"
    return rows, title + ("" if compared else NOT_COMPARED)


def latency_rows(platform: str, sizes: list[int]) -> tuple[list[Row], str]:
    native = _native()
    name = _call(native.expether_platform, platform)["name"]
    compared = same_values(platform, MEASURED_ON)
    rows = []
    for p in _call(native.expether_latency, platform, sizes):
        direction = "write" if p["write"] else "read"
        key = (direction, p["bytes"], p["aggregation"])
        paper = LATENCY_PAPER.get(key) if compared else None
        calibrated = p["bytes"] == 4096 and not p["aggregation"]
        rows.append(
            Row(
                "latency",
                name,
                latency_series(direction, p["aggregation"]),
                p["bytes"],
                "B",
                p["latency_us"],
                "us",
                paper,
                TABLE_4_1 if paper is not None else None,
                "calibrated" if calibrated and paper is not None else "predicted",
            )
        )
    title = f"ExpEther latency of one I/O at a time ({TABLE_4_1}) on {name}"
    return rows, title + ("" if compared else NOT_COMPARED)


def write_trace(args: argparse.Namespace) -> None:
    """The Chrome trace of one run of the benchmark's set-up, to ``args.trace``."""
    native = _native()
    info = _call(native.expether_platform, args.platform)
    if args.benchmark == "aggregation":
        drives = args.drives or info["max_drives"]
        text = _call(native.expether_trace, args.platform, False, 64 * 1024, drives, True, ios=4, iodepth=4)
    else:
        text = _call(native.expether_trace, args.platform, False, 4096, 1, True, ios=4, iodepth=1)
    Path(args.trace).write_text(text)


def run(args: argparse.Namespace, update=None) -> tuple[list[Row], str]:
    if update:
        update(0, 1)
    args = argparse.Namespace(**{**vars(args), "platform": str(platforms.resolve(args.platform, "expether"))})
    if args.benchmark == "aggregation":
        if args.drives is not None and args.drives < 1:
            raise TcaError(f"--drives must be at least 1 (got {args.drives})")
        rows, title = aggregation_rows(args.platform, args.drives)
    elif args.benchmark == "latency":
        sizes = options.sizes(args.sizes or "4K,64M")
        bad = [s for s in sizes if s % 4096 or s > 1 << 30]
        if bad:
            raise TcaError(f"--sizes: {bad[0]} B is not a multiple of 4 KiB up to 1 GiB")
        rows, title = latency_rows(args.platform, sizes)
    else:
        raise TcaError(f"unknown benchmark '{args.benchmark}'")
    if getattr(args, "trace", None):
        write_trace(args)
    if update:
        update(1, 1)
    return rows, title
