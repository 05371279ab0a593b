"""``tca bench collective``: the TCA collectives against MPI's in one run of
examples/c/hapacs/coll_bench.c, on the simulator (SMPI + MVAPICH2 collectives + the PEACH2 model
on one clock) and on the shm fabric (Open MPI, MPICH).

Seed 001 reproductions (/work/shared/systems/tca-apps.md §4), on simulated HA-PACS/TCA (16 nodes,
two rings of 8 joined through S):

- slide "Allreduceの性能": an 8-byte Allreduce, mean of 50 runs, takes about half of MPI's
  time; "about half" is checked as TCA/MPI within collective_report.ALLREDUCE_TOLERANCE;
- slide "Allgatherの性能": the TCA advantage over MVAPICH2-GDR (MPI/TCA) shrinks as the node
  count grows from 2 to 16, and the 16-node run shows TLPs stalled on PEACH2 links.
"""

import ctypes
import json
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT
from tca.common.report import Row
from tca.peach.bench import collective, collective_report
from test_cli_errors import assert_one_line_error

LIBTCA = ROOT / "target/release/libtca.so"


def has_collectives() -> bool:
    return LIBTCA.exists() and hasattr(ctypes.CDLL(str(LIBTCA)), "tcaCollAllreduce")


def needs_sim():
    missing = [t for t in ("smpicc", "smpirun") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (SimGrid SMPI: make smpi), which this machine does not have")


def needs_collectives():
    if not has_collectives():
        pytest.skip(f"{LIBTCA} has no collective library (tcaColl*): run `make capi`")


def bench_json(*args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "tca", "bench", "collective", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def values(rows: list[dict], series: str) -> dict[float, float]:
    found = {r["x"]: r["value"] for r in rows if r["series"] == series}
    assert found, f"no rows of '{series}' in {sorted({r['series'] for r in rows})}"
    return found


# --- bad input: one line, status 2, before anything runs -------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--op", "alltoall", "--platform", "ha-pacs-tca"], "unknown --op 'alltoall'"),
        (["--op", "allreduce", "--platform", "ha-pacs-tca", "--nodes", "1"], "--nodes 1"),
        (
            ["--op", "allreduce", "--platform", "ha-pacs-tca", "--nodes", "2,32"],
            "--nodes 32: too many (platform ha-pacs-tca has 16 nodes)",
        ),
        (["--op", "allreduce", "--platform", "ha-pacs-tca", "--nodes", "2,x"], "bad --nodes '2,x'"),
        (["--op", "allreduce", "--platform", "ha-pacs-tca", "--sizes", "12"], "multiples of 8 B"),
        (["--op", "barrier", "--platform", "ha-pacs-tca", "--sizes", "8"], "does not apply to the barrier"),
        (["--op", "bcast", "--platform", "ha-pacs-tca", "--memory", "disk"], "unknown --memory 'disk'"),
        (["--op", "bcast"], "--platform is required"),
        (["--op", "bcast", "--fabric", "shm", "--platform", "ha-pacs-tca"], "applies to --fabric sim only"),
        (["--op", "bcast", "--platform", "ha-pacs-tca", "--trace", "/tmp/t.json"], "one node count"),
        (["--op", "bcast", "--platform", "ha-pacs-tca", "--iterations", "0"], "--iterations 0"),
        (["--op", "bcast", "--platform", "ha-pacs-tca", "--plot", "/nonexistent/p.png"], "does not exist"),
        (["--op", "bcast", "--platform", "peach9"], "unknown platform 'peach9'"),
    ],
)
def test_bad_input_is_one_line(tca, args, message):
    assert_one_line_error(tca("bench", "collective", *args, check=False), message)


# --- the report, on rows made up for the purpose ----------------------------------------------


def made_up(op: str, ratios: dict[int, float]) -> list[Row]:
    """The rows of runs where TCA takes ratio x MPI's 10 us at 8 B on each node count."""
    found = []
    for n, ratio in ratios.items():
        c_rows = [
            {"series": f"TCA {op}", "x": 8, "x_unit": "B", "value": 10 * ratio, "max": 11 * ratio},
            {"series": f"MPI (MVAPICH2) {op}", "x": 8, "x_unit": "B", "value": 10.0, "max": 11.0},
        ]
        found += collective.rows_of(c_rows, n, "ha-pacs-tca", "predicted", keep_tca=True)
    return found


def test_rows_of_a_run_carry_means_maxima_and_the_ratio():
    rows = made_up("allreduce", {4: 0.5})
    assert [(r.series, r.value, r.unit) for r in rows] == [
        ("TCA allreduce (4 nodes)", 5.0, "us"),
        ("TCA allreduce max (4 nodes)", 5.5, "us"),
        ("MPI (MVAPICH2) allreduce (4 nodes)", 10.0, "us"),
        ("MPI (MVAPICH2) allreduce max (4 nodes)", 11.0, "us"),
        ("TCA/MPI (MVAPICH2) allreduce (4 nodes)", 0.5, "x"),
    ]


def test_allreduce_summary_carries_the_seed_half_and_judges_the_tolerance():
    rows = collective_report.summary(made_up("allreduce", {2: 0.5, 16: 0.9}), "allreduce")
    assert [(r.x, r.value, r.paper) for r in rows] == [(2, 0.5, 0.5), (16, 0.9, 0.5)]
    text = collective_report.claims(rows, "allreduce")
    assert "on 2 nodes = 0.50 (about half)" in text
    assert "on 16 nodes = 0.90 (outside 0.35-0.65)" in text


@pytest.mark.parametrize(
    ("ratios", "verdict"), [({2: 0.25, 4: 0.4, 16: 0.8}, "(shrinks)"), ({2: 0.25, 4: 0.2}, "does not shrink")]
)
def test_allgather_claim_reads_the_advantage_against_nodes(ratios, verdict):
    rows = collective_report.summary(made_up("allgather", ratios), "allgather")
    assert {r.series for r in rows} == {"MPI/TCA (MVAPICH2) allgather, 8 B"}
    assert [r.value for r in sorted(rows, key=lambda r: r.x)] == [1 / v for v in ratios.values()]
    assert verdict in collective_report.claims(rows, "allgather")


def test_stall_counters_are_reported_per_link_most_first():
    stalls = collective.Stalls(
        16,
        1000,
        30,
        [
            {"link": "node0 E port -> node1", "stalled_tlps": 10, "busy_us": 2.0, "tlps": 100},
            {"link": "node4 S port -> node12", "stalled_tlps": 20, "busy_us": 3.0, "tlps": 200},
            {"link": "node1 E port -> node2", "stalled_tlps": 0, "busy_us": 1.0, "tlps": 50},
        ],
    )
    text = collective_report.stalls_text([stalls])
    assert "16 nodes: 30 of 1000 TLPs stalled on 2 link(s)" in text
    assert text.index("node4 S port") < text.index("node0 E port") and "node1 E port" not in text
    row = collective_report.stall_rows(collective.Result([], [stalls]), "ha-pacs-tca")[0]
    assert (row.x, row.value, row.unit) == (16, 3.0, "%")


# --- runs ---------------------------------------------------------------------------------------


def test_mpi_half_on_the_simulator_is_deterministic_and_grows_with_nodes():
    """MVAPICH2's allreduce through SMPI: one virtual clock, so two runs give the same rows; on a
    non-blocking InfiniBand switch recursive doubling takes one more step per doubling."""
    needs_sim()
    args = ("--op", "allreduce", "--platform", "ha-pacs-tca", "--nodes", "2,4,8", "--sizes", "8,1K")
    args += ("--iterations", "5", "--mpi-only")
    rows = bench_json(*args)
    assert rows == bench_json(*args)
    t = {n: values(rows, f"MPI (MVAPICH2) allreduce ({n} nodes)") for n in (2, 4, 8)}
    for n in (2, 4, 8):
        assert 0.5 < t[n][8] < t[n][1024], t[n]
    assert t[2][8] < t[4][8] < t[8][8]
    assert all(r["kind"] == "predicted" and r["benchmark"] == "collective" for r in rows)


@pytest.mark.parametrize("op", collective.OPS)
def test_every_operation_verifies_on_the_simulator(op):
    """TCA and MPI both checked against the local reference inside the program (a wrong byte
    fails the run); GPU buffers, 3 nodes (not a power of two)."""
    needs_sim()
    needs_collectives()
    sizes = () if op == "barrier" else ("--sizes", "8,4K")
    rows = bench_json(
        "--op",
        op,
        "--platform",
        "ha-pacs-tca",
        "--nodes",
        "3",
        *sizes,
        "--memory",
        "gpu",
        "--iterations",
        "3",
    )
    suffix = "" if op == "barrier" else " (3 nodes)"
    tca = values(rows, f"TCA {op}{suffix}")
    mpi = values(rows, f"MPI (MVAPICH2-GDR) {op}{suffix}")
    assert tca.keys() == mpi.keys() and all(v > 0 for v in [*tca.values(), *mpi.values()])


def test_seed001_allreduce_8_bytes_takes_about_half_of_mpi():
    """Seed 001, slide "Allreduceの性能": 8 B, mean of 50 runs, about half of MPI's time (host
    buffers). It holds from 4 nodes on; on 2 nodes both are one exchange, a PIO store (0.92 us)
    against one MVAPICH2 message (1.27 us): TCA/MPI 0.73."""
    needs_sim()
    needs_collectives()
    rows = bench_json("--op", "allreduce", "--platform", "ha-pacs-tca", "--nodes", "2,4,8,16", "--sizes", "8")
    ratio = values(rows, "TCA/MPI (MVAPICH2) allreduce, 8 B")
    lo, hi = collective_report.ALLREDUCE_TOLERANCE
    assert all(lo <= ratio[n] <= hi for n in (4, 8, 16)), ratio
    assert ratio[2] < 1, ratio
    assert all(r["paper"] == 0.5 for r in rows if r["series"] == "TCA/MPI (MVAPICH2) allreduce, 8 B")


def gpu_allreduce_ratio() -> dict[float, float]:
    rows = bench_json(
        "--op", "allreduce", "--platform", "ha-pacs-tca", "--nodes", "2,4,8,16", "--sizes", "8",
        "--memory", "gpu",
    )  # fmt: skip
    return values(rows, "TCA/MPI (MVAPICH2-GDR) allreduce, 8 B")


def test_gpu_allreduce_8_bytes_beats_mvapich2_gdr():
    """8-byte allreduce on GPU buffers: each rank's block goes by DMA straight from its GPU into
    the peers' boxes in host memory and the result into the GPU by PIO (no cudaMemcpy):
    2.80, 3.45, 4.02, 4.55 us against MVAPICH2-GDR's 3.57, 4.83, 6.08, 7.34 us on 2, 4, 8, 16
    nodes. Below MVAPICH2-GDR everywhere, the ratio falls with the node count and reaches seed
    001's "about half" on 16 nodes."""
    needs_sim()
    needs_collectives()
    ratio = gpu_allreduce_ratio()
    assert all(ratio[n] < 0.85 for n in (2, 4, 8, 16)), ratio
    assert ratio[2] > ratio[4] > ratio[8] > ratio[16], ratio
    lo, hi = collective_report.ALLREDUCE_TOLERANCE
    assert lo <= ratio[16] <= hi, ratio


@pytest.mark.xfail(
    strict=True,
    reason="on GPU buffers the TCA allreduce pays a DMA from the GPU (1.9 us on 2 nodes) and a PIO "
    "store back into it (0.9 us) where host buffers need one PIO store: TCA/MPI 0.78, 0.71, 0.66, "
    "0.62 against MVAPICH2-GDR on 2, 4, 8, 16 nodes, about half only on 16",
)
def test_seed001_allreduce_on_gpu_buffers_takes_about_half_of_mvapich2_gdr():
    """Seed 001, slide "Allreduceの性能", on GPU buffers: about half from 4 nodes on, as on host
    buffers."""
    needs_sim()
    needs_collectives()
    ratio = gpu_allreduce_ratio()
    lo, hi = collective_report.ALLREDUCE_TOLERANCE
    assert all(lo <= ratio[n] <= hi for n in (4, 8, 16)), ratio


def allgather_gain(memory: str, size: str) -> tuple[dict[float, float], list[dict]]:
    label = "MVAPICH2-GDR" if memory == "gpu" else "MVAPICH2"
    rows = bench_json(
        "--op", "allgather", "--platform", "ha-pacs-tca", "--nodes", "2,4,8,16", "--sizes", size,
        "--memory", memory, "--iterations", "10",
    )  # fmt: skip
    return values(rows, f"MPI/TCA ({label}) allgather, {collective_report.size_text(int(size))}"), rows


def test_seed001_allgather_advantage_shrinks_as_nodes_grow(monkeypatch):
    """Seed 001, slide "Allgatherの性能": the TCA advantage over MPI narrows as p grows 2 -> 16.
    Host buffers, 4 KiB blocks: the DMA allgather's transfers share the ring links (two rings
    of 8 joined by S on 16 nodes), MVAPICH2's go through a non-blocking switch."""
    needs_sim()
    needs_collectives()
    gain, _ = allgather_gain("host", "4096")
    assert gain[2] > 1 and gain[2] > gain[4] > gain[8] > gain[16], gain
    # The collisions show TLP by TLP: a train (the default) takes a shared link one read
    # request at a time. Moving TLPs one by one changes the times by less than 1 %.
    monkeypatch.setenv("TCA_SIM_TLPS", "exact")
    exact_gain, rows = allgather_gain("host", "4096")
    assert exact_gain == pytest.approx(gain, rel=0.01), (exact_gain, gain)
    stalled = values(rows, "TCA stalled TLPs (% of TLPs)")
    assert stalled[2] == 0 and stalled[2] < stalled[4] < stalled[8] < stalled[16], stalled


@pytest.mark.xfail(
    strict=True,
    reason="with GPU buffers (the slide compares MVAPICH2-GDR) the TCA allgather of 8 B reads each "
    "block from the GPU by DMA and stores the result by PIO: 2.8-4.6 us against MVAPICH2-GDR's "
    "3.6-7.4 us, MPI/TCA 1.27, 1.40, 1.52, 1.62 on 2, 4, 8, 16 nodes: faster, but the advantage "
    "grows with the node count (one DMA latency plus a PIO store, against MVAPICH2-GDR's rounds)",
)
def test_seed001_allgather_advantage_over_mvapich2_gdr_shrinks():
    """Seed 001, slide "Allgatherの性能", against MVAPICH2-GDR on GPU buffers."""
    needs_sim()
    needs_collectives()
    gain, _ = allgather_gain("gpu", "8")
    assert gain[2] > 1 and gain[2] > gain[4] > gain[8] > gain[16], gain


def test_shm_fabric_runs_tca_beside_each_mpi():
    for tool in ("mpicc.openmpi", "mpicc.mpich"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (make mpi), which this machine does not have")
    needs_collectives()
    rows = bench_json(
        "--op", "allreduce", "--fabric", "shm", "--nodes", "2", "--sizes", "8,64", "--iterations", "5"
    )
    series = {r["series"] for r in rows}
    for s in (
        "TCA allreduce",
        "MPI (Open MPI) allreduce",
        "MPI (MPICH) allreduce",
        "TCA/MPI (Open MPI) allreduce",
        "TCA/MPI (MPICH) allreduce",
    ):
        assert f"{s} (2 nodes)" in series, series
    assert all(r["kind"] == "measured" and r["platform"] == "this host (shm)" for r in rows)


def test_shm_mpi_half_verifies_with_both_mpis():
    for tool in ("mpicc.openmpi", "mpicc.mpich"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool} (make mpi), which this machine does not have")
    rows = bench_json(
        "--op",
        "allgather",
        "--fabric",
        "shm",
        "--nodes",
        "2",
        "--sizes",
        "8,4K",
        "--iterations",
        "3",
        "--mpi-only",
    )
    for mpi in ("Open MPI", "MPICH"):
        assert values(rows, f"MPI ({mpi}) allgather (2 nodes)").keys() == {8, 4096}


def test_shm_barrier_check_holds_under_open_mpi():
    """The barrier's check compares when ranks enter and leave on one clock: Open MPI's
    MPI_Wtime counts from each process's own start, so the check reads the host's monotonic
    clock (it failed most runs before)."""
    if shutil.which("mpicc.openmpi") is None:
        pytest.skip("needs mpicc.openmpi (make mpi), which this machine does not have")
    for _ in range(3):
        rows = bench_json("--op", "barrier", "--fabric", "shm", "--nodes", "2,3", "--iterations", "5")
        assert {r["x"] for r in rows if r["series"] == "MPI (Open MPI) barrier"} == {2, 3}
