"""Parameter tables of the baseline models: units, required fields, one-line errors."""

import copy
import tomllib
from pathlib import Path

import pytest
from tca import TcaError
from tca.baselines import BASELINES, load_params
from tca.baselines.params import Params, table

FIXTURES = Path(__file__).parent / "fixtures"
PLATFORMS = ("peach2-testbed-2013", "ha-pacs-tca", "peach3-testbed")


def fixture(name: str) -> dict:
    return load_params(FIXTURES / f"{name}.toml")


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
        ({"source": "s"}, "time", "baselines.t.k: missing field 'value'"),
        ({"value": "1 us"}, "time", "baselines.t.k: missing field 'source'"),
        ({"value": "1 us", "source": ""}, "time", "'source' must be a non-empty string"),
        ({"value": "1 us", "source": "s", "note": "x"}, "time", "unknown field 'note'"),
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
        ("6.5 us", "time", 'expected { value = ..., source = "..." }'),
    ],
)
def test_bad_parameters_give_one_line_errors(item, accessor, expected):
    p = Params({"k": item}, "baselines.t")
    assert expected in error(getattr(p, accessor), "k")


def test_missing_parameter_and_table():
    assert error(Params({}, "baselines.cuda").time, "call_overhead") == (
        "baselines.cuda.call_overhead: missing parameter"
    )
    assert "no [baselines.cuda] table" in error(table, {"node": {}}, "cuda")


def test_a_model_reports_a_missing_or_broken_parameter():
    params = fixture("ha-pacs-tca")
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
    path = tmp_path / "bare.toml"
    path.write_text('[platform]\nname = "bare"\n')
    assert "no [baselines] table" in error(load_params, path)
    assert "not found" in error(load_params, tmp_path / "missing.toml")


@pytest.mark.parametrize("name", PLATFORMS)
def test_every_parameter_has_a_unit_checked_value_and_a_source(name):
    params = fixture(name)
    for table_name in ("node", "cuda", "mvapich2"):
        for entry in table(params, table_name).entries():
            assert entry.source.strip()
    for baseline in BASELINES.values():
        for pair in baseline.pairs:
            assert baseline.pingpong_latency_us(params, pair, 4) > 0


def test_calibrated_parameters_are_exactly_the_declared_set():
    from tca.baselines.calibrate import CALIBRATION

    declared = {(t.platform, t.table, t.key) for t in CALIBRATION}
    found = set()
    for name in PLATFORMS:
        with open(FIXTURES / f"{name}.toml", "rb") as f:
            data = tomllib.load(f)["baselines"]
        for table_name, entries in data.items():
            for key, item in entries.items():
                if "calibrated" in item:
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
