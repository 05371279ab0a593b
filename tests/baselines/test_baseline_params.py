"""Parameter tables of the baseline models: loaded and checked by the platform loader, read
with units by the models, one-line errors."""

import copy
import tomllib
from pathlib import Path

import pytest
from fixture_platforms import FIXTURES, fixture_params, fixture_platform
from tca import TcaError
from tca.peach import platforms
from tca.peach.baselines import BASELINES, load_params
from tca.peach.baselines.params import Params, table

PLATFORMS = ("peach2-testbed-2013", "ha-pacs-tca", "peach3-testbed")


def error(fn, *args) -> str:
    with pytest.raises(TcaError) as e:
        fn(*args)
    message = str(e.value)
    assert "\n" not in message and message
    return message


def test_units_convert_to_si():
    p = Params(
        {
            "a": {"value": "6.5 us", "source": "s"},
            "b": {"value": "150 ns", "source": "s"},
            "c": {"value": "870 MB/s", "source": "s"},
            "d": {"value": "3.5 GB/s", "source": "s"},
            "e": {"value": "512 KiB", "source": "s"},
            "f": {"value": "256 B", "source": "s"},
            "g": {"value": 8, "source": "s"},
            "h": {"value": "QDR", "source": "s", "calibrated": "x"},
        },
        "baselines.t",
    )
    assert p.time("a") == pytest.approx(6.5e-6)
    assert p.time("b") == pytest.approx(150e-9)
    assert p.bandwidth("c") == pytest.approx(870e6)
    assert p.bandwidth("d") == pytest.approx(3.5e9)
    assert p.size("e") == 512 * 1024
    assert p.size("f") == 256
    assert p.count("g") == 8
    assert p.word("h", ("QDR", "FDR")) == "QDR"
    assert p.entry("h").calibrated == "x"


@pytest.mark.parametrize(
    "item, accessor, expected",
    [
        (
            {"value": "1 GB/s", "source": "s"},
            "time",
            "baselines.t.k: expected a time in ps, ns, us, ms or s, got '1 GB/s'",
        ),
        ({"value": "1 us", "source": "s"}, "bandwidth", "baselines.t.k: expected a bandwidth in B/s"),
        (
            {"value": "4 furlongs", "source": "s"},
            "size",
            "baselines.t.k: expected a size in B, KiB, MiB, GiB or TiB, got '4 furlongs'",
        ),
        ({"value": "-3 ns", "source": "s"}, "time", "baselines.t.k: '-3 ns' is negative"),
        (
            {"value": "0 GB/s", "source": "s"},
            "bandwidth",
            "baselines.t.k: '0 GB/s' must be greater than zero",
        ),
        ({"value": "0.5 B", "source": "s"}, "size", "baselines.t.k: '0.5 B' is not a whole number of bytes"),
        (
            {"value": 6.5, "source": "s"},
            "time",
            "baselines.t.k: expected a time with its unit as a string, got 6.5",
        ),
        (
            {"value": "fast", "source": "s"},
            "time",
            "baselines.t.k: 'fast' is not a number followed by a unit",
        ),
        ({"value": 0, "source": "s"}, "count", "must be at least 1"),
        ({"value": "0 B", "source": "s"}, "size", "baselines.t.k: size '0 B' must be positive"),
        ({"value": "4 KB", "source": "s"}, "size", "expected a size in B, KiB, MiB, GiB or TiB, got '4 KB'"),
        ({"value": "4K", "source": "s"}, "size", "expected a size in B, KiB, MiB, GiB or TiB, got '4K'"),
        ({"value": "nan us", "source": "s"}, "time", "'nan us' is not a number followed by a unit"),
        ({"value": "QDR", "source": "s"}, "count", "expected a whole number, got 'QDR'"),
        ({"value": "XDR", "source": "s"}, "word", "expected one of QDR, FDR, got 'XDR'"),
    ],
)
def test_bad_parameters_give_one_line_errors(item, accessor, expected):
    # Values as the calibration solver or a test may set them after loading: the accessors
    # parse them again with the one unit parser.
    p = Params({"k": item}, "baselines.t")
    args = ("k", ("QDR", "FDR")) if accessor == "word" else ("k",)
    assert expected in error(getattr(p, accessor), *args)


def test_missing_parameter_and_table():
    assert error(Params({}, "baselines.cuda").time, "call_overhead") == (
        "baselines.cuda.call_overhead: missing parameter"
    )
    assert "no [baselines.cuda] table" in error(table, {"node": {}}, "cuda")


def test_a_model_reports_a_missing_or_broken_parameter():
    params = fixture_params("ha-pacs-tca")
    broken = copy.deepcopy(params)
    del broken["mvapich2"]["eager_threshold"]
    assert "baselines.mvapich2.eager_threshold: missing parameter" in error(
        BASELINES["mvapich2-gdr"].pingpong_latency_us, broken, "gpu-gpu", 8
    )
    broken = copy.deepcopy(params)
    broken["node"]["pcie_latency"]["value"] = "-150 ns"
    assert "baselines.node.pcie_latency: '-150 ns' is negative" in error(
        BASELINES["cuda-peer-uva"].pingpong_latency_us, broken, "cpu-gpu", 8
    )
    broken = copy.deepcopy(params)
    broken["mvapich2"]["ib_speed"]["value"] = "XDR"
    assert "baselines.mvapich2.ib_speed: expected one of" in error(
        BASELINES["mvapich2"].pingpong_latency_us, broken, "cpu-cpu", 8
    )


def test_load_needs_a_baselines_table(tmp_path):
    path = fixture_platform("ha-pacs-tca", tables="")
    assert error(load_params, path) == "ha-pacs-tca.toml: no [baselines] table (see docs/baselines.md)"
    assert "not found" in error(load_params, tmp_path / "missing.toml")
    # A platform the loader rejects never reaches the tables.
    bare = tmp_path / "bare.toml"
    bare.write_text('[platform]\nname = "bare"\n')
    assert error(load_params, bare) == f"{bare}: missing field 'platform.description'"


def test_the_loader_keeps_types_sources_and_calibrations():
    params = fixture_params("ha-pacs-tca")
    assert set(params) == {"node", "cuda", "mvapich2", "smpi"}
    assert params["node"]["gpu_link_lanes"] == {
        "value": 16,
        "source": "seed 000 §2.1: each GPU has x16 lanes of a CPU socket",
        "calibrated": None,
    }
    assert params["node"]["pcie_latency"]["value"] == "150 ns"
    assert params["mvapich2"]["ib_speed"]["value"] == "QDR"
    assert params["mvapich2"]["rails"]["value"] == 2
    assert params["mvapich2"]["cuda_buffer_check"]["calibrated"].startswith("seed 001: MVAPICH2-GDR")
    node = table(params, "node")
    assert node.time("pcie_latency") == pytest.approx(150e-9)
    assert node.count("gpu_link_lanes") == 16


@pytest.mark.parametrize("name", PLATFORMS)
def test_the_bundled_platforms_carry_the_fixture_values(name):
    # The platform files may word a source differently; the values are the tested ones.
    def values(params):
        return {t: {k: e["value"] for k, e in entries.items()} for t, entries in params.items()}

    assert values(platforms.load(name).baselines()) == values(fixture_params(name))


@pytest.mark.parametrize(
    "replace, bad, expected",
    [
        (
            "pcie_latency",
            'pcie_latency = { value = "150 ns" }',
            "baselines.node.pcie_latency: missing 'source'",
        ),
        ("pcie_latency", 'pcie_latency = { source = "s" }', "baselines.node.pcie_latency: missing 'value'"),
        (
            "pcie_latency",
            'pcie_latency = { value = "150 ns", source = "s", note = "x" }',
            "baselines.node.pcie_latency: unknown field 'note' (expected value, source, calibrated)",
        ),
        (
            "pcie_latency",
            'pcie_latency = "150 ns"',
            'baselines.node.pcie_latency: expected { value = ..., source = "..." }',
        ),
        (
            "pcie_latency",
            'pcie_latency = { value = "1 GB/s", source = "s" }',
            "baselines.node.pcie_latency: expected a time",
        ),
        (
            "pcie_latency",
            'pcie_latency = { value = 6.5, source = "s" }',
            "baselines.node.pcie_latency: value must be a string with a unit or an integer",
        ),
        (
            "max_payload",
            'max_payload = { value = "192 B", source = "s" }',
            "baselines.node.max_payload: '192 B' is out of range: allowed a power of two from 128 B to 4 KiB",
        ),
        (
            "gpu_link_lanes",
            'gpu_link_lanes = { value = 0, source = "s" }',
            "baselines.node.gpu_link_lanes: '0' is out of range: allowed 1 to 32",
        ),
        (
            "pcie_latency",
            'pcie_latncy = { value = "150 ns", source = "s" }',
            "unknown parameter 'baselines.node.pcie_latncy'",
        ),
    ],
)
def test_a_bad_baseline_value_is_one_line_from_the_platform_loader(replace, bad, expected):
    text = (FIXTURES / "ha-pacs-tca.toml").read_text()
    lines = [bad if line.startswith(f"{replace} = ") else line for line in text.splitlines()]
    assert lines != text.splitlines()
    path = fixture_platform("ha-pacs-tca", tables="\n".join(lines) + "\n")
    # One line naming the file and the key (error() checks the one line).
    assert error(load_params, path).startswith(f"{path}: {expected}")


@pytest.mark.parametrize("name", PLATFORMS)
def test_every_parameter_has_a_unit_checked_value_and_a_source(name):
    params = fixture_params(name)
    for table_name in ("node", "cuda", "mvapich2"):
        for entry in table(params, table_name).entries():
            assert entry.source.strip()
    for baseline in BASELINES.values():
        for pair in baseline.pairs:
            assert baseline.pingpong_latency_us(params, pair, 4) > 0


def test_calibrated_parameters_are_exactly_the_declared_set():
    from tca.peach.baselines.calibrate import CALIBRATION

    declared = {(t.platform, t.table, t.key) for t in CALIBRATION}
    found = set()
    for name in PLATFORMS:
        for table_name, entries in fixture_params(name).items():
            for key, item in entries.items():
                if item["calibrated"] is not None:
                    found.add((name, table_name, key))
    assert found == declared


def test_docs_snippets_are_the_fixtures():
    # docs/baselines.md gives each platform's complete [baselines.*] tables; they must be the
    # tables the tests run on.
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "baselines.md").read_text()
    for name in PLATFORMS:
        m = re.search(rf"### {re.escape(name)} \(seed \d+\)\n\n```toml\n(.*?)```", doc, re.S)
        assert m, f"no snippet for {name} in docs/baselines.md"
        with open(FIXTURES / f"{name}.toml", "rb") as f:
            assert tomllib.loads(m.group(1)) == tomllib.load(f)
