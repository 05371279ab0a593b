"""The seed's workloads against their NumPy references, on emulated GPUs with small memories
(seed 002 §6.1), for every scheduler."""

from __future__ import annotations

import numpy as np
import pytest
from tca.victream import Context, VirtualGPU
from tca.victream.apps import workloads as W
from tca.victream.core.scheduler import POLICIES

KiB, MiB = 2**10, 2**20


def small_ctx(scheduler: str, devices: int = 2, memory: str = "256KiB", partition: str = "16KiB") -> Context:
    devs = [VirtualGPU(memory, "10GB/s", "0us", name=f"gpu{i}") for i in range(devices)]
    return Context(devs, scheduler=scheduler, partition_size=partition)


@pytest.mark.parametrize("name", W.WORKLOADS)
@pytest.mark.parametrize("scheduler", POLICIES)
def test_workload_matches_numpy_out_of_core(name, scheduler):
    inp = W.make_inputs(name, 1 * MiB, seed=3)
    ctx = small_ctx(scheduler)
    result = W.run(ctx, inp)
    W.check(inp, result, rtol=1e-3, atol=1e-3)
    s = ctx.summary()
    assert s.swap_in > 0
    assert all(m.peak <= m.capacity for m in ctx.core.mem)
    assert all(d.used <= d.capacity for d in ctx.devices)


@pytest.mark.parametrize("name", W.WORKLOADS)
def test_workload_in_core_equals_out_of_core(name):
    inp = W.make_inputs(name, 256 * KiB, seed=5)
    big = W.run(small_ctx("victream", 1, "64MiB", "16KiB"), inp)
    small = W.run(small_ctx("victream", 3, "128KiB", "16KiB"), inp)
    if isinstance(big, tuple):
        for a, b in zip(big, small, strict=True):
            np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(big, small, rtol=1e-4, atol=1e-5)


def test_pansharpen_has_25_user_functions():
    """seed 002 §6.1.1: the pan-sharpening DAG has 25 tasks (user-defined functions)."""
    inp = W.make_inputs("pansharpen", 512 * KiB, seed=2)
    ctx = small_ctx("victream", memory="4MiB", partition="64KiB")
    W.run(ctx, inp)
    tasks = {st.task.split(".")[0] for st in ctx.core.subtasks.values()}
    tasks.discard(None)
    assert len(tasks) == 25, sorted(tasks)


def test_logreg_converges_towards_the_labels():
    inp = W.make_inputs("logreg", 512 * KiB, seed=4, iterations=20)
    w = W.run(small_ctx("victream"), inp)
    x, y = inp.arrays["data"][:, :-1], inp.arrays["data"][:, -1]
    accuracy = float(((x @ w > 0) == (y > 0.5)).mean())
    assert accuracy > 0.8
