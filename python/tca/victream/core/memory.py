"""Per-device memory manager (seed 002 §5.3.3 "メモリマネージャ", §5.4.2).

Pure accounting, no data: which partitions occupy a device's memory, in which state, how many
subtasks hold a lock on each, and their least-recently-used order. Every reservation is checked
against the capacity; exceeding it is a bug in the scheduler and raises ``AssertionError``
(tests rely on this: memory never exceeds a device's capacity).

An entry is in one :class:`EntryState` and, while a swap-out is in flight, has a
:class:`SwapOutKind`: a write-back keeps the entry (e.g. so another device can load it), an
eviction frees it when the copy completes (the memory is free only then).

The entries dictionary is kept in LRU order: a reservation, a lock and an unlock move the entry
to the end, so the oldest entry comes first without sorting.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from enum import Enum


class EntryState(Enum):
    FUTURE = "future"  # reserved for the output of a subtask queued on this device
    LOADING = "loading"  # a swap-in is in flight
    RESIDENT = "resident"  # the data is on the device


class SwapOutKind(Enum):
    WRITEBACK = "writeback"  # copy to the host, keep the device copy
    EVICT = "evict"  # copy to the host, then free the device copy


@dataclass
class Entry:
    nbytes: int
    state: EntryState
    locks: int = 0
    out: SwapOutKind | None = None  # the swap-out in flight, if any


class MemoryManager:
    """One device's memory: ``capacity`` [bytes], load threshold and swap-out threshold as
    fractions of it (seed 002 §6.1: 70 % and 50 %)."""

    def __init__(self, capacity: int, load_threshold: float = 0.7, swap_threshold: float = 0.5):
        if capacity <= 0:
            raise ValueError("device capacity must be positive")
        if not 0 < swap_threshold <= load_threshold <= 1:
            raise ValueError("thresholds must satisfy 0 < swap <= load <= 1")
        self.capacity = capacity
        self.load_threshold = load_threshold
        self.swap_threshold = swap_threshold
        self.load_limit = load_threshold * capacity  # [B]
        self.swap_limit = swap_threshold * capacity  # [B]
        self.entries: dict[int, Entry] = {}  # in LRU order, oldest first
        self.used = 0  # bytes reserved by all entries, in any state
        self.evicting = 0  # bytes of entries whose eviction is in flight
        self.peak = 0

    # getters
    def has(self, pid: int) -> bool:
        return pid in self.entries

    def state(self, pid: int) -> EntryState | None:
        e = self.entries.get(pid)
        return e.state if e else None

    def usable(self, pid: int) -> bool:
        """Whether the device holds ``pid`` and is not evicting it (no load needed)."""
        e = self.entries.get(pid)
        return e is not None and e.out is not SwapOutKind.EVICT

    def swapping_out(self, pid: int) -> bool:
        e = self.entries.get(pid)
        return e is not None and e.out is not None

    def nbytes(self, pid: int) -> int:
        return self.entries[pid].nbytes

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def below_load_threshold(self) -> bool:
        """Fig. 5.8 ``mem_use[g] <= mem_th[g]``: may the scheduler load more?"""
        return self.used - self.evicting <= self.load_limit

    def above_swap_threshold(self) -> bool:
        return self.used - self.evicting > self.swap_limit

    def iter_evictable(self, exclude: set[int] | frozenset[int] = frozenset()) -> Iterator[int]:
        """Unlocked resident partitions in LRU order (oldest first)."""
        for pid, e in self.entries.items():
            if e.state is EntryState.RESIDENT and e.locks == 0 and e.out is None and pid not in exclude:
                yield pid

    def evictable(self, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
        return list(self.iter_evictable(exclude))

    def clone(self) -> MemoryManager:
        """An independent copy (the optimal-schedule search branches on copies)."""
        m = object.__new__(MemoryManager)
        m.__dict__.update(self.__dict__)
        m.entries = {pid: replace(e) for pid, e in self.entries.items()}
        return m

    # commands
    def reserve(self, pid: int, nbytes: int, state: EntryState) -> None:
        assert pid not in self.entries, f"partition {pid} already on the device"
        assert self.used + nbytes <= self.capacity, (
            f"memory manager: {self.used} + {nbytes} B exceeds capacity {self.capacity} B"
        )
        self.entries[pid] = Entry(nbytes, state)
        self.used += nbytes
        self.peak = max(self.peak, self.used)

    def resize(self, pid: int, nbytes: int) -> None:
        e = self.entries[pid]
        assert self.used - e.nbytes + nbytes <= self.capacity, "memory manager: resize exceeds capacity"
        self.used += nbytes - e.nbytes
        e.nbytes = nbytes

    def release(self, pid: int) -> int:
        e = self.entries.pop(pid)
        self.used -= e.nbytes
        if e.out is SwapOutKind.EVICT:
            self.evicting -= e.nbytes
        assert self.used >= 0 and self.evicting >= 0
        return e.nbytes

    def set_state(self, pid: int, state: EntryState) -> None:
        self.entries[pid].state = state

    def lock(self, pid: int) -> None:
        self.entries[pid].locks += 1
        self._touch(pid)

    def unlock(self, pid: int) -> None:
        e = self.entries[pid]
        assert e.locks > 0, f"partition {pid} is not locked"
        e.locks -= 1
        self._touch(pid)

    def mark_out(self, pid: int, kind: SwapOutKind | None) -> None:
        e = self.entries[pid]
        if e.out is SwapOutKind.EVICT:
            self.evicting -= e.nbytes
        e.out = kind
        if kind is SwapOutKind.EVICT:
            self.evicting += e.nbytes

    def _touch(self, pid: int) -> None:
        """Makes ``pid`` the most recently used entry."""
        self.entries[pid] = self.entries.pop(pid)
