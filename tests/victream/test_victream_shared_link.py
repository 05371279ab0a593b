"""The shared link of GPUs behind ExpEther in sim mode: fair sharing, contention, the
bandwidths computed from the platform, and local runs unchanged."""

from __future__ import annotations

import subprocess
import sys

import pytest
from tca import TcaError
from tca.victream.api.context import Context
from tca.victream.apps import workloads as W
from tca.victream.sim import expether as X
from tca.victream.sim.cost import PS
from tca.victream.sim.link import SharedLink


def test_max_min_fair_shares():
    link = SharedLink(10.0)
    link.add(0, "a", 100, cap=2.0)
    link.add(0, "b", 100, cap=100.0)
    link.add(0, "c", 100, cap=100.0)
    assert link.rates() == {"a": 2.0, "b": 4.0, "c": 4.0}
    t, key = link.next_end()
    assert key == "b" and t == 25 * PS
    link.remove(t, "b")
    assert link.rates() == {"a": 2.0, "c": 8.0}
    assert link.flows["c"].remaining == pytest.approx(0.0)
    assert link.flows["a"].remaining == pytest.approx(50.0)


def test_a_flow_alone_runs_at_its_cap():
    link = SharedLink(10.0)
    link.add(5, "a", 30, cap=3.0)
    assert link.next_end() == (5 + 10 * PS, "a")


def _logreg(devices, links=None, iterations=2):
    ctx = Context(
        devices,
        mode="sim",
        device_memory="64MiB",
        partition_size="4MiB",
        bus_bandwidth="2GB/s",
        scheduler="victream",
    )
    if links is not None:
        ctx.sim.links = {"in": SharedLink(links), "out": SharedLink(links)}
    W.run(ctx, W.make_inputs("logreg", 512 * 2**20, 1, real=False, iterations=iterations))
    return ctx


def test_an_unbounded_shared_link_gives_the_local_schedule():
    local, linked = _logreg(3), _logreg(3, links=1e18)
    assert linked.elapsed_s == pytest.approx(local.elapsed_s, rel=1e-9)
    assert local.summary().swap_in == linked.summary().swap_in


def test_transfers_of_different_gpus_contend_on_the_link():
    alone = _logreg(1, links=2e9).elapsed_s
    free = _logreg(3, links=1e18).elapsed_s
    shared = _logreg(3, links=2e9).elapsed_s  # three GPUs through one GPU's bandwidth
    assert shared > 1.5 * free
    assert shared > 0.5 * alone  # the shared link, not the GPUs, sets the pace


def test_bandwidths_are_computed_from_the_platform():
    a = X.load("expether-40gbe")
    # 10 TLPs of 128 B per frame; wire: 34 B header + 12 B extra + 10 x (2 + 12 + 128) B + 24 B
    assert a.tlps_per_frame == 10
    assert a.link_in == pytest.approx(2 * 5e9 * 1280 / 1490)
    assert a.link_out == pytest.approx(2 * 5e9 * 1280 / 1530)
    # Gen2 x8: 4 GB/s of TLP bytes; 128 B payload + 12 (16) B header + 8 B link overhead
    assert a.gpu_in == pytest.approx(4e9 * 128 / 148)
    assert a.gpu_out == pytest.approx(4e9 * 128 / 152)
    # local latency + 2 bridge traversals (1.02 us) + switch 1 us + a 1506 + 24 B frame at 40 Gb/s + 2 cables
    assert a.latency == pytest.approx(10e-6 + 2 * 1.02e-6 + 1e-6 + 1530 / 5e9 + 2 * 10e-9)


def test_unknown_platform_is_a_one_line_error():
    with pytest.raises(TcaError, match="unknown ExpEther platform .no-such-platform."):
        X.load("no-such-platform")


@pytest.mark.parametrize(
    "args,message",
    [
        (["--devices", "1,2"], "lists need --attach expether"),
        (["--attach", "pcie"], "unknown attachment 'pcie'"),
        (["--attach", "expether", "--data", "1GB"], "--data does not apply"),
        (["--attach", "expether", "--mode", "virtual"], "sim-mode model"),
        (["--attach", "expether", "--workload", "pansharpen"], "unknown workload 'pansharpen'"),
        (["--attach", "expether", "--devices", "1,x"], "--devices: expected comma-separated numbers"),
    ],
)
def test_bad_options_are_one_line_errors(args, message):
    r = subprocess.run(
        [sys.executable, "-m", "tca", "victream", "bench", *args], capture_output=True, text=True, timeout=60
    )
    assert r.returncode != 0
    assert message in r.stderr
    assert "Traceback" not in r.stderr
