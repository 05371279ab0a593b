"""Bad input gets one line naming the problem and exit status 2: no traceback, no panic."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TESTBED

SIM = ["--platform", "peach2-testbed-2013"]


def assert_one_line_error(proc, *fragments):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tca: error: ")
    for f in fragments:
        assert f in lines[0]
    assert "Traceback" not in proc.stderr and "panicked" not in proc.stderr
    assert proc.stdout == ""


def edited_platform(tmp_path, old, new):
    text = TESTBED.read_text()
    assert old in text
    path = tmp_path / "edited.toml"
    path.write_text(text.replace(old, new, 1))
    return str(path)


def test_unknown_platform(tca):
    proc = tca("bench", "dma-bw", "--platform", "peach9", "--experiment", "fig4", check=False)
    assert_one_line_error(proc, "unknown platform 'peach9'", "peach2-testbed-2013")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'mmio_latency = { value = "250 ns"',
            'mmio_latencyy = { value = "250 ns"',
            "missing field 'host.mmio_latency'",
        ),
        ('max_payload = { value = "256 B"', 'max_payload = { value = "256 GB/s"', "expected a size in B"),
        ('max_read_request = { value = "4096 B"', 'max_read_request = { value = "-4096 B"', "is negative"),
        ("lanes = { value = 8, source", 'lanes = { value = "8 lanes", source', "expected an integer"),
        (', source = "seed 000 §3.6: main logic runs at 250 MHz"', "", "peach2.clock: missing 'source'"),
        ("[platform]", "[platform", "not valid TOML at line"),
    ],
)
def test_malformed_platform_file(tca, tmp_path, old, new, message):
    path = edited_platform(tmp_path, old, new)
    proc = tca("bench", "dma-bw", "--platform", path, "--experiment", "fig5", check=False)
    assert_one_line_error(proc, "edited.toml", message)


def test_missing_platform_file(tca, tmp_path):
    proc = tca("platforms", "--show", str(tmp_path / "none.toml"), check=False)
    assert_one_line_error(proc, "platform file not found")


@pytest.mark.parametrize("sizes", ["6", "64,100,4098"])
def test_size_not_multiple_of_4(tca, sizes):
    proc = tca(
        "bench",
        "dma-bw",
        "--platform",
        "peach2-testbed-2013",
        "--experiment",
        "fig5",
        "--sizes",
        sizes,
        check=False,
    )
    assert_one_line_error(proc, "not a positive multiple of 4")


def test_unknown_experiment_and_bad_size_syntax(tca):
    proc = tca("bench", "dma-bw", "--platform", "peach2-testbed-2013", "--experiment", "fig7", check=False)
    assert_one_line_error(proc, "unknown experiment 'fig7'")
    proc = tca(
        "bench",
        "dma-bw",
        "--platform",
        "peach2-testbed-2013",
        "--experiment",
        "fig4",
        "--sizes",
        "4x",
        check=False,
    )
    assert_one_line_error(proc, "--sizes: expected a size", "got '4x'")


def test_unwritable_plot(tca, tmp_path):
    proc = tca(
        "bench",
        "dma-bw",
        "--platform",
        "peach2-testbed-2013",
        "--experiment",
        "fig5",
        "--sizes",
        "64",
        "--plot",
        str(tmp_path / "no" / "dir" / "x.png"),
        check=False,
    )
    assert_one_line_error(proc, "--plot", "does not exist")


# Output files are checked before the benchmark runs: a bad one is a one-line error, never a
# traceback, and never silently written somewhere else (/tmp -> /tmp.png).
BENCHES_WITH_PLOT = [
    ["bench", "dma-bw", *SIM, "--experiment", "fig5", "--sizes", "64"],
    ["bench", "local-copy", *SIM, "--sizes", "64"],
    ["bench", "pingpong", *SIM, "--sizes", "8"],
    ["bench", "block-stride", *SIM, "--n", "2"],
]


@pytest.mark.parametrize("bench", BENCHES_WITH_PLOT, ids=lambda b: b[1])
def test_plot_with_an_unsupported_extension(tca, tmp_path, bench):
    proc = tca(*bench, "--plot", str(tmp_path / "x.txt"), check=False)
    assert_one_line_error(proc, "--plot", "unsupported extension '.txt'", ".png")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("bench", BENCHES_WITH_PLOT[:2], ids=lambda b: b[1])
def test_plot_into_a_directory_is_an_error_not_dir_png(tca, tmp_path, bench):
    proc = tca(*bench, "--plot", str(tmp_path), check=False)
    assert_one_line_error(proc, "--plot", "is a directory")
    assert not Path(f"{tmp_path}.png").exists()


@pytest.mark.parametrize(("name", "message"), [("missing", "does not exist"), ("dir", "is a directory")])
def test_pingpong_trace_into_a_missing_directory_or_a_directory(tca, tmp_path, name, message):
    target = tmp_path / "nonexistent" / "t.json" if name == "missing" else tmp_path
    proc = tca("bench", "pingpong", *SIM, "--sizes", "8", "--trace", str(target), check=False)
    assert_one_line_error(proc, "--trace", message)


@pytest.mark.parametrize("option", ["--trace", "--stats-json"])
@pytest.mark.parametrize(("name", "message"), [("missing", "does not exist"), ("dir", "is a directory")])
def test_run_output_files_are_checked_before_the_run(tca, tmp_path, option, name, message):
    target = tmp_path / "nonexistent" / "t.json" if name == "missing" else tmp_path
    proc = tca("run", "-n", "2", "--fabric", "sim", option, str(target), "/bin/true", check=False)
    assert_one_line_error(proc, option, message)


def test_dma_bw_trace_into_a_directory(tca, tmp_path):
    proc = tca(
        "bench",
        "dma-bw",
        *SIM,
        "--experiment",
        "fig5",
        "--sizes",
        "64",
        "--trace",
        str(tmp_path),
        check=False,
    )
    assert_one_line_error(proc, "--trace", "is a directory")


def test_demo_into_an_unwritable_directory(tca):
    proc = tca("demo", "--out", "/proc/nope", check=False)
    assert_one_line_error(proc, "--out /proc/nope: cannot write there")


@pytest.mark.parametrize("sizes", ["0", "0:8", "8,0"])
def test_shm_pingpong_size_zero_is_an_error(tca, sizes):
    proc = tca("bench", "pingpong", "--fabric", "shm", "--sizes", sizes, check=False)
    assert_one_line_error(proc, "--sizes", "must be positive")


def test_shm_pingpong_rejects_options_it_would_ignore(tca, tmp_path):
    proc = tca("bench", "pingpong", "--fabric", "shm", "--plot", str(tmp_path / "p.png"), check=False)
    assert_one_line_error(proc, "--fabric shm takes --sizes and --json only")


@pytest.mark.parametrize("edges", ["1", "2,1", "0"])
def test_block_stride_needs_two_distinct_faces(tca, edges):
    proc = tca("bench", "block-stride", *SIM, "--n", edges, check=False)
    assert_one_line_error(proc, "outside 2..1024", "both faces are one plane")


def test_block_stride_bad_list(tca):
    proc = tca("bench", "block-stride", *SIM, "--n", "2,x", check=False)
    assert_one_line_error(proc, "bad --n '2,x'")


@pytest.mark.parametrize("value", ["nan", "inf", "-1e400"])
def test_reference_values_that_are_not_finite_never_reach_json(tca, tmp_path, value):
    # A reference value JSON cannot hold is refused (by the loader or the report), so --json
    # never prints a bare NaN.
    text = TESTBED.read_text()
    start = text.index("[[reference]]")
    head, refs = text[:start], text[start:]
    path = tmp_path / "edited.toml"
    edited = refs.replace("value = ", f"value = {value} #", 1)
    assert edited != refs
    path.write_text(head + edited)
    proc = tca("bench", "dma-bw", "--platform", str(path), "--experiment", "fig4", "--json", check=False)
    assert proc.returncode == 2, proc.stdout
    assert "NaN" not in proc.stdout and "Infinity" not in proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_json_rows_are_strict_json(tca):
    proc = tca("bench", "dma-bw", *SIM, "--experiment", "fig4", "--json")
    json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"bare {c} in --json output"))


def test_example_with_a_non_numeric_size_under_the_simulator():
    example = ROOT / "examples" / "python" / "pingpong.py"
    cmd = [sys.executable, "-m", "tca", "run", "-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca"]
    proc = subprocess.run([*cmd, str(example), "abc"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines()[0] == "pingpong.py: error: SIZE: 'abc' is not a number followed by a unit"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fabric", "sim", "--platform", "", "/bin/true"], "unknown platform ''"),
        (["--fabric", "sim", "--trace", "", "/bin/true"], "--trace: empty file name"),
        (
            ["--fabric", "sim", "--trace", "x.json", "--stats-json", "./x.json", "/bin/true"],
            "name the same file",
        ),
        ([""], "the program's name is empty"),
        (["--fabric", "sim", "--stats-json", "/proc/x.json", "/bin/true"], "cannot write there"),
    ],
    ids=["empty-platform", "empty-trace", "one-file-twice", "empty-program", "unwritable-file"],
)
def test_run_refuses_empty_names_and_one_file_for_two_outputs(tca, args, message):
    proc = tca("run", "-n", "2", *args, check=False)
    assert_one_line_error(proc, message)


@pytest.mark.parametrize("library", [b"libmpi.so.40", b"libmpich.so.12"], ids=["openmpi", "mpich"])
def test_an_mpi_program_on_the_path_is_sent_to_mpirun(tca, tmp_path, library):
    # Only the refusal is checked: an ELF header and the library's name in the file.
    prog = tmp_path / "mpi_prog"
    prog.write_bytes(b"\x7fELF" + b"\0" * 60 + library + b"\0")
    prog.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    proc = subprocess.run(
        [sys.executable, "-m", "tca", "run", "-n", "2", "mpi_prog"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert_one_line_error(proc, "mpi_prog is an MPI program: start it with mpirun")


@pytest.mark.parametrize("value", ["", "fast", "EXACT"])
def test_an_unknown_tlp_resolution_is_named(tca, monkeypatch, value):
    # TCA_SIM_TLPS chooses how the simulator moves TLPs (crates/tca/model/src/train.rs).
    monkeypatch.setenv("TCA_SIM_TLPS", value)
    proc = tca("bench", "dma-bw", *SIM, "--experiment", "fig4", check=False)
    assert_one_line_error(proc, f"TCA_SIM_TLPS={value!r}", "'trains'", "'exact'")


def test_exact_tlps_give_the_trains_times_for_a_lone_stream(tca, monkeypatch, tmp_path):
    # A ping-pong's DMAs, each alone on its path, get the same times whether their TLPs move in
    # trains or one by one.
    args = (
        "bench",
        "pingpong",
        "--platform",
        "ha-pacs-tca",
        "--pair",
        "gpu-gpu",
        "--mode",
        "dma",
        "--sizes",
        "8,300,4K,5000,1M",
        "--json",
    )
    trains = tca(*args).stdout
    monkeypatch.setenv("TCA_SIM_TLPS", "exact")
    assert tca(*args).stdout == trains
    # ... though they did move differently: the trace shows the trains.
    traces = {}
    for mode in ("exact", "trains"):
        monkeypatch.setenv("TCA_SIM_TLPS", mode)
        trace = tmp_path / f"{mode}.json"
        tca("bench", "pingpong", "--platform", "ha-pacs-tca", "--sizes", "4K", "--trace", str(trace))
        traces[mode] = trace.read_text()
    assert "MWr 2048 B (8 TLPs of 256 B)" in traces["trains"]
    assert "TLPs of" not in traces["exact"] and "MWr 256 B" in traces["exact"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["pingpong", "--platform", "ha-pacs-tca", "--sizes", "64,64"], "--sizes: 64 B is given twice"),
        (["local-copy", "--platform", "ha-pacs-tca", "--sizes", "1K,1024"], "--sizes: 1024 B is given twice"),
        (["pingpong", "--platform", "ha-pacs-tca", "--sizes", "12:100"], "12 B is not one"),
        (["dma-bw", *SIM, "--experiment", "fig4", "--sizes", ""], "--sizes: empty value"),
        (["pingpong", "--platform", "ha-pacs-tca", "--sizes", "64", "--plot", ""], "--plot: empty value"),
    ],
)
def test_bench_sizes_twice_a_range_off_powers_of_two_and_empty_values_are_refused(tca, args, message):
    # Each of these ran: a size twice gave its rows twice, 12:100 ran 12, 24, 48 and 96 B, an
    # empty --sizes ran the default sizes and an empty --plot wrote nothing.
    assert_one_line_error(tca("bench", *args, check=False), message)


@pytest.mark.parametrize(
    "args",
    [
        ["run"],
        ["bench", "pingpong", "--bogus"],
        ["hxb", "bench", "bandwidth", "--fabric", "SIM"],
        ["victream", "bench", "--workload"],
    ],
)
def test_a_usage_error_is_one_line_naming_the_help(tca, args):
    # argparse printed its usage block before the error.
    proc = tca(*args, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tca") and ": error: " in lines[0], proc.stderr
    assert lines[0].endswith("--help)") and "usage:" not in proc.stderr


def test_dma_bw_names_the_gpus_a_series_needs(tca):
    # peach3-testbed has one GPU per node: fig4's GPU-GPU series said "node is not in this
    # sub-cluster: 1024 B of Gpu(1) memory".
    proc = tca("bench", "dma-bw", "--platform", "peach3-testbed", "--experiment", "fig4", check=False)
    assert_one_line_error(proc, "GPU-GPU series needs 2 GPUs per node and peach3-testbed has 1")
