"""The DAG analyzer (seed 002 §5.3.3): turns the GRDD graph of an action into subtasks, one per
partition, and the kernels those subtasks run.

Multi-step tasks (groupByKey / reduceByKey: sort each partition, then split by key range, then
merge) learn their number of output partitions only when the sort step is done; their
subtasks, and those of every node downstream, are created then (:meth:`Plan.on_done`).
A kernel takes the input blocks (device arrays) and returns (output blocks, meta).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tca import TcaError
from tca.victream import formats as F
from tca.victream.dag import Batch, Partition, Subtask
from tca.victream.grdd import GRDD, MM


class Plan:
    """The DAG analyzer for one action: expands GRDD nodes into subtasks (seed 002 §5.3.3)."""

    def __init__(self, ctx, simulate: bool):
        self.ctx, self.simulate = ctx, simulate
        self.resolved: dict[int, list[tuple[int, ...]]] = {}
        self.waiting: dict[int, list[Callable]] = {}
        self.parts: list[Partition] = []
        self.subtasks: list[Subtask] = []
        self.results: list[int] = []
        self.hold: list[int] = []
        self.release: list[int] = []
        self.triggers: list[tuple[set[int], Callable]] = []
        self.metas: dict[int, Any] = {}
        self.nbytes: dict[int, int] = {}
        self.edges: dict[int, list[tuple[int, int]]] = {}  # GRDD id -> (top, bottom) edge pids
        self.result_pids: list[int] | None = None
        self.file_results: set[int] = set()

    # ---------------------------------------------------------------- driver side
    def start(self, node: GRDD, action: str) -> Batch:
        def done(members):
            self.result_pids = [m[0] for m in members]
            self.results.extend(self.result_pids)
            if action == "outputFile":
                self.file_results.update(self.result_pids)

        self.request(node, done)
        return self.take()

    def take(self) -> Batch | None:
        if not (self.parts or self.subtasks or self.results or self.release):
            return None
        b = Batch(self.parts, self.subtasks, self.results, self.hold, self.release)
        self.parts, self.subtasks, self.results, self.hold, self.release = [], [], [], [], []
        return b

    def on_done(self, sid: int, meta) -> list[Batch]:
        """Called when a subtask finishes; returns the batches it makes possible."""
        self.metas[sid] = meta
        fire = [t for t in self.triggers if sid in t[0]]
        for t in fire:
            t[0].discard(sid)
            if not t[0]:
                self.triggers.remove(t)
                t[1]()
        b = self.take()
        return [b] if b else []

    # ---------------------------------------------------------------- expansion
    def request(self, node: GRDD, cb: Callable) -> None:
        if node.id in self.resolved:
            cb(self.resolved[node.id])
            return
        first = node.id not in self.waiting
        self.waiting.setdefault(node.id, []).append(cb)
        if first:
            if node.id in self.ctx._cached:
                members = self.ctx._cached[node.id]
                for ms in members:
                    for p in ms:
                        self.nbytes[p] = self.ctx.core.parts[p].nbytes
                self.resolve(node, members)
            else:
                getattr(self, "_expand_" + node.kind)(node)

    def resolve(self, node: GRDD, members: list[tuple[int, ...]]) -> None:
        if node.cached and node.id not in self.ctx._cached:
            self.ctx._cached[node.id] = members
            keep = {m for ms in members for m in ms}
            self.parts = [
                Partition(p.pid, p.nbytes, p.source, p.label, True) if p.pid in keep else p
                for p in self.parts
            ]
        self.resolved[node.id] = members
        for cb in self.waiting.pop(node.id, []):
            cb(members)

    def _part(self, nbytes: int, label: str) -> int:
        pid = self.ctx._new_id()
        self.parts.append(Partition(pid, int(nbytes), None, label))
        self.nbytes[pid] = int(nbytes)
        return pid

    def _subtask(
        self, task: str, index: int, inputs, outputs, kernel, cost_factor: float = 1.0, flops: float = 0.0
    ) -> int:
        sid = self.ctx._new_id()
        in_bytes = sum(self.nbytes.get(p, 0) for p in inputs)
        cost = self.ctx.kernel_cost_s(in_bytes, cost_factor, flops)
        self.subtasks.append(Subtask(sid, task, index, tuple(inputs), tuple(outputs), cost, kernel))
        return sid

    def _expand_source(self, node: GRDD) -> None:
        for pid in node.pids:
            self.parts.append(
                Partition(
                    pid,
                    self.ctx._source_nbytes[pid],
                    self.ctx._source_kind[pid],
                    f"g{node.id}.{node.pids.index(pid)}",
                )
            )
            self.nbytes[pid] = self.ctx._source_nbytes[pid]
        if node.edge_rows and node.format in ("dense", "image"):
            edges = self.ctx._source_edges(node, node.edge_rows)
            for i, pair in enumerate(edges):
                for pid, where in zip(pair, ("top", "bottom"), strict=True):
                    self.parts.append(
                        Partition(
                            pid,
                            self.ctx._source_nbytes[pid],
                            self.ctx._source_kind[pid],
                            f"g{node.id}.{i}.{where}",
                        )
                    )
                    self.nbytes[pid] = self.ctx._source_nbytes[pid]
            self.edges[node.id] = edges
        self.resolve(node, [(p,) for p in node.pids])

    def _expand_zip(self, node: GRDD) -> None:
        a, b = node.parents

        def got_a(ma):
            def got_b(mb):
                if len(ma) != len(mb):
                    raise TcaError(f"zip needs equal partition counts ({len(ma)} and {len(mb)})")
                self.resolve(node, [x + y for x, y in zip(ma, mb, strict=True)])

            self.request(b, got_b)

        self.request(a, got_a)

    def _expand_map(self, node: GRDD) -> None:
        self._expand_elementwise(node)

    def _expand_mapPartitions(self, node: GRDD) -> None:  # noqa: N802
        self._expand_elementwise(node)

    def _expand_reduce(self, node: GRDD) -> None:
        self._expand_elementwise(node)

    def _expand_elementwise(self, node: GRDD) -> None:
        parent = node.parents[0]
        mm, fn, kind = node.mm, node.fn, node.kind
        in_fmts, ncols = parent.fmts, parent.ncols
        out_fmt = node.format
        task = f"{kind}#{node.id}"

        def got(members):
            bounds = node.bounds or [(0, 0)] * len(members)
            outs, my_edges = [], []
            for i, mem in enumerate(members):
                in_bytes = [self.nbytes[p] for p in mem]
                if mm.output_size is not None:
                    size = mm.output_size
                elif mm.ncols and out_fmt in ("dense", "image") and node.bounds is not None:
                    size = (bounds[i][1] - bounds[i][0]) * mm.ncols * node.dtype.itemsize
                elif kind == "map":
                    size = in_bytes[0] * node.dtype.itemsize // max(1, parent.dtype.itemsize)
                else:
                    size = sum(in_bytes)
                out = self._part(size, f"g{node.id}.{i}")
                inputs = list(mem)
                halo = mm.halo
                if halo:
                    # the neighbours' edge partitions when the parent emits them, else the
                    # whole neighbouring partitions
                    edges = self.edges.get(parent.id)
                    if i > 0:
                        inputs.append(edges[i - 1][1] if edges else members[i - 1][0])
                    if i + 1 < len(members):
                        inputs.append(edges[i + 1][0] if edges else members[i + 1][0])
                outputs = [out]
                edge = node.edge_rows if out_fmt in ("dense", "image") and node.bounds is not None else 0
                if edge:
                    esize = edge * node.ncols * node.dtype.itemsize
                    pair = (
                        self._part(esize, f"g{node.id}.{i}.top"),
                        self._part(esize, f"g{node.id}.{i}.bottom"),
                    )
                    outputs += list(pair)
                    my_edges.append(pair)
                kernel = _elementwise_kernel(
                    task,
                    i,
                    fn,
                    in_fmts,
                    out_fmt,
                    ncols,
                    halo,
                    bounds,
                    len(members),
                    len(mem),
                    node.rows,
                    edge,
                )
                self._subtask(task, i, inputs, outputs, kernel, mm.cost_factor)
                outs.append((out,))
            if my_edges:
                self.edges[node.id] = my_edges
            self.resolve(node, outs)

        self.request(parent, got)

    def _expand_join(self, node: GRDD) -> None:
        a, b = node.parents
        fn, mm = node.fn, node.mm or MM()
        task = f"join#{node.id}"
        itemsize = node.dtype.itemsize

        def got_a(ma):
            def got_b(mb):
                outs = []
                for i, (ap,) in enumerate(ma):
                    r0, r1 = a.bounds[i]
                    prev = None
                    for q, (bp,) in enumerate(mb):
                        k0, k1 = b.bounds[q]
                        out = self._part(
                            mm.output_size or (r1 - r0) * node.ncols * itemsize, f"g{node.id}.{i}.{q}"
                        )
                        inputs = [ap, bp] + ([prev] if prev is not None else [])
                        kernel = _join_kernel(task, i, fn, a.format, a.ncols, k0, k1, node.dtype)
                        flops = 2.0 * (r1 - r0) * (k1 - k0) * node.ncols
                        self._subtask(task, i, inputs, [out], kernel, mm.cost_factor, flops)
                        prev = out
                    outs.append((prev,))
                self.resolve(node, outs)

            self.request(b, got_b)

        self.request(a, got_a)

    def _expand_groupByKey(self, node: GRDD) -> None:  # noqa: N802
        self._expand_bykey(node, None)

    def _expand_reduceByKey(self, node: GRDD) -> None:  # noqa: N802
        self._expand_bykey(node, node.fn)

    def _expand_bykey(self, node: GRDD, op: str | None) -> None:
        """Step 1 sorts (and, for reduceByKey, combines) each partition; once all are sorted the
        key histogram fixes the number R of output partitions and their key ranges; step 2 splits
        each sorted partition into R ranges, step 3 merges range r of every partition."""
        parent = node.parents[0]
        mm = node.mm or MM()
        task = f"{node.kind}#{node.id}"
        kd, vd = parent.extra if parent.extra else (np.dtype(np.int64), parent.dtype)
        rec = kd.itemsize + vd.itemsize

        def got(members):
            sorted_pids, sids = [], set()
            for i, (p,) in enumerate(members):
                out = self._part(self.nbytes[p], f"g{node.id}.sort{i}")
                sids.add(self._subtask(task + ".sort", i, [p], [out], _sort_kernel(op), mm.cost_factor * 2))
                sorted_pids.append(out)
            self.hold.extend(sorted_pids)
            order = sorted(sids)
            self.triggers.append((set(sids), lambda: step2(sorted_pids, order)))

        def step2(sorted_pids, sort_sids):
            metas = [self.metas.get(s) for s in sort_sids]
            n = len(sorted_pids)
            if any(m is None for m in metas):  # simulation: no data; assume uniform keys
                R = n
                split_sizes = [[self.nbytes[p] // R] * R for p in sorted_pids]
                total = sum(self.nbytes[p] for p in sorted_pids)
                merge_sizes = [mm.output_size or total // R + (R + 1) * 8] * R
                cuts = None
            else:
                keys = np.concatenate([m[0] for m in metas])
                counts = np.concatenate([m[1] for m in metas])
                uk, inv = np.unique(keys, return_inverse=True)
                tot = np.bincount(inv, weights=counts, minlength=len(uk)).astype(np.int64)
                total_bytes = int(tot.sum()) * rec
                R = max(1, min(len(uk), math.ceil(total_bytes / self.ctx.partition_size)))
                cum = np.cumsum(tot)
                idx = (
                    np.searchsorted(cum, [cum[-1] * r / R for r in range(1, R)], side="right")
                    if len(uk)
                    else []
                )
                cuts = (
                    np.unique(uk[np.minimum(np.asarray(idx, dtype=np.int64), len(uk) - 1)])[: R - 1]
                    if len(uk)
                    else []
                )
                cuts = np.asarray(cuts, dtype=kd)
                R = len(cuts) + 1
                split_sizes = []
                for m in metas:
                    pos = np.searchsorted(m[0], cuts, side="left")
                    c = np.concatenate([[0], np.cumsum(m[1])])
                    edges = np.concatenate([[0], pos, [len(m[0])]])
                    split_sizes.append([int(c[edges[r + 1]] - c[edges[r]]) * rec for r in range(R)])
                gpos = np.concatenate([[0], np.searchsorted(uk, cuts, side="left"), [len(uk)]])
                gc = np.concatenate([[0], np.cumsum(tot)])
                merge_sizes = []
                for r in range(R):
                    nk = int(gpos[r + 1] - gpos[r])
                    nrec = int(gc[gpos[r + 1]] - gc[gpos[r]])
                    merge_sizes.append(
                        nk * rec if op else nk * kd.itemsize + (nk + 1) * 8 + nrec * vd.itemsize
                    )
            bucket = [[None] * R for _ in range(n)]
            for i, p in enumerate(sorted_pids):
                outs = [self._part(split_sizes[i][r], f"g{node.id}.split{i}.{r}") for r in range(R)]
                self._subtask(task + ".split", i, [p], outs, _split_kernel(cuts, R, kd), 0.5)
                for r in range(R):
                    bucket[i][r] = outs[r]
            self.release.extend(sorted_pids)
            members = []
            for r in range(R):
                out = self._part(merge_sizes[r], f"g{node.id}.{r}")
                self._subtask(
                    task + ".merge",
                    r,
                    [bucket[i][r] for i in range(n)],
                    [out],
                    _merge_kernel(op),
                    mm.cost_factor * 2,
                )
                members.append((out,))
            self.resolve(node, members)

        self.request(parent, got)


# -------------------------------------------------------------------- kernels
# A kernel takes the input blocks (device arrays) and returns (output blocks, meta).


def _call(task: str, index: int, fn, *args):
    try:
        return fn(*args)
    except TcaError:
        raise
    except Exception as e:  # a user function failed: name the task and the partition
        raise UserFunctionError(task, index, e) from e


class UserFunctionError(TcaError):
    def __init__(self, task: str, index: int, error: Exception):
        super().__init__(
            f"user function of task {task} failed on partition {index}: {type(error).__name__}: {error}"
        )
        self.task, self.index, self.error = task, index, error


def _elementwise_kernel(
    task, i, fn, in_fmts, out_fmt, ncols, halo, bounds, n_parts, n_members, total_rows, edge=0
):
    def kernel(blocks):
        views = [F.to_view(f, b, ncols) for f, b in zip(in_fmts, blocks[:n_members], strict=True)]
        if halo:
            a = views[0]
            xp = F.xp_of(a)
            extra = blocks[n_members:]
            top = extra.pop(0)["a"][-halo:] if i > 0 else a[:0]
            bottom = extra.pop(0)["a"][:halo] if i + 1 < n_parts else a[:0]
            tile = xp.concatenate([top, a, bottom])
            info = F.PartitionInfo(i, bounds[i][0], len(a), len(top), len(bottom), total_rows or 0)
            out = _call(task, i, fn, tile, info)
        else:
            out = _call(task, i, fn, *views)
        block = F.from_view(out_fmt, out, task)
        if edge:  # the top and bottom rows a stencil consumer of this GRDD needs
            a = block["a"]
            return [block, {"a": a[:edge]}, {"a": a[-edge:]}], None
        return [block], None

    return kernel


def _join_kernel(task, i, fn, a_fmt, a_ncols, k0, k1, dtype):
    def kernel(blocks):
        a = F.to_view(a_fmt, blocks[0], a_ncols)
        b = blocks[1]["a"]
        if a_fmt == "sparse":
            a_slice = F.csr_cols(a, k0, k1)
            prod = _call(task, i, fn, a_slice, b) if fn else F.csr_matmul(a_slice, b)
        else:
            a_slice = a[:, k0:k1]
            prod = _call(task, i, fn, a_slice, b) if fn else a_slice @ b
        prod = prod.astype(dtype, copy=False)
        if len(blocks) > 2:
            prod = blocks[2]["a"] + prod
        return [{"a": prod}], None

    return kernel


def _sort_kernel(op):
    def kernel(blocks):
        k, v = F.sort_kv(blocks[0]["k"], blocks[0]["v"])
        if op:
            k, v = F.segment_reduce(op, k, v)
        xp = F.xp_of(k)
        starts = F.segment_starts(k)
        ends = xp.concatenate([starts[1:], xp.asarray([len(k)])])
        uk, counts = k[starts], ends - starts
        meta = (_host(uk), _host(counts))  # the key histogram the DAG analyzer needs (§5.3.3)
        return [{"k": k, "v": v}], meta

    return kernel


def _split_kernel(cuts, R, kd):
    def kernel(blocks):
        k, v = blocks[0]["k"], blocks[0]["v"]
        xp = F.xp_of(k)
        if cuts is None:  # only in simulation, where kernels do not run
            raise RuntimeError("split without key ranges")
        pos = (
            [0]
            + [int(x) for x in _host(xp.searchsorted(k, xp.asarray(cuts, dtype=k.dtype), side="left"))]
            + [len(k)]
        )
        return [
            {"k": k[pos[r] : pos[r + 1]].copy(), "v": v[pos[r] : pos[r + 1]].copy()} for r in range(R)
        ], None

    return kernel


def _merge_kernel(op):
    def kernel(blocks):
        xp = F.xp_of(blocks[0]["k"])
        k = xp.concatenate([b["k"] for b in blocks])
        v = xp.concatenate([b["v"] for b in blocks])
        k, v = F.sort_kv(k, v)
        if op:
            k, v = F.segment_reduce(op, k, v)
            return [{"k": k, "v": v}], None
        starts = F.segment_starts(k)
        off = xp.concatenate([starts, xp.asarray([len(k)])]).astype(np.int64)
        return [{"k": k[starts], "off": off, "v": v}], None

    return kernel


def _host(a):
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)
