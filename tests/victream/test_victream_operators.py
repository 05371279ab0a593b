"""Every GRDD operator against NumPy, in core (devices hold everything) and out of core (devices
hold a few partitions), on emulated GPUs (seed 002 Table 5.2)."""

from __future__ import annotations

import numpy as np
import pytest
from tca import TcaError
from tca.victream import MM, Context, VirtualGPU, xp_of
from tca.victream.api.formats import PartitionInfo

KiB = 1024
SIZES = {"in-core": "16MiB", "out-of-core": "40KiB"}


def ctx_for(size: str, scheduler: str = "victream", devices: int = 2) -> Context:
    devs = [VirtualGPU(SIZES[size], "20GB/s", "0us", name=f"gpu{i}") for i in range(devices)]
    return Context(devs, scheduler=scheduler, partition_size="8KiB")


@pytest.fixture(params=list(SIZES))
def ctx(request):
    c = ctx_for(request.param)
    yield c
    assert all(d.used <= d.capacity for d in c.devices)
    assert all(m.peak <= m.capacity for m in c.core.mem)
    c.close()


def rng():
    return np.random.default_rng(7)


def test_map_and_collect(ctx):
    a = rng().standard_normal((300, 40)).astype(np.float32)
    x = ctx.array(a)
    assert x.num_partitions >= 5
    np.testing.assert_allclose(x.map(lambda v: xp_of(v).sqrt(v * v) + 1).collect(), np.abs(a) + 1, rtol=1e-6)
    out = x.map(lambda v: v.astype(np.float64) * 2, MM(dtype="float64")).collect()
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, a.astype(np.float64) * 2)


def test_zip_then_map(ctx):
    a = rng().random((256, 16), dtype=np.float32)
    b = rng().random((256, 16), dtype=np.float32)
    out = ctx.array(a).zip(ctx.array(b)).map(lambda p, q: p * q - q).collect()
    np.testing.assert_allclose(out, a * b - b, rtol=1e-6)


def test_map_partitions_changes_element_count(ctx):
    a = rng().random((500, 8), dtype=np.float32)
    row_sums = ctx.array(a).mapPartitions(lambda v: v.sum(axis=1), MM(ncols=1)).collect()
    np.testing.assert_allclose(row_sums, a.sum(axis=1), rtol=1e-5)


def test_reduce_device_then_host(ctx):
    a = rng().random((400, 10))
    total = ctx.array(a).reduce(lambda v: v.sum(axis=0), lambda p, q: p + q, MM(output_size=80))
    np.testing.assert_allclose(total, a.sum(axis=0))


def test_halo_map_sees_neighbours_and_offset(ctx):
    img = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    x = ctx.image(img, partition_rows=8)
    seen = []

    def f(tile, info: PartitionInfo):
        seen.append(info)
        assert tile.shape[0] == info.rows + info.halo_top + info.halo_bottom
        # the tile's first own row is row ``offset`` of the image
        assert float(tile[info.halo_top, 0]) == float(info.offset * 32)
        own = tile[info.halo_top : info.halo_top + info.rows]
        if info.halo_top:
            up = tile[info.halo_top - 1 : info.halo_top - 1 + info.rows]
        else:  # the image's first row has no row above: replicate it
            up = xp_of(tile).concatenate([own[:1], own[:-1]])
        return own - up

    out = x.map(f, MM(halo=1)).collect()
    ref = img - np.vstack([img[:1], img[:-1]])
    np.testing.assert_array_equal(out, ref)
    assert sorted(i.offset for i in seen) == list(range(0, 64, 8))
    assert {(i.halo_top, i.halo_bottom) for i in seen} == {(0, 1), (1, 1), (1, 0)}


def test_stencil_consumers_load_edge_rows_not_whole_neighbours():
    """A GRDD consumed by a halo map emits its top and bottom rows as small partitions, so the
    stencil subtask loads its own partition plus two edges (seed 002 §5.3.2)."""
    c = ctx_for("out-of-core")
    img = rng().random((64, 32), dtype=np.float32)
    x = c.image(img, partition_rows=8)
    y = x.map(lambda v: v * 2)
    z = y.map(lambda t, info: t[info.halo_top : info.halo_top + info.rows] + t[0], MM(halo=1))
    out = z.collect()
    ref = np.concatenate([img[r : r + 8] * 2 + (img[max(r - 1, 0)] * 2) for r in range(0, 64, 8)])
    np.testing.assert_allclose(out, ref)
    stencil = [s for s in c.core.subtasks.values() if s.task.startswith(f"map#{z.id}")]
    row = 32 * 4
    for s in stencil:
        sizes = sorted(c.core.parts[p].nbytes for p in s.inputs)
        assert sizes[-1] == 8 * row and all(n == row for n in sizes[:-1])  # own partition + 1-row edges


def test_group_by_key(ctx):
    keys = rng().integers(0, 50, 3000).astype(np.int64)
    vals = np.arange(3000, dtype=np.int64)
    k, off, v = ctx.kv(keys, vals).groupByKey().collect()
    uk = np.unique(keys)
    np.testing.assert_array_equal(k, uk)
    for i, key in enumerate(uk):
        np.testing.assert_array_equal(v[off[i] : off[i + 1]], vals[keys == key])


@pytest.mark.parametrize("op,ref", [("add", np.add), ("min", np.minimum), ("max", np.maximum)])
def test_reduce_by_key(ctx, op, ref):
    keys = rng().integers(0, 200, 4000).astype(np.int64)
    vals = rng().random(4000)
    k, v = ctx.kv(keys, vals).reduceByKey(op).collect()
    uk = np.unique(keys)
    np.testing.assert_array_equal(k, uk)
    expect = np.array([ref.reduce(vals[keys == key]) for key in uk])
    np.testing.assert_allclose(v, expect)


def test_reduce_by_key_subtask_count_known_after_sort(ctx):
    """reduceByKey's merge step is created once the sort step has seen the keys (§5.3.3)."""
    keys = np.repeat(np.arange(4, dtype=np.int64), 500)
    node = ctx.kv(keys, np.ones(2000)).reduceByKey("add")
    assert node.num_partitions is None
    k, v = node.collect()
    np.testing.assert_array_equal(k, np.arange(4))
    np.testing.assert_array_equal(v, np.full(4, 500.0))


def test_join_dense(ctx):
    a = rng().standard_normal((120, 90)).astype(np.float32)
    b = rng().standard_normal((90, 70)).astype(np.float32)
    out = ctx.array(a).join(None, ctx.array(b)).collect()
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def test_join_sparse_csr_blocks(ctx):
    r = rng()
    dense = r.random((150, 80)) * (r.random((150, 80)) < 0.1)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))])
    rows, cols = np.nonzero(dense)
    a = ctx.sparse(dense[rows, cols], cols.astype(np.int32), indptr, dense.shape)
    b = r.standard_normal((80, 10))
    out = a.join(None, ctx.array(b)).collect()
    np.testing.assert_allclose(out, dense @ b, rtol=1e-10, atol=1e-10)
    # map over the stored values keeps the sparsity structure
    data, indices, ip = a.map(lambda m: (m.data * 2, m.indices, m.indptr)).collect()
    np.testing.assert_array_equal(ip, indptr)
    np.testing.assert_allclose(data, dense[rows, cols] * 2)


def test_output_file_and_from_file(ctx, tmp_path):
    a = rng().random((200, 20), dtype=np.float32)
    np.save(tmp_path / "in.npy", a)
    x = ctx.from_file(str(tmp_path / "in.npy"))
    x.map(lambda v: v + 1).outputFile(str(tmp_path / "out.npy"))
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), a + 1)
    raw = tmp_path / "raw.bin"
    a.tofile(raw)
    y = ctx.from_file(str(raw), dtype="float32", shape=a.shape)
    np.testing.assert_array_equal(y.collect(), a)


def test_cache_reuses_partitions_across_actions():
    c = ctx_for("in-core")
    a = rng().random((256, 16))
    calls = []
    x = c.array(a).map(lambda v: (calls.append(1), v * 3)[1]).cache()
    s1 = x.reduce(lambda v: v.sum(keepdims=True).ravel(), lambda p, q: p + q)
    n = len(calls)
    s2 = x.reduce(lambda v: v.max(keepdims=True).ravel(), np.maximum)
    assert len(calls) == n  # not recomputed
    np.testing.assert_allclose(s1, (a * 3).sum(keepdims=True).ravel())
    np.testing.assert_allclose(s2, (a * 3).max(keepdims=True).ravel())


@pytest.mark.parametrize("scheduler", ["fifo", "ptask", "locality", "victream"])
def test_every_scheduler_gives_the_same_result(scheduler):
    c = ctx_for("out-of-core", scheduler, devices=3)
    a = rng().random((600, 24), dtype=np.float32)
    x = c.array(a)
    y = x.map(lambda v: v * 2).zip(x).map(lambda p, q: p + q)
    np.testing.assert_allclose(y.collect(), a * 3, rtol=1e-6)
    assert sum(s.swap_out for s in c.core.stats) >= 0
    assert max(m.peak for m in c.core.mem) <= c.devices[0].capacity


def test_out_of_core_really_swaps():
    c = ctx_for("out-of-core")
    a = rng().random((2000, 16), dtype=np.float32)  # 128 KiB against 2 x 40 KiB of device memory
    x = c.array(a)
    y = x.map(lambda v: v + 1).map(lambda v: v * 2)
    np.testing.assert_allclose(y.collect(), (a + 1) * 2, rtol=1e-6)
    s = c.summary()
    assert s.swap_in >= a.nbytes


def test_bad_inputs_are_clear_errors():
    c = ctx_for("in-core")
    x = c.array(np.zeros((10, 4)))
    with pytest.raises(TcaError, match="zip needs equal partition counts"):
        x.zip(c.array(np.zeros((100000, 4))))
    with pytest.raises(TcaError, match="key-value"):
        x.groupByKey()
    with pytest.raises(TcaError, match="shapes do not match"):
        x.join(None, c.array(np.zeros((3, 3))))
    with pytest.raises(TcaError, match="reduceByKey supports"):
        c.kv(np.zeros(3, dtype=np.int64), np.zeros(3)).reduceByKey(lambda a, b: a)
    with pytest.raises(TcaError, match="device memory: 'lots' is not a number"):
        Context(1, device_memory="lots")
    with pytest.raises(TcaError, match="unknown scheduler"):
        Context(1, scheduler="random")
    with pytest.raises(TcaError, match="unknown mode"):
        Context(1, mode="fpga")
    with pytest.raises(TcaError, match="cannot read"):
        c.from_file("/nonexistent/x.npy")
    with pytest.raises(TcaError, match="halo"):
        c.array(np.zeros((100, 2)), partition_rows=2).map(lambda t, i: t, MM(halo=3))


@pytest.mark.parametrize("scheduler", ["fifo", "ptask", "locality", "victream"])
def test_threaded_runtime_with_room_for_two_partitions(scheduler):
    """No deadlock on real (emulated) devices that hold exactly two 8 KiB partitions."""
    devs = [VirtualGPU(2 * 8 * KiB, "20GB/s", "0us", name=f"gpu{i}") for i in range(2)]
    c = Context(devs, scheduler=scheduler, partition_size="8KiB", timeout=60)
    a = rng().random((6 * 1024,))  # 6 partitions of 8 KiB
    y = c.array(a)
    for k in range(5):
        y = y.map(lambda v, k=k: v + k)
    np.testing.assert_allclose(y.collect(), a + 10)
    assert max(m.peak for m in c.core.mem) <= 2 * 8 * KiB


def test_sim_device_with_a_slower_bus_takes_longer():
    """Per-device buses in the cost model (GPUs behind a slower link, e.g. a network)."""
    from tca.victream.apps import workloads as W

    def run(slow_bw):
        devs = [VirtualGPU("64MiB", "6GB/s", name="gpu0"), VirtualGPU("64MiB", slow_bw, name="gpu1")]
        ctx = Context(devs, mode="sim", partition_size="4MiB")
        W.run(ctx, W.make_inputs("logreg", 256 * 2**20, real=False))
        return ctx.summary().elapsed_s

    assert run("1GB/s") > 1.1 * run("6GB/s")
