"""Failures: a user function that raises, or returns what its MM does not allow, names its task
and partition, and the runtime's threads stop; bad input gets one line from the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from tca import TcaError
from tca.victream import MM, Context, UserFunctionError, VirtualGPU


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
        x.mapPartitions(lambda v: np.zeros((1000, 4)), MM(ncols=4)).collect()


def _small_ctx():
    return Context([VirtualGPU("1MiB", "10GB/s", "0us", name="gpu0")], partition_size="4KiB")


def test_host_reducer_error_names_task_and_partition():
    ctx = _small_ctx()
    x = ctx.array(np.arange(4000, dtype=np.float64).reshape(-1, 4))  # 4 partitions of 4 KiB
    calls = []

    def fold(a, b):
        calls.append(1)
        if len(calls) == 2:  # folding in partition 2
            return a / 0 if isinstance(a, int) else 1 // 0
        return a + b

    with pytest.raises(UserFunctionError) as e:
        x.reduce(lambda v: v.sum(keepdims=True).ravel(), fold)
    msg = str(e.value)
    assert "task reduce#" in msg and "(host reducer)" in msg
    assert "failed on partition 2: ZeroDivisionError" in msg
    assert e.value.index == 2 and isinstance(e.value.error, ZeroDivisionError)


@pytest.mark.parametrize(
    "fn,mm,expect",
    [
        (lambda v: None, None, "returned None as the result, expected an array for format 'dense'"),
        (lambda v: v.tolist(), None, "returned a list as the result, expected an array"),
        (lambda v: float(v.sum()), None, "returned a float as the result"),
        (lambda v: v.astype(np.float32), None, "returned float32 elements, MM declares float64"),
        (lambda v: v[:, :2], None, "returned rows of 2 elements, MM declares 4"),
        (lambda v: np.asarray(v.sum()), None, "returned a 0-dimensional array"),
        (lambda v: v, MM(format="kv"), "expected a tuple (k, v) for format 'kv'"),
        (lambda v: (v[:, 0], v[:3, 1]), MM(format="kv"), "returned 128 keys and 3 values"),
    ],
)
def test_map_output_is_checked_against_mm(fn, mm, expect):
    ctx = _small_ctx()
    x = ctx.array(np.ones((1024, 4)))  # 8 partitions of 128 rows (4 KiB)
    with pytest.raises(UserFunctionError) as e:
        x.map(fn, mm).collect()
    msg = str(e.value)
    assert re.match(rf"user function of task map#{x.id + 1} failed on partition {e.value.index}: ", msg), msg
    assert 0 <= e.value.index < 8
    assert expect in msg, msg


def test_reduce_device_function_returning_a_list_is_rejected():
    ctx = _small_ctx()
    x = ctx.array(np.ones((1000, 4)))
    with pytest.raises(UserFunctionError, match=r"task reduce#\d+ failed on partition \d+: returned a list"):
        x.reduce(lambda v: [1.0], lambda a, b: a + b)


def test_partitions_below_the_minimum_are_rejected():
    with pytest.raises(TcaError, match="partition_size 64 B is below the minimum partition size of 4096 B"):
        Context(1, partition_size="64B")
    ctx = Context(1)
    with pytest.raises(TcaError, match="partition_size 1 B is below the minimum"):
        ctx.array(np.zeros((100, 4)), partition_size=1)
    with pytest.raises(TcaError, match="more than 65536: use larger partitions"):
        Context(1, mode="sim").virtual("dense", (2**40 // 16, 4), partition_size="4KiB")


def _tca(*args):
    return subprocess.run([sys.executable, "-m", "tca", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args,msg",
    [
        (["victream", "bench", "--workload", "nope"], "unknown workload 'nope'"),
        (["victream", "bench", "--mode", "fpga"], "unknown mode 'fpga'"),
        (["victream", "bench", "--scheduler", "fifo,lifo", "--mode", "sim"], "unknown scheduler 'lifo'"),
        (["victream", "bench", "--device-memory", "lots"], "--device-memory: 'lots' is not a number"),
        (["victream", "bench", "--mode", "sim", "--partition", "1B"], "--partition 1 B is below the minimum"),
        (
            ["victream", "bench", "--mode", "sim", "--device-memory", "1KiB"],
            "--device-memory 1KiB gives automatic partitions of 64 B (device memory / 16), below the minimum",
        ),
        (
            ["victream", "bench", "--mode", "sim", "--data", "1TiB", "--partition", "4KiB"],
            "partitions, more than 65536: use larger partitions",
        ),
        (["victream", "bench", "--mode", "sim", "--plot", "timeline.txt"], "unsupported extension '.txt'"),
        (["victream", "bench", "--devices", "0"], "--devices must be at least 1"),
        (["victream", "bench", "--mode", "sim", "--device-memory", "1MiB", "--partition", "1MiB"], "needs"),
        (["victream", "optimal", "--workload", "sort"], "unknown case 'sort'"),
        (["victream", "optimal", "--mode", "virtual"], "sim mode only"),
        # More than any address space holds: numpy's MemoryError was a traceback.
        (
            ["victream", "bench", "--mode", "virtual", "--data", "200TiB", "--partition", "4GiB"]
            + ["--device-memory", "64GiB", "--scheduler", "victream"],
            "out of memory: Unable to allocate",
        ),
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
    from tca.victream.runtime.devices import cupy_available

    if cupy_available()[0]:
        pytest.skip("a GPU is usable here: the cupy mode runs in test_victream_cupy.py")
    r = _tca("victream", "bench", "--mode", "cupy")
    assert r.returncode == 2 and r.stderr.startswith("tca: error: cupy mode:")
    assert len(r.stderr.strip().splitlines()) == 1


def _assert_one_line_error(r, msg):
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tca: error: "), r.stderr
    assert msg in lines[0], r.stderr
    assert r.stdout == ""


def test_bench_platform_needs_attach_expether():
    # --platform was silently ignored by the local comparison of schedulers
    r = _tca("victream", "bench", "--mode", "sim", "--platform", "expether-prototype")
    _assert_one_line_error(r, "--platform needs --attach expether")


def test_bench_seed_does_not_apply_to_attach_expether():
    # the ExpEther comparison runs in sim mode on data it never generates: --seed was ignored
    r = _tca("victream", "bench", "--attach", "expether", "--seed", "5", "--devices", "1")
    _assert_one_line_error(r, "--seed does not apply")


@pytest.mark.parametrize(
    "option,msg",
    [(["--check"], "--check needs results to compare"), (["--seed", "5"], "--seed seeds the synthetic data")],
)
def test_bench_check_and_seed_do_not_apply_to_sim_mode(option, msg):
    # sim mode generates no data and computes no result: both were silently ignored
    r = _tca("victream", "bench", "--mode", "sim", "--data", "32MiB", "--scheduler", "victream", *option)
    _assert_one_line_error(r, msg)


@pytest.mark.parametrize("attach", [[], ["--attach", "expether"]])
def test_bench_unknown_mode_lists_auto_with_the_others(attach):
    # 'AUTO' was answered with a list that left out auto, the default (and, with --attach
    # expether, with "a sim-mode model")
    r = _tca("victream", "bench", "--mode", "AUTO", *attach)
    _assert_one_line_error(r, "unknown mode 'AUTO' (expected one of: auto, virtual, cupy, sim)")


SIM_BENCH = ["--mode", "sim", "--data", "32MiB", "--scheduler", "victream"]


@pytest.mark.parametrize(
    "command,option",
    [
        (["bench", *SIM_BENCH], o)
        for o in (
            "--workload",
            "--devices",
            "--device-memory",
            "--bus-bandwidth",
            "--bus-latency",
            "--data",
            "--partition",
            "--attach",
            "--platform",
            "--scheduler",
            "--mode",
            "--plot",
        )
    ]
    + [(["optimal"], "--workload"), (["optimal"], "--mode")],
)
@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_option_value_is_named(capsys, command, option, value):
    # each option had its own answer to "": an unknown workload '', "not a number", "needs at
    # least one scheduler", or none at all (--plot and --platform were ignored)
    from tca.cli import main

    assert main(["victream", *command, option, value]) == 2
    out = capsys.readouterr()
    assert out.err == f"tca: error: {option}: empty value (give one, or leave the option out)\n"
    assert out.out == ""


@pytest.mark.parametrize(
    "args,message",
    [
        (["--mode", "sim", "--scheduler", "fifo,victream,fifo"], "--scheduler: fifo is given twice"),
        (["--attach", "expether", "--devices", "1,2,1"], "--devices: 1 is given twice"),
    ],
)
def test_bench_a_value_given_twice_is_refused(capsys, args, message):
    # fifo,fifo ran fifo twice and printed both; --devices 1,1 ran the ExpEther point twice
    from tca.cli import main

    assert main(["victream", "bench", *args]) == 2
    out = capsys.readouterr()
    assert out.err == f"tca: error: {message}\n" and out.out == ""
