"""The C programs in the style of HA-PACS/TCA (examples/c/hapacs): MPI, the CUDA runtime and the
TCA API, built with `tca cc` for the simulator and with mpicc for the shm fabric.

tests/examples/c-hapacs-*.out hold each simulator run's exact output (checked by
test_examples.py). Here:

- every program has such a file, and a simulator run prints the same bytes twice;
- the same sources under mpirun on the shm fabric verify their data, and their "verified" line
  is the simulator's (the stencil's checksum included);
- one model, one answer: gpu_pingpong and block_stride on the simulator give the numbers of
  `tca bench pingpong` and `tca bench block-stride` for the same platform and mode within 2 %;
- bad arguments stop every rank with one line and exit status 2.
"""

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_examples import EXAMPLES, Example, missing_prerequisite, parse
from test_examples import run as run_example

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "examples/c/hapacs"
SIM = ROOT / "target/c/sim"
SHM = ROOT / "target/c/shm"
FILES = sorted(EXAMPLES.glob("c-hapacs-*.out"))
MPIS = ("openmpi", "mpich")
TIMEOUT_S = 120


def sim_example(path: Path) -> Example:
    example = parse(path)
    need = missing_prerequisite(example)
    if need:
        pytest.skip(f"needs {need} (SimGrid SMPI: make smpi), which this machine does not have")
    for word in example.argv:
        if word.startswith("target/") and not (ROOT / word).exists():
            pytest.fail(f"{word} is not built: run `make examples` (or `make test`) first")
    return example


def program_of(example: Example) -> tuple[str, list[str], int]:
    """(program name, its arguments, ranks) of a `tca run -n N ... target/c/sim/NAME ARGS` line."""
    argv = example.argv
    exe = next(i for i, w in enumerate(argv) if w.startswith("target/c/sim/"))
    return Path(argv[exe]).name, argv[exe + 1 :], int(argv[argv.index("-n") + 1])


def sim_run(ranks: int, name: str, *args: str) -> list[str]:
    """Runs target/c/sim/NAME on simulated HA-PACS/TCA; returns its stdout lines."""
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        pytest.skip("needs SimGrid SMPI (smpicc, smpirun: make smpi), which this machine does not have")
    if not (SIM / name).exists():
        pytest.fail(f"target/c/sim/{name} is not built: run `make examples` first")
    command = f"tca run --fabric sim --platform ha-pacs-tca -n {ranks} target/c/sim/{name} {shlex.join(args)}"
    return run_example(Example(Path(name), [], command, {}, shlex.split(command), [], []))


def table(lines: list[str]) -> dict[int, float]:
    """Size (first column) -> time [us] (the column before the bandwidth, the last) of the
    lines that are not comments."""
    rows = [line.split() for line in lines if line and not line.startswith("#")]
    return {int(r[0]): float(r[-2]) for r in rows}


# The applications and benchmark programs, checked by their own tests (verified answers, seed
# claims) rather than by an exact expected output.
OWN_TESTS = {
    "cg": "test_cg.py",
    "qcd_halo": "test_qcd_halo.py",
    "himeno": "test_himeno.py",
    "coll_bench": "test_bench_collective.py",
}


def makefile_programs() -> set[str]:
    """The PROGS of examples/c/hapacs/Makefile."""
    line = next(x for x in (SOURCES / "Makefile").read_text().splitlines() if x.startswith("PROGS"))
    return set(line.split(":=")[1].split())


def test_every_program_has_a_simulator_run():
    programs = makefile_programs()
    assert {"gpu_pingpong", "block_stride", "allgather", "stencil2d"} <= programs
    run = {program_of(parse(p))[0] for p in FILES}
    unchecked = programs - run - OWN_TESTS.keys()
    assert unchecked == set(), f"programs without an expected output or a test of their own: {unchecked}"
    for name in programs & OWN_TESTS.keys():
        assert (ROOT / "tests" / OWN_TESTS[name]).exists(), f"{name}: {OWN_TESTS[name]} missing"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_simulator_runs_are_identical(path):
    example = sim_example(path)
    first, second = run_example(example), run_example(example)
    assert first == second
    assert any("verified" in line for line in first), first


def verified(lines: list[str]) -> list[str]:
    return [line for line in lines if "verified" in line]


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_shm_fabric_under_mpirun_verifies_the_same_data(path, mpi):
    name, args, ranks = program_of(parse(path))
    exe = SHM / f"{name}.{mpi}"
    if shutil.which(f"mpirun.{mpi}") is None or shutil.which(f"mpicc.{mpi}") is None:
        pytest.skip(f"needs mpicc.{mpi} and mpirun.{mpi} (make mpi), which this machine does not have")
    if not Path("/dev/shm").is_dir():
        pytest.skip("the shm fabric needs /dev/shm")
    if not exe.exists():
        pytest.fail(f"{exe.relative_to(ROOT)} is not built: run `make examples` first")
    launcher = [f"mpirun.{mpi}", *(["--oversubscribe"] if mpi == "openmpi" else []), "-n", str(ranks)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCA_")}
    env |= {"TCA_TIMEOUT_MS": "30000", "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    proc = subprocess.run(
        [*launcher, str(exe), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    expected = [line[2:] for line in parse(path).expected if line.startswith("> ")]
    assert verified(proc.stdout.splitlines()) == verified(expected) != []


# ---- one model, one answer: the C programs against `tca bench` ----


def bench_pingpong(mode: str, sizes: list[int]) -> dict[int, float]:
    from tca.peach import platforms
    from tca.peach.bench import pingpong

    rows = pingpong.run(platforms.load("ha-pacs-tca"), "gpu-gpu", mode, sizes)
    return {int(r.x): r.value for r in rows if r.unit == "us"}


@pytest.mark.parametrize("c_mode, bench_mode", [("register", "dma-register"), ("chaining", "dma")])
def test_gpu_pingpong_gives_the_benchs_latency(c_mode, bench_mode):
    sizes = [8, 1024, 65536]
    c = table(sim_run(2, "gpu_pingpong", "64K", "0", c_mode))
    assert sorted(c) == [2**k for k in range(3, 17)]
    bench = bench_pingpong(bench_mode, sizes)
    for size in sizes:
        assert c[size] == pytest.approx(bench[size], rel=0.02), (size, c[size], bench[size])
    # The modes differ (chaining fetches the descriptor, seed 000 §3.5.2): the test can tell.
    assert c[8] > 2.0 and (c_mode == "register") == (c[8] < 2.5)


def test_block_stride_gives_the_benchs_exchange_time():
    from tca.peach import platforms
    from tca.peach.bench import block_stride

    c = table(sim_run(2, "block_stride", "32"))
    assert sorted(c) == [2, 4, 8, 16, 32]
    rows = block_stride.run(platforms.load("ha-pacs-tca"), [2, 8, 32])
    bench = {int(r.x): r.value for r in rows if r.unit == "us"}
    for n in (2, 8, 32):
        assert c[n] == pytest.approx(bench[n], rel=0.02), (n, c[n], bench[n])


# ---- bad arguments ----


@pytest.mark.parametrize(
    "ranks, name, args, message",
    [
        (3, "allgather", [], "allgather: needs 2, 4, 8 or 16 ranks"),
        (3, "block_stride", [], "block_stride: needs an even number of ranks"),
        (4, "stencil2d", ["3", "2"], "stencil2d: PX x PY must equal the number of ranks"),
        (2, "stencil2d", ["2", "1", "30", "8"], "stencil2d: NX / PX must be even"),
        (3, "stencil2d", ["3", "1", "6", "3", "0"], "stencil2d: ITERATIONS must be at least 1"),
        (4, "stencil2d", ["4", "1", "64"], "usage: stencil2d [PX PY [NX NY [ITERATIONS]]]: PX and PY"),
        (2, "gpu_pingpong", ["4"], "usage: gpu_pingpong"),
        (2, "qcd_halo", ["2", "1", "5", ","], "usage: qcd_halo"),
    ],
)
def test_bad_arguments_give_one_line_and_status_2(ranks, name, args, message):
    if shutil.which("smpirun") is None or not (SIM / name).exists():
        pytest.skip("needs SimGrid SMPI and the simulator builds (make smpi examples)")
    proc = subprocess.run(
        [Path(sys.executable).parent / "tca", "run", "--fabric", "sim", "--platform", "ha-pacs-tca"]
        + ["-n", str(ranks), str(SIM / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    # (smpirun itself prints its command line and "Execution failed" on stdout.)
    assert not any(line.startswith("#") for line in proc.stdout.splitlines()), proc.stdout
    assert sum(line.startswith(message) for line in proc.stderr.splitlines()) == 1, proc.stderr
