"""The collective library from Python (tca.peach.coll): results against a serial reference on the
simulator for every operator and NumPy type over node counts and sizes, the errors, and the same
program on the shm fabric under `tca run`."""

import functools
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tca.peach.sim as sim
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from tca.peach.api import Desc, TcaApiError
from tca.peach.coll import OPS, type_value

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float32, np.float64, np.longdouble]  # fmt: skip


def rank_input(dtype, count: int, rank: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed * 97 + rank)
    values = rng.integers(-60, 60, size=count)
    values[rng.random(count) < 0.2] = 0  # zeros for the logical operators
    if np.dtype(dtype).kind == "f":
        return (values / 8 + rng.random(count) * 1e-3).astype(dtype)
    return values.astype(dtype)


def serial(op: str, arrays: list[np.ndarray]) -> np.ndarray:
    """The left fold in rank order, with C semantics (integers wrap, logical ops give 1 or 0)."""

    def one(a, b):
        with np.errstate(over="ignore"):
            return {
                "sum": lambda: a + b, "prod": lambda: a * b,
                "max": lambda: np.where(b > a, b, a), "min": lambda: np.where(b < a, b, a),
                "band": lambda: a & b, "bor": lambda: a | b, "bxor": lambda: a ^ b,
                "land": lambda: ((a != 0) & (b != 0)).astype(a.dtype),
                "lor": lambda: ((a != 0) | (b != 0)).astype(a.dtype),
                "lxor": lambda: ((a != 0) ^ (b != 0)).astype(a.dtype),
            }[op]().astype(a.dtype)  # fmt: skip

    return functools.reduce(one, arrays)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 16),
    dtype=st.sampled_from(DTYPES),
    op=st.sampled_from(OPS),
    count=st.one_of(st.integers(0, 30), st.integers(600, 1500)),
    root=st.integers(0, 15),
    seed=st.integers(0, 1000),
)
def test_collectives_match_a_serial_reference(n, dtype, op, count, root, seed):
    if np.dtype(dtype).kind == "f" and op in ("band", "bor", "bxor"):
        op = "min"
    root %= n

    def program(ctx):
        x = rank_input(dtype, count, ctx.rank, seed)
        out = ctx.coll_allreduce(x, op), ctx.coll_reduce(x, op, root), ctx.coll_allgather(x)
        ctx.coll_barrier()
        return (*out, ctx.coll_bcast(x, root))

    inputs = [rank_input(dtype, count, r, seed) for r in range(n)]
    want = serial(op, inputs)
    for rank, (total, reduced, gathered, sent) in enumerate(sim.run("ha-pacs-tca", n, program)):
        np.testing.assert_array_equal(total, want)
        assert total.tobytes() == want.tobytes() or np.dtype(dtype) == np.longdouble
        if rank == root:
            np.testing.assert_array_equal(reduced, want)
        else:
            assert reduced is None
        np.testing.assert_array_equal(gathered, np.stack(inputs))
        np.testing.assert_array_equal(sent, inputs[root])


def test_bytes_errors_and_time():
    def program(ctx):
        raw = np.float64([ctx.rank + 0.5]).tobytes()
        total = np.frombuffer(ctx.coll_allreduce(raw, "sum", dtype="TCA_DOUBLE"), np.float64)
        errors = []
        for call in (
            lambda: ctx.coll_allreduce(np.float32([1]), "bxor"),
            lambda: ctx.coll_allreduce(np.bool_([True]), "land"),
            lambda: ctx.coll_allreduce(raw, "average", dtype=np.float64),
        ):
            with pytest.raises(ValueError):
                call()
            errors.append("ValueError")
        try:
            ctx.coll_bcast(b"x" * (4 + 4 * ctx.rank), 0)
        except TcaApiError as e:
            errors.append(e.name)
        ctx.coll_barrier()
        t0 = ctx.wtime()
        for _ in range(20):
            ctx.coll_allreduce(np.float64([1.0]))
        return total[0], errors, (ctx.wtime() - t0) / 20

    out = sim.run("ha-pacs-tca", 4, program)
    for total, errors, _ in out:
        assert total == 0.5 + 1.5 + 2.5 + 3.5
        assert errors == ["ValueError"] * 3 + ["CollMismatch"]
    # Seed 001: about half of MVAPICH2 (2.52 us for 8 B on 4 ranks, docs/collectives.md).
    assert 1.0e-6 < max(seconds for *_, seconds in out) < 1.8e-6


def test_type_names():
    assert type_value(np.float64) == 8 << 8 | 13
    assert type_value("tca_long_double") == 16 << 8 | 14
    with pytest.raises(ValueError):
        type_value(np.complex128)


def test_the_same_program_on_the_shm_fabric(tmp_path):
    program = tmp_path / "coll.py"
    program.write_text(
        textwrap.dedent(
            """
            import sys

            import numpy as np

            import tca.peach.program

            def body(ctx):
                x = np.arange(1000, dtype=np.int64) * (ctx.rank + 1)
                total = ctx.coll_allreduce(x, "sum")
                ok = (total == np.arange(1000) * sum(range(1, ctx.size + 1))).all()
                g = ctx.coll_allgather(np.float32([ctx.rank]))
                ok &= (g[:, 0] == np.arange(ctx.size)).all()
                ctx.coll_barrier()
                sys.stdout.write(f"{ctx.rank} {'ok' if ok else 'wrong'}\\n")

            tca.peach.program.main(body)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "tca", "run", "-n", "3", str(program)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n")[:-1]) == ["0 ok", "1 ok", "2 ok"]


def test_a_kick_after_a_collective_on_its_channel_raises_until_desc_set():
    """A chain set once and kicked every iteration: after a DMA-sized allgather set the library's
    chain on channel 0, start_dma raises ChannelTaken and copies nothing, until desc_set."""

    def program(ctx):
        src, dst = ctx.malloc(4096), ctx.malloc(4096)
        data = bytes((i * 7 + ctx.rank) % 256 | 1 for i in range(4096))
        ctx.write(src, 0, data)
        d = Desc()
        d.set_memcpy(dst, 0, src, 0, 4096)
        ctx.desc_set(d, 0)

        def kick():
            ctx.write(dst, 0, bytes(4096))
            try:
                ctx.start_dma(0)
            except TcaApiError as e:
                return e.name, ctx.read(dst, 0, 4096) == data
            ctx.wait_dmac(0)
            return "ok", ctx.read(dst, 0, 4096) == data

        seen = [kick()]
        ctx.coll_allreduce(np.int32([1]))  # PIO only: the chain stays
        seen.append(kick())
        gathered = ctx.coll_allgather(np.full(16384, ctx.rank, np.int32))
        assert (gathered == np.arange(ctx.size)[:, None]).all()
        seen += [kick(), kick()]
        ctx.desc_set(d, 0)
        seen.append(kick())
        return seen

    ok, taken = ("ok", True), ("ChannelTaken", False)
    for seen in sim.run("ha-pacs-tca", 3, program):
        assert seen == [ok, ok, taken, taken, ok]
