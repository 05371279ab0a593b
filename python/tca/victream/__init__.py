"""Victream: an out-of-core multi-GPU DAG runtime with a locality-aware prefetching scheduler
(seed 002, chapters 5-6).

    from tca.victream import Context, MM
    ctx = Context(devices=3, device_memory="128MiB", bus_bandwidth="2GB/s")
    x = ctx.array(data, partition_size="16MiB")
    total = x.map(lambda a: a * 2).reduce(lambda a: a.sum(keepdims=True).ravel(), lambda a, b: a + b)

See docs/victream.md. Subpackages: :mod:`~tca.victream.core` (subtask graph, DAG analyzer,
scheduler core, memory manager: no I/O), :mod:`~tca.victream.runtime` (devices and threaded
executors), :mod:`~tca.victream.sim` (simulation mode), :mod:`~tca.victream.api` (Context,
GRDDs, formats) and :mod:`~tca.victream.apps` (workloads, bench, optimal search, CLI).
"""

from tca.victream.api.context import Context
from tca.victream.api.formats import CSR, Grouped, PartitionInfo, xp_of
from tca.victream.api.grdd import GRDD, MM
from tca.victream.api.kernels import UserFunctionError
from tca.victream.api.summary import Summary
from tca.victream.core.scheduler import POLICIES
from tca.victream.runtime.devices import CupyGPU, VirtualGPU

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
