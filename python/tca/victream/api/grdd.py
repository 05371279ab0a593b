"""GRDDs and their operators (seed 002 Table 5.2, §5.3.2).

Transformations (``map``, ``zip``, ``mapPartitions``, ``groupByKey``, ``reduceByKey``, ``join``)
only record a node; actions (``reduce``, ``collect``, ``outputFile``) hand the graph to the
context, which runs it. The DAG analyzer (:mod:`tca.victream.core.analyzer`) expands the nodes
into one subtask per partition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tca import TcaError
from tca.victream.api import formats as F
from tca.victream.api.kernels import UserFunctionError


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
        self.id = ctx.catalog.new_id()
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
        parts = self.ctx.run_action(node, "reduce")
        if parts is None:
            return None
        values = [F.to_view("value", b) for b in parts]
        acc = values[0]
        for i, v in enumerate(values[1:], start=1):
            try:
                acc = f_host(acc, v)
            except Exception as e:  # name the task and the partition folded in
                raise UserFunctionError(
                    f"reduce#{node.id} (host reducer)", i, f"{type(e).__name__}: {e}", e
                ) from e
        return acc

    def collect(self):
        """The whole GRDD on the host (concatenated in partition order). None in sim mode."""
        if len(self.fmts) != 1:
            raise TcaError("collect a zipped GRDD by mapping it first")
        parts = self.ctx.run_action(self, "collect")
        return None if parts is None else _concat(self.format, parts, self.ncols)

    def outputFile(self, path: str) -> None:  # noqa: N802
        """Writes the GRDD to ``path`` (.npy for arrays, .npz for sparse / key-value formats)."""
        if len(self.fmts) != 1:
            raise TcaError("outputFile of a zipped GRDD: map it first")
        parts = self.ctx.run_action(self, "outputFile")
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
