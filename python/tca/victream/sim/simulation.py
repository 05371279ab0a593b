"""Simulation mode: the scheduler driven in virtual time by a cost model (seed 002 §6.2).

Nothing is executed. Each device has three serial resources: the bus into the device (swap-in),
the bus out of it (swap-out, in parallel with swap-in as on a GPU with two copy engines,
§5.4.2) and the subtask executor. The host has one file reader and one file writer shared by
all devices (the RAM disk whose throughput limited sort and blur in §6.1.2). Durations come
from :class:`CostModel`; time is an integer number of picoseconds; events at the same time are
ordered by insertion, so a run is bit-reproducible.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from tca import TcaError
from tca.victream.dag import Batch
from tca.victream.scheduler import Core, Drop, Run, SwapIn, SwapOut

PS = 10**12  # picoseconds per second

# seed 002 Table 6.1 (measured on the 4 x K20 evaluation host of §6.1)
TABLE_6_1 = {"bus_bandwidth": 6377e6, "file_read": 2482e6, "file_write": 1680e6}


@dataclass
class CostModel:
    """Durations of the simulated operations.

    ``bus_bandwidth`` [B/s] and ``bus_latency`` [s] of each direction of a device's bus (one
    value for all devices, or one per device: e.g. GPUs behind a slower network bus);
    ``file_read`` / ``file_write`` [B/s] of the host's input/output files (seed 002 Table 6.1);
    ``compute_speed``: a device's speed relative to the reference on which ``Subtask.cost_s``
    is given (one value for all devices, or one per device).
    """

    bus_bandwidth: float | list[float] = TABLE_6_1["bus_bandwidth"]
    bus_latency: float | list[float] = 10e-6
    file_read: float = TABLE_6_1["file_read"]
    file_write: float = TABLE_6_1["file_write"]
    compute_speed: float | list[float] = 1.0

    def transfer_ps(self, nbytes: int, device: int = 0) -> int:
        bw, lat = _of(self.bus_bandwidth, device), _of(self.bus_latency, device)
        return round((lat + nbytes / bw) * PS)

    def file_ps(self, nbytes: int, write: bool) -> int:
        return round(nbytes / (self.file_write if write else self.file_read) * PS)

    def compute_ps(self, cost_s: float, device: int) -> int:
        return round(cost_s / _of(self.compute_speed, device) * PS)


def _of(value, device: int):
    return value[device] if isinstance(value, list) else value


@dataclass
class Span:
    """One busy interval on a timeline lane (``lane``: in, out, run, file-read, file-write)."""

    device: int
    lane: str
    start_ps: int
    end_ps: int
    label: str


@dataclass
class Simulation:
    """A core plus virtual time; :meth:`run_batch` runs one action's subtasks to completion."""

    core: Core
    cost: CostModel
    now: int = 0
    record: bool = True
    spans: list[Span] = field(default_factory=list)
    busy_until: dict = field(default_factory=dict)
    compute_ps: list[int] = field(default_factory=list)
    _heap: list = field(default_factory=list)
    _seq: int = 0
    file_results: set[int] = field(default_factory=set)
    host_ready: dict = field(default_factory=dict)  # pid -> time its first file read completes

    def __post_init__(self):
        if not self.compute_ps:
            self.compute_ps = [0] * self.core.n_devices

    def clone(self) -> Simulation:
        """An independent copy of the simulation (the optimal search branches on copies)."""
        c = object.__new__(type(self))
        c.__dict__.update(self.__dict__)
        c.core = self.core.clone()
        c.spans = list(self.spans)
        c.busy_until = dict(self.busy_until)
        c.compute_ps = list(self.compute_ps)
        c._heap = list(self._heap)
        c.file_results = set(self.file_results)
        c.host_ready = dict(self.host_ready)
        return c

    def run_batch(self, batch: Batch, on_done=None) -> None:
        """Submits ``batch`` and advances time until the core is finished.

        ``on_done(sid)`` may return further batches (multi-step tasks, §5.3.3).
        """
        self.core.submit(batch)
        self.drive(on_done)

    def drive(self, on_done=None) -> None:
        """Runs events, with the core's own scheduler, until the core finishes."""
        while (d := self.run_until_decision(on_done)) is not None:
            g, glob, local = d
            self.apply(g, self.core.pick(self.now, g, glob, local))

    def apply(self, g: int, sid: int | None) -> None:
        """Carries out a scheduling decision for device ``g`` (None: ``g`` waits)."""
        if sid is None or not self.core.assign(self.now, g, sid):
            self.core._passed.add(g)

    def run_until_decision(self, on_done=None):
        """Advances virtual time until a device may take a subtask; returns
        ``(g, global_list, local_list)``, or None when the core has finished."""
        core = self.core
        with_local = core.policy in ("victream", "oracle")
        while True:
            d = core.poll_decision(self.now, with_local)
            if d is not None:
                return d
            core._background_swapout()
            for a in core.poll_actions():
                self._start(a)
            if core.finished():
                return None
            deadline = core.poll_timeout()
            if not self._heap and deadline is None:
                raise TcaError(f"simulation stalled: nothing in flight and {core.pending} subtasks pending")
            if deadline is not None and (not self._heap or deadline < self._heap[0][0]):
                self.now = max(self.now, deadline)
                core.handle_timeout(self.now)
                continue
            t, _, kind, args = heapq.heappop(self._heap)
            self.now = t
            self._complete(kind, args, on_done)

    # ------------------------------------------------------------------ internals
    def _occupy(self, lane: str, device: int, dur: int, label: str, earliest: int | None = None) -> int:
        key = (lane, device)
        start = max(self.now if earliest is None else earliest, self.busy_until.get(key, 0))
        end = start + dur
        self.busy_until[key] = end
        if self.record:
            self.spans.append(Span(device, lane, start, end, label))
        return end

    def _push(self, t: int, kind: str, args) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, args))

    def _start(self, a) -> None:
        c = self.cost
        if isinstance(a, SwapIn):
            label = self.core.parts[a.pid].label
            t = max(self.now, self.host_ready.get(a.pid, 0))
            if a.from_file:
                t = self._occupy("file-read", -1, c.file_ps(a.nbytes, False), label)
                self.host_ready[a.pid] = t
            end = self._occupy("in", a.device, c.transfer_ps(a.nbytes, a.device), label, earliest=t)
            self._push(end, "in", (a.device, a.pid))
        elif isinstance(a, SwapOut):
            label = self.core.parts[a.pid].label
            end = self._occupy("out", a.device, c.transfer_ps(a.nbytes, a.device), label)
            if a.result and a.pid in self.file_results:
                end = self._occupy("file-write", -1, c.file_ps(a.nbytes, True), label, earliest=end)
            self._push(end, "out", (a.device, a.pid))
        elif isinstance(a, Run):
            st = self.core.subtasks[a.sid]
            dur = c.compute_ps(st.cost_s, a.device)
            self.compute_ps[a.device] += dur
            end = self._occupy("run", a.device, dur, st.name)
            self._push(end, "run", (a.device, a.sid))
        elif isinstance(a, Drop):
            pass

    def _complete(self, kind: str, args, on_done) -> None:
        g, x = args
        if kind == "in":
            self.core.handle_swapin_done(self.now, g, x)
        elif kind == "out":
            self.core.handle_swapout_done(self.now, g, x)
        else:
            self.core.handle_run_done(self.now, g, x, None)
            if on_done is not None:
                for b in on_done(x, None) or ():
                    self.core.submit(b)
