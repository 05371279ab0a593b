"""The partition ids of a context and its source partitions: size, where the host copy lives,
and how to load it (seed 002 §5.3.1: GRDDs created from host arrays or files)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from tca.victream.core.dag import Block, HostCopy, Partition

Loader = Callable[[], Block]


class SourceCatalog:
    def __init__(self):
        self._ids = itertools.count(1)
        self._nbytes: dict[int, int] = {}
        self._kind: dict[int, HostCopy] = {}
        self._loaders: dict[int, Loader] = {}
        self._edges: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (GRDD id, rows) -> pairs

    def new_id(self) -> int:
        """A fresh id (partitions, subtasks and GRDDs share one counter)."""
        return next(self._ids)

    def add(self, nbytes: int, kind: HostCopy, loader: Loader | None) -> int:
        """A new source partition; ``loader`` None: metadata only (sim mode)."""
        pid = self.new_id()
        self._nbytes[pid] = int(nbytes)
        self._kind[pid] = kind
        if loader is not None:
            self._loaders[pid] = loader
        return pid

    def __contains__(self, pid: int) -> bool:
        return pid in self._nbytes

    def nbytes(self, pid: int) -> int:
        return self._nbytes[pid]

    def partition(self, pid: int, label: str) -> Partition:
        return Partition(pid, self._nbytes[pid], self._kind[pid], label)

    def load(self, pid: int) -> Block:
        return self._loaders[pid]()

    def edges(self, pids: list[int], grdd_id: int, rows: int, row_bytes: int) -> list[tuple[int, int]]:
        """Top and bottom ``rows`` of each partition of a source GRDD, as small source
        partitions (created once per GRDD, then reused by every action)."""
        key = (grdd_id, rows)
        if key not in self._edges:
            pairs = []
            for pid in pids:
                load, kind = self._loaders.get(pid), self._kind[pid]
                pair = []
                for sl in (slice(0, rows), slice(-rows, None)):
                    loader = (
                        None if load is None else (lambda load=load, sl=sl: {"a": np.array(load()["a"][sl])})
                    )
                    pair.append(self.add(rows * row_bytes, kind, loader))
                pairs.append((pair[0], pair[1]))
            self._edges[key] = pairs
        return self._edges[key]
