"""Optimal and worst schedules of small DAGs by exhaustive search (seed 002 §6.2, Table 6.2,
Fig. 6.9).

A *schedule* is the sequence of choices the runtime makes: each time a device may take a
subtask (Fig. 5.8's loop), which schedulable subtask (global list or that device's local list)
it takes. The search runs the simulator (:mod:`tca.victream.sim`) with the same memory manager,
prefetching pipeline and cost model as every scheduler, branches at every choice, and memoises
on the simulator state relative to the current time: two paths that reach the same state (same
device memories, queues, transfers in flight, relative to now) share one subtree, which turns
the seed's half-day brute force into seconds. Both the shortest and the longest completion are
found in one pass.

The seed's four microbenchmarks (Table 6.2): 256 MB partitions, 1650 MB of device memory,
swap-out threshold 0.33; load threshold 0.5 (logistic regression) or 0.66 (the others);
two iterations each; parameters of Table 6.1.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from tca import TcaError
from tca.victream.api.context import Context
from tca.victream.apps import workloads as W
from tca.victream.core.scheduler import ORACLE, Core
from tca.victream.sim.cost import PS
from tca.victream.sim.simulation import Simulation

MB = 10**6


@dataclass(frozen=True)
class Case:
    """One row of seed 002 Table 6.2, with the gap the seed reports (Fig. 6.9)."""

    name: str
    workload: str
    devices: int
    partitions: int
    load_threshold: float
    seed_gap: float  # Victream's time over the optimum, as reported in §6.2
    capacity: int = 1650 * MB
    swap_threshold: float = 0.33
    iterations: int = 2
    partition_bytes: int = 256 * MB


CASES = {
    "logreg": Case("logreg", "logreg", 1, 3, 0.5, 0.0),
    "blur4": Case("blur4", "blur", 2, 4, 0.66, 0.0),
    "blur5": Case("blur5", "blur", 2, 5, 0.66, 0.02),
    "matmul": Case("matmul", "matmul", 2, 4, 0.66, 0.10),
}


@dataclass
class Result:
    case: str
    subtasks: int
    victream_s: float
    best_s: float
    worst_s: float
    states: int

    @property
    def gap_to_best(self) -> float:
        return self.victream_s / self.best_s - 1.0

    @property
    def gap_to_worst(self) -> float:
        return 1.0 - self.victream_s / self.worst_s


class Recorder(Simulation):
    """A simulation that also keeps every batch it runs (for the replays of the search)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.batches = []

    def run_batch(self, batch, on_done=None):
        self.batches.append(batch)
        super().run_batch(batch, None)


def _context(case: Case, scheduler: str) -> Context:
    return Context(
        devices=case.devices,
        mode="sim",
        device_memory=case.capacity,
        scheduler=scheduler,
        # 1 % slack so that rounding to whole rows gives exactly the case's partition count
        partition_size=int(case.partition_bytes * 1.01),
        load_threshold=case.load_threshold,
        swap_threshold=case.swap_threshold,
        bus_bandwidth="6377MB/s",
        file_read="2482MB/s",
        file_write="1680MB/s",
        kernel_bandwidth="100GB/s",
        flops=1.17e12,
    )


def _inputs(case: Case):
    p = case.partition_bytes
    if case.workload == "logreg":
        return W.logreg_inputs(case.partitions * p, real=False, iterations=case.iterations)
    if case.workload == "blur":
        return W.blur_inputs(case.partitions * p, real=False, width=16384, iterations=case.iterations)
    if case.workload == "matmul":  # A and B of two row blocks each: four input partitions
        return W.matmul_inputs(case.partitions * p, real=False, iterations=case.iterations)
    raise TcaError(f"no optimal-search case for workload '{case.workload}'")


def record(case: Case, scheduler: str = "victream"):
    """Runs the case with ``scheduler`` in simulation; returns (time [s], the batches)."""
    ctx = _context(case, scheduler)
    ctx.sim = Recorder(ctx.core, ctx.cost, record=False)
    W.run(ctx, _inputs(case))
    return ctx.sim.now / PS, ctx.sim.batches, ctx


def _key(sim: Simulation, bi: int, g: int):
    """The simulator state relative to now: equal keys have equal futures."""
    core, now = sim.core, sim.now
    busy = tuple(sorted((k, v - now) for k, v in sim.busy_until.items() if v > now))
    mems = tuple(
        tuple((pid, e.nbytes, e.state.value, e.locks, e.out and e.out.value) for pid, e in m.entries.items())
        for m in core.mem
    )
    states = tuple(sorted((sid, s.value) for sid, s in core.state.items()))
    queued = tuple(tuple(q) for q in core.queued)
    pf = tuple(
        None if p is None else (p.sid, tuple(p.waiting), tuple(sorted(p.loading))) for p in core.prefetch
    )
    hosts = tuple(
        sorted((pid, ps.host and ps.host.value, ps.dead, ps.nbytes) for pid, ps in core.parts.items())
    )
    return (bi, g, sim.in_flight(), busy, mems, states, queued, pf, hosts, tuple(sorted(core.declined)))


def search(case: Case, limit_states: int = 2_000_000) -> Result:
    """Shortest and longest completion over all schedules of ``case``, and Victream's time."""
    victream_s, batches, ctx = record(case, "victream")
    core = Core([case.capacity] * case.devices, ORACLE, case.load_threshold, case.swap_threshold)
    sim = Simulation(core, ctx.cost, record=False)
    memo: dict = {}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def solve(sim: Simulation, bi: int) -> tuple[int, int]:
        while True:
            g = sim.run_until_decision()
            if g is not None:
                break
            bi += 1
            if bi >= len(batches):
                return sim.now, sim.now
            sim.core.submit(batches[bi])
        glob, local = sim.core.candidates(g)
        t0 = sim.now
        key = _key(sim, bi, g)
        if key in memo:
            lo, hi = memo[key]
            return t0 + lo, t0 + hi
        if len(memo) >= limit_states:
            raise TcaError(f"optimal search for {case.name} exceeded {limit_states} states")
        lo, hi = None, None
        waited = False
        for c in sorted(set(glob) | set(local)):
            fits = sim.core.fits(g, c)
            if not fits:  # every candidate that does not fit yet leads to the same state: g waits
                if waited:
                    continue
                waited = True
            child = sim.clone()
            child.apply(g, c if fits else None)
            a, b = solve(child, bi)
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
        memo[key] = (lo - t0, hi - t0)
        return lo, hi

    core.submit(batches[0])
    best, worst = solve(sim, 0)
    n = sum(len(b.subtasks) for b in batches)
    return Result(case.name, n, victream_s, best / PS, worst / PS, len(memo))
