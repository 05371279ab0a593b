"""What a subtask runs: kernels built around the user's functions (seed 002 §5.3.2-5.3.3).

A kernel takes the input blocks (device arrays, in the order of the subtask's inputs) and
returns (output blocks, meta). Every user function is called through :func:`call_user` and its
result checked by :func:`check_output` against what the GRDD's MM declares (format, element
type, elements per row): a failure or a result of the wrong kind stops the action with a
:class:`UserFunctionError` naming the task and the partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from tca import TcaError
from tca.victream.api import formats as F

ARRAY_FORMATS = ("dense", "image", "value")


class UserFunctionError(TcaError):
    """A user function raised, or returned something its MM does not allow."""

    def __init__(self, task: str, index: int, reason: str, error: BaseException | None = None):
        super().__init__(f"user function of task {task} failed on partition {index}: {reason}")
        self.task, self.index, self.error = task, index, error


def call_user(task: str, index: int, fn, *args):
    try:
        return fn(*args)
    except TcaError:
        raise
    except Exception as e:  # a user function failed: name the task and the partition
        raise UserFunctionError(task, index, f"{type(e).__name__}: {e}", e) from e


@dataclass(frozen=True)
class OutputSpec:
    """What a user function must return: ``fmt``; for dense and image also the element type
    and, when known (> 0), the elements per row."""

    fmt: str
    dtype: np.dtype | None = None
    ncols: int = 0


def check_output(spec: OutputSpec, obj, like, task: str, index: int) -> dict:
    """The block of what a user function returned, or a UserFunctionError saying why it does
    not fit ``spec``. ``like`` is an input array: the result must live in the same module."""

    def bad(reason: str) -> UserFunctionError:
        return UserFunctionError(task, index, f"returned {reason}")

    def array(a, what: str):
        if isinstance(a, np.generic) and spec.fmt == "value":
            a = F.xp_of(like).asarray(a)
        if not _is_array(a):
            raise bad(f"{_kind(a)} as {what}, expected an array for format '{spec.fmt}'")
        if F.xp_of(a) is not F.xp_of(like):
            raise bad(f"a {_module(a)} array as {what} on a {_module(like)} device")
        return a

    if spec.fmt in ARRAY_FORMATS:
        a = array(obj, "the result")
        if spec.fmt != "value":
            if a.ndim == 0:
                raise bad("a 0-dimensional array, expected rows")
            if spec.dtype is not None and a.dtype != spec.dtype:
                raise bad(f"{a.dtype} elements, MM declares {spec.dtype} (give MM(dtype=...))")
            row = prod(a.shape[1:])
            if spec.ncols and row != spec.ncols:
                raise bad(f"rows of {row} elements, MM declares {spec.ncols} (give MM(ncols=...))")
        return {"a": a}
    names = {"sparse": ("data", "indices", "indptr"), "kv": ("k", "v"), "grouped": ("k", "off", "v")}
    if spec.fmt not in names:
        raise TcaError(f"unknown format '{spec.fmt}'")
    fields = names[spec.fmt]
    if not isinstance(obj, tuple | list) or len(obj) != len(fields):
        raise bad(f"{_kind(obj)}, expected a tuple ({', '.join(fields)}) for format '{spec.fmt}'")
    block = {name: array(a, name) for name, a in zip(fields, obj, strict=True)}
    if spec.fmt == "kv" and len(block["k"]) != len(block["v"]):
        raise bad(f"{len(block['k'])} keys and {len(block['v'])} values")
    return block


def _is_array(a) -> bool:
    return isinstance(a, np.ndarray) or type(a).__module__.split(".")[0] == "cupy" and hasattr(a, "ndim")


def _module(a) -> str:
    return "CuPy" if F.xp_of(a) is not np else "NumPy"


def _kind(obj) -> str:
    return "None" if obj is None else f"a {type(obj).__name__}"


# -------------------------------------------------------------------- kernels
@dataclass(slots=True)
class Elementwise:
    """One partition of map / mapPartitions / reduce: ``n_members`` zipped input blocks of
    formats ``in_fmts``, and with a halo the neighbours' edge blocks after them."""

    task: str
    index: int
    fn: object
    in_fmts: tuple[str, ...]
    ncols: int  # elements per row of the input (sparse views need it)
    out: OutputSpec
    n_members: int
    halo: int = 0
    offset: int = 0  # the partition's first row in the GRDD (halo only)
    total_rows: int = 0  # rows of the whole GRDD (halo only)
    n_parts: int = 1
    edge: int = 0  # rows of the output's top and bottom edge to emit as extra blocks


def elementwise_kernel(spec: Elementwise):
    def kernel(blocks):
        members = blocks[: spec.n_members]
        views = [F.to_view(f, b, spec.ncols) for f, b in zip(spec.in_fmts, members, strict=True)]
        like = next(iter(members[0].values()))
        if spec.halo:
            out = call_user(spec.task, spec.index, spec.fn, *_halo_tile(spec, views[0], blocks))
        else:
            out = call_user(spec.task, spec.index, spec.fn, *views)
        block = check_output(spec.out, out, like, spec.task, spec.index)
        if spec.edge:  # the top and bottom rows a stencil consumer of this GRDD needs
            a = block["a"]
            return [block, {"a": a[: spec.edge]}, {"a": a[-spec.edge :]}], None
        return [block], None

    return kernel


def _halo_tile(spec: Elementwise, a, blocks):
    """The partition with the neighbours' rows around it, and its PartitionInfo."""
    xp = F.xp_of(a)
    extra = list(blocks[spec.n_members :])
    top = extra.pop(0)["a"][-spec.halo :] if spec.index > 0 else a[:0]
    bottom = extra.pop(0)["a"][: spec.halo] if spec.index + 1 < spec.n_parts else a[:0]
    info = F.PartitionInfo(spec.index, spec.offset, len(a), len(top), len(bottom), spec.total_rows)
    return xp.concatenate([top, a, bottom]), info


def join_kernel(task, index, fn, a_fmt, a_ncols, k0, k1, dtype):
    """Row block ``index`` of ``A @ B`` accumulated over B's row block ``k0:k1``."""
    spec = OutputSpec("dense")

    def kernel(blocks):
        a = F.to_view(a_fmt, blocks[0], a_ncols)
        b = blocks[1]["a"]
        a_slice = F.csr_cols(a, k0, k1) if a_fmt == "sparse" else a[:, k0:k1]
        if fn:
            prod_ = check_output(spec, call_user(task, index, fn, a_slice, b), b, task, index)["a"]
        else:
            prod_ = F.csr_matmul(a_slice, b) if a_fmt == "sparse" else a_slice @ b
        prod_ = prod_.astype(dtype, copy=False)
        if len(blocks) > 2:
            prod_ = blocks[2]["a"] + prod_
        return [{"a": prod_}], None

    return kernel


def sort_kernel(op):
    """Step 1 of groupByKey / reduceByKey: sort (and combine); meta is the key histogram."""

    def kernel(blocks):
        k, v = F.sort_kv(blocks[0]["k"], blocks[0]["v"])
        if op:
            k, v = F.segment_reduce(op, k, v)
        xp = F.xp_of(k)
        starts = F.segment_starts(k)
        ends = xp.concatenate([starts[1:], xp.asarray([len(k)])])
        uk, counts = k[starts], ends - starts
        meta = (F.to_host(uk), F.to_host(counts))  # the key histogram the DAG analyzer needs (§5.3.3)
        return [{"k": k, "v": v}], meta

    return kernel


def split_kernel(cuts, n_ranges):
    """Step 2: a sorted partition split at the key ``cuts`` into ``n_ranges`` blocks."""

    def kernel(blocks):
        k, v = blocks[0]["k"], blocks[0]["v"]
        xp = F.xp_of(k)
        if cuts is None:  # only in simulation, where kernels do not run
            raise RuntimeError("split without key ranges")
        inner = F.to_host(xp.searchsorted(k, xp.asarray(cuts, dtype=k.dtype), side="left"))
        pos = [0] + [int(x) for x in inner] + [len(k)]
        return [
            {"k": k[pos[r] : pos[r + 1]].copy(), "v": v[pos[r] : pos[r + 1]].copy()} for r in range(n_ranges)
        ], None

    return kernel


def merge_kernel(op):
    """Step 3: one key range of every sorted partition merged (and combined, or grouped)."""

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
