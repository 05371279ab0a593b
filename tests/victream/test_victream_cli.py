"""``tca victream bench`` and ``tca victream optimal`` end to end (small sizes)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import pytest
from tca.victream.apps.optimal import CASES, search


def _tca(*args):
    r = subprocess.run([sys.executable, "-m", "tca", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_bench_json_rows(tmp_path):
    png = tmp_path / "t.png"
    out = _tca(
        "victream",
        "bench",
        "--workload",
        "logreg",
        "--devices",
        "3",
        "--mode",
        "virtual",
        "--device-memory",
        "2MiB",
        "--data",
        "16MiB",
        "--bus-bandwidth",
        "4GB/s",
        "--json",
        "--plot",
        str(png),
        "--check",
    )
    rows = json.loads(out)
    keys = {"benchmark", "platform", "series", "x", "x_unit", "value", "unit", "paper", "source", "kind"}
    assert all(set(r) == keys for r in rows)
    for s in ("fifo", "ptask", "locality", "victream"):
        totals = [r for r in rows if r["series"] == s]
        assert {r["unit"] for r in totals} == {"s", "B"} and len(totals) == 2
        assert {r["series"] for r in rows if r["series"].startswith(s + " gpu")} == {
            f"{s} gpu{i}" for i in range(3)
        }
    assert all(r["kind"] == "measured" for r in rows)
    swap = {r["series"]: r["value"] for r in rows if r["unit"] == "B" and " " not in r["series"]}
    assert swap["victream"] < swap["fifo"] and swap["victream"] < swap["ptask"]
    assert png.stat().st_size > 10_000


SIM = ("--mode", "sim", "--devices", "2", "--data", "64MiB", "--device-memory", "16MiB", "--json")


def _totals(rows, unit):
    """Each scheduler's total (series without a device name) in ``unit``."""
    return {r["series"]: r["value"] for r in rows if " " not in r["series"] and r["unit"] == unit}


@pytest.mark.parametrize("workload", ["sort", "blur", "matmul", "pansharpen"])
def test_bench_sim_every_workload(workload):
    """Every scheduler gets a finite positive time and swap volume, per-device rows that add up,
    and the order the seed reports (§6.1.1-6.1.2: Victream swaps less than FIFO and PTask on every
    workload, and is faster on all but the compute-bound matrix multiplication)."""
    rows = json.loads(_tca("victream", "bench", "--workload", workload, *SIM))
    assert all(r["kind"] == "predicted" for r in rows)
    time, swap = _totals(rows, "s"), _totals(rows, "B")
    assert set(time) == set(swap) == {"fifo", "ptask", "locality", "victream"}
    for s in time:
        assert math.isfinite(time[s]) and time[s] > 0 and swap[s] > 0
        per_device = [
            r["value"] for r in rows if r["series"].startswith(s + " gpu") and r["unit"] == "B"
        ]  # swap-in and swap-out of gpu0 and gpu1
        assert len(per_device) == 4 and sum(per_device) == pytest.approx(swap[s])
        util = [r["value"] for r in rows if r["series"].startswith(s + " gpu") and r["unit"] == "%"]
        assert len(util) == 2 and all(0 < u <= 100 for u in util)
    assert swap["victream"] < swap["fifo"] and swap["victream"] < swap["ptask"]
    if workload != "matmul":
        assert time["victream"] < time["fifo"] and time["victream"] < time["ptask"]


def test_a_lineage_thousands_deep_expands():
    # The analyzer recurses once per level of lineage: 200 iterations of blur ended in a
    # RecursionError traceback.
    args = ("victream", "bench", "--workload", "blur", "--iterations", "2000", "--scheduler", "victream")
    rows = json.loads(_tca(*args, "--mode", "sim", "--data", "16MiB", "--json"))
    assert _totals(rows, "s")["victream"] > 0


def test_bench_sim_is_deterministic():
    args = ("victream", "bench", "--workload", "blur", *SIM)
    assert _tca(*args) == _tca(*args)


def _table_line(out: str, scheduler: str) -> list[float]:
    line = next(ln for ln in out.splitlines() if ln.split()[:1] == [scheduler])
    return [float(v) for v in line.split()[1:]]


def test_bench_table_virtual():
    """The table's numbers agree with each other: swap = swap-in + swap-out, and the comparison
    line is computed from the two rows."""
    out = _tca(
        "victream",
        "bench",
        "--workload",
        "blur",
        "--devices",
        "2",
        "--device-memory",
        "1MiB",
        "--data",
        "4MiB",
        "--scheduler",
        "fifo,victream",
        "--check",
    )
    rows = {s: _table_line(out, s) for s in ("fifo", "victream")}
    for time_s, swap_in, swap_out, swap, util in rows.values():
        assert time_s > 0 and swap_in > 0 and 0 < util <= 100
        assert swap == pytest.approx(swap_in + swap_out, abs=0.11)
    m = re.search(r"victream vs fifo\s*: ([0-9.]+)x speed, (-?[0-9]+) % less swap I/O", out)
    assert m, out
    assert float(m.group(1)) == pytest.approx(rows["fifo"][0] / rows["victream"][0], abs=0.011)
    less = 100 * (1 - rows["victream"][3] / rows["fifo"][3])
    assert int(m.group(2)) == pytest.approx(less, abs=1)
    assert less > 20  # the local lists keep the blur's halo partitions on the device


def test_optimal_search_logreg_matches_the_seed():
    """seed 002 §6.2, Fig. 6.9: Victream's schedule is optimal for logistic regression (Table 6.2:
    1 GPU, 3 partitions, 2 iterations). The search must also find a worse schedule."""
    r = search(CASES["logreg"])
    print(
        f"logreg: victream {r.victream_s:.4f} s, best {r.best_s:.4f} s, worst {r.worst_s:.4f} s, "
        f"{r.states} states"
    )
    assert r.best_s <= r.victream_s <= r.worst_s
    assert r.gap_to_best == pytest.approx(0.0, abs=1e-9)
    assert r.worst_s > 1.2 * r.best_s


@pytest.mark.parametrize("case", ["blur4", "blur5", "matmul"])
def test_optimal_search_within_ten_percent(case):
    """seed 002 §6.2: on the four microbenchmarks Victream stays within 10 % of the optimum
    (Fig. 6.9: blur(4) 0 %, blur(5) +2 %, matrix multiplication +10 %)."""
    r = search(CASES[case])
    print(
        f"{case}: victream {r.victream_s:.4f} s, best {r.best_s:.4f} s, worst {r.worst_s:.4f} s, "
        f"gap {100 * r.gap_to_best:.1f} %"
    )
    assert r.best_s <= r.victream_s <= r.worst_s
    assert r.gap_to_best <= 0.10
    assert r.subtasks == CASES[case].partitions * 2


def test_optimal_cli_json():
    rows = json.loads(_tca("victream", "optimal", "--workload", "logreg", "--json"))
    gap = [r for r in rows if r["series"] == "gap to best"][0]
    assert gap["paper"] == 0.0 and gap["source"] == "seed 002 §6.2, Fig. 6.9"
