"""``tca run --fabric sim --stats-json FILE.json``: the statistics line on stderr, and a JSON
object with the totals and per link direction the TLPs, the TLPs that collided with another
stream there (stalled) and the busy time (crates/tca/smpi, TCA_SIM_STATS)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ALLGATHER = ROOT / "target/c/sim/allgather"

pytestmark = pytest.mark.skipif(
    shutil.which("smpirun") is None or not ALLGATHER.exists(),
    reason="SimGrid SMPI (make smpi) or target/c/sim/allgather (make examples) missing",
)


def allgather(ranks: int, *options: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "tca",
        "run",
        "-n",
        str(ranks),
        "--fabric",
        "sim",
        "--platform",
        "ha-pacs-tca",
    ]
    cmd += [*options, str(ALLGATHER), "64K", "2"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_stats_json_counts_collisions_per_link(tmp_path):
    path = tmp_path / "stats.json"
    out = allgather(8, "--stats-json", str(path))
    assert out.returncode == 0, out.stderr
    assert "tca: simulated TCA fabric: 8 ranks, virtual time " in out.stderr
    stats = json.loads(path.read_text())
    assert stats["ranks"] == 8 and stats["hardware_events"] > 0
    links = stats["links"]
    assert all(set(link) == {"link", "stalled_tlps", "busy_us", "tlps"} for link in links)
    assert stats["tlps"] == sum(link["tlps"] for link in links)
    assert stats["stalled_tlps"] == sum(link["stalled_tlps"] for link in links)
    by_name = {link["link"]: link for link in links}
    # Recursive doubling on one ring of 8: at distance 4, node 0's and node 1's blocks cross
    # the same cables eastward at the same time.
    east = by_name["node2 E port -> node3"]
    assert east["tlps"] > 0 and east["stalled_tlps"] > 0 and east["busy_us"] > 0, east
    # The other ring carries nothing.
    assert by_name["node9 E port -> node10"] == {
        "link": "node9 E port -> node10",
        "stalled_tlps": 0,
        "busy_us": 0.0,
        "tlps": 0,
    }
    # Same counts on a second run (the simulation is deterministic; wall time is not).
    again = tmp_path / "again.json"
    assert allgather(8, "--stats-json", str(again)).returncode == 0
    assert json.loads(again.read_text())["links"] == links


def test_stats_json_needs_a_json_file_name(tmp_path):
    out = allgather(2, "--stats-json", str(tmp_path / "stats.txt"))
    assert out.returncode == 2
    assert "--stats-json" in out.stderr and "unsupported extension" in out.stderr
    assert not (tmp_path / "stats.txt").exists()


def test_files_of_an_earlier_run_never_pass_for_this_one(tmp_path):
    # A run whose ranks never join the TCA job writes no statistics: the old file goes, and the
    # run says so.
    source, exe = tmp_path / "mpi_only.c", tmp_path / "mpi_only"
    source.write_text(
        "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n"
    )
    subprocess.run([sys.executable, "-m", "tca", "cc", str(source), "-o", str(exe)], check=True, cwd=ROOT)
    stats = tmp_path / "stats.json"
    stats.write_text('{"from": "an earlier run"}')
    cmd = [sys.executable, "-m", "tca", "run", "-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca"]
    out = subprocess.run(
        [*cmd, "--stats-json", str(stats), str(exe)], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert not stats.exists()
    assert f"tca run: {stats} was not written: no rank joined the TCA job" in out.stderr


def test_a_temporary_directory_with_a_space_is_no_obstacle(tmp_path):
    spaced = tmp_path / "t d"
    spaced.mkdir()
    env = dict(os.environ, TMPDIR=str(spaced))
    cmd = [sys.executable, "-m", "tca", "run", "-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca"]
    out = subprocess.run(
        [*cmd, str(ALLGATHER), "64K", "1"], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert out.returncode == 0, out.stderr
    assert "all 2 blocks of 13 sizes verified" in out.stdout
    assert not list(spaced.iterdir())
