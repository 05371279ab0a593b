"""The collective library (tcaColl*) in a C program on the simulator (``tca cc``, ``tca run
--fabric sim``): every operator on every type checked against a serial reference inside SimGrid
SMPI, and the 8-byte allreduce of TCA beside MVAPICH2's in the same run (seed 001: about half)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tca.peach import cc

ROOT = Path(__file__).resolve().parents[2]
TCA = [sys.executable, "-m", "tca"]

pytestmark = pytest.mark.skipif(
    shutil.which("smpicc") is None or not all((cc.LIB / f"lib{n}.so").exists() for n in cc.LIBRARIES),
    reason="SimGrid SMPI (make smpi) or libtca/libtcacudart/libtcasmpi (make capi-smpi) missing",
)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("coll") / "collectives"
    source = ROOT / "tests" / "shm" / "collectives.c"
    subprocess.run(
        [*TCA, "cc", "-O2", "-Wall", "-Werror", "-DTCA_COLL_MPI", str(source), "-o", str(exe)], check=True
    )
    return exe


@pytest.mark.parametrize("ranks", [3, 16])
def test_collectives_on_the_simulator(program, ranks):
    cmd = [*TCA, "run", "-n", str(ranks), "--fabric", "sim", "--platform", "ha-pacs-tca", str(program)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"collectives: ok ({ranks} ranks)" in out.stdout
    rows = {
        r["series"]: r["value"]
        for r in (json.loads(line[5:]) for line in out.stdout.splitlines() if line.startswith("#row "))
    }
    # Seed 001: about half of MVAPICH2 (measured: 0.30 of it at 3 ranks, 0.38 at 16).
    ratio = rows["TCA allreduce"] / rows["MPI allreduce"]
    assert 0.2 < ratio < 0.6, rows
