"""The CLI as a user sees it: platforms, tables, JSON rows, plots, traces, determinism."""

import json

from conftest import TESTBED


def test_platforms_lists_the_testbed_with_a_description(tca):
    out = tca("platforms").stdout
    assert "peach2-testbed-2013" in out and "Sandy Bridge" in out


def test_platform_show_lists_every_parameter_with_its_source(tca):
    out = tca("platforms", "--show", "peach2-testbed-2013").stdout
    assert "pcie.host_link.max_payload" in out and "seed 000 Table 2" in out
    assert out.count("[calibrated on") == 4
    # Settings the file gives every link but no model uses say so.
    unused = [line.split()[0] for line in out.splitlines() if "[not used:" in line]
    assert unused == [
        "pcie.cable_link.max_read_request",
        "pcie.cable_link.read_completion_boundary",
        "pcie.gpu_link.max_read_request",
    ]


def test_table_then_comparison(tca):
    out = tca("bench", "dma-bw", "--platform", "peach2-testbed-2013", "--experiment", "fig5").stdout
    lines = out.splitlines()
    assert lines[1].startswith("# Size (B)") and "Chaining (GB/s)" in lines[1]
    assert "# Comparison with the seed" in out
    assert any(line.split()[:2] == ["Register/Chaining", "1024"] and "calibrated" in line for line in lines)


def test_json_rows_follow_the_interface(tca):
    proc = tca("bench", "dma-bw", "--platform", str(TESTBED), "--experiment", "fig6", "--json")
    rows = json.loads(proc.stdout)  # stdout holds the JSON array and nothing else
    keys = {"benchmark", "platform", "series", "x", "x_unit", "value", "unit", "paper", "source", "kind"}
    assert all(set(r) == keys for r in rows)
    assert {r["series"] for r in rows} == {"CPU-CPU", "CPU-GPU", "GPU-GPU", "CPU-CPU % of max"}
    assert all(r["kind"] in ("calibrated", "predicted") for r in rows)
    assert all(r["unit"] == "GB/s" for r in rows if r["series"] != "CPU-CPU % of max")
    seeded = [r for r in rows if r["paper"] is not None]
    assert len(seeded) == 1 and seeded[0]["x"] == 4 and seeded[0]["source"].startswith("seed 000")


def test_plot_and_trace_files(tca, tmp_path):
    png, trace = tmp_path / "f.png", tmp_path / "t.json"
    tca(
        "bench",
        "dma-bw",
        "--platform",
        "peach2-testbed-2013",
        "--experiment",
        "fig5",
        "--sizes",
        "256,4K",
        "--plot",
        str(png),
        "--trace",
        str(trace),
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {
        "node0 N port -> root complex",
        "node0 root complex -> N port",
        "node0 PEACH2 DMA channel 0",
    } <= names
    processes = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert len(processes) == 4  # two sizes x two modes
    spans = [e for e in events if e["ph"] == "X"]
    assert any(e["name"] == "MWr 256 B" for e in spans) and all(e["dur"] >= 0 for e in spans)


def test_two_runs_are_byte_identical(tca, tmp_path):
    outs = []
    for i in range(2):
        trace = tmp_path / f"t{i}.json"
        proc = tca(
            "bench",
            "dma-bw",
            "--platform",
            "peach2-testbed-2013",
            "--experiment",
            "fig6",
            "--json",
            "--trace",
            str(trace),
        )
        outs.append((proc.stdout, trace.read_bytes()))
    assert outs[0] == outs[1]


def test_tracing_records_spans_and_changes_no_number(tca, tmp_path):
    base = ["bench", "pingpong", "--platform", "peach2-testbed-2013", "--sizes", "64", "--json"]
    plain = json.loads(tca(*base).stdout)
    trace = tmp_path / "t.json"
    traced = json.loads(tca(*base, "--trace", str(trace)).stdout)
    assert traced == plain
    spans = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(spans) > 100 and all(e["dur"] >= 0 for e in spans)
    # The one-way latency is half a round trip; the last span ends no earlier than 100 round trips.
    latency = next(r["value"] for r in plain if r["unit"] == "us")
    assert max(e["ts"] + e["dur"] for e in spans) >= 2 * 100 * latency * 0.99
