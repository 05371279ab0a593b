"""Key ranges of groupByKey / reduceByKey (seed 002 §5.3.3): once every partition is sorted,
the key histogram of each fixes the number R of output partitions, the cut keys between them,
and the bytes every split and merge subtask produces.

Pure functions of the histograms; :mod:`tca.victream.core.analyzer` creates the subtasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class KeyRanges:
    cuts: np.ndarray | None  # R - 1 cut keys (None in simulation: no keys are known)
    split_sizes: list[list[int]]  # [partition][range] bytes of each split output
    merge_sizes: list[int]  # [range] bytes of each merged output

    @property
    def count(self) -> int:
        return len(self.merge_sizes)


@dataclass(frozen=True)
class Record:
    """The layout of a key-value record: key and value types, and whether values are combined
    (reduceByKey) or grouped (groupByKey: unique keys, offsets, all values)."""

    key: np.dtype
    value: np.dtype
    combine: bool

    @property
    def nbytes(self) -> int:
        return self.key.itemsize + self.value.itemsize

    def merged_bytes(self, n_keys: int, n_records: int) -> int:
        if self.combine:
            return n_keys * self.nbytes
        return n_keys * self.key.itemsize + (n_keys + 1) * 8 + n_records * self.value.itemsize


def uniform_ranges(sorted_sizes: list[int], output_size: int | None) -> KeyRanges:
    """Simulation: no keys; as many ranges as partitions, keys spread evenly."""
    n = len(sorted_sizes)
    total = sum(sorted_sizes)
    split = [[size // n] * n for size in sorted_sizes]
    return KeyRanges(None, split, [output_size or total // n + (n + 1) * 8] * n)


def histogram_ranges(
    histograms: list[tuple[np.ndarray, np.ndarray]], rec: Record, partition_size: int
) -> KeyRanges:
    """Ranges of about ``partition_size`` bytes from each sorted partition's (unique keys,
    counts); every range holds whole keys."""
    keys = np.concatenate([h[0] for h in histograms])
    counts = np.concatenate([h[1] for h in histograms])
    uk, inv = np.unique(keys, return_inverse=True)
    tot = np.bincount(inv, weights=counts, minlength=len(uk)).astype(np.int64)
    cuts = _cuts(uk, tot, rec, partition_size)
    n_ranges = len(cuts) + 1
    split = []
    for hk, hc in histograms:
        pos = np.searchsorted(hk, cuts, side="left")
        c = np.concatenate([[0], np.cumsum(hc)])
        edges = np.concatenate([[0], pos, [len(hk)]])
        split.append([int(c[edges[r + 1]] - c[edges[r]]) * rec.nbytes for r in range(n_ranges)])
    gpos = np.concatenate([[0], np.searchsorted(uk, cuts, side="left"), [len(uk)]])
    gc = np.concatenate([[0], np.cumsum(tot)])
    merge = [
        rec.merged_bytes(int(gpos[r + 1] - gpos[r]), int(gc[gpos[r + 1]] - gc[gpos[r]]))
        for r in range(n_ranges)
    ]
    return KeyRanges(cuts, split, merge)


def _cuts(uk: np.ndarray, tot: np.ndarray, rec: Record, partition_size: int) -> np.ndarray:
    """Cut keys that divide the records into ranges of about equal count."""
    if not len(uk):
        return np.asarray([], dtype=rec.key)
    total_bytes = int(tot.sum()) * rec.nbytes
    n_ranges = max(1, min(len(uk), math.ceil(total_bytes / partition_size)))
    cum = np.cumsum(tot)
    idx = np.searchsorted(cum, [cum[-1] * r / n_ranges for r in range(1, n_ranges)], side="right")
    picks = uk[np.minimum(np.asarray(idx, dtype=np.int64), len(uk) - 1)]
    return np.asarray(np.unique(picks)[: n_ranges - 1], dtype=rec.key)
