"""The CG solver (examples/c/hapacs/cg.c, `tca bench cg`), seed 001 "CG法の性能".

- The generated matrix has nd6k's shape exactly (18,000 rows, 6,897,316 non-zeros).
- Small instances on the simulator (1, 2, 4 nodes) and under both mpiruns on the shm fabric:
  both variants' solutions equal the serial run's within rounding (the program checks and
  fails otherwise), and the simulator prints the same bytes twice.
- Rank 0's breakdown adds up; TCA's halo and reduction beat MPI's on the simulator.
- `--compute declared` charges the documented bytes at the K20X bandwidth.
"""

import re
import shutil

import pytest
from tca import TcaError
from tca.peach import cprog
from tca.peach.bench import cg

PLATFORM = "ha-pacs-tca"
SMALL = ["2000", "192000", "100"]  # rows, non-zeros, band: 4 ranks own 500 rows >= band
K20X_BANDWIDTH = 250e9  # cg.c
VERIFIED = "both variants verified against a serial run"


def need(fabric: str) -> None:
    if fabric == "sim" and (shutil.which("smpicc") is None or shutil.which("smpirun") is None):
        pytest.skip("needs SimGrid SMPI (make smpi), which this machine does not have")
    if fabric.startswith("shm-"):
        mpi = cprog.mpi_of(fabric)
        if shutil.which(f"mpicc.{mpi}") is None or shutil.which(f"mpirun.{mpi}") is None:
            pytest.skip(f"needs mpicc.{mpi} and mpirun.{mpi} (make mpi), which this machine does not have")


def run(fabric: str, nodes: int, args: list[str], sim_args: list[str] = ()) -> cprog.Run:
    need(fabric)
    exe = cprog.build("cg", cg.SOURCES, fabric, cg.HEADERS)
    return cprog.run(exe, nodes, fabric, args, PLATFORM if fabric == "sim" else None, list(sim_args))


def values(done: cprog.Run) -> dict[str, float]:
    return {r["series"]: r["value"] for r in done.rows}


def test_matrix_has_nd6k_shape():
    done = run("sim", 1, ["1"])
    assert "# CG, 18000 rows, 6897316 non-zeros, band 400" in done.stdout
    assert "# rank 0: 18000 rows, 6897316 non-zeros" in done.stdout
    assert VERIFIED in done.stdout


@pytest.mark.parametrize("nodes", [1, 2, 4])
def test_small_instances_verified_on_the_simulator(nodes):
    done = run("sim", nodes, ["30", *SMALL])
    assert VERIFIED in done.stdout
    v = values(done)
    for variant in ("TCA", "MPI"):
        parts = sum(v[f"{variant} CG {p}"] for p in cg.PARTS)
        assert v[f"{variant} CG"] == pytest.approx(parts, rel=1e-6)
    if nodes > 1:
        assert v["TCA CG halo"] < v["MPI CG halo"]
        assert v["TCA CG reduction"] < v["MPI CG reduction"]
    # rank 0's rows in pairs: 2000 / nodes
    assert f"# rank 0: {2000 // nodes} rows" in done.stdout


def test_simulator_runs_are_identical():
    assert run("sim", 2, ["10", *SMALL]).stdout == run("sim", 2, ["10", *SMALL]).stdout


def test_declared_compute_charges_the_documented_bytes():
    iters, nodes = 10, 2
    done = run("sim", nodes, [str(iters), *SMALL], ["--compute", "declared"])
    m = re.search(r"# rank 0: (\d+) rows, (\d+) non-zeros", done.stdout)
    rows, nnz = int(m.group(1)), int(m.group(2))
    # Per iteration: 12 B per non-zero and q (8 B/row) in the product; 16 + 56 + 24 B/row of vectors.
    expect = iters * (12 * nnz + (8 + 16 + 56 + 24) * rows) / K20X_BANDWIDTH
    got = values(done)["TCA CG computation"]
    assert got == pytest.approx(expect, rel=0.02), (got, expect)
    assert values(run("sim", nodes, [str(iters), *SMALL]))["TCA CG computation"] < 0.01 * expect


@pytest.mark.parametrize("fabric", ["shm-openmpi", "shm-mpich"])
def test_shm_fabric_verifies(fabric):
    done = run(fabric, 2, ["20", *SMALL])
    assert VERIFIED in done.stdout
    assert {r["series"] for r in done.rows} >= {"TCA CG", "MPI CG", "TCA CG halo"}


def test_bad_shapes_are_one_line_errors():
    need("sim")
    exe = cprog.build("cg", cg.SOURCES, "sim", cg.HEADERS)
    with pytest.raises(TcaError, match="even number of rows"):
        cprog.run(exe, 1, "sim", ["5", "1999", "5000", "100"], PLATFORM)
    with pytest.raises(TcaError, match="at least BAND rows"):
        cprog.run(exe, 4, "sim", ["5", "600", "20000", "200"], PLATFORM)
    # Rank 0 owns 4 rows, the last ranks 2: the last ones decide (12 rows on 5 ranks, BAND 4).
    with pytest.raises(TcaError, match="at least BAND rows"):
        cprog.run(exe, 5, "sim", ["5", "12", "32", "4"], PLATFORM)
    with pytest.raises(TcaError, match="outside 1..16"):
        cg.run(PLATFORM, [17])
    with pytest.raises(TcaError, match="--nodes 4: platform peach2-testbed-2013 has 2 nodes"):
        cg.run("peach2-testbed-2013", [2, 4])


def test_bench_rows_and_plot(tmp_path):
    need("sim")
    rows = cg.run(PLATFORM, [1, 2], iterations=5, shape=(2000, 192000, 100))
    assert {r.series for r in rows} >= {"TCA CG", "MPI CG", "TCA CG halo", "MPI CG reduction"}
    assert {r.x for r in rows} == {1, 2}
    cg.plot_breakdown(rows, tmp_path / "cg.png", "cg")
    assert (tmp_path / "cg.png").stat().st_size > 1000
