"""The RMA layer (examples/c/hapacs/rma.c) and the 8^4 Wilson-Dirac halo exchange through it
(qcd_halo.c, `tca bench qcd-halo`), seed 001 "QUDA Small Model (8^4)".

- On the simulator and under both mpiruns on the shm fabric every ghost matches the face its
  neighbour sent, for every method (TCA RMA, MPI-3 RMA fence and PSCW, MPI P2P), and the
  checksum of all ghosts is the same on every fabric.
- Message sizes follow the seed's formula, 2 x (24 KB / nodes in the dimension).
- The seed's 1.96x over MPI P2P: see test_seed_ratio_at_the_best_grid.
"""

import re
import shutil

import pytest
from tca import TcaError
from tca.peach import cprog
from tca.peach.bench import qcd_halo

PLATFORM = "ha-pacs-tca"
CHECKSUM = re.compile(r"methods agree \(checksum ([0-9a-f]{16})\)")


def need(fabric: str) -> None:
    if fabric == "sim" and (shutil.which("smpicc") is None or shutil.which("smpirun") is None):
        pytest.skip("needs SimGrid SMPI (make smpi), which this machine does not have")
    if fabric.startswith("shm-"):
        mpi = cprog.mpi_of(fabric)
        if shutil.which(f"mpicc.{mpi}") is None or shutil.which(f"mpirun.{mpi}") is None:
            pytest.skip(f"needs mpicc.{mpi} and mpirun.{mpi} (make mpi), which this machine does not have")


def run(fabric: str, px: int, py: int, iterations: int = 20) -> cprog.Run:
    need(fabric)
    exe = cprog.build("qcd_halo", qcd_halo.SOURCES, fabric, qcd_halo.HEADERS)
    return cprog.run(
        exe, px * py, fabric, [str(px), str(py), str(iterations)], PLATFORM if fabric == "sim" else None
    )


def checksum(done: cprog.Run) -> str:
    match = CHECKSUM.search(done.stdout)
    assert match, done.stdout
    return match.group(1)


@pytest.fixture(scope="module")
def sim_grids():
    return {g: run("sim", *g) for g in qcd_halo.DEFAULT_GRIDS}


def test_every_method_verified_and_deterministic_on_the_simulator(sim_grids):
    for (px, py), done in sim_grids.items():
        series = {r["series"] for r in done.rows}
        assert series == {
            "TCA RMA halo",
            "MPI-3 RMA fence halo",
            "MPI-3 RMA PSCW halo",
            "MPI P2P halo",
            "MPI P2P / TCA RMA",
        }
        assert all(r["x"] == px * py and r["grid"] == f"{px}x{py}" for r in done.rows)
    again = run("sim", 2, 2)
    assert again.stdout == sim_grids[(2, 2)].stdout


def test_message_sizes_follow_the_seed_formula(sim_grids):
    # 24 KB / nodes in the dimension, forward and backward; a dimension of one node sends nothing.
    expect = {(1, 2): [12288, 0], (2, 2): [12288, 12288], (2, 4): [12288, 6144], (4, 4): [6144, 6144]}
    for grid, done in sim_grids.items():
        tca = next(r for r in done.rows if r["series"] == "TCA RMA halo")
        assert tca["face_bytes"] == expect[grid], grid


def test_tca_beats_mpi_p2p_at_every_grid(sim_grids):
    for grid, done in sim_grids.items():
        t = {r["series"]: r["value"] for r in done.rows}
        assert t["MPI P2P halo"] / t["TCA RMA halo"] == pytest.approx(t["MPI P2P / TCA RMA"], rel=1e-4)
        assert t["MPI P2P / TCA RMA"] > 1.05, (grid, t)


def test_seed_ratio_at_the_best_grid(sim_grids):
    """Seed 001 reports 1.96x over MPI P2P for QUDA's 8^4 model without naming the grid, and
    for the whole solver (Calc., Allreduce, Comm.). The model's halo exchange alone is closest
    at 2x4 (about 1.3x, two thirds of the seed): the seed's number is not reproduced within the
    15 % of a prediction. This test pins the gap (0.6-0.75 of 1.96 at the best grid, the best
    grid with more than one dimension split being 2x4) so that a model change moving it is
    seen; docs/apps.md discusses why."""
    ratio = {g: next(r["value"] for r in d.rows if r["unit"] == "x") for g, d in sim_grids.items()}
    best = max(ratio, key=ratio.get)
    assert best in {(2, 4), (1, 2)}, ratio
    assert 0.6 * qcd_halo.SEED_RATIO <= ratio[(2, 4)] <= 0.75 * qcd_halo.SEED_RATIO, ratio


@pytest.mark.parametrize("fabric", ["shm-openmpi", "shm-mpich"])
def test_shm_fabric_gives_the_simulators_ghosts(fabric, sim_grids):
    done = run(fabric, 2, 2, iterations=5)
    assert checksum(done) == checksum(sim_grids[(2, 2)])
    assert {r["series"] for r in done.rows} >= {"TCA RMA halo", "MPI-3 RMA PSCW halo", "MPI P2P halo"}


def test_bad_grid_and_methods_are_one_line_errors():
    with pytest.raises(TcaError, match="bad grid"):
        qcd_halo.parse_grids("2by2")
    with pytest.raises(TcaError, match="2..16 nodes"):
        qcd_halo.parse_grids("1x1")
    # 24 KB / 5 is no whole number of 16-byte units: refused before anything runs.
    with pytest.raises(TcaError, match="each one of 1, 2, 3, 4, 6, 8"):
        qcd_halo.parse_grids("5x1")
    with pytest.raises(TcaError, match="grid 2x2 of 4 nodes: platform peach2-testbed-2013 has 2 nodes"):
        qcd_halo.run("peach2-testbed-2013", [(2, 2)])
    need("sim")
    exe = cprog.build("qcd_halo", qcd_halo.SOURCES, "sim", qcd_halo.HEADERS)
    with pytest.raises(TcaError, match="usage: qcd_halo"):
        cprog.run(exe, 2, "sim", ["1", "2", "5", "tca,shmem"], PLATFORM)
    with pytest.raises(TcaError, match="must each be 1, 2, 3, 4, 6 or 8"):
        cprog.run(exe, 5, "sim", ["5", "1", "5"], PLATFORM)
