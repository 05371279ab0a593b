"""The collective library on the basic API (seed 001) for Python rank programs.

``ctx.coll_barrier()``, ``ctx.coll_allgather(data)``, ``ctx.coll_allreduce(data, op)``,
``ctx.coll_reduce(data, op, root)`` and ``ctx.coll_bcast(data, root)`` on a
:class:`tca.peach.sim.Rank` (the simulator and the shm fabric alike) call ``tcaCollBarrier``,
``tcaCollAllgather``, ``tcaCollAllreduce``, ``tcaCollReduce`` and ``tcaCollBcast``: TCA
communication (PIO and DMA), timed by the PEACH2 model on the simulator, unlike ``barrier`` and
``allgather``, which are the job's bootstrap and cost no simulated time.

``data`` is a NumPy array (the result is an array of the same dtype and shape; an allgather's
has one more leading axis, by rank) or bytes-like (the result is ``bytes``; reductions then need
``dtype``: a NumPy dtype or a ``tcaDataType`` name such as ``"TCA_DOUBLE"``). Operators are
named ``"sum"``, ``"prod"``, ``"max"``, ``"min"``, ``"band"``, ``"land"``, ``"bor"``, ``"lor"``,
``"bxor"``, ``"lxor"`` (or ``"TCA_OP_SUM"`` ...).

Large payloads (and small ones in device memory) register the library's DMA chains on channels
0-3: after such a call, ``ctx.start_dma(ch)`` on a channel it used raises ``TcaApiError``
``ChannelTaken`` (code 111, as ``TCA_ERROR_CHANNEL_TAKEN`` in C) and runs nothing, until the
program calls ``ctx.desc_set(desc, ch)`` again.
"""

from __future__ import annotations

from typing import Any

OPS = ("sum", "prod", "max", "min", "band", "land", "bor", "lor", "bxor", "lxor")

# tcaDataType values (tca-api.h): size << 8 | index.
TYPES = {
    "TCA_CHAR": 1 << 8 | 0,
    "TCA_SIGNED_CHAR": 1 << 8 | 1,
    "TCA_UNSIGNED_CHAR": 1 << 8 | 2,
    "TCA_BYTE": 1 << 8 | 3,
    "TCA_SHORT": 2 << 8 | 4,
    "TCA_UNSIGNED_SHORT": 2 << 8 | 5,
    "TCA_INT": 4 << 8 | 6,
    "TCA_UNSIGNED": 4 << 8 | 7,
    "TCA_LONG": 8 << 8 | 8,
    "TCA_UNSIGNED_LONG": 8 << 8 | 9,
    "TCA_LONG_LONG": 8 << 8 | 10,
    "TCA_UNSIGNED_LONG_LONG": 8 << 8 | 11,
    "TCA_FLOAT": 4 << 8 | 12,
    "TCA_DOUBLE": 8 << 8 | 13,
    "TCA_LONG_DOUBLE": 16 << 8 | 14,
}

# NumPy dtype (kind, itemsize) -> tcaDataType name.
_NUMPY = {
    ("i", 1): "TCA_SIGNED_CHAR",
    ("u", 1): "TCA_UNSIGNED_CHAR",
    ("i", 2): "TCA_SHORT",
    ("u", 2): "TCA_UNSIGNED_SHORT",
    ("i", 4): "TCA_INT",
    ("u", 4): "TCA_UNSIGNED",
    ("i", 8): "TCA_LONG",
    ("u", 8): "TCA_UNSIGNED_LONG",
    ("f", 4): "TCA_FLOAT",
    ("f", 8): "TCA_DOUBLE",
    ("f", 16): "TCA_LONG_DOUBLE",
}


def op_value(op: str) -> int:
    """The ``tcaOp`` value of an operator name."""
    name = op.lower().removeprefix("tca_op_")
    if name not in OPS:
        raise ValueError(f"unknown reduction operator {op!r} (one of {', '.join(OPS)})")
    return OPS.index(name)


def type_value(dtype: Any) -> int:
    """The ``tcaDataType`` value of a NumPy dtype or a ``tcaDataType`` name."""
    if isinstance(dtype, str) and dtype.upper() in TYPES:
        return TYPES[dtype.upper()]
    import numpy as np

    try:
        d = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"unknown data type {dtype!r}") from None
    name = _NUMPY.get((d.kind, d.itemsize))
    if name is None or d.byteorder == ">":
        raise ValueError(f"no tcaDataType for NumPy dtype {d} (signed/unsigned integers and floats)")
    return TYPES[name]


def _is_array(data: Any) -> bool:
    return type(data).__module__ == "numpy" and hasattr(data, "dtype")


def _bytes(data: Any) -> bytes:
    if _is_array(data):
        import numpy as np

        return np.ascontiguousarray(data).tobytes()
    return bytes(memoryview(data).cast("B"))


def _like(data: Any, raw: bytes | None, leading: int | None = None):
    """``raw`` shaped as ``data`` (an array) or as bytes."""
    if raw is None or not _is_array(data):
        return raw
    import numpy as np

    shape = data.shape if leading is None else (leading, *data.shape)
    return np.frombuffer(raw, dtype=data.dtype).reshape(shape).copy()


class Collectives:
    """The ``coll_*`` methods of a rank context (mixed into :class:`tca.peach.sim.Rank`)."""

    _ctx: Any
    size: int

    def coll_barrier(self) -> None:
        """``tcaCollBarrier``."""
        self._ctx.coll_barrier()

    def coll_allgather(self, data):
        """``tcaCollAllgather``: every rank's ``data`` (same size everywhere), by rank."""
        return _like(data, self._ctx.coll_allgather(_bytes(data)), self.size)

    def coll_allreduce(self, data, op: str = "sum", dtype: Any = None):
        """``tcaCollAllreduce``: the element-wise reduction of every rank's ``data``."""
        t = type_value(data.dtype if _is_array(data) and dtype is None else dtype)
        return _like(data, self._ctx.coll_allreduce(_bytes(data), t, op_value(op)))

    def coll_reduce(self, data, op: str = "sum", root: int = 0, dtype: Any = None):
        """``tcaCollReduce``: the reduction at ``root``; ``None`` on the other ranks."""
        t = type_value(data.dtype if _is_array(data) and dtype is None else dtype)
        return _like(data, self._ctx.coll_reduce(_bytes(data), t, op_value(op), root))

    def coll_bcast(self, data, root: int = 0):
        """``tcaCollBcast``: ``root``'s ``data`` on every rank (every rank passes as much)."""
        return _like(data, self._ctx.coll_bcast(_bytes(data), root))
