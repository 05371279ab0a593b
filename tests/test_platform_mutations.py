"""Mutated copies of a platform file: `tca` rejects each with exit status 2 and one line naming
the file, the key and the allowed range; no panic, no traceback, no runaway."""

import pytest
from conftest import TESTBED, run_tca

# (text in platforms/peach2-testbed-2013.toml, its replacement, words the error must contain)
MUTATIONS = [
    (
        'memory_read_latency = { value = "550 ns"',
        'memory_read_latency = { value = "20000000 s"',
        ["host.memory_read_latency", "allowed 0 ns to 1 ms"],
    ),
    (
        'memory_write_latency = { value = "100 ns"',
        'memory_write_latency = { value = "20000000 s"',
        ["host.memory_write_latency", "allowed 0 ns to 1 ms"],
    ),
    (
        "dma_start_cycles = { value = 115",
        "dma_start_cycles = { value = 9223372036854775807",
        ["peach2.dma_start_cycles", "allowed 1 to 1000000"],
    ),
    (
        "descriptor_cycles = { value = 16",
        "descriptor_cycles = { value = 9223372036854775807",
        ["peach2.descriptor_cycles", "allowed 1 to 1000000"],
    ),
    (
        'inbound_bandwidth = { value = "6.7 GB/s"',
        'inbound_bandwidth = { value = "1 B/s"',
        ["host.inbound_bandwidth", "allowed 1 MB/s to 1000 GB/s"],
    ),
    (
        'read_bandwidth = { value = "3.5 GB/s"',
        'read_bandwidth = { value = "1 B/s"',
        ["gpu.read_bandwidth", "allowed 1 MB/s to 1000 GB/s"],
    ),
    (
        "max_nodes = { value = 16",
        "max_nodes = { value = 4294967296",
        ["address_map.max_nodes", "a power of two from 1 to 16"],
    ),
    (
        "dma_channels = { value = 4",
        "dma_channels = { value = 4294967296",
        ["peach2.dma_channels", "allowed only 4"],
    ),
    (
        "register_slots = { value = 16",
        "register_slots = { value = 4294967296",
        ["peach2.register_slots", "allowed 1 to 256"],
    ),
    (
        "max_outstanding_reads = { value = 8",
        "max_outstanding_reads = { value = 4294967296",
        ["peach2.max_outstanding_reads", "allowed 1 to 256"],
    ),
    (
        'descriptor_size = { value = "32 B"',
        'descriptor_size = { value = "0 B"',
        ["peach2.descriptor_size", "16 B to 128 B"],
    ),
    (
        'descriptor_size = { value = "32 B"',
        'descriptor_size = { value = "1 TiB"',
        ["peach2.descriptor_size", "16 B to 128 B"],
    ),
    (
        'host_size = { value = "16 GiB"',
        'host_size = { value = "1 B"',
        ["address_map.host_size", "1 MiB to 1 TiB"],
    ),
    # 4 GPUs x 2^62 B wraps around to 0.
    (
        'gpu_size = { value = "4 GiB"',
        'gpu_size = { value = "4194304 TiB"',
        ["address_map.gpu_size", "1 MiB to 1 TiB"],
    ),
    (
        'gpu_size = { value = "4 GiB"',
        'gpu_size = { value = "1 TiB"',
        ["address_map.gpu_size", "allowed at most 32 GiB"],
    ),
    (
        'cables = { value = ["0E-1W"]',
        "cables = { value = []",
        ["topology.cables", "node 1 is not reachable from node 0"],
    ),
    (
        'pio_write_combining = { value = "64 B"',
        'pio_write_combining = { value = "0 B"',
        ["host.pio_write_combining", "a power of two from 4 B to 4 KiB"],
    ),
    ("\nnodes = { value = 2,", "\nnodes = { value = 4294967298,", ["topology.nodes", "allowed 1 to 16"]),
    ("\nvalue = 3.66\n", "\nvalue = nan\n", ["reference[0].value", "a finite number greater than 0"]),
    ("\nvalue = 3.66\n", "\nvalue = inf\n", ["reference[0].value", "a finite number greater than 0"]),
    ("\nvalue = 3.66\n", "\nvalue = -3.66\n", ["reference[0].value", "a finite number greater than 0"]),
    ("\nvalue = 3.66\n", "\nvalue = 0\n", ["reference[0].value", "a finite number greater than 0"]),
    ("\nx = 256\n", "\nx = nan\n", ["reference[0].x", "a finite number greater than 0"]),
]


def mutated(tmp_path, old, new):
    text = TESTBED.read_text()
    assert old in text, f"the test edits an existing line: {old!r}"
    path = tmp_path / "mutated.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def assert_rejected(proc, path, words):
    assert proc.returncode == 2, proc.stderr
    assert "panicked" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"tca: error: {path}: "), lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    assert proc.stdout == ""


@pytest.mark.parametrize("old,new,words", MUTATIONS, ids=[f"{m[2][0]}-{i}" for i, m in enumerate(MUTATIONS)])
def test_platforms_show_rejects_a_mutated_file(tmp_path, old, new, words):
    path = mutated(tmp_path, old, new)
    assert_rejected(run_tca("platforms", "--show", str(path), check=False), path, words)


def test_an_empty_write_combining_buffer_no_longer_runs_away(tmp_path):
    # It took 100% CPU and 7 GB of memory in 20 s: now the platform is rejected before any run.
    path = mutated(
        tmp_path, 'pio_write_combining = { value = "64 B"', 'pio_write_combining = { value = "0 B"'
    )
    proc = run_tca("bench", "pingpong", "--platform", str(path), "--mode", "pio", "--sizes", "8", check=False)
    assert_rejected(proc, path, ["host.pio_write_combining"])


def test_json_output_never_carries_a_nan_reference(tmp_path):
    path = mutated(tmp_path, "\nvalue = 3.66\n", "\nvalue = nan\n")
    proc = run_tca("bench", "dma-bw", "--platform", str(path), "--experiment", "fig4", "--json", check=False)
    assert_rejected(proc, path, ["reference[0].value"])


def test_the_unmutated_copy_loads(tmp_path):
    path = mutated(tmp_path, "[platform]", "[platform]")
    proc = run_tca("platforms", "--show", str(path))
    assert "peach2.dma_start_cycles" in proc.stdout
