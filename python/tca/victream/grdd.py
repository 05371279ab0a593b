"""GRDDs, their operators (seed 002 Table 5.2) and the DAG analyzer that turns them into subtasks
(§5.3.3).

Transformations (``map``, ``zip``, ``mapPartitions``, ``groupByKey``, ``reduceByKey``, ``join``)
only record a node; actions (``reduce``, ``collect``, ``outputFile``) hand the graph to the
context, which runs it. :class:`Plan` is the DAG analyzer: it expands nodes into one subtask per
partition. Multi-step tasks (groupByKey / reduceByKey: sort each partition, then split by key
range, then merge) learn their number of output partitions only when the sort step is done;
their subtasks, and those of every node downstream, are created then (``Plan.on_done``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tca import TcaError
from tca.victream import formats as F
from tca.victream.dag import Batch, Partition, Subtask


@dataclass(frozen=True)
class MM:
    """Method meta-information (seed 002 §5.3.2): what the runtime must know about ``f``.

    ``format``: output format (default: the input's); ``dtype``: output element type;
    ``output_size``: bytes to reserve per output partition (an upper bound; default: derived
    from the operator); ``halo``: stencil halo width in rows (image/dense ``map``: the view
    carries ``halo`` rows of each neighbour and ``f`` also gets a :class:`PartitionInfo`);
    ``ncols``: elements per row of the output when it changes; ``row_scale``: output rows per
    input row for mapPartitions (e.g. upsampling); ``cost_factor``: the kernel's
    cost relative to one pass over its input at the context's kernel bandwidth (simulation).
    """

    format: str | None = None
    dtype: Any = None
    output_size: int | None = None
    halo: int = 0
    ncols: int | None = None
    row_scale: int = 1
    cost_factor: float = 1.0


class GRDD:
    """GPU resilient distributed dataset: a lazily evaluated, partitioned data set."""

    def __init__(
        self,
        ctx,
        kind: str,
        parents: tuple = (),
        fn=None,
        mm: MM | None = None,
        *,
        fmts: tuple[str, ...],
        dtype,
        bounds: list[tuple[int, int]] | None,
        ncols: int = 0,
        pids: list[int] | None = None,
        extra: Any = None,
    ):
        self.ctx, self.kind, self.parents, self.fn, self.mm = ctx, kind, parents, fn, mm or MM()
        self.fmts, self.dtype, self.bounds, self.ncols = fmts, np.dtype(dtype), bounds, ncols
        self.pids, self.extra = pids, extra
        self.id = ctx._new_id()
        self.cached = False
        # rows of each partition's top and bottom edge that a stencil consumer needs (MM.halo):
        # the subtasks producing this GRDD also emit them as small partitions (seed 002 §5.3.2)
        self.edge_rows = 0

    # ---------------------------------------------------------------- metadata
    @property
    def format(self) -> str:
        return self.fmts[0]

    @property
    def num_partitions(self) -> int | None:
        """Known before running except downstream of groupByKey / reduceByKey."""
        return None if self.bounds is None else len(self.bounds)

    @property
    def rows(self) -> int | None:
        return None if self.bounds is None else self.bounds[-1][1]

    def __repr__(self) -> str:
        fmt = "+".join(self.fmts)
        return f"GRDD({self.kind}, format={fmt}, dtype={self.dtype}, partitions={self.num_partitions})"

    def cache(self) -> GRDD:
        """Keeps this GRDD's partitions once computed (on devices while memory allows, else on the
        host), so later actions reuse them instead of recomputing the lineage. Returns self."""
        self.cached = True
        return self

    # ---------------------------------------------------------------- transformations
    def map(self, f: Callable, mm: MM | None = None) -> GRDD:
        """``f`` applied to every element: count, order and partitioning are kept. With
        ``mm.halo`` > 0 (image / dense), ``f(view, info)`` sees ``halo`` rows of each neighbour."""
        mm = mm or MM()
        if mm.halo:
            if len(self.fmts) != 1 or self.format not in ("image", "dense"):
                raise TcaError("MM.halo applies to a single image or dense GRDD")
            if self.bounds and min(b - a for a, b in self.bounds) < mm.halo:
                raise TcaError(f"halo of {mm.halo} rows is wider than a partition; use larger partitions")
            if self.kind in ("source", "map", "mapPartitions"):
                self.edge_rows = max(self.edge_rows, mm.halo)
        return GRDD(
            self.ctx,
            "map",
            (self,),
            f,
            mm,
            fmts=(mm.format or self.format,),
            dtype=mm.dtype or self.dtype,
            bounds=self.bounds,
            ncols=mm.ncols or self.ncols,
        )

    def mapPartitions(self, f: Callable, mm: MM | None = None) -> GRDD:  # noqa: N802 (seed's name)
        """``f`` applied to each partition's view; element count may change, partitioning is kept."""
        mm = mm or MM()
        if mm.halo:
            raise TcaError("MM.halo applies to map")
        bounds = self.bounds
        if bounds is not None and mm.row_scale != 1:
            bounds = [(a * mm.row_scale, b * mm.row_scale) for a, b in bounds]
        return GRDD(
            self.ctx,
            "mapPartitions",
            (self,),
            f,
            mm,
            fmts=(mm.format or self.format,),
            dtype=mm.dtype or self.dtype,
            bounds=bounds,
            ncols=mm.ncols or self.ncols,
        )

    def zip(self, other: GRDD) -> GRDD:
        """Pairs partition ``i`` of both GRDDs; a later map / mapPartitions gets ``f(a, b)``."""
        self._same_ctx(other)
        if self.bounds is not None and other.bounds is not None and len(self.bounds) != len(other.bounds):
            raise TcaError(f"zip needs equal partition counts ({len(self.bounds)} and {len(other.bounds)})")
        return GRDD(
            self.ctx,
            "zip",
            (self, other),
            fmts=self.fmts + other.fmts,
            dtype=self.dtype,
            bounds=self.bounds,
            ncols=self.ncols,
        )

    def groupByKey(self, mm: MM | None = None) -> GRDD:  # noqa: N802
        """Key-value pairs grouped by key (format ``grouped``, keys sorted across partitions)."""
        self._need_kv("groupByKey")
        return GRDD(
            self.ctx, "groupByKey", (self,), None, mm, fmts=("grouped",), dtype=self.dtype, bounds=None
        )

    def reduceByKey(self, f, mm: MM | None = None) -> GRDD:  # noqa: N802
        """Values of equal keys reduced with ``f`` ('add', 'min', 'max'); keys sorted."""
        self._need_kv("reduceByKey")
        return GRDD(
            self.ctx,
            "reduceByKey",
            (self,),
            F.reducer_name(f),
            mm,
            fmts=("kv",),
            dtype=self.dtype,
            bounds=None,
        )

    def join(self, f: Callable | None, other: GRDD, mm: MM | None = None) -> GRDD:
        """Matrix product ``self @ other`` (Table 5.2). ``self``: dense or sparse (n x k) in row
        blocks; ``other``: dense (k x m) in row blocks. Row block ``i`` of the result accumulates
        ``f(self_i[:, cols of other_q], other_q)`` over ``q`` (default ``f``: the block product)."""
        self._same_ctx(other)
        if self.format not in ("dense", "sparse") or len(self.fmts) != 1 or other.fmts != ("dense",):
            raise TcaError("join multiplies a dense or sparse matrix by a dense matrix")
        if self.ncols != other.rows:
            raise TcaError(f"join: shapes do not match ({self.ncols} columns and {other.rows} rows)")
        dtype = mm.dtype if mm and mm.dtype else np.result_type(self.dtype, other.dtype)
        return GRDD(
            self.ctx,
            "join",
            (self, other),
            f,
            mm,
            fmts=("dense",),
            dtype=dtype,
            bounds=self.bounds,
            ncols=other.ncols,
        )

    # ---------------------------------------------------------------- actions
    def reduce(self, f_device: Callable, f_host: Callable, mm: MM | None = None):
        """Reduces each partition on its device with ``f_device`` (returning a small array), then
        folds the partial results on the host with the binary ``f_host``. None in sim mode."""
        node = GRDD(
            self.ctx,
            "reduce",
            (self,),
            f_device,
            mm,
            fmts=("value",),
            dtype=self.dtype,
            bounds=self.bounds,
            ncols=0,
        )
        parts = self.ctx._run(node, "reduce")
        if parts is None:
            return None
        import functools

        return functools.reduce(f_host, [F.to_view("value", b) for b in parts])

    def collect(self):
        """The whole GRDD on the host (concatenated in partition order). None in sim mode."""
        if len(self.fmts) != 1:
            raise TcaError("collect a zipped GRDD by mapping it first")
        parts = self.ctx._run(self, "collect")
        return None if parts is None else _concat(self.format, parts, self.ncols)

    def outputFile(self, path: str) -> None:  # noqa: N802
        """Writes the GRDD to ``path`` (.npy for arrays, .npz for sparse / key-value formats)."""
        if len(self.fmts) != 1:
            raise TcaError("outputFile of a zipped GRDD: map it first")
        parts = self.ctx._run(self, "outputFile")
        if parts is None:
            return
        data = _concat(self.format, parts, self.ncols)
        try:
            if isinstance(data, np.ndarray):
                np.save(path, data)
            else:
                np.savez(path, *data)
        except OSError as e:
            raise TcaError(f"cannot write {path}: {e.strerror}") from None

    # ---------------------------------------------------------------- helpers
    def _same_ctx(self, other: GRDD) -> None:
        if not isinstance(other, GRDD) or other.ctx is not self.ctx:
            raise TcaError("both GRDDs must belong to the same Context")

    def _need_kv(self, op: str) -> None:
        if self.fmts != ("kv",):
            raise TcaError(f"{op} needs a key-value GRDD (format kv), not {'+'.join(self.fmts)}")


def _concat(fmt: str, blocks: list[dict], ncols: int):
    if fmt in ("dense", "image", "value"):
        return np.concatenate([b["a"] for b in blocks])
    if fmt == "kv":
        return np.concatenate([b["k"] for b in blocks]), np.concatenate([b["v"] for b in blocks])
    if fmt == "sparse":
        indptr, base = [np.zeros(1, dtype=np.int64)], 0
        for b in blocks:
            indptr.append(b["indptr"][1:].astype(np.int64) + base)
            base += int(b["indptr"][-1])
        return (
            np.concatenate([b["data"] for b in blocks]),
            np.concatenate([b["indices"] for b in blocks]),
            np.concatenate(indptr),
        )
    if fmt == "grouped":
        off, base = [np.zeros(1, dtype=np.int64)], 0
        for b in blocks:
            off.append(b["off"][1:].astype(np.int64) + base)
            base += int(b["off"][-1])
        return (
            np.concatenate([b["k"] for b in blocks]),
            np.concatenate(off),
            np.concatenate([b["v"] for b in blocks]),
        )
    raise TcaError(f"unknown format '{fmt}'")


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
