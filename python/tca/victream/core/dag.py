"""The subtask graph as plain data (seed 002 §5.3.3, Fig. 5.3 "DAG analyzer").

A GRDD operator is a *task*; the DAG analyzer splits each task into one *subtask* per data
partition. The graph the runtime schedules is a set of :class:`Subtask` records whose inputs
and outputs are partition ids: a subtask's parents are the producers of its inputs. Nothing here
imports a scheduler or a device, so any code can build or inspect a graph (Dask's graph spec is
the model: plain data with explicit references).

:func:`run_sequential` is the reference executor: it runs the subtasks one by one on the host,
in a topological order, with no memory limit. Tests compare every scheduler against it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

Block = dict[str, Any]
"""A partition's data: named arrays (NumPy on the host, NumPy or CuPy on a device)."""


class HostCopy(Enum):
    """Where the host copy of a partition lives."""

    RAM = "ram"  # host memory
    FILE = "file"  # still in its input file: the first swap-in reads it (Table 6.1 file read)


@dataclass(frozen=True)
class Partition:
    """One data partition of a GRDD.

    ``nbytes`` is the size [bytes] the memory manager reserves for it on a device; for the output
    of a subtask it is the MM output size (an upper bound, shrunk to the real size once produced).
    ``source`` says where the host copy lives before any subtask runs (:class:`HostCopy`), or
    ``None`` for a partition that a subtask produces.
    """

    pid: int
    nbytes: int
    source: HostCopy | None = None
    label: str = ""
    persist: bool = False  # a cached GRDD's partition: kept across actions like a source


@dataclass
class Subtask:
    """A task's work on one partition (seed 002 §5.3.1: "サブタスク").

    ``kernel(inputs) -> (outputs, meta)`` takes the input blocks (device arrays, in the order of
    ``inputs``) and returns one block per output partition and a small host-side ``meta`` value
    (used by multi-step tasks, e.g. reduceByKey's key sample). ``cost_s`` is the compute time
    [s] the simulator charges on a device of compute speed 1.0.
    """

    sid: int
    task: str
    index: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    cost_s: float = 0.0
    kernel: Callable[[list[Block]], tuple[list[Block], Any]] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"{self.task}[{self.index}]"


@dataclass
class Batch:
    """What the DAG analyzer hands the scheduler at once: new partitions and subtasks, and the
    partitions whose data an action returns to the host (``results``)."""

    partitions: list[Partition]
    subtasks: list[Subtask]
    results: list[int] = field(default_factory=list)
    hold: list[int] = field(default_factory=list)  # keep: a later batch will consume them
    release: list[int] = field(default_factory=list)  # held earlier, consumers now registered


def topological(subtasks: Iterable[Subtask], produced_before: set[int] | None = None) -> list[Subtask]:
    """The subtasks in an order where every producer precedes its consumers (stable by sid)."""
    todo = sorted(subtasks, key=lambda s: s.sid)
    have = set(produced_before or ())
    producers = {pid for s in todo for pid in s.outputs}
    order: list[Subtask] = []
    while todo:
        rest = []
        for s in todo:
            if all(p in have or p not in producers for p in s.inputs):
                order.append(s)
                have.update(s.outputs)
            else:
                rest.append(s)
        if len(rest) == len(todo):
            raise ValueError(f"the subtask graph has a cycle at {rest[0].name}")
        todo = rest
    return order


def run_sequential(subtasks: list[Subtask], host: dict[int, Block]) -> dict[int, Any]:
    """Reference executor: runs every kernel on the host in topological order.

    ``host`` maps partition ids to blocks and receives the outputs; returns each subtask's meta.
    """
    metas = {}
    for s in topological(subtasks, set(host)):
        outs, meta = s.kernel([host[p] for p in s.inputs])
        for pid, block in zip(s.outputs, outs, strict=True):
            host[pid] = block
        metas[s.sid] = meta
    return metas
