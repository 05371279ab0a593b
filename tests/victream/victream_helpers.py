"""Helpers for the Victream tests: plain-data DAGs driven by the simulator."""

from __future__ import annotations

from tca.victream.core.dag import Batch, HostCopy, Partition, Subtask
from tca.victream.core.scheduler import Core
from tca.victream.sim.cost import CostModel
from tca.victream.sim.simulation import Simulation

MiB = 2**20


class DagBuilder:
    """Builds a batch by hand: sources, subtasks (with outputs of ``size`` bytes)."""

    def __init__(self, first_id: int = 0):
        self.parts: list[Partition] = []
        self.subtasks: list[Subtask] = []
        self._id = first_id

    def _next(self) -> int:
        self._id += 1
        return self._id

    def source(self, size: int = MiB, kind: HostCopy = HostCopy.RAM) -> int:
        pid = self._next()
        self.parts.append(Partition(pid, size, kind, f"s{pid}"))
        return pid

    def task(self, name: str, inputs, size: int = MiB, cost_s: float = 1e-3, n_out: int = 1):
        outs = []
        for _ in range(n_out):
            pid = self._next()
            self.parts.append(Partition(pid, size, None, f"{name}.out"))
            outs.append(pid)
        self.subtasks.append(
            Subtask(self._next(), name, len(self.subtasks), tuple(inputs), tuple(outs), cost_s)
        )
        return outs[0] if n_out == 1 else outs

    def batch(self, results=()) -> Batch:
        return Batch(list(self.parts), list(self.subtasks), list(results))


def simulate(batches, policy: str, capacities, load=0.7, swap=0.5, cost: CostModel | None = None):
    core = Core(list(capacities), policy, load, swap)
    sim = Simulation(core, cost or CostModel(bus_bandwidth=1e9, bus_latency=1e-6))
    for b in batches:
        sim.run_batch(b)
    return sim
