"""C programs with MPI, CUDA and TCA on the simulator (``tca cc``, ``tca run --fabric sim``): one
clock for SimGrid SMPI's MPI and the TCA model, the simulated CUDA runtime per rank, deadlocks
named, and the same model as the thread-per-rank simulator (crates/tca/smpi)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tca.peach.sim
from tca.peach import cc, launch
from tca.peach.api import DMA_NOTIFY, Desc

HERE = Path(__file__).resolve().parent
TCA = [sys.executable, "-m", "tca"]

pytestmark = pytest.mark.skipif(
    shutil.which("smpicc") is None or not all((cc.LIB / f"lib{n}.so").exists() for n in cc.LIBRARIES),
    reason="SimGrid SMPI (make smpi) or libtca/libtcacudart/libtcasmpi (make capi-smpi) missing",
)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    exe = tmp_path_factory.mktemp("smpi") / "tca_mpi"
    subprocess.run(
        [*TCA, "cc", "-O2", "-Wall", "-Werror", str(HERE / "tca_mpi.c"), "-o", str(exe)], check=True
    )
    return exe


def run(
    program: Path, *args: str, ranks: int = 2, tca_options: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    cmd = [
        *TCA,
        "run",
        "-n",
        str(ranks),
        "--fabric",
        "sim",
        "--platform",
        "ha-pacs-tca",
        *tca_options,
        str(program),
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def tca_cc(source: Path, text: str) -> Path:
    """Writes ``text`` to ``source`` and builds it with `tca cc` beside it (no suffix)."""
    source.write_text(text)
    exe = source.with_suffix("")
    subprocess.run([*TCA, "cc", str(source), "-o", str(exe)], check=True)
    return exe


def latencies(stdout: str) -> tuple[float, float]:
    m = re.search(r"TCA ([\d.]+) us, MPI ([\d.]+) us one-way", stdout)
    assert m, stdout
    return float(m.group(1)), float(m.group(2))


def python_pingpong(size: int) -> float:
    """The C program's TCA loop, on the thread-per-rank simulator."""

    def body(ctx):
        me, peer = ctx.rank, 1 - ctx.rank
        buf = ctx.malloc(size, "gpu")
        handles = ctx.exchange(buf)
        desc = Desc()
        desc.set_memcpy(handles[peer], 0, buf, 0, size, DMA_NOTIFY, 0, me)
        ctx.desc_set(desc, 0)
        ctx.barrier()
        start = ctx.wtime()
        for _ in range(20):
            if me == 0:
                ctx.start_dma(0)
                ctx.wait_dma_recv(handles[peer], 0, peer)
            else:
                ctx.wait_dma_recv(handles[peer], 0, peer)
                ctx.start_dma(0)
            ctx.wait_dmac(0)
        return (ctx.wtime() - start) / 20 / 2 * 1e6

    return tca.peach.sim.run("ha-pacs-tca", 2, body)[0]


@pytest.mark.parametrize("size", [8, 65536])
def test_mpi_and_tca_share_one_clock_and_one_model(program, size):
    first, second = run(program, "pingpong", str(size)), run(program, "pingpong", str(size))
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout, "two runs print the same"
    assert "smpi_coll" not in first.stderr, "SimGrid's choice of collective algorithms is not shown"
    assert "rank 0: device 0, payload verified" in first.stdout
    assert "rank 1: device 0, payload verified" in first.stdout
    tca_us, mpi_us = latencies(first.stdout)
    # The same TCA model as the thread-per-rank simulator; SimGrid's clock is kept to 1 ns.
    assert tca_us == pytest.approx(python_pingpong(size), abs=0.002)
    if size == 8:
        # MVAPICH2-GDR GPU-GPU, seed 001: 6.5 us (calibrated, +-10 %), slower than PEACH2.
        assert mpi_us == pytest.approx(6.5, rel=0.10)
        assert tca_us < mpi_us


def test_measured_computation_leaves_out_the_time_inside_tca_calls(program):
    """`--compute measured` charges the program's own code between calls, not the model's work
    that runs on a rank's thread inside its TCA and CUDA calls (before, the 1 MiB one-way time
    came out 11 times the model's)."""
    size = str(1 << 20)
    model_us = latencies(run(program, "pingpong", size).stdout)[0]
    out = run(program, "pingpong", size, tca_options=("--compute", "measured"))
    assert out.returncode == 0, out.stderr
    assert model_us <= latencies(out.stdout)[0] < 1.25 * model_us, out.stdout


def python_pio_pingpong(size: int) -> float:
    """The C program's PIO loop, on the thread-per-rank simulator."""

    def body(ctx):
        me, peer = ctx.rank, 1 - ctx.rank
        buf = ctx.malloc(64 + size, "cpu")
        handles = ctx.exchange(buf)
        payload = bytes((i * 7 + me) % 256 for i in range(size))
        ctx.barrier()
        start = ctx.wtime()
        for seq in range(1, 21):
            flag = seq.to_bytes(4, "little")
            for turn in range(2):
                if (turn == 0) == (me == 0):
                    ctx.send_pio(handles[peer], 64, payload)
                    ctx.send_pio_commit()
                    ctx.send_pio(handles[peer], 0, flag)
                    ctx.send_pio_commit()
                else:
                    ctx.wait_pio(buf, 0, flag, peer)
        return (ctx.wtime() - start) / 20 / 2 * 1e6

    return tca.peach.sim.run("ha-pacs-tca", 2, body)[0]


def test_pio_through_the_header_runs_on_the_model(program):
    """The header's inline tcaSendPIO and tcaSendPIOCommit go to the library on the simulator
    (no shm fabric in the process): the stores are timed by the model, as from Python."""
    first, second = run(program, "pio", "64"), run(program, "pio", "64")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout, "two runs print the same"
    assert "rank 0: PIO payload verified" in first.stdout
    assert "rank 1: PIO payload verified" in first.stdout
    m = re.search(r"PIO ([\d.]+) us one-way", first.stdout)
    assert m, first.stdout
    assert float(m.group(1)) == pytest.approx(python_pio_pingpong(64), abs=0.002)


def test_each_rank_has_its_own_cuda_device(program):
    out = run(program, "pingpong", "4096", "spread")
    assert out.returncode == 0, out.stderr
    assert "rank 0: device 0, payload verified" in out.stdout
    assert "rank 1: device 1, payload verified" in out.stdout


def test_trace_and_statistics_are_written_without_tca_finalize(program, tmp_path):
    trace, stats = tmp_path / "trace.json", tmp_path / "stats.json"
    out = run(program, "unfinalized", tca_options=("--trace", str(trace), "--stats-json", str(stats)))
    assert out.returncode == 0, out.stderr
    assert "tca: simulated TCA fabric: 2 ranks" in out.stderr
    assert json.loads(stats.read_text())["ranks"] == 2
    assert json.loads(trace.read_text())


def test_mpi_calls_leave_the_last_cuda_error_alone(program):
    out = run(program, "lasterror")
    assert out.returncode == 0, out.stderr
    assert "rank 0: got 1, last CUDA error cudaSuccess" in out.stdout, out.stdout
    assert "rank 1: got 0, last CUDA error cudaSuccess" in out.stdout, out.stdout


def test_the_gpus_are_counted_before_mpi_init(program):
    out = run(program, "gpus")
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        line = f"rank {rank}: 4 GPUs before MPI_Init (cudaSuccess), device 4: cudaErrorInvalidDevice"
        assert line in out.stdout, out.stdout


def test_a_rank_that_finalized_cannot_join_again(program):
    out = run(program, "reinit")
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        line = f"rank {rank}: tcaInit again 11, tcaMalloc 11, cudaMalloc cudaErrorInitializationError"
        assert line in out.stdout, out.stdout
    # Each error line names the call that tried to join.
    for who in ("tcaInit", "CUDA runtime"):
        assert f"{who}: TCA is not initialised: this rank called tcaFinalize: it cannot join" in out.stderr


GONE = (
    "rank 0: wait for 1: success; notification 7: success",
    "rank 0: wait for 2: peer node is dead; notification 8: peer node is dead",
    "rank 0: remote read: peer node is dead",
)
RULES = tuple(
    line
    for rank in (0, 1)
    for line in (
        f"rank {rank}: word at offset 2: 2; word at offset 1 of a handle at an odd address: 0",
        f"rank {rank}: tcaDescSet into a destroyed handle: 7",
        f"rank {rank}: start 0, start again 0, wait 0, notifications 0 0",
    )
)
CASES = {"gone": (("gone", "65536"), GONE), "rules": (("rules", "65536"), RULES)}


@pytest.mark.parametrize("case", CASES)
def test_a_program_gets_the_same_answers_on_the_simulator(program, case):
    args, lines = CASES[case]
    out = run(program, *args)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in lines:
        assert line in out.stdout, out.stdout


@pytest.fixture(scope="module")
def shm_program(tmp_path_factory) -> Path:
    if shutil.which("mpicc.openmpi") is None:
        pytest.skip("needs Open MPI (make mpi)")
    exe = tmp_path_factory.mktemp("shm") / "tca_mpi"
    lib = cc.LIB
    subprocess.run(
        ["mpicc.openmpi", "-O2", str(HERE / "tca_mpi.c"), "-o", str(exe), *(f"-I{d}" for d in cc.INCLUDES)]
        + [f"-L{lib}", f"-Wl,-rpath,{lib}", "-ltcacudart", "-ltca"],
        check=True,
    )
    return exe


@pytest.mark.parametrize("case", CASES)
def test_and_on_the_shm_fabric(shm_program, case):
    args, lines = CASES[case]
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "TCA_TIMEOUT_MS": "30000"}
    out = subprocess.run(
        ["mpirun.openmpi", "--oversubscribe", "-n", "2", str(shm_program), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for line in lines:
        assert line in out.stdout, out.stdout


def test_an_mpi_program_is_sent_to_mpirun_on_the_shm_fabric(shm_program):
    """`tca run` would start each rank as a one-rank MPI job of its own, whose handle
    exchanges then miss the other ranks."""
    out = subprocess.run(
        [*TCA, "run", "-n", "2", "--fabric", "shm", str(shm_program)], capture_output=True, text=True
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"is an MPI program: start it with mpirun (mpirun -n 2 {shm_program})" in out.stderr


def test_a_program_without_tca_calls_finds_libtca_on_the_shm_fabric(tmp_path):
    """Its `-ltca` is dropped by the linker's --as-needed: the CUDA runtime loads libtca.so
    from its own directory."""
    if shutil.which("mpicc.openmpi") is None:
        pytest.skip("needs Open MPI (make mpi)")
    source, exe = tmp_path / "cuda_only.c", tmp_path / "cuda_only"
    source.write_text(
        "#include <mpi.h>\n#include <stdio.h>\n#include <cuda_runtime.h>\n"
        "int main(int argc, char **argv) {\n  MPI_Init(&argc, &argv);\n  void *p;\n"
        '  printf("%s\\n", cudaGetErrorName(cudaMalloc(&p, 64)));\n'
        "  MPI_Finalize();\n  return 0;\n}\n"
    )
    lib = cc.LIB
    subprocess.run(
        ["mpicc.openmpi", "-Wl,--as-needed", str(source), "-o", str(exe), *(f"-I{d}" for d in cc.INCLUDES)]
        + [f"-L{lib}", f"-Wl,-rpath,{lib}", "-ltcacudart", "-ltca"],
        check=True,
    )
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    out = subprocess.run(
        ["mpirun.openmpi", "-n", "1", str(exe)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and out.stdout == "cudaSuccess\n", out.stdout + out.stderr


def test_a_deadlock_across_mpi_and_tca_names_each_rank(program):
    out = run(program, "mixed")
    assert out.returncode == 3, out.stdout + out.stderr
    assert "rank 0 waits for tcaWaitDMARecvDesc(handle of node 1, slot 0, tag 7)" in out.stderr
    assert "rank 1 is not in a TCA call (in MPI, or running)" in out.stderr
    assert "the simulation (SimGrid's smpimain) exited with status 3" in out.stderr
    # The report's time is SimGrid's clock, which MPI advanced past the TCA world's.
    blocked = float(re.search(r"rank 1: blocks at ([\d.]+) us", out.stdout).group(1))
    at = float(re.search(r"deadlock across MPI and TCA at ([\d.]+)us", out.stderr).group(1))
    assert blocked >= 1000 and blocked <= at < blocked + 10, (blocked, at)


def test_a_deadlock_still_writes_the_trace_and_the_statistics(program, tmp_path):
    trace, stats = tmp_path / "t.json", tmp_path / "s.json"
    out = run(program, "mixed", tca_options=("--trace", str(trace), "--stats-json", str(stats)))
    assert out.returncode == 3, out.stdout + out.stderr
    assert json.loads(trace.read_text())["traceEvents"], "spans of the run until the deadlock"
    assert json.loads(stats.read_text())["ranks"] == 2


@pytest.mark.parametrize("mode", ["endless", "spin"])
def test_a_run_stopped_by_its_timeout_still_writes_the_trace_and_the_statistics(program, tmp_path, mode):
    """Stopped while the hardware is busy (a ping-pong without end), or while rank 0 computes
    forever and SimGrid never runs again: the files cover the run up to the virtual time
    reached, the ranks' buffered output is kept, and nothing of the run is left."""
    trace, stats = tmp_path / "t.json", tmp_path / "s.json"
    options = ("--timeout", "3", "--trace", str(trace), "--stats-json", str(stats))
    out = run(program, mode, "65536", tca_options=options)
    assert out.returncode == 124, out.stdout + out.stderr
    assert "tca run: job exceeded 3 s; stopping it" in out.stderr
    stopped = re.search(r"tca: simulation stopped by SIGTERM at ([\d.]+)us of the TCA hardware's", out.stderr)
    assert stopped, out.stderr
    at = float(stopped.group(1))
    assert json.loads(stats.read_text())["virtual_time_us"] == at
    spans = json.loads(trace.read_text())["traceEvents"]
    assert spans
    if mode == "endless":
        assert at > 1000, "a few 64 KiB round trips each ms"
    assert sorted(re.findall(r"rank \d: running until stopped", out.stdout)) == [
        "rank 0: running until stopped",
        "rank 1: running until stopped",
    ]
    left = subprocess.run(["pgrep", "-f", str(program)], capture_output=True, text=True)
    assert left.stdout == "", "the simulation ended with the run"


def test_a_stop_does_not_wait_for_a_rank_inside_stdio(program, tmp_path):
    """Rank 0 reads a stdin that stays open, holding stdin's lock: the stop flushes what it
    can within a second and ends the run with its statistics."""
    stats = tmp_path / "s.json"
    read_end, write_end = os.pipe()
    cmd = [*TCA, "run", "-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca", "--timeout", "3"]
    started = time.monotonic()
    try:
        out = subprocess.run(
            [*cmd, "--stats-json", str(stats), str(program), "stdin", "8"],
            stdin=read_end,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert out.returncode == 124, out.stderr
    assert "tca: simulation stopped by SIGTERM" in out.stderr
    assert json.loads(stats.read_text())["ranks"] == 2
    # Not the launcher's 10 s grace and SIGKILL.
    assert time.monotonic() - started < 3 + 6


def test_a_signal_ignored_on_the_way_in_stays_ignored(program):
    """As under nohup: SIGHUP to `tca run` stops nothing; the timeout then does."""
    cmd = [*TCA, "run", "-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca", "--timeout", "4"]
    p = subprocess.Popen(
        [*cmd, str(program), "endless", "8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    try:
        p.communicate(timeout=2)
        pytest.fail("the run ended by itself")
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGHUP)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 124, err
    assert "got SIGHUP" not in err and "tca: simulation stopped by SIGTERM" in err, err


def test_ctrl_c_stops_the_run_with_its_files(program, tmp_path):
    stats = tmp_path / "s.json"
    cmd = [*TCA, "run", "-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca", "--stats-json", str(stats)]
    p = subprocess.Popen(
        [*cmd, str(program), "endless", "8"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=launch.default_signals,
    )
    try:
        out, err = p.communicate(timeout=3)
        pytest.fail(f"the run ended by itself: {out}{err}")
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "tca run: got SIGINT; stopping the ranks" in err
    assert "tca: simulation stopped by SIGINT at" in err, err
    assert json.loads(stats.read_text())["hardware_events"] > 0


def test_a_stop_ends_a_long_run_of_hardware_events_at_once(program, tmp_path):
    # One chain of 4 GiB takes seconds of wall time with every rank waiting: the model's loop
    # gives the stop way at its next event (it held the job's lock to the chain's end).
    stats = tmp_path / "s.json"
    started = time.monotonic()
    out = run(
        program, "long-chain", str(32 << 20), tca_options=("--timeout", "2", "--stats-json", str(stats))
    )
    took = time.monotonic() - started
    assert out.returncode == 124, out.stdout + out.stderr
    assert "tca: simulation stopped by SIGTERM at" in out.stderr, out.stderr
    assert took < 7, f"stopped {took:.1f} s after the start, a timeout of 2 s (it was 12 s)"
    assert json.loads(stats.read_text())["hardware_events"] > 0


def test_a_rank_that_exits_with_a_status_ends_the_run_with_it(program):
    out = run(program, "exit")
    assert out.returncode == 5, out.stdout + out.stderr
    assert "tca: rank 1 exited with status 5 at" in out.stderr, out.stderr
    # Rank 0 waits for it in TCA: the report says how rank 1 ended.
    assert "rank 1 has ended (returned from main or called exit) without tcaFinalize" in out.stderr


def test_tca_calls_past_the_models_clock_fail_with_a_message(program):
    # SimGrid's clock goes past 2^64 ps (a declared 1e9 s); the TCA model's does not.
    out = run(program, "late")
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert f"rank {rank}: tcaBarrier at 1000000000 s: 17" in out.stdout, out.stdout
    assert out.stderr.count("is beyond the last the TCA model follows") == 1, out.stderr


@pytest.mark.parametrize("mode", ["mpi-unfinalized", "mpi-gone"])
def test_a_rank_that_ends_without_mpi_finalize_fails_the_run(program, mode):
    # Also while a peer waits for it in MPI (that was a deadlock in MPI, status 3).
    out = run(program, mode)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "tca: rank 1 ended without MPI_Finalize at" in out.stderr, out.stderr
    assert "deadlock" not in out.stderr, out.stderr


def test_a_rank_that_exits_without_mpi_finalize_ends_the_run_with_its_status(program, tmp_path):
    # Its peer then receives what it sent (SMPI aborted on a message from an actor that is gone,
    # blaming rank 0), and the files are written.
    stats = tmp_path / "s.json"
    out = run(program, "exit-unfinalized", tca_options=("--stats-json", str(stats)))
    assert out.returncode == 5, out.stdout + out.stderr
    assert "tca: rank 1 exited with status 5 at" in out.stderr, out.stderr
    assert "without MPI_Finalize" in out.stderr and "SIGABRT" not in out.stderr, out.stderr
    assert json.loads(stats.read_text())["ranks"] == 2


def test_a_rank_that_crashes_is_named_and_the_files_are_written(program, tmp_path):
    trace, stats = tmp_path / "t.json", tmp_path / "s.json"
    out = run(program, "segv", tca_options=("--trace", str(trace), "--stats-json", str(stats)))
    assert out.returncode == 128 + signal.SIGSEGV, out.stdout + out.stderr
    assert re.search(r"tca: rank 1 was killed by SIGSEGV at [\d.]+us of virtual time", out.stderr), out.stderr
    assert "was killed by SIGSEGV" in out.stderr.splitlines()[-1], "and tca run says how the simulation ended"
    assert json.loads(trace.read_text())["traceEvents"]
    assert json.loads(stats.read_text())["ranks"] == 2


JOIN_THEN = r"""
#include <mpi.h>
#include <cuda_runtime.h>
#include <string.h>
int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *g;
    cudaMalloc(&g, 16); /* both ranks join the TCA job; no call orders them after that */
    if (rank == 1 && strcmp(argv[1], "segv") == 0) { volatile int *nowhere = NULL; *nowhere = 1; }
    if (rank == 1 && strcmp(argv[1], "spin") == 0) { volatile unsigned long x = 0; for (;;) x++; }
    if (rank == 1 && strcmp(argv[1], "bad-copy") == 0) {
        char *h;
        cudaMallocHost((void **)&h, 64);
        cudaMemcpy(h, (void *)0x10, 16, cudaMemcpyHostToHost); /* a bad host pointer */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def join_then(tmp_path_factory):
    return tca_cc(tmp_path_factory.mktemp("join") / "join_then.c", JOIN_THEN)


def test_a_rank_that_crashes_right_after_joining_is_named(join_then, tmp_path):
    """Rank 0 joins first and starts the model actor, which lets rank 1 run, join and crash
    before rank 0 is back: the crash handlers are in place by then."""
    stats = tmp_path / "s.json"
    out = run(join_then, "segv", tca_options=("--stats-json", str(stats)))
    assert out.returncode == 128 + signal.SIGSEGV, out.stdout + out.stderr
    named = re.search(r"tca: rank 1 was killed by SIGSEGV at [\d.]+us of virtual time\n", out.stderr)
    assert named, out.stderr
    assert json.loads(stats.read_text())["ranks"] == 2


def test_a_timeout_stops_a_rank_spinning_right_after_joining(join_then, tmp_path):
    stats = tmp_path / "s.json"
    out = run(join_then, "spin", tca_options=("--timeout", "2", "--stats-json", str(stats)))
    assert out.returncode == 124, out.stdout + out.stderr
    # What each rank was doing: rank 0 in MPI_Barrier, rank 1 in its loop.
    assert (
        "virtual time; then rank 0 is not in a TCA call (in MPI, or running); "
        "rank 1 is not in a TCA call (in MPI, or running)"
    ) in out.stderr, out.stderr
    assert json.loads(stats.read_text())["ranks"] == 2


def test_a_crash_inside_a_cuda_call_is_named_at_once(join_then, tmp_path):
    """The model copies from the bad pointer with the job's lock held, which the thread that
    writes the files could never take: the crash is named without them, and without waiting."""
    start = time.monotonic()
    out = run(join_then, "bad-copy", tca_options=("--stats-json", str(tmp_path / "s.json")))
    assert out.returncode == 128 + signal.SIGSEGV, out.stdout + out.stderr
    assert re.search(
        r"tca: rank 1 was killed by SIGSEGV at [\d.]+us of virtual time inside a TCA or CUDA call", out.stderr
    ), out.stderr
    assert "the trace and statistics are not written" in out.stderr
    assert time.monotonic() - start < 8, "not the 10 s a crashing thread gives the watcher"


def test_a_deadlock_report_names_a_rank_that_returned_from_main(program):
    out = run(program, "returned")
    assert out.returncode == 3, out.stdout + out.stderr
    assert "rank 0 waits for tcaWaitDMARecvDesc(handle of node 1, slot 0, tag 7)" in out.stderr
    assert "rank 1 has ended (returned from main or called exit) without tcaFinalize" in out.stderr


def test_a_deadlock_report_names_the_collective_a_wait_is_inside(program):
    out = run(program, "coll")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("deadlock: every rank waits and nothing can change") == 2
    # The program gets only the code; the report on stderr names the collective's inner wait.
    assert re.search(
        r"tca: deadlock in TCA at [\d.]+us: rank 0 waits for tca\w+ inside tcaCollBarrier; "
        r"rank 1 waits for tcaWaitDMARecvDesc\(handle of node 0, slot 0, tag 7\) "
        r"\(each such call returns TCA_ERROR_DEADLOCK\)",
        out.stderr,
    ), out.stderr


def test_a_deadlock_inside_tca_is_an_error_the_program_gets(program):
    out = run(program, "tca")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("deadlock: every rank waits and nothing can change") == 2


@pytest.mark.parametrize("mode", ["abort", "abort-in-cuda", "abort-in-coll", "abort-after-split"])
def test_mpi_abort_ends_every_rank_and_the_run_with_its_code(program, mode):
    """Rank 1 calls MPI_Abort(MPI_COMM_WORLD, 5) while rank 0 waits in tcaWaitDMARecvDesc (or
    copies in cudaMemcpy, or waits in tcaCollAllgather, or in MPI_Barrier after an
    MPI_Comm_split): SimGrid kills rank 0 inside libtca, which lets the kill pass, and the run
    ends with status 5, as under mpirun (SMPI alone exits 0, and after a split it left rank 0
    waiting: a deadlock)."""
    out = run(program, mode, "16M")
    assert out.returncode == 5, out.stdout + out.stderr
    aborted = float(re.search(r"rank 1: aborts at ([\d.]+) us", out.stdout).group(1))
    at = float(
        re.search(r"tca: rank 1 called MPI_Abort with error code 5 at ([\d.]+) us", out.stderr).group(1)
    )
    assert aborted <= at < aborted + 1, (aborted, at)
    assert "after MPI_Abort" not in out.stdout
    assert "foreign exception" not in out.stderr and "Aborted" not in out.stderr


def test_mpi_abort_right_after_an_mpi_call_ends_the_run_with_its_code(tmp_path):
    """The kill reaches rank 0 in a SimGrid call other than its wait (the MPI wrapper asks
    libtca about the buffers of the MPI_Sendrecv both ranks just ended)."""
    exe = tmp_path / "abort_race"
    subprocess.run(
        [*TCA, "cc", "-O2", "-Wall", "-Werror", str(HERE / "abort_race.c"), "-o", str(exe)], check=True
    )
    out = run(exe)
    assert out.returncode == 5, out.stdout + out.stderr
    assert "tca: rank 1 called MPI_Abort with error code 5" in out.stderr
    assert "after MPI_Abort" not in out.stdout
    assert "foreign exception" not in out.stderr


def test_a_program_named_without_a_path_is_found_on_the_path(program):
    cmd = [
        *TCA,
        "run",
        "-n",
        "2",
        "--fabric",
        "sim",
        "--platform",
        "ha-pacs-tca",
        program.name,
        "pingpong",
        "8",
    ]
    env = dict(os.environ, PATH=f"{program.parent}{os.pathsep}{os.environ['PATH']}")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and "size 8: TCA" in out.stdout, out.stderr


def test_bad_use_of_the_commands_is_one_line(tmp_path):
    out = subprocess.run([*TCA, "cc"], capture_output=True, text=True)
    assert out.returncode == 2 and "no input" in out.stderr
    plain = tmp_path / "plain"
    (tmp_path / "plain.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", str(tmp_path / "plain.c"), "-o", str(plain)], check=True)
    out = subprocess.run(
        [*TCA, "run", "-n", "2", "--fabric", "sim", str(plain)], capture_output=True, text=True
    )
    assert out.returncode == 2 and "was not built with `tca cc`" in out.stderr
    out = subprocess.run([*TCA, "run", "-n", "2", "--no-gdr", str(plain)], capture_output=True, text=True)
    assert out.returncode == 2 and "apply to --fabric sim only" in out.stderr
    out = subprocess.run(
        [*TCA, "run", "-n", "2", "--fabric", "sim", "--bind-to", "core", str(plain)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "--bind-to core applies to --fabric shm only" in out.stderr, out.stderr
    built = tmp_path / "built"
    subprocess.run([*TCA, "cc", str(tmp_path / "plain.c"), "-o", str(built)], check=True)
    out = subprocess.run([*TCA, "run", "-n", "1", str(built)], capture_output=True, text=True)
    assert out.returncode == 2 and "was built with `tca cc` for the simulator" in out.stderr, out.stderr
    for fabric, exe in (("sim", built), ("shm", plain)):
        exe.chmod(0o644)
        out = subprocess.run(
            [*TCA, "run", "-n", "1", "--fabric", fabric, str(exe)], capture_output=True, text=True
        )
        assert out.returncode == 2 and f"cannot start {exe}: Permission denied" in out.stderr, out.stderr


def test_the_program_gets_its_arguments_as_given(tmp_path):
    """As under mpirun: not split, dropped or expanded, and none taken by SimGrid."""
    exe = tca_cc(
        tmp_path / "args.c",
        "#include <mpi.h>\n#include <stdio.h>\n"
        "int main(int argc, char **argv) {\n  MPI_Init(&argc, &argv);\n"
        '  for (int i = 1; i < argc; i++) printf("[%s]", argv[i]);\n  printf("\\n");\n'
        "  MPI_Finalize();\n  return 0;\n}\n",
    )
    (tmp_path / "x1").touch()
    given = ["a b", "", "x*", "--cfg=smpi/wtime:1", "--help", "last"]
    cmd = [*TCA, "run", "-n", "1", "--fabric", "sim", "--platform", "ha-pacs-tca", str(exe)]
    out = subprocess.run([*cmd, *given], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[a b][][x*][--cfg=smpi/wtime:1][--help][last]\n"
    out = subprocess.run([*cmd, "a", "--", "b"], capture_output=True, text=True)
    assert out.returncode == 2 and "cannot get the argument `--`" in out.stderr, out.stderr


def test_a_cpp_program_builds_and_runs(tmp_path):
    exe = tca_cc(
        tmp_path / "hello.cpp",
        '#include <mpi.h>\n#include <cstdio>\n#include <vector>\n#include "tca-api.h"\n'
        "int main(int argc, char** argv) {\n"
        "  MPI_Init(&argc, &argv);\n  int me;\n  MPI_Comm_rank(MPI_COMM_WORLD, &me);\n"
        "  std::vector<int> v(1000, me);\n"
        "  if (tcaInit() != TCA_SUCCESS) return 1;\n"
        '  std::printf("rank %d: %zu ints, tcaFinalize %d\\n", me, v.size(), tcaFinalize());\n'
        "  MPI_Finalize();\n  return 0;\n}\n",
    )
    out = run(exe)
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert f"rank {rank}: 1000 ints, tcaFinalize 0" in out.stdout, out.stdout
