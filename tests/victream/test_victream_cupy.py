"""The CuPy path on a real GPU. Skipped where CuPy or a CUDA device is missing (the reason is
printed by ``pytest -rs``); it never passes by doing nothing."""

from __future__ import annotations

import pytest
from tca.victream.runtime.devices import cupy_available

OK, WHY = cupy_available()
pytestmark = pytest.mark.skipif(not OK, reason=f"CuPy path needs a GPU: {WHY}")

MiB = 2**20


@pytest.mark.parametrize("name", ["logreg", "sort", "blur", "matmul", "pansharpen"])
@pytest.mark.parametrize("scheduler", ["fifo", "victream"])
def test_workloads_on_cupy_match_numpy(name, scheduler):
    from tca.victream import Context
    from tca.victream.apps import workloads as W

    inp = W.make_inputs(name, 8 * MiB, seed=3)
    ctx = Context(2, mode="cupy", device_memory="4MiB", partition_size="256KiB", scheduler=scheduler)
    result = W.run(ctx, inp)
    W.check(inp, result, rtol=1e-3, atol=1e-3)
    assert ctx.summary().swap_in > 0
    assert all(m.peak <= m.capacity for m in ctx.core.mem)
