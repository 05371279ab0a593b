"""``tca hxb bench ... --platform P``: the simulated PM/Ethernet-HXB benchmarks (seed 004) as a
user runs them: JSON rows with the seed's cells, and one-line errors."""

import json

import pytest


def rows_of(tca, *args):
    proc = tca("hxb", "bench", *args, "--json")
    rows = json.loads(proc.stdout)
    assert rows and all(
        set(r) >= {"benchmark", "platform", "series", "x", "value", "unit", "paper", "kind"} for r in rows
    )
    return rows


def one(rows, series, x):
    (r,) = [r for r in rows if r["series"] == series and r["x"] == x]
    return r


def test_bandwidth_rows_reproduce_table4_and_table7(tca):
    rows = rows_of(
        tca, "bandwidth", "--platform", "hxb-testbed-2006", "--links", "4,9", "--sizes", "4,1M", "--mpi"
    )
    assert {r["platform"] for r in rows} == {"hxb-testbed-2006"}
    assert all("HXB" in r["series"] or r["series"].startswith("NT") for r in rows)
    bw9 = one(rows, "HXB x9", 1 << 20)
    assert (bw9["unit"], bw9["paper"], bw9["kind"]) == ("GB/s", 1.065, "calibrated")
    assert abs(bw9["value"] / bw9["paper"] - 1) <= 0.10
    eff4 = one(rows, "HXB x4 efficiency", 1 << 20)
    assert (eff4["unit"], eff4["paper"], eff4["kind"]) == ("%", 99, "predicted")
    assert 97 < eff4["value"] <= 100
    lat = one(rows, "HXB x4 processing latency", 4)
    assert lat["unit"] == "us" and abs(lat["value"] - 2.58) / 2.58 <= 0.15
    nt = one(rows, "NT x4", 1 << 20)
    assert abs(nt["value"] - 0.393) / 0.393 <= 0.15 and "NT" in nt["series"]
    mpi = one(rows, "MPI/HXB x9 bidirectional", 1 << 20)
    assert "MPI" in mpi["series"] and mpi["paper"] == 0.921 and abs(mpi["value"] / 0.921 - 1) <= 0.15
    # Only peak cells and 4 B latencies carry a seed value.
    assert all(r["paper"] is None for r in rows if r["x"] not in (4, 1 << 20))


def test_latency_rows_reproduce_table6(tca):
    rows = rows_of(tca, "latency", "--platform", "hxb-testbed-2006", "--relays", "0,1,2")
    hrtt = [one(rows, "HXB x2 half RTT", r) for r in (0, 1, 2)]
    assert [h["paper"] for h in hrtt] == [14.9, 27.5, 39.3]
    assert [h["kind"] for h in hrtt] == ["calibrated", "calibrated", "predicted"]
    assert all(abs(h["value"] / h["paper"] - 1) <= 0.15 for h in hrtt)
    assert hrtt[0]["value"] < hrtt[1]["value"] < hrtt[2]["value"]
    pen = one(rows, "HXB x2 4 B penalty", 1)
    assert (pen["unit"], pen["paper"]) == ("%", 26) and abs(pen["value"] - 26) < 2.6


def test_the_4_byte_penalty_does_not_depend_on_the_order_of_relays(tca):
    def penalties(relays):
        rows = rows_of(tca, "latency", "--platform", "hxb-testbed-2006", "--relays", relays)
        return {r["x"]: r["value"] for r in rows if "penalty" in r["series"]}

    assert penalties("0,1,2") == penalties("2,1,0")
    assert penalties("1,2") == {r: v for r, v in penalties("0,1,2").items() if r > 0}


def test_neighbour_rows_reproduce_table5_on_pacs_cs(tca):
    rows = rows_of(tca, "neighbour", "--platform", "pacs-cs", "--dims", "3")
    bidir = one(rows, "HXB x2 bidirectional", 3)
    assert (bidir["unit"], bidir["paper"]) == ("GB/s", 1.4013)
    assert abs(bidir["value"] / bidir["paper"] - 1) <= 0.15
    assert one(rows, "HXB x2 send efficiency", 3)["unit"] == "%"


def test_budget_rows_reproduce_table2(tca):
    rows = rows_of(tca, "budget", "--platform", "pacs-cs", "--links", "6", "--sizes", "8192")
    formula = one(rows, "HXB 8192 B formula", 6)
    assert formula["paper"] == 10.9 and abs(formula["value"] - 10.9) < 0.05
    framed = one(rows, "HXB 8192 B with framing", 6)
    assert framed["value"] > formula["value"]


def test_trace_is_written_for_the_first_point(tca, tmp_path):
    out = tmp_path / "t.json"
    tca(
        "hxb",
        "bench",
        "latency",
        "--platform",
        "hxb-testbed-2006",
        "--relays",
        "1",
        "--trace",
        str(out),
        "--json",
    )
    names = {e.get("name") for e in json.loads(out.read_text())["traceEvents"]}
    assert {"send DATA", "relay in", "recv DATA"} <= names


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            ["bandwidth", "--platform", "no-such"],
            "unknown HXB platform 'no-such' (available: hxb-testbed-2006, pacs-cs)",
        ),
        (
            ["bandwidth", "--platform", "pacs-cs", "--links", "2,9"],
            "platform pacs-cs has at most 2 links per dimension",
        ),
        (["bandwidth", "--platform", "pacs-cs", "--links", "two"], "--links: expected a comma list"),
        (["bandwidth", "--platform", "pacs-cs", "--links", "0"], "--links: 0 is outside 1..64"),
        (["latency", "--platform", "hxb-testbed-2006", "--relays", "3"], "--relays: 3 is outside 0..2"),
        (["neighbour", "--platform", "hxb-testbed-2006", "--dims", "4"], "--dims: 4 is outside 1..3"),
        (["bandwidth", "--platform", "missing/x.toml"], "platform file not found"),
        (["bandwidth"], "--platform is required"),
        (["budget", "--fabric", "net"], "budget applies to --fabric sim only"),
        # A size the simulator cannot hold (100 GiB aborted, 4 GiB was killed for memory, 1 TiB
        # of budget raised a traceback), and lists where one size is measured.
        (
            ["bandwidth", "--platform", "hxb-testbed-2006", "--links", "2", "--sizes", "100G"],
            "at most 256 MiB",
        ),
        (["budget", "--platform", "hxb-testbed-2006", "--sizes", "1T"], "at most 256 MiB"),
        (["latency", "--platform", "hxb-testbed-2006", "--sizes", "8,1024"], "give one size"),
        (["neighbour", "--platform", "hxb-testbed-2006", "--sizes", "4,1M"], "give one size"),
        (["budget", "--platform", "hxb-testbed-2006", "--trace", "t.json"], "--trace applies to bandwidth"),
    ],
)
def test_errors_are_one_line(tca, args, fragment):
    proc = tca("hxb", "bench", *args, check=False)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], proc.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        (["bandwidth", "--links", "2", "--sizes", "64,64"], "--sizes: 64 B is given twice"),
        (["budget", "--sizes", "1K,1024"], "--sizes: 1024 B is given twice"),
        (["bandwidth", "--links", "2,2", "--sizes", "64"], "--links: 2 is given twice"),
        (["latency", "--relays", "1,1"], "--relays: 1 is given twice"),
        (["neighbour", "--links", "2", "--dims", "1,1", "--sizes", "4K"], "--dims: 1 is given twice"),
        (
            ["bandwidth", "--links", "2", "--sizes", "3:17"],
            "--sizes: 3:17: a LOW:HIGH range runs over powers of two and 3 B is not one "
            "(give other sizes as a comma list)",
        ),
        (
            ["budget", "--sizes", "4:1000"],
            "--sizes: 4:1000: a LOW:HIGH range runs over powers of two and 1000 B is not one",
        ),
    ],
)
def test_a_value_twice_and_a_range_not_of_powers_of_two_are_refused(capsys, args, message):
    # a value given twice was run twice (its rows twice in --json); 3:17 ran 3, 6 and 12 B
    # under a help that says "powers of two"
    from tca.cli import main

    assert main(["hxb", "bench", *args, "--platform", "hxb-testbed-2006"]) == 2
    out = capsys.readouterr()
    assert out.err.startswith(f"tca: error: {message}") and out.err.count("\n") == 1
    assert out.out == ""


LATENCY = ["latency", "--platform", "hxb-testbed-2006", "--links", "2", "--sizes", "4"]


@pytest.mark.parametrize(
    "args,option",
    [
        (LATENCY, o)
        for o in (
            "--platform",
            "--links",
            "--sizes",
            "--relays",
            "--rate",
            "--loss",
            "--baselines",
            "--plot",
            "--trace",
        )
    ]
    + [(["neighbour", "--platform", "hxb-testbed-2006", "--links", "2"], "--dims")]
    + [(["bandwidth", "--fabric", "net"], o) for o in ("--links", "--sizes", "--rate", "--loss")],
)
@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_option_value_is_named(capsys, args, option, value):
    # "" was an unknown platform, a list that is not one, or nothing at all (--links and
    # --sizes took their defaults, --plot was not written)
    from tca.cli import main

    assert main(["hxb", "bench", *args, option, value]) == 2
    out = capsys.readouterr()
    assert out.err == f"tca: error: {option}: empty value (give one, or leave the option out)\n"
    assert out.out == ""


def test_platforms_command_still_lists_only_tca_platforms(tca):
    out = tca("platforms").stdout
    assert "peach2-testbed-2013" in out and "pacs-cs" not in out
