"""Bad input gets one line naming the problem and exit status 2: no traceback, no panic."""

import pytest
from conftest import TESTBED


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


@pytest.mark.parametrize("sizes", ["6", "64,100,4098", "0"])
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
    assert_one_line_error(proc, "bad size '4x'")


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
    assert_one_line_error(proc, "cannot write plot")
