"""Per-device memory manager (seed 002 §5.3.3 "メモリマネージャ", §5.4.2).

Pure accounting, no data: which partitions occupy a device's memory, in which state, how many
subtasks hold a lock on each, and their least-recently-used order. Every reservation is checked
against the capacity; exceeding it is a bug in the scheduler and raises ``AssertionError``
(tests rely on this: memory never exceeds a device's capacity).

States of an entry:
  ``future``   reserved for the output of a subtask queued on this device (not produced yet)
  ``loading``  a swap-in is in flight
  ``resident`` the data is on the device
and an ``out`` flag while a swap-out is in flight: ``"writeback"`` (copy to the host, keep the
entry, e.g. so another device can load it) or ``"evict"`` (copy then free; the memory is free
only when the copy completes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass
class Entry:
    nbytes: int
    state: str  # "future" | "loading" | "resident"
    locks: int = 0
    tick: int = 0  # last use, for LRU
    out: str | None = None  # None | "writeback" | "evict"


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
        self.entries: dict[int, Entry] = {}
        self.used = 0  # bytes reserved by all entries, in any state
        self.evicting = 0  # bytes of entries whose eviction is in flight
        self.peak = 0
        self._tick = 0

    # getters
    def has(self, pid: int) -> bool:
        return pid in self.entries

    def state(self, pid: int) -> str | None:
        e = self.entries.get(pid)
        return e.state if e else None

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def below_load_threshold(self) -> bool:
        """Fig. 5.8 ``mem_use[g] <= mem_th[g]``: may the scheduler load more?"""
        return self.used - self.evicting <= self.load_threshold * self.capacity

    def above_swap_threshold(self) -> bool:
        return self.used - self.evicting > self.swap_threshold * self.capacity

    def evictable(self, exclude: set[int] = frozenset()) -> list[int]:
        """Unlocked resident partitions in LRU order (oldest first)."""
        c = [
            (e.tick, pid)
            for pid, e in self.entries.items()
            if e.state == "resident" and e.locks == 0 and e.out is None and pid not in exclude
        ]
        return [pid for _, pid in sorted(c)]

    def clone(self) -> MemoryManager:
        """An independent copy (the optimal-schedule search branches on copies)."""
        m = object.__new__(MemoryManager)
        m.__dict__.update(self.__dict__)
        m.entries = {pid: replace(e) for pid, e in self.entries.items()}
        return m

    # commands
    def reserve(self, pid: int, nbytes: int, state: str) -> None:
        assert pid not in self.entries, f"partition {pid} already on the device"
        assert self.used + nbytes <= self.capacity, (
            f"memory manager: {self.used} + {nbytes} B exceeds capacity {self.capacity} B"
        )
        self.entries[pid] = Entry(nbytes, state, tick=self._next())
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
        if e.out == "evict":
            self.evicting -= e.nbytes
        assert self.used >= 0 and self.evicting >= 0
        return e.nbytes

    def set_state(self, pid: int, state: str) -> None:
        self.entries[pid].state = state

    def lock(self, pid: int) -> None:
        e = self.entries[pid]
        e.locks += 1
        e.tick = self._next()

    def unlock(self, pid: int) -> None:
        e = self.entries[pid]
        assert e.locks > 0, f"partition {pid} is not locked"
        e.locks -= 1
        e.tick = self._next()

    def mark_out(self, pid: int, kind: str | None) -> None:
        e = self.entries[pid]
        if e.out == "evict":
            self.evicting -= e.nbytes
        e.out = kind
        if kind == "evict":
            self.evicting += e.nbytes

    def _next(self) -> int:
        self._tick += 1
        return self._tick
