"""Victream on GPUs behind ExpEther against local GPUs (seed 002 §6.3, Table 6.3), end to end
through ``tca victream bench --attach expether``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tca.victream.apps.expether import TABLE_6_3

NAMES = {"logreg": "LR", "sort": "Sort", "blur": "Blur", "matmul": "MM"}

# Cells the model misses by more than 15 %, with the numbers and the reason.
MISSES = {
    ("sort", 2): "model 0.80 vs 0.68: from 2 GPUs the shared RAM disk (Table 6.1 file read 2482 MB/s) bounds "
    "sort locally and behind ExpEther alike, so the ratio rises toward 1; the seed's stays at 0.67-0.71",
    ("matmul", 3): "model 0.53 vs 0.67: at the K20's peak 3.52 Tflop/s the product's compute no longer hides "
    "the 2.9 GB/s per GPU left of the shared link; the seed's fall is slower",
    ("matmul", 4): "model 0.38 vs 0.60: as for 3 GPUs, with 2.1 GB/s per GPU",
}


@pytest.fixture(scope="module")
def ratios(tmp_path_factory):
    png = tmp_path_factory.mktemp("plot") / "t63.png"
    r = subprocess.run(
        [sys.executable, "-m", "tca", "victream", "bench", "--attach", "expether", "--workload", "all",
         "--devices", "1,2,3,4", "--json", "--plot", str(png)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert png.stat().st_size > 0
    rows = json.loads(r.stdout)
    assert len(rows) == 16
    for row in rows:
        assert row["unit"] == "x" and row["source"] == "seed 002 §6.3, Table 6.3"
        assert row["kind"] == ("calibrated" if row["series"].startswith("LR") else "predicted")
    return {(row["series"], int(row["x"])): (row["value"], row["paper"]) for row in rows}


CELLS = [
    pytest.param(
        w, n, marks=pytest.mark.xfail(strict=True, reason=MISSES[(w, n)]) if (w, n) in MISSES else ()
    )
    for w in TABLE_6_3
    for n in (1, 2, 3, 4)
]


@pytest.mark.parametrize("workload,gpus", CELLS)
def test_ratio_within_15_percent_of_table_6_3(ratios, workload, gpus):
    value, paper = ratios[(f"{NAMES[workload]} ExpEther/local", gpus)]
    assert paper == TABLE_6_3[workload][gpus - 1]
    print(f"{workload} {gpus} GPUs: model {value:.3f}, seed {paper}")
    assert abs(value / paper - 1) <= 0.15


@pytest.mark.parametrize("workload", ["logreg", "matmul"])
def test_ratio_falls_with_gpus_sharing_the_link(ratios, workload):
    r = [ratios[(f"{NAMES[workload]} ExpEther/local", n)][0] for n in (1, 2, 3, 4)]
    # from 2 GPUs on the shared 80 Gb/s is the bottleneck (seed: 0.57 -> 0.42 and 0.81 -> 0.60)
    assert r[1] > r[2] > r[3]
    assert r[3] < 0.85 * r[0]


def test_expether_is_never_faster_than_local_for_io_bound_workloads(ratios):
    for w in ("logreg", "sort", "matmul"):
        for n in (1, 2, 3, 4):
            assert ratios[(f"{NAMES[w]} ExpEther/local", n)][0] < 1.0


def test_another_platform_is_not_compared_with_table_6_3():
    # Table 6.3 is of ExpEther with 2 x 40GbE; on the 10GbE prototype the rows were labelled
    # calibrated against it at a ratio of 0.62 (1 GPU)
    r = subprocess.run(
        [sys.executable, "-m", "tca", "victream", "bench", "--attach", "expether", "--platform",
         "expether-prototype", "--workload", "logreg", "--devices", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "not compared: Table 6.3 is of expether-40gbe" in r.stdout.splitlines()[0]
    assert "calibrated" not in r.stdout.split("\n\n", 1)[1]
    rows = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tca", "victream", "bench", "--attach", "expether", "--platform",
             "expether-prototype", "--workload", "logreg", "--devices", "1", "--json"],
            capture_output=True, text=True, timeout=300, check=True,
        ).stdout
    )  # fmt: skip
    assert [(row["paper"], row["source"], row["kind"]) for row in rows] == [(None, None, "predicted")]
