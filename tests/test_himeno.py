"""The Himeno benchmark on GPU buffers (examples/c/hapacs/himeno.c, `tca bench himeno`,
docs/apps.md): TCA reflect and MPI halo exchange, verified against a serial run.

tests/examples/c-hapacs-himeno*.out hold exact simulator runs (2 x 2 with varied values, 3 x 2
at size XS), and test_hapacs_examples.py runs them again under both mpiruns on the shm fabric
and checks that their "verified" line, gosa included, is the simulator's. Here: the
decompositions' halo sizes, bad arguments, the bench's rows, and seed 001's statements on
Himeno at sizes S, M and L.
"""

import json
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from tca import TcaError
from tca.peach import cprog
from tca.peach.bench import himeno

SIM = ROOT / "target/c/sim/himeno"


def needs_sim():
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        pytest.skip("needs SimGrid SMPI (smpicc, smpirun: make smpi), which this machine does not have")


def sim_rows(ranks: int, *args: str) -> dict[str, dict]:
    needs_sim()
    exe = cprog.build("himeno", himeno.SOURCES, "sim", himeno.HEADERS)
    out = cprog.run(exe, ranks, "sim", list(args), platform="ha-pacs-tca")
    assert "p verified bit for bit" in out.stdout, out.stdout
    return {r["series"]: r for r in out.rows}


def row_bytes(k: int) -> int:
    """Bytes of one padded row along k (4-byte floats, rows padded to 16 bytes)."""
    return (k + 3) // 4 * 4 * 4


@pytest.mark.parametrize(
    "ranks, grid, expected",
    [
        # one rank: nothing to exchange (the chain is empty, reflect is the barrier alone)
        (1, "1x1", 0),
        # 1 x 2 (split along j only): one block-stride i-k face of 31 rows
        (2, "1x2", 31 * row_bytes(65)),
        # 2 x 1: one contiguous j-k face of 31 rows
        (2, "2x1", 31 * row_bytes(65)),
        # 2 x 2: interior 31 = 16 + 15 along i and j; rank 0 (16 x 16) sends two faces and a corner
        (4, "2x2", 16 * row_bytes(65) * 2 + row_bytes(65)),
        # 2 x 4: an inner rank along j (16 x 8) has three neighbours in j and faces and corners
        (8, "2x4", 8 * row_bytes(65) + 2 * 16 * row_bytes(65) + 2 * row_bytes(65)),
    ],
)
def test_every_decomposition_matches_the_serial_run_and_sends_its_faces(ranks, grid, expected):
    rows = sim_rows(ranks, "-s", "XS", "-n", "2", "-g", grid, "-i", "varied")
    assert rows["TCA halo"]["halo_bytes"] == expected
    assert rows["TCA halo"]["gosa"] == rows["MPI halo"]["gosa"] > 0
    if ranks == 1:
        assert rows["TCA halo"]["value"] == pytest.approx(rows["TCA barrier"]["value"], abs=0.02)


@pytest.mark.parametrize(
    "ranks, args, message",
    [
        (4, ["-s", "Q"], "himeno: SIZE is XS, S, M, L, XL or IxJxK"),
        (4, ["-s", "2x9x9"], "himeno: SIZE is XS, S, M, L, XL or IxJxK"),
        (4, ["-g", "3x1"], "himeno: PI x PJ must equal the number of ranks"),
        (4, ["-i", "random"], "himeno: -i takes official or varied"),
        (4, ["-n", "0"], "usage: himeno"),
        (2, ["-s", "3x9x9", "-g", "2x1"], "himeno: more ranks along i or j than interior points"),
    ],
)
def test_bad_arguments_give_one_line_and_status_2(ranks, args, message):
    needs_sim()
    cprog.build("himeno", himeno.SOURCES, "sim", himeno.HEADERS)
    proc = subprocess.run(
        [sys.executable, "-m", "tca", "run", "--fabric", "sim", "--platform", "ha-pacs-tca"]
        + ["-n", str(ranks), str(SIM), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert sum(line.startswith(message) for line in proc.stderr.splitlines()) == 1, proc.stderr


def test_bench_rejects_bad_sizes_and_node_counts(tca):
    for args, fragment in (
        (["--sizes", "Q"], "bad --sizes 'Q'"),
        (["--nodes", "17"], "--nodes 17: platform ha-pacs-tca has 16 nodes"),
        (["--nodes", "four"], "bad --nodes 'four'"),
        (["--iterations", "0"], "--iterations must be at least 1"),
    ):
        proc = tca("bench", "himeno", "--platform", "ha-pacs-tca", *args, check=False)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("tca: error: ") and fragment in proc.stderr, proc.stderr


def test_kernel_cost_comes_from_the_platform():
    assert himeno.kernel_args("ha-pacs-tca") == ["-b", "250", "-l", "6.6"]
    with pytest.raises(TcaError, match="baselines.node.gpu_memory_bandwidth"):
        himeno.kernel_args("peach2-testbed-2013")


def test_bench_json_rows(tca):
    needs_sim()
    proc = tca("bench", "himeno", "--platform", "ha-pacs-tca", "--sizes", "XS", "--nodes", "2,4", "--json")
    rows = json.loads(proc.stdout)
    series = {r["series"] for r in rows}
    for n in (2, 4):
        for s in ("TCA halo", "MPI halo", "compute", "TCA barrier", "halo per rank", "TCA/MPI halo"):
            assert f"{s} ({n} nodes)" in series
    assert {r["x"] for r in rows} == {himeno.points("XS")} == {31 * 31 * 63}
    assert {r["kind"] for r in rows} == {"predicted"}
    by = {r["series"]: r["value"] for r in rows}
    # The kernels are charged: 4 ranks of 16 x 16 x 63 points at 64 B per point and 250 GB/s,
    # two launches of 6.6 us, and the 8-byte copy of the partial residual (8.95 us, docs/cuda.md).
    assert by["compute (4 nodes)"] == pytest.approx(16 * 16 * 63 * 64 / 250e3 + 2 * 6.6 + 8.95, rel=0.01)


def test_shm_fabric_bench_rows_are_measured():
    fabric = "shm-openmpi" if shutil.which("mpicc.openmpi") else "shm-mpich"
    if shutil.which(f"mpicc.{cprog.mpi_of(fabric)}") is None:
        pytest.skip("needs Open MPI or MPICH (make mpi), which this machine does not have")
    rows = himeno.run("ha-pacs-tca", ["XS"], [4], "shm", iterations=3)
    by = {r.series: r for r in rows}
    assert {r.kind for r in rows} == {"measured"}
    assert by["TCA halo"].value > 0 and by["MPI halo"].value > 0
    assert by["halo per rank"].value == 16 * row_bytes(65) * 2 + row_bytes(65)


# ---- seed 001 "XcalableACCの性能評価一例" on simulated HA-PACS/TCA, 4 nodes as 2 x 2 ----


@pytest.fixture(scope="module")
def seed_rows():
    needs_sim()
    rows = himeno.run("ha-pacs-tca", ["S", "M", "L"], [4])
    return {(r.series, r.x): r for r in rows}


def at(rows, series, size):
    return rows[(series, himeno.points(size))]


def test_halo_at_size_l_is_about_520_kb(seed_rows):
    halo = at(seed_rows, "halo per rank", "L")
    # Two faces of 128 rows of 516 floats and one corner row: 530,448 B = 518 KiB. Tolerance 5 %:
    # the seed's "約520KByte" is rounded and does not say whether K is 1000 or 1024.
    assert halo.value == 2 * 128 * row_bytes(513) + row_bytes(513) == 530448
    assert halo.paper == 520e3
    assert halo.value == pytest.approx(halo.paper, rel=0.05)


def test_tca_is_faster_at_s_and_m_and_slower_at_l(seed_rows):
    # Seed 001: at L TCA takes slightly longer than MVAPICH2-GDR (the barrier after the DMA);
    # by inference TCA is ahead at the smaller halos of S and M.
    assert at(seed_rows, "TCA/MPI halo", "S").value < 0.8
    assert at(seed_rows, "TCA/MPI halo", "M").value < 1.0
    assert at(seed_rows, "TCA/MPI halo", "L").value > 1.0
    for size in ("S", "M", "L"):
        barrier = at(seed_rows, "TCA barrier", size).value
        assert 1.0 < barrier < 0.25 * at(seed_rows, "TCA halo", size).value
        # The computation dominates an iteration, as in the benchmark (seed 001: S behaves as M).
        assert at(seed_rows, "compute", size).value > at(seed_rows, "TCA halo", size).value


@pytest.mark.xfail(
    strict=True,
    reason="the model puts TCA 28 % behind MPI at L, not 'slightly': the chain's eight transfers "
    "run one after another at PEACH2's GPU read rate (2.6 GB/s, seed 001), the barrier adds only "
    "11 us (docs/apps.md)",
)
def test_tca_and_mpi_are_about_equal_at_l(seed_rows):
    ratio = at(seed_rows, "TCA/MPI halo", "L")
    assert ratio.value == pytest.approx(ratio.paper, rel=0.15)
