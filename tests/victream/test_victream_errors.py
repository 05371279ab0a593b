"""Failures: a user function that raises names its task and partition, and the runtime's
threads stop; bad input gets one line from the CLI."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from tca import TcaError
from tca.victream import Context, UserFunctionError, VirtualGPU


def _workers():
    return [t for t in threading.enumerate() if t.name.startswith("gpu")]


@pytest.mark.parametrize("scheduler", ["fifo", "victream"])
def test_user_function_error_names_task_and_partition_and_shuts_down(scheduler):
    ctx = Context(
        [VirtualGPU("64KiB", "10GB/s", "0us", name=f"gpu{i}") for i in range(2)],
        scheduler=scheduler,
        partition_size="4KiB",
    )
    a = np.arange(4000, dtype=np.float64).reshape(-1, 4)

    def f(v):
        if v[0, 0] >= 2000:
            raise ValueError("bad value")
        return v

    x = ctx.array(a).map(f)
    with pytest.raises(UserFunctionError) as e:
        x.collect()
    msg = str(e.value)
    assert "user function of task map#" in msg and "failed on partition" in msg and "bad value" in msg
    assert isinstance(e.value, TcaError)
    # 128 rows per 4 KiB partition: partitions 4-7 start at a value >= 2000 and fail
    assert e.value.index >= 4 and f"partition {e.value.index}:" in msg
    deadline = time.monotonic() + 5
    while _workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _workers()  # every executor thread has stopped
    # the context stays usable for the next action
    np.testing.assert_array_equal(ctx.array(a[:100]).map(lambda v: v + 1).collect(), a[:100] + 1)


def test_output_larger_than_declared_is_an_error():
    ctx = Context([VirtualGPU("1MiB", "10GB/s", "0us", name="gpu0")], partition_size="4KiB")
    x = ctx.array(np.zeros((100, 4)))
    with pytest.raises(TcaError, match="produced .* B for an output reserved"):
        x.mapPartitions(
            lambda v: np.zeros((1000, 4)), __import__("tca.victream", fromlist=["MM"]).MM(ncols=4)
        ).collect()


def _tca(*args):
    return subprocess.run([sys.executable, "-m", "tca", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args,msg",
    [
        (["victream", "bench", "--workload", "nope"], "unknown workload 'nope'"),
        (["victream", "bench", "--mode", "fpga"], "unknown mode 'fpga'"),
        (["victream", "bench", "--scheduler", "fifo,lifo", "--mode", "sim"], "unknown scheduler 'lifo'"),
        (["victream", "bench", "--device-memory", "lots"], "bad size 'lots'"),
        (["victream", "bench", "--devices", "0"], "--devices must be at least 1"),
        (["victream", "bench", "--mode", "sim", "--device-memory", "1MiB", "--partition", "1MiB"], "needs"),
        (["victream", "optimal", "--workload", "sort"], "unknown case 'sort'"),
        (["victream", "optimal", "--mode", "virtual"], "sim mode only"),
    ],
)
def test_cli_errors_are_one_line(args, msg):
    # (the cupy mode without a GPU is checked below, where it applies)
    r = _tca(*args)
    assert r.returncode == 2, r.stderr
    assert msg in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Traceback" not in r.stderr


def test_cupy_mode_without_a_gpu_is_one_line():
    from tca.victream.devices import cupy_available

    if cupy_available()[0]:
        pytest.skip("a GPU is usable here: the cupy mode runs in test_victream_cupy.py")
    r = _tca("victream", "bench", "--mode", "cupy")
    assert r.returncode == 2 and r.stderr.startswith("tca: error: cupy mode:")
    assert len(r.stderr.strip().splitlines()) == 1
