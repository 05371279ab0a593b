"""Swap I/O of a scheduling choice and the least-I/O choice (seed 002 §5.4.1).

Swap I/O of a subtask on device ``g`` = bytes to load + bytes another device must write back
first + dirty bytes (no host copy) that must be swapped out of ``g`` to make room. Ties go to
the earlier entry of the list searched. Read-only: nothing here changes the core.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

from tca.victream.core.memory import MemoryManager

if TYPE_CHECKING:
    from tca.victream.core.scheduler import Core


def swap_cost(core: Core, g: int, sid: int) -> int:
    """Swap I/O [B] that scheduling ``sid`` on ``g`` causes now."""
    mem, st = core.mem[g], core.subtasks[sid]
    ins = list(dict.fromkeys(st.inputs))
    load = wb = 0
    for p in ins:
        if not mem.usable(p):
            ps = core.parts[p]
            load += ps.nbytes
            if ps.host is None and not core.writeback_in_flight(p):
                wb += ps.nbytes
    need = load + sum(core.parts[o].nbytes for o in st.outputs)
    deficit = need - mem.free - mem.evicting
    dirty = 0
    if deficit > 0:
        for v in mem.iter_evictable(set(ins)):
            if deficit <= 0:
                break
            if core.parts[v].host is None:
                dirty += mem.nbytes(v)
            deficit -= mem.nbytes(v)
    return load + wb + dirty


def least_io(core: Core, g: int, cands: list[int]) -> int | None:
    """The candidate with the least swap I/O on ``g`` (the first of equal ones)."""
    best = None
    for i, sid in enumerate(cands):
        key = (swap_cost(core, g, sid), i)
        if best is None or key < best[0]:
            best = (key, sid)
    return None if best is None else best[1]


def least_io_global(core: Core, g: int) -> int | None:
    """:func:`least_io` over the global list, in time independent of the list's length.

    The subtasks that read a partition on ``g``, or a partition without a host copy, are
    evaluated one by one; every other subtask loads all its inputs from the host, so its swap
    I/O is ``load + dirty(load + outputs)`` and the oldest of each (load, outputs) group stands
    for the group (:mod:`tca.victream.core.ready`).
    """
    ready, mem = core.ready, core.mem[g]
    special: set[int] = set(ready.hostless)
    for pid in mem.entries:
        special |= ready.readers(pid)
    best = None
    for sid in special:
        key = (swap_cost(core, g, sid), ready.seq[sid])
        if best is None or key < best[0]:
            best = (key, sid)
    dirty = _DirtyCurve(core, mem)
    for (load, out), sid in ready.group_heads(special):
        key = (load + dirty(load + out), ready.seq[sid])
        if best is None or key < best[0]:
            best = (key, sid)
    return None if best is None else best[1]


class _DirtyCurve:
    """Dirty bytes to swap out of a device to make room for ``need`` bytes, for a subtask with
    no input on the device: the oldest evictable entries go first (LRU). Built on first use."""

    def __init__(self, core: Core, mem: MemoryManager):
        self.core, self.mem = core, mem
        self.room = mem.free + mem.evicting
        self.total: list[int] = []  # bytes of the first k evictable entries
        self.dirty: list[int] = []  # dirty bytes among them

    def __call__(self, need: int) -> int:
        deficit = need - self.room
        if deficit <= 0:
            return 0
        if not self.total:
            self._build()
        # entries are taken while the deficit is not covered: those with total[k] < deficit
        k = min(bisect_left(self.total, deficit), len(self.total) - 1)
        return self.dirty[k]

    def _build(self) -> None:
        parts, mem = self.core.parts, self.mem
        total, dirty = [0], [0]
        for v in mem.iter_evictable():
            n = mem.nbytes(v)
            total.append(total[-1] + n)
            dirty.append(dirty[-1] + (n if parts[v].host is None else 0))
        self.total, self.dirty = total, dirty


def majority_holder(core: Core, sid: int) -> int | None:
    """The device holding most of ``sid``'s input bytes (PTask's choice), if any holds some."""
    held = [0] * core.n_devices
    for p in set(core.subtasks[sid].inputs):
        for g, mem in enumerate(core.mem):
            if mem.usable(p):
                held[g] += core.parts[p].nbytes
    best = max(range(core.n_devices), key=lambda g: (held[g], -g))
    return best if held[best] > 0 else None
