"""tca.peach.cprog: the runner of C benchmark and application programs (build for a fabric, run
on N ranks, read the ``#row`` lines)."""

import shutil
from pathlib import Path

import pytest
from tca import TcaError
from tca.peach import cprog

SOURCE = Path(__file__).parent / "cprog" / "rows.c"
NEEDS = {
    "sim": ("smpicc", "smpirun"),
    "shm-openmpi": ("mpicc.openmpi", "mpirun.openmpi"),
    "shm-mpich": ("mpicc.mpich", "mpirun.mpich"),
}


def test_rows_are_read_in_order_and_other_lines_ignored():
    out = (
        "size time\n"
        '#row {"series": "TCA x", "x": 8, "value": 1.5, "nodes": 4}\n'
        "# comment\n"
        '#row {"series": "MPI x", "x": 8, "value": 3}\n'
    )
    rows = cprog.parse_rows(out)
    assert [r["series"] for r in rows] == ["TCA x", "MPI x"]
    assert rows[0]["nodes"] == 4 and rows[1]["value"] == 3


@pytest.mark.parametrize("bad", ["#row {not json}", "#row [1, 2]", '#row {"series": "TCA", "x": 1}'])
def test_a_malformed_row_is_an_error_naming_its_line(bad):
    with pytest.raises(TcaError, match="line 2"):
        cprog.parse_rows("header\n" + bad)


def test_unknown_fabric_is_an_error():
    with pytest.raises(TcaError, match="unknown fabric"):
        cprog.binary("x", "ib")


@pytest.mark.parametrize("fabric", cprog.FABRICS)
def test_a_program_builds_runs_and_reports_its_rows(fabric):
    missing = [t for t in NEEDS[fabric] if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (make smpi / make mpi), which this machine does not have")
    exe = cprog.build("cprog_rows", [SOURCE], fabric)
    run = cprog.run(exe, 4, fabric, platform="ha-pacs-tca")
    assert [(r["series"], r["x"]) for r in run.rows] == [("MPI barrier", 4)]
    assert run.rows[0]["value"] > 0
    if fabric == "sim":  # simulated time: the same every run
        assert cprog.run(exe, 4, fabric, platform="ha-pacs-tca").rows == run.rows


def test_a_failing_program_is_an_error_with_its_status():
    if shutil.which("mpirun.mpich") is None:
        pytest.skip("needs mpirun.mpich (make mpi), which this machine does not have")
    with pytest.raises(TcaError, match="status"):
        cprog.run(Path("/bin/false"), 1, "shm-mpich")
