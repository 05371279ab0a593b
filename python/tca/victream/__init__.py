"""Victream: an out-of-core multi-GPU DAG runtime with a locality-aware prefetching scheduler
(seed 002, chapters 5-6).

    from tca.victream import Context, MM
    ctx = Context(devices=3, device_memory="128MiB", bus_bandwidth="2GB/s")
    x = ctx.array(data, partition_size="16MiB")
    total = x.map(lambda a: a * 2).reduce(lambda a: a.sum(keepdims=True).ravel(), lambda a, b: a + b)

See docs/victream.md. Layers: :mod:`grdd` (API), :mod:`analyzer` (DAG analyzer), :mod:`dag` (plain-data
subtask graph), :mod:`scheduler` (sans-I/O scheduler core), :mod:`memory` (memory manager),
:mod:`executors` and :mod:`devices` (real runtime), :mod:`sim` (simulation mode),
:mod:`workloads`, :mod:`optimal`, :mod:`bench`, :mod:`cli`.
"""

from tca.victream.analyzer import UserFunctionError
from tca.victream.api import Context, Summary
from tca.victream.devices import CupyGPU, VirtualGPU
from tca.victream.formats import CSR, Grouped, PartitionInfo, xp_of
from tca.victream.grdd import GRDD, MM
from tca.victream.scheduler import POLICIES

__all__ = [
    "Context",
    "Summary",
    "GRDD",
    "MM",
    "VirtualGPU",
    "CupyGPU",
    "CSR",
    "Grouped",
    "PartitionInfo",
    "xp_of",
    "UserFunctionError",
    "POLICIES",
]
