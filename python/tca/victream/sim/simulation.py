"""Simulation mode: the scheduler driven in virtual time by a cost model (seed 002 §6.2).

Nothing is executed. Each device has three serial resources: the bus into the device (swap-in),
the bus out of it (swap-out, in parallel with swap-in as on a GPU with two copy engines,
§5.4.2) and the subtask executor. The host has one file reader and one file writer shared by
all devices (the RAM disk whose throughput limited sort and blur in §6.1.2). Durations come
from :class:`CostModel`; time is an integer number of picoseconds; events at the same time are
ordered by insertion, so a run is bit-reproducible.

With ``links`` (GPUs behind one network, seed 002 §6.3), the swap-ins of all devices share
one :class:`SharedLink` and the swap-outs another: a device's transfers still go one at a time
in order over its own bus (its latency, then at most its bandwidth), but while several are on
the link they divide its capacity, so a transfer's end is known only when it happens.

The event queue holds the core's actions (:mod:`tca.victream.core.actions`) at the time they
complete; a completion is reported to the core through its ``handle_*`` input.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import astuple, dataclass, field

from tca import TcaError
from tca.victream.core.actions import Drop, Run, SwapIn, SwapOut
from tca.victream.core.dag import Batch
from tca.victream.core.scheduler import Core
from tca.victream.core.spans import Lane, Span
from tca.victream.sim.cost import PS, CostModel
from tca.victream.sim.link import SharedLink

HOST = -1  # the device number of the host's shared file lanes


@dataclass(frozen=True)
class Join:
    """A queued transfer's latency has passed: its bytes enter the shared link."""

    lane: str
    device: int


@dataclass
class Simulation:
    """A core plus virtual time; :meth:`run_batch` runs one action's subtasks to completion."""

    core: Core
    cost: CostModel
    now: int = 0
    record: bool = True
    spans: list[Span] = field(default_factory=list)
    busy_until: dict[tuple[str, int], int] = field(default_factory=dict)  # (lane value, device) -> time
    compute_ps: list[int] = field(default_factory=list)
    file_results: set[int] = field(default_factory=set)  # results written to a file (outputFile)
    host_ready: dict[int, int] = field(default_factory=dict)  # pid -> when its file read completes
    links: dict[str, SharedLink] | None = None  # Lane.IN / Lane.OUT value -> the shared link
    _heap: list[tuple[int, int, SwapIn | SwapOut | Run | Join]] = field(default_factory=list)
    _seq: int = 0
    _queues: dict[tuple[str, int], deque] = field(default_factory=dict)  # transfers per lane (links)
    _started: dict[tuple[str, int], int] = field(default_factory=dict)  # lane -> its transfer's start

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
        if self.links is not None:
            c.links = {k: v.copy() for k, v in self.links.items()}
            c._queues = {k: deque(q) for k, q in self._queues.items()}
            c._started = dict(self._started)
        return c

    def in_flight(self) -> tuple:
        """The operations in flight, relative to now, in a canonical order (the optimal search
        memoises on it)."""
        return tuple(sorted((t - self.now, type(a).__name__, astuple(a)) for t, _, a in self._heap))

    def run_batch(self, batch: Batch, on_done=None) -> None:
        """Submits ``batch`` and advances time until the core is finished.

        ``on_done(sid, meta)`` may return further batches (multi-step tasks, §5.3.3).
        """
        self.core.submit(batch)
        self.drive(on_done)

    def drive(self, on_done=None) -> None:
        """Runs events, with the core's own scheduler, until the core finishes."""
        while (g := self.run_until_decision(on_done)) is not None:
            self.apply(g, self.core.pick(self.now, g))

    def apply(self, g: int, sid: int | None) -> None:
        """Carries out a scheduling decision for device ``g`` (None: ``g`` waits)."""
        if sid is None or not self.core.assign(self.now, g, sid):
            self.core.decline(g)

    def run_until_decision(self, on_done=None) -> int | None:
        """Advances virtual time until a device may take a subtask; returns that device, or
        None when the core has finished."""
        core = self.core
        while True:
            g = core.poll_decision(self.now)
            if g is not None:
                return g
            core.background_swapout()
            for a in core.poll_actions():
                self._start(a)
            if core.finished():
                return None
            deadline = core.poll_timeout()
            nxt = self._heap[0][0] if self._heap else None
            link_end = self._link_end()
            if link_end is not None and (nxt is None or link_end[0] < nxt):
                nxt = link_end[0]
            else:
                link_end = None
            if nxt is None and deadline is None:
                raise TcaError(f"simulation stalled: nothing in flight and {core.pending} subtasks pending")
            if deadline is not None and (nxt is None or deadline < nxt):
                self.now = max(self.now, deadline)
                core.handle_timeout(self.now)
                continue
            if link_end is not None:
                self.now = link_end[0]
                self._arrived(link_end[1], link_end[2])
                continue
            t, _, action = heapq.heappop(self._heap)
            self.now = t
            if isinstance(action, Join):
                self._join(action)
            else:
                self._complete(action, on_done)

    # ------------------------------------------------------------------ internals
    def _occupy(self, lane: Lane, device: int, dur: int, label: str, earliest: int | None = None) -> int:
        key = (lane.value, device)  # Enum hashing is slow in a hot loop
        start = max(self.now if earliest is None else earliest, self.busy_until.get(key, 0))
        end = start + dur
        self.busy_until[key] = end
        if self.record:
            self.spans.append(Span(device, lane, start, end, label))
        return end

    def _push(self, t: int, action: SwapIn | SwapOut | Run) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, action))

    def _start(self, a) -> None:
        c = self.cost
        if isinstance(a, SwapIn):
            label = self.core.parts[a.pid].label
            t = max(self.now, self.host_ready.get(a.pid, 0))
            if a.from_file:
                t = self._occupy(Lane.FILE_READ, HOST, c.file_ps(a.nbytes, False), label)
                self.host_ready[a.pid] = t
            if self.links is not None:
                self._enqueue(Lane.IN, a, label, t)
                return
            end = self._occupy(Lane.IN, a.device, c.transfer_ps(a.nbytes, a.device), label, earliest=t)
            self._push(end, a)
        elif isinstance(a, SwapOut):
            label = self.core.parts[a.pid].label
            if self.links is not None:
                self._enqueue(Lane.OUT, a, label, self.now)
                return
            end = self._occupy(Lane.OUT, a.device, c.transfer_ps(a.nbytes, a.device, True), label)
            if a.result and a.pid in self.file_results:
                end = self._occupy(Lane.FILE_WRITE, HOST, c.file_ps(a.nbytes, True), label, earliest=end)
            self._push(end, a)
        elif isinstance(a, Run):
            st = self.core.subtasks[a.sid]
            dur = c.compute_ps(st.cost_s, a.device)
            self.compute_ps[a.device] += dur
            end = self._occupy(Lane.RUN, a.device, dur, st.name)
            self._push(end, a)
        else:
            assert isinstance(a, Drop)  # nothing to simulate: the memory is free at once

    def _complete(self, a: SwapIn | SwapOut | Run, on_done) -> None:
        if isinstance(a, SwapIn):
            self.core.handle_swapin_done(self.now, a.device, a.pid)
        elif isinstance(a, SwapOut):
            self.core.handle_swapout_done(self.now, a.device, a.pid)
        else:
            self.core.handle_run_done(self.now, a.device, a.sid, None)
            if on_done is not None:
                for b in on_done(a.sid, None) or ():
                    self.core.submit(b)

    # ------------------------------------------------------------------ shared links
    def _enqueue(self, lane: Lane, a: SwapIn | SwapOut, label: str, ready: int) -> None:
        """Queues a transfer on its device's lane; it starts once the lane is free and ``ready``."""
        key = (lane.value, a.device)
        self._queues.setdefault(key, deque()).append((a, label, ready))
        self._kick(key)

    def _kick(self, key: tuple[str, int]) -> None:
        q = self._queues.get(key)
        if key in self._started or not q:
            return
        a, _, ready = q[0]
        start = max(self.now, ready)
        self._started[key] = start
        self._push(start + round(self.cost.bus(a.device)[1] * PS), Join(*key))

    def _join(self, j: Join) -> None:
        key = (j.lane, j.device)
        a = self._queues[key][0][0]
        self.links[j.lane].add(self.now, key, a.nbytes, self.cost.bus(a.device, j.lane == Lane.OUT.value)[0])

    def _link_end(self) -> tuple[int, str, tuple[str, int]] | None:
        """(time, lane, flow) of the first transfer to end on any shared link."""
        best = None
        for lane, link in (self.links or {}).items():
            e = link.next_end()
            if e is not None and (best is None or e[0] < best[0]):
                best = (e[0], lane, e[1])
        return best

    def _arrived(self, lane: str, key: tuple[str, int]) -> None:
        """A transfer's last byte is through: the lane takes its next transfer."""
        self.links[lane].remove(self.now, key)
        a, label, _ = self._queues[key].popleft()
        start = self._started.pop(key)
        if self.record:
            self.spans.append(Span(a.device, Lane(lane), start, self.now, label))
        end = self.now
        if isinstance(a, SwapOut) and a.result and a.pid in self.file_results:
            end = self._occupy(Lane.FILE_WRITE, HOST, self.cost.file_ps(a.nbytes, True), label, earliest=end)
        self._push(end, a)
        self._kick(key)
