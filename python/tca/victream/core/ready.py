"""The global list (seed 002 Fig. 5.6): subtasks whose parents are all done, schedulable on any
device, in the order they entered it; with the indexes that keep a scheduling decision cheap.

A locality-aware choice needs the least swap I/O over the whole list. Scanning it costs time
proportional to its length at every decision, quadratic over a run. Most entries, though, have
no input on the deciding device and every input already on the host; for them the swap I/O
depends only on (bytes to load, bytes of outputs), so one entry per such *group* (the oldest)
stands for all. The others, found through the index by input, are evaluated one by one:

- ``readers(pid)``: the listed subtasks that read partition ``pid``;
- ``hostless``: the listed subtasks with an input that has no host copy yet (it must be
  written back by the device holding it before another device can load it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator

Group = tuple[int, int]  # (bytes of the inputs, bytes of the outputs)


class ReadyList:
    def __init__(self):
        self.seq: dict[int, int] = {}  # sid -> entry number (the order of the list)
        self._order: list[tuple[int, int]] = []  # (seq, sid), sorted
        self._groups: dict[Group, list[tuple[int, int]]] = {}  # group -> (seq, sid), sorted
        self._group_of: dict[int, Group] = {}
        self._inputs: dict[int, tuple[int, ...]] = {}
        self._readers: dict[int, set[int]] = {}
        self._no_host: dict[int, set[int]] = {}  # sid -> its inputs without a host copy
        self._next = 0

    def __len__(self) -> int:
        return len(self.seq)

    def __bool__(self) -> bool:
        return bool(self.seq)

    def __contains__(self, sid: int) -> bool:
        return sid in self.seq

    # ---------------------------------------------------------------- queries
    def head(self) -> int | None:
        """The oldest entry."""
        return self._order[0][1] if self._order else None

    def in_order(self) -> list[int]:
        return [sid for _, sid in self._order]

    def readers(self, pid: int) -> set[int]:
        return self._readers.get(pid, set())

    @property
    def hostless(self) -> Iterable[int]:
        return self._no_host.keys()

    def group_heads(self, skip: set[int]) -> Iterator[tuple[Group, int]]:
        """For each group, its oldest entry not in ``skip``."""
        for group, entries in self._groups.items():
            for _, sid in entries:
                if sid not in skip:
                    yield group, sid
                    break

    # ---------------------------------------------------------------- updates
    def add(self, sid: int, inputs: tuple[int, ...], group: Group, no_host: set[int]) -> None:
        """Appends ``sid``; ``inputs`` without duplicates, ``no_host`` those without a host copy."""
        assert sid not in self.seq
        self._next += 1
        key = (self._next, sid)
        self.seq[sid] = self._next
        self._order.append(key)
        self._groups.setdefault(group, []).append(key)
        self._group_of[sid] = group
        self._inputs[sid] = inputs
        for p in inputs:
            self._readers.setdefault(p, set()).add(sid)
        if no_host:
            self._no_host[sid] = set(no_host)

    def remove(self, sid: int) -> None:
        key = (self.seq.pop(sid), sid)
        _delete(self._order, key)
        group = self._group_of.pop(sid)
        entries = self._groups[group]
        _delete(entries, key)
        if not entries:
            del self._groups[group]
        for p in self._inputs.pop(sid):
            readers = self._readers[p]
            readers.discard(sid)
            if not readers:
                del self._readers[p]
        self._no_host.pop(sid, None)

    def host_copy_made(self, pid: int) -> None:
        """``pid`` now has a host copy: its readers may rejoin the plain groups."""
        for sid in self._readers.get(pid, ()):
            missing = self._no_host.get(sid)
            if missing is not None:
                missing.discard(pid)
                if not missing:
                    del self._no_host[sid]

    def clone(self) -> ReadyList:
        c = object.__new__(ReadyList)
        c.__dict__.update(self.__dict__)
        c.seq = dict(self.seq)
        c._order = list(self._order)
        c._groups = {g: list(e) for g, e in self._groups.items()}
        c._group_of = dict(self._group_of)
        c._inputs = dict(self._inputs)
        c._readers = {p: set(r) for p, r in self._readers.items()}
        c._no_host = {s: set(m) for s, m in self._no_host.items()}
        return c


def _delete(entries: list[tuple[int, int]], key: tuple[int, int]) -> None:
    i = bisect_left(entries, key)
    assert entries[i] == key
    del entries[i]
