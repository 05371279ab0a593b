"""MPI on SimGrid SMPI costs what MVAPICH2(-GDR) costs on HA-PACS/TCA (docs/smpi.md).

The programs here are compiled with smpicc, the GPU-cost header force-included and the test
double of the CUDA runtime linked, then run by SimGrid's smpimain on the platform tca.peach.smpi_platform
generates.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tca import TcaError
from tca.peach.baselines import BASELINES, load_params
from tca.peach.smpi_platform import CONFIG_ENV, host_name, prepare, smpimain_command

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HEADER = ROOT / "crates/tca/smpi/include/tca-smpi-mpi.h"
WRAPPERS = ROOT / "crates/tca/smpi/c/mpi_gpu.c"
DOUBLE = HERE / "cuda_test_double.c"

needs_smpi = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason="SimGrid SMPI (smpicc, smpirun from libsimgrid-dev) is not installed",
)


def compile_program(source: Path, out: Path) -> Path:
    exe = out / source.stem
    cmd = [
        "smpicc",
        "-O2",
        "-Wall",
        "-Werror",
        "-include",
        str(HEADER),
        str(source),
        str(WRAPPERS),
        str(DOUBLE),
    ]
    subprocess.run([*cmd, "-o", str(exe)], check=True, capture_output=True, text=True, cwd=out)
    return exe


def run(setup, program: list[str], quiet: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        smpimain_command(setup, program, quiet),
        env=os.environ | setup.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def table(stdout: str) -> dict[int, tuple[float, float]]:
    rows = [line.split() for line in stdout.splitlines() if line and not line.startswith("#")]
    return {int(size): (float(host), float(gpu)) for size, host, gpu in rows}


@pytest.fixture(scope="module")
def pingpong(tmp_path_factory):
    """The ping-pong's output with GDR and without, and the first run's raw stdout."""
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        pytest.skip("SimGrid SMPI (smpicc, smpirun from libsimgrid-dev) is not installed")
    out = tmp_path_factory.mktemp("smpi")
    exe = compile_program(HERE / "mpi_gpu_pingpong.c", out)
    runs = {}
    for gdr in (True, False):
        setup = prepare("ha-pacs-tca", 2, out / f"gdr{int(gdr)}", gdr=gdr)
        runs[gdr] = run(setup, [str(exe)]).stdout
    again = run(prepare("ha-pacs-tca", 2, out / "again", gdr=True), [str(exe)]).stdout
    nonblocking = {
        gdr: table(
            run(prepare("ha-pacs-tca", 2, out / f"nb{int(gdr)}", gdr=gdr), [str(exe), "--nonblocking"]).stdout
        )
        for gdr in (True, False)
    }
    return {
        "gdr": table(runs[True]),
        "nogdr": table(runs[False]),
        "raw": runs[True],
        "again": again,
        "nonblocking": nonblocking,
    }


@needs_smpi
def test_8_byte_gpu_latency_is_seed_001s_mvapich2_gdr(pingpong):
    # Calibrated: seed 001, MVAPICH2-GDR 2.0b GPU-GPU 6.5 us with GDR, 17 us without.
    assert pingpong["gdr"][8][1] == pytest.approx(6.5, rel=0.10)
    assert pingpong["nogdr"][8][1] == pytest.approx(17.0, rel=0.10)
    # Host buffers are far cheaper, and GDR does not touch them.
    assert pingpong["gdr"][8][0] == pingpong["nogdr"][8][0] < 2.0


@needs_smpi
def test_curve_agrees_with_the_python_model(pingpong):
    params = load_params("ha-pacs-tca")
    sizes = sorted(pingpong["gdr"])
    assert sizes[0] == 8 and sizes[-1] == 4 << 20 and len(sizes) == 20
    for size in sizes:
        host, gdr = pingpong["gdr"][size]
        nogdr = pingpong["nogdr"][size][1]
        for measured, baseline, pair in (
            (host, "mvapich2-gdr", "cpu-cpu"),
            (gdr, "mvapich2-gdr", "gpu-gpu"),
            (nogdr, "mvapich2", "gpu-gpu"),
        ):
            model = BASELINES[baseline].pingpong_latency_us(params, pair, size)
            assert measured == pytest.approx(model, rel=0.15), (size, baseline, pair)
    # The shape the seeds report: GDR helps up to its limit (seed 003 §3.2: 512 KB), not above.
    assert pingpong["gdr"][4096][1] < pingpong["nogdr"][4096][1] - 5
    assert pingpong["gdr"][1 << 20][1] == pingpong["nogdr"][1 << 20][1]


@needs_smpi
def test_nonblocking_receives_pay_their_gpu_costs_at_completion(pingpong):
    # Isend/Irecv + Wait: the GPU costs of the receive are charged in MPI_Wait, so the curve is
    # the blocking one (SMPI charges MPI_Isend its send overhead as MPI_Send).
    for gdr, key in ((True, "gdr"), (False, "nogdr")):
        for size, (host, gpu) in pingpong[key].items():
            nb_host, nb_gpu = pingpong["nonblocking"][gdr][size]
            assert nb_host == pytest.approx(host, rel=0.01), (gdr, size)
            assert nb_gpu == pytest.approx(gpu, rel=0.01), (gdr, size)


@needs_smpi
def test_two_runs_print_identical_output(pingpong):
    assert pingpong["raw"] == pingpong["again"]


@needs_smpi
@pytest.mark.parametrize("ranks", [2, 4, 8, 16])
def test_allreduce_runs_with_the_mvapich2_collectives(tmp_path, ranks):
    exe = compile_program(HERE / "mpi_allreduce.c", tmp_path)
    setup = prepare("ha-pacs-tca", ranks, tmp_path / "run")
    assert "smpi/coll-selector:mvapich2" in setup.cfg
    proc = run(setup, [str(exe)], quiet=False)
    assert "Switch to algorithm mvapich2 for collective allreduce" in proc.stderr
    words = proc.stdout.split()
    assert words[:2] == ["ranks", str(ranks)] and float(words[5]) == ranks * (ranks + 1) / 2
    latency = float(words[3])
    # At least one host message (1.26 us one way for 8 B), at most a few per doubling step.
    assert 1.2 <= latency <= 6 * ranks.bit_length()


def test_prepare_writes_one_host_per_node_and_the_configuration(tmp_path):
    setup = prepare("ha-pacs-tca", 3, tmp_path)
    assert (
        setup.hostfile.read_text().split()
        == [host_name(0), host_name(1), host_name(2)]
        == ["node0", "node1", "node2"]
    )
    xml = setup.platform_xml.read_text()
    assert 'radical="0-16"' in xml and 'sharing_policy="SPLITDUPLEX"' in xml
    assert 'speed="22400000000.0f"' in xml  # 2.8 GHz x 8 flops per cycle
    assert "smpi/simulate-computation:no" in setup.cfg and "smpi/cpu-threshold:1e+09" in setup.cfg
    conf = Path(setup.env[CONFIG_ENV]).read_text()
    assert "cuda_buffer_check = 1.15e-06" in conf and "gdr = 1" in conf
    declared = prepare("ha-pacs-tca", 3, tmp_path / "d", compute="declared").cfg
    assert "smpi/cpu-threshold:0" in declared and "smpi/simulate-computation:no" in declared
    assert (
        "smpi/simulate-computation:yes" in prepare("ha-pacs-tca", 3, tmp_path / "m", compute="measured").cfg
    )


def test_bad_requests_get_clear_errors(tmp_path):
    with pytest.raises(TcaError, match="platform ha-pacs-tca has 16 nodes; 17 ranks need one node each"):
        prepare("ha-pacs-tca", 17, tmp_path)
    with pytest.raises(TcaError, match="compute must be one of none, declared, measured"):
        prepare("ha-pacs-tca", 2, tmp_path, compute="fast")
    with pytest.raises(TcaError, match="ranks must be a positive whole number"):
        prepare("ha-pacs-tca", 0, tmp_path)
    toml = (ROOT / "platforms/ha-pacs-tca.toml").read_text()
    start = toml.index("[baselines.smpi]")
    end = toml.index("\n\n", start)
    stripped = tmp_path / "no-smpi.toml"
    stripped.write_text(toml[:start] + toml[end:])
    with pytest.raises(TcaError, match=r"no \[baselines.smpi\] table"):
        prepare(stripped, 2, tmp_path)


@needs_smpi
def test_declared_compute_counts_only_when_asked(tmp_path):
    exe = compile_program(HERE / "mpi_compute.c", tmp_path)
    times = {}
    for compute in ("none", "declared"):
        out = run(prepare("ha-pacs-tca", 2, tmp_path / compute, compute=compute), [str(exe)]).stdout
        times[compute] = float(out.split()[1])
    # smpi_execute(2 us) + SMPI_SAMPLE_DELAY(3 us); SMPI adds 10 ns to each MPI_Wtime call.
    assert times["none"] == pytest.approx(0.01, abs=0.005)
    assert times["declared"] == pytest.approx(5.01, abs=0.005)


@needs_smpi
def test_polls_and_receives_cost_what_arrived(tmp_path):
    """A poll that finds nothing (MPI_Test, MPI_Iprobe) costs MVAPICH2's receive path (half of
    mpi_overhead, 0.1 us), not SMPI's default of 100 us that grows with each call: polling for
    a message takes what waiting for it does. A GPU receive posted for 4 MiB that gets 8 B pays
    the GPU costs of 8 B, however it completes."""
    exe = compile_program(HERE / "mpi_receives.c", tmp_path)
    setup = prepare("ha-pacs-tca", 2, tmp_path / "run")
    assert "smpi/test:1e-07" in setup.cfg and "smpi/iprobe:1e-07" in setup.cfg
    times = {
        name: float(us) for name, us in (line.split() for line in run(setup, [str(exe)]).stdout.splitlines())
    }
    assert times["wait"] == pytest.approx(1.27, abs=0.05), "8 B between hosts, one way"
    for poll in ("poll-test", "poll-iprobe"):
        assert times["wait"] <= times[poll] < times["wait"] + 0.2, (poll, times)
    blocking = times["gpu-recv"]
    assert blocking < 10, "the GPU costs of 8 B, not of 4 MiB"
    for how in ("wait", "waitall", "sendrecv", "persistent"):
        assert times[f"gpu-{how}"] == pytest.approx(blocking, abs=0.05), (how, times)
    assert blocking <= times["gpu-test"] < blocking + 0.2, times


@needs_smpi
def test_testany_reports_every_persistent_request(tmp_path):
    """SMPI 3.32's MPI_Testany never reports a started persistent send that completed while
    another request did, then answers MPI_UNDEFINED: a loop until all are done never ends.
    The wrapper asks each request then."""
    exe = compile_program(HERE / "mpi_testany.c", tmp_path)
    out = run(prepare("ha-pacs-tca", 2, tmp_path / "run"), [str(exe)]).stdout
    completions, polls = out.split()[1], int(out.split()[3])
    assert completions == "2" and polls < 100, out
    assert out.split()[-1] == "undefined", out
