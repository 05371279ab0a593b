"""``tca expether bench io --fabric net``: a short run in namespaces (skipped when not root) and
the row conversion and argument checks without namespaces."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tca import TcaError
from tca.expether.net_bench import rows_of

ROOT = Path(__file__).resolve().parents[2]
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("cargo") is None,
    reason="real links need root, iproute2 and cargo (to build expether-io)",
)


def tca(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tca", "expether", "bench", "io", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


@needs_root
def test_short_run_under_one_percent_loss_loses_and_corrupts_nothing():
    proc = tca("--fabric", "net", "--paths", "1,2", "--loss", "0.01", "--mb", "2", "--ops", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["kind"] for r in rows} == {"measured"}
    by = {(r["series"], r["x"]): r for r in rows}
    for fabric, paths in (("ExpEther", 1), ("ExpEther", 2), ("TCP", 1)):
        assert by[(f"{fabric} lost blocks", paths)]["value"] == 0
        assert by[(f"{fabric} corrupt blocks", paths)]["value"] == 0
        for op in ("read", "write"):
            for phase in ("2MB sequential QD8", "4KB random QD1", "4KB random QD16"):
                lat = by[(f"{fabric} {op} {phase}", paths)]
                bw = by[(f"{fabric} {op} {phase} BW", paths)]
                assert lat["unit"] == "us" and lat["value"] > 0
                assert bw["unit"] == "GB/s" and 0 < bw["value"] < 100
    assert not any(r["series"].startswith("TCP") and r["x"] == 2 for r in rows), "TCP runs once"
    leftovers = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(line.startswith("tca-") and "-host" in line for line in leftovers.splitlines())


def test_rows_name_fabric_operation_and_counts():
    lat = {"op": "read", "pattern": "4KB random", "depth": 1, "gbps": 0.01, "mean_us": 40.0}
    seq = {"op": "write", "pattern": "64MB sequential", "depth": 8, "gbps": 0.1, "mean_us": 9000.0}
    records = [
        {"fabric": "ExpEther", "paths": 2, **lat},
        {"fabric": "ExpEther", "paths": 2, **seq},
        {"fabric": "ExpEther", "paths": 2, "lost": 0, "corrupt": 3, "stopped": None},
    ]
    rows = rows_of(records, 16)
    got = {(r.series, r.unit): r.value for r in rows}
    assert got[("ExpEther read 4KB random QD1", "us")] == 40.0
    assert got[("ExpEther read 4KB random QD1 BW", "GB/s")] == 0.01
    assert got[("ExpEther write 16MB sequential QD8 BW", "GB/s")] == 0.1
    assert got[("ExpEther corrupt blocks", "blocks")] == 3
    assert all(r.x == 2 and r.x_unit == "paths" and r.kind == "measured" for r in rows)
    with pytest.raises(TcaError, match="stopped early"):
        rows_of([{"fabric": "TCP", "paths": 1, "lost": 4, "corrupt": 0, "stopped": "timeout"}], 64)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--paths", "0"], "--paths"),
        (["--loss", "2"], "--loss"),
        (["--loss", "x"], "--loss"),
        (["--rate", "fast"], "--rate"),
        (["--mb", "0"], "--mb"),
    ],
)
def test_bad_options_are_one_line_errors(args, message):
    proc = tca("--fabric", "net", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
