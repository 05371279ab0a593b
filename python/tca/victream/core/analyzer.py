"""The DAG analyzer (seed 002 §5.3.3): turns the GRDD graph of an action into subtasks, one per
partition, and the kernels those subtasks run (:mod:`tca.victream.api.kernels`).

Multi-step tasks (groupByKey / reduceByKey: sort each partition, then split by key range, then
merge) learn their number of output partitions only when the sort step is done; their
subtasks, and those of every node downstream, are created then (:meth:`Plan.on_done`).

The analyzer reads the GRDD nodes (kind, parents, MM, formats, bounds) and, from the context,
its source catalog, its cached GRDDs, its partition size and kernel cost model.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tca import TcaError
from tca.victream.api import kernels as K
from tca.victream.core import bykey
from tca.victream.core.dag import Batch, Partition, Subtask

Members = list[tuple[int, ...]]  # a GRDD's partitions: the pids of each (zip joins them)

# Python frames the expansion takes per level of a GRDD's lineage (request, the expander, the
# callback, resolve), with room to spare: it recurses once per level.
FRAMES_PER_LEVEL = 16


def lineage_depth(node) -> int:
    """The longest chain of parents above ``node``, itself included (found without recursion:
    a lineage may be thousands of GRDDs deep, as an iterative blur builds it)."""
    depth: dict[int, int] = {}
    stack = [(node, False)]
    while stack:
        n, parents_done = stack.pop()
        if n.id in depth:
            continue
        if parents_done:
            depth[n.id] = 1 + max((depth[p.id] for p in n.parents), default=0)
        else:
            stack.append((n, True))
            stack.extend((p, False) for p in n.parents if p.id not in depth)
    return depth[node.id]


def room_for(depth: int) -> None:
    """Raises Python's recursion limit (never lowers it: other threads may be deep) so that a
    lineage ``depth`` levels deep expands: 200 iterations of blur ended in RecursionError."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000 + FRAMES_PER_LEVEL * depth))


class Plan:
    """The DAG analyzer for one action: expands GRDD nodes into subtasks (seed 002 §5.3.3)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.resolved: dict[int, Members] = {}
        self.waiting: dict[int, list[Callable[[Members], None]]] = {}
        self.parts: list[Partition] = []
        self.subtasks: list[Subtask] = []
        self.results: list[int] = []
        self.hold: list[int] = []
        self.release: list[int] = []
        self.triggers: list[tuple[set[int], Callable[[], None]]] = []
        self.metas: dict[int, Any] = {}
        self.nbytes: dict[int, int] = {}
        self.edges: dict[int, list[tuple[int, int]]] = {}  # GRDD id -> (top, bottom) edge pids
        self.result_pids: list[int] | None = None
        self.file_results: set[int] = set()

    # ---------------------------------------------------------------- driver side
    def start(self, node, action: str) -> Batch:
        def done(members):
            self.result_pids = [m[0] for m in members]
            self.results.extend(self.result_pids)
            if action == "outputFile":
                self.file_results.update(self.result_pids)

        room_for(lineage_depth(node))
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
    def request(self, node, cb: Callable[[Members], None]) -> None:
        if node.id in self.resolved:
            cb(self.resolved[node.id])
            return
        first = node.id not in self.waiting
        self.waiting.setdefault(node.id, []).append(cb)
        if not first:
            return
        cached = self.ctx.cached.get(node.id)
        if cached is not None:
            for ms in cached:
                for p in ms:
                    self.nbytes[p] = self.ctx.core.parts[p].nbytes
            self.resolve(node, cached)
        else:
            self._expanders[node.kind](self, node)

    def resolve(self, node, members: Members) -> None:
        if node.cached and node.id not in self.ctx.cached:
            self.ctx.cached[node.id] = members
            keep = {m for ms in members for m in ms}
            self.parts = [
                Partition(p.pid, p.nbytes, p.source, p.label, True) if p.pid in keep else p
                for p in self.parts
            ]
        self.resolved[node.id] = members
        for cb in self.waiting.pop(node.id, []):
            cb(members)

    def _part(self, nbytes: int, label: str) -> int:
        pid = self.ctx.catalog.new_id()
        self.parts.append(Partition(pid, int(nbytes), None, label))
        self.nbytes[pid] = int(nbytes)
        return pid

    def _source_part(self, pid: int, label: str) -> None:
        self.parts.append(self.ctx.catalog.partition(pid, label))
        self.nbytes[pid] = self.ctx.catalog.nbytes(pid)

    def _subtask(
        self, task: str, index: int, inputs, outputs, kernel, cost_factor: float = 1.0, flops: float = 0.0
    ) -> int:
        sid = self.ctx.catalog.new_id()
        in_bytes = sum(self.nbytes.get(p, 0) for p in inputs)
        cost = self.ctx.kernel_cost_s(in_bytes, cost_factor, flops)
        self.subtasks.append(Subtask(sid, task, index, tuple(inputs), tuple(outputs), cost, kernel))
        return sid

    def _expand_source(self, node) -> None:
        for i, pid in enumerate(node.pids):
            self._source_part(pid, f"g{node.id}.{i}")
        if node.edge_rows and node.format in ("dense", "image"):
            row_bytes = node.ncols * node.dtype.itemsize
            edges = self.ctx.catalog.edges(node.pids, node.id, node.edge_rows, row_bytes)
            for i, pair in enumerate(edges):
                for pid, where in zip(pair, ("top", "bottom"), strict=True):
                    self._source_part(pid, f"g{node.id}.{i}.{where}")
            self.edges[node.id] = edges
        self.resolve(node, [(p,) for p in node.pids])

    def _expand_zip(self, node) -> None:
        a, b = node.parents

        def got_a(ma):
            def got_b(mb):
                if len(ma) != len(mb):
                    raise TcaError(f"zip needs equal partition counts ({len(ma)} and {len(mb)})")
                self.resolve(node, [x + y for x, y in zip(ma, mb, strict=True)])

            self.request(b, got_b)

        self.request(a, got_a)

    def _expand_elementwise(self, node) -> None:
        """map, mapPartitions and reduce: one subtask per partition of the parent."""
        self.request(node.parents[0], lambda members: self._elementwise(node, members))

    def _elementwise(self, node, members: Members) -> None:
        parent, mm = node.parents[0], node.mm
        task = f"{node.kind}#{node.id}"
        edge_rows = node.edge_rows if node.format in ("dense", "image") and node.bounds is not None else 0
        out_spec = K.OutputSpec(node.format, node.dtype, node.ncols)
        outs, my_edges = [], []
        for i, mem in enumerate(members):
            out = self._part(self._elementwise_size(node, i, mem), f"g{node.id}.{i}")
            inputs = list(mem) + self._halo_inputs(parent, members, i, mm.halo)
            outputs = [out]
            if edge_rows:
                esize = edge_rows * node.ncols * node.dtype.itemsize
                pair = (
                    self._part(esize, f"g{node.id}.{i}.top"),
                    self._part(esize, f"g{node.id}.{i}.bottom"),
                )
                outputs += list(pair)
                my_edges.append(pair)
            spec = K.Elementwise(
                task,
                i,
                node.fn,
                parent.fmts,
                parent.ncols,
                out_spec,
                len(mem),
                mm.halo,
                node.bounds[i][0] if node.bounds else 0,
                node.rows or 0,
                len(members),
                edge_rows,
            )
            self._subtask(task, i, inputs, outputs, K.elementwise_kernel(spec), mm.cost_factor)
            outs.append((out,))
        if my_edges:
            self.edges[node.id] = my_edges
        self.resolve(node, outs)

    def _elementwise_size(self, node, i: int, mem: tuple[int, ...]) -> int:
        """Bytes to reserve for output ``i``: MM's output size, else derived from the rows."""
        mm, parent = node.mm, node.parents[0]
        in_bytes = [self.nbytes[p] for p in mem]
        if mm.output_size is not None:
            return mm.output_size
        if mm.ncols and node.format in ("dense", "image") and node.bounds is not None:
            r0, r1 = node.bounds[i]
            return (r1 - r0) * mm.ncols * node.dtype.itemsize
        if node.kind == "map":
            return in_bytes[0] * node.dtype.itemsize // max(1, parent.dtype.itemsize)
        return sum(in_bytes)

    def _halo_inputs(self, parent, members: Members, i: int, halo: int) -> list[int]:
        """The neighbours' edge partitions when the parent emits them, else the whole
        neighbouring partitions."""
        if not halo:
            return []
        edges = self.edges.get(parent.id)
        extra = []
        if i > 0:
            extra.append(edges[i - 1][1] if edges else members[i - 1][0])
        if i + 1 < len(members):
            extra.append(edges[i + 1][0] if edges else members[i + 1][0])
        return extra

    def _expand_join(self, node) -> None:
        a, b = node.parents
        mm = node.mm
        task = f"join#{node.id}"
        itemsize = node.dtype.itemsize

        def got_b(ma, mb):
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
                    kernel = K.join_kernel(task, i, node.fn, a.format, a.ncols, k0, k1, node.dtype)
                    flops = 2.0 * (r1 - r0) * (k1 - k0) * node.ncols
                    self._subtask(task, i, inputs, [out], kernel, mm.cost_factor, flops)
                    prev = out
                outs.append((prev,))
            self.resolve(node, outs)

        self.request(a, lambda ma: self.request(b, lambda mb: got_b(ma, mb)))

    def _expand_bykey(self, node) -> None:
        """Step 1 sorts (and, for reduceByKey, combines) each partition; once all are sorted the
        key histogram fixes the number R of output partitions and their key ranges
        (:mod:`tca.victream.core.bykey`); step 2 splits each sorted partition into R ranges,
        step 3 merges range r of every partition."""
        op = node.fn if node.kind == "reduceByKey" else None
        task = f"{node.kind}#{node.id}"

        def got(members):
            sorted_pids, sids = [], []
            for i, (p,) in enumerate(members):
                out = self._part(self.nbytes[p], f"g{node.id}.sort{i}")
                kernel = K.sort_kernel(op)
                sids.append(self._subtask(task + ".sort", i, [p], [out], kernel, node.mm.cost_factor * 2))
                sorted_pids.append(out)
            self.hold.extend(sorted_pids)
            self.triggers.append((set(sids), lambda: self._split_and_merge(node, op, sorted_pids, sids)))

        self.request(node.parents[0], got)

    def _key_ranges(self, node, op, sorted_pids: list[int], sort_sids: list[int]) -> bykey.KeyRanges:
        metas = [self.metas.get(s) for s in sort_sids]
        if any(m is None for m in metas):  # simulation: no data; assume uniform keys
            return bykey.uniform_ranges([self.nbytes[p] for p in sorted_pids], node.mm.output_size)
        parent = node.parents[0]
        kd, vd = parent.extra if parent.extra else (np.dtype(np.int64), parent.dtype)
        return bykey.histogram_ranges(metas, bykey.Record(kd, vd, op is not None), self.ctx.partition_size)

    def _split_and_merge(self, node, op, sorted_pids: list[int], sort_sids: list[int]) -> None:
        task = f"{node.kind}#{node.id}"
        ranges = self._key_ranges(node, op, sorted_pids, sort_sids)
        n = ranges.count
        bucket = []
        for i, p in enumerate(sorted_pids):
            outs = [self._part(ranges.split_sizes[i][r], f"g{node.id}.split{i}.{r}") for r in range(n)]
            self._subtask(task + ".split", i, [p], outs, K.split_kernel(ranges.cuts, n), 0.5)
            bucket.append(outs)
        self.release.extend(sorted_pids)
        members = []
        for r in range(n):
            out = self._part(ranges.merge_sizes[r], f"g{node.id}.{r}")
            inputs = [bucket[i][r] for i in range(len(sorted_pids))]
            self._subtask(task + ".merge", r, inputs, [out], K.merge_kernel(op), node.mm.cost_factor * 2)
            members.append((out,))
        self.resolve(node, members)

    _expanders: dict[str, Callable[[Plan, Any], None]] = {
        "source": _expand_source,
        "zip": _expand_zip,
        "map": _expand_elementwise,
        "mapPartitions": _expand_elementwise,
        "reduce": _expand_elementwise,
        "join": _expand_join,
        "groupByKey": _expand_bykey,
        "reduceByKey": _expand_bykey,
    }
