"""Data formats of GRDDs and how their partitions look to user functions (seed 002 §5.3.1-5.3.2,
Fig. 5.4: the runtime manages partitions according to the GRDD's data format).

A partition is stored as a *block* (named arrays, :data:`tca.victream.core.dag.Block`); a user
function sees a *view* of it:

============  ===============================  ==========================================
format        block                            view passed to f
============  ===============================  ==========================================
``dense``     ``{"a": rows x cols}``           the array
``image``     ``{"a": rows x width [x ch]}``   the array (with halo rows when MM.halo > 0)
``sparse``    ``{"data", "indices", "indptr"}`` :class:`CSR` (a block of rows)
``kv``        ``{"k", "v"}``                   ``(keys, values)``
``grouped``   ``{"k", "off", "v"}``            :class:`Grouped` (groupByKey's output)
``value``     ``{"a": small array}``           the array (e.g. a per-partition reduction)
============  ===============================  ==========================================

Every helper works on NumPy and CuPy arrays alike (``xp`` is the array's module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from tca import TcaError

FORMATS = ("dense", "image", "sparse", "kv", "grouped", "value")
REDUCERS = ("add", "min", "max")


def xp_of(array) -> Any:
    """The array module (numpy or cupy) of ``array``: one user function runs on both devices."""
    if type(array).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return np


class CSR(NamedTuple):
    """A block of rows of a sparse matrix in CSR form (``indptr`` starts at 0)."""

    data: Any
    indices: Any
    indptr: Any
    shape: tuple[int, int]


class Grouped(NamedTuple):
    """groupByKey's output: unique sorted ``keys``; the values of ``keys[i]`` are
    ``values[offsets[i]:offsets[i+1]]``."""

    keys: Any
    offsets: Any
    values: Any


@dataclass(frozen=True)
class PartitionInfo:
    """Where a partition lies in its GRDD (seed 002 §5.3.2: a stencil kernel receives the
    partition's offset from the start of the image, so edge pixels are handled correctly).

    ``offset``: index of the partition's first own row; ``halo_top`` / ``halo_bottom``: rows of
    the neighbours prepended / appended to the view; ``total_rows``: rows of the whole GRDD.
    """

    index: int
    offset: int
    rows: int
    halo_top: int
    halo_bottom: int
    total_rows: int


def to_host(a) -> np.ndarray:
    """A NumPy copy of a NumPy or CuPy array."""
    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def block_nbytes(block: dict) -> int:
    return int(sum(a.nbytes for a in block.values()))


def to_view(fmt: str, block: dict, ncols: int = 0):
    if fmt in ("dense", "image", "value"):
        return block["a"]
    if fmt == "sparse":
        return CSR(block["data"], block["indices"], block["indptr"], (len(block["indptr"]) - 1, ncols))
    if fmt == "kv":
        return block["k"], block["v"]
    if fmt == "grouped":
        return Grouped(block["k"], block["off"], block["v"])
    raise TcaError(f"unknown format '{fmt}'")


MIN_PARTITION_BYTES = 4096  # smaller partitions cost more in scheduling than they move
MAX_PARTITIONS = 65536  # per GRDD: bounds the scheduler's work and memory


def check_partition_size(nbytes: int, what: str = "partition_size") -> int:
    """``nbytes`` if it is a sensible partition size, else a one-line TcaError."""
    if nbytes < MIN_PARTITION_BYTES:
        raise TcaError(f"{what} {nbytes} B is below the minimum partition size of {MIN_PARTITION_BYTES} B")
    return nbytes


def split_rows(n_rows: int, row_bytes: int, partition_bytes: int) -> list[tuple[int, int]]:
    """Row ranges of about ``partition_bytes`` each (at least one row per partition), at most
    :data:`MAX_PARTITIONS` of them."""
    if n_rows <= 0:
        raise TcaError("a GRDD needs at least one row")
    per = max(1, partition_bytes // max(1, row_bytes))
    count = -(-n_rows // per)
    if count > MAX_PARTITIONS:
        raise TcaError(
            f"{n_rows} rows of {row_bytes} B in partitions of {per} rows make {count} partitions, "
            f"more than {MAX_PARTITIONS}: use larger partitions"
        )
    return [(s, min(n_rows, s + per)) for s in range(0, n_rows, per)]


def csr_rows(data, indices, indptr, r0: int, r1: int) -> dict:
    """Rows ``r0:r1`` of a CSR matrix as a block with a zero-based ``indptr`` (host side)."""
    a, b = int(indptr[r0]), int(indptr[r1])
    return {
        "data": np.ascontiguousarray(data[a:b]),
        "indices": np.ascontiguousarray(indices[a:b]),
        "indptr": np.asarray(indptr[r0 : r1 + 1]) - a,
    }


def csr_cols(m: CSR, c0: int, c1: int) -> CSR:
    """Columns ``c0:c1`` of a CSR block (renumbered from 0)."""
    xp = xp_of(m.data)
    nrows = m.shape[0]
    # the row of every stored value (cupy.repeat takes no array of counts, searchsorted works on both)
    rows = xp.searchsorted(m.indptr, xp.arange(len(m.data)), side="right") - 1
    keep = (m.indices >= c0) & (m.indices < c1)
    counts = xp.bincount(rows[keep], minlength=nrows)
    indptr = xp.concatenate([xp.zeros(1, dtype=m.indptr.dtype), xp.cumsum(counts).astype(m.indptr.dtype)])
    return CSR(m.data[keep], m.indices[keep] - c0, indptr, (nrows, c1 - c0))


def csr_matmul(m: CSR, b):
    """A CSR block times a dense matrix, with array operations only (NumPy and CuPy)."""
    xp = xp_of(b)
    prod = m.data[:, None] * b[m.indices]
    csum = xp.concatenate([xp.zeros((1, b.shape[1]), dtype=prod.dtype), xp.cumsum(prod, axis=0)])
    return csum[m.indptr[1:]] - csum[m.indptr[:-1]]


def sort_kv(k, v):
    """Sorts records by key, keeping the order of equal keys (CuPy's argsort is always stable)."""
    xp = xp_of(k)
    order = xp.argsort(k, kind="stable") if xp is np else xp.argsort(k)
    return k[order], v[order]


def segment_starts(sorted_keys):
    """Start index of each run of equal keys in a sorted key array."""
    xp = xp_of(sorted_keys)
    if len(sorted_keys) == 0:
        return xp.zeros(0, dtype=np.int64)
    change = xp.concatenate([xp.ones(1, dtype=bool), sorted_keys[1:] != sorted_keys[:-1]])
    return xp.nonzero(change)[0]


def segment_reduce(op: str, sorted_keys, values):
    """Reduces the values of each run of equal keys with ``op`` (add, min or max)."""
    xp = xp_of(sorted_keys)
    starts = segment_starts(sorted_keys)
    keys = sorted_keys[starts]
    if len(keys) == 0:
        return keys, values[:0]
    ends = xp.concatenate([starts[1:], xp.asarray([len(sorted_keys)])])
    if op == "add":
        csum = xp.concatenate([xp.zeros(1, dtype=values.dtype), xp.cumsum(values)])
        return keys, (csum[ends] - csum[starts]).astype(values.dtype)
    # min / max: order values within each key, then take the first / last of each run
    order = xp.lexsort(xp.stack([values, sorted_keys]))
    v = values[order]
    return keys, (v[starts] if op == "min" else v[ends - 1])


def reducer_name(f) -> str:
    """``f`` for reduceByKey: 'add' / 'min' / 'max' or the NumPy ufuncs add, minimum, maximum."""
    names = {"add": "add", "sum": "add", "min": "min", "minimum": "min", "max": "max", "maximum": "max"}
    key = f if isinstance(f, str) else getattr(f, "__name__", None)
    if key not in names:
        raise TcaError(
            f"reduceByKey supports the reductions {', '.join(REDUCERS)} "
            "(or numpy.add, numpy.minimum, numpy.maximum)"
        )
    return names[key]
