"""The Victream scheduler as a state machine with no I/O (seed 002 §5.4, Fig. 5.5-5.8).

Contract: deterministic; owns no clock, thread or device. Time ``now`` [ps] is an argument.
The same object drives real devices (:mod:`tca.victream.runtime`), the simulator
(:mod:`tca.victream.sim`) and the optimal-schedule search (:mod:`tca.victream.apps.optimal`).

Call order::

    core.submit(batch)                       # inputs: a batch from the DAG analyzer
    loop:
        core.schedule(now)                   # Fig. 5.8 schedule(): fill device queues
        for a in core.poll_actions(): ...    # outputs: SwapIn / SwapOut / Drop / Run
        core.handle_swapin_done(now, g, pid) # inputs: completions reported by the driver
        core.handle_swapout_done(now, g, pid)
        core.handle_run_done(now, g, sid, sizes)
        core.handle_timeout(now)             # when poll_timeout() has passed (ptask only)
    until core.finished()

``schedule`` is ``poll_decision`` / ``pick`` / ``assign`` (or ``decline``) in a loop; a driver
that makes the choices itself (the optimal search) calls those one by one.

State (per device ``g``): a memory manager (capacity, thresholds, locks, LRU), the subtasks
queued on ``g`` in FIFO order (the subtask executor runs them serially), and at most one
*prefetch*: the subtask chosen last, whose input swap-ins are in flight; scheduling on ``g``
waits until they complete (§5.4.2). Global: the *global list* (subtasks whose parents are all
done, schedulable on any device, :class:`ReadyList`) and, computed on demand, each device's
*local list* (subtasks whose unfinished parents are all queued on ``g``, schedulable only
there; Fig. 5.6).

Schedulers (``POLICIES``), all on the same prefetching pipeline:
  fifo      the oldest subtask of the global list (§6.1 baseline).
  ptask     as fifo, but if another device holds most of the head's input bytes, this device
            waits up to ``ptask_wait_ps`` for that one to take it (§6.1, PTask [52]).
  locality  the subtask of the global list with the least swap I/O (§5.4.1, "拡張前").
  victream  the least swap I/O over the global list and this device's local list; on a tie the
            local list wins (Fig. 5.8: global only if ``glob_min < local_min``).
Swap I/O: :mod:`tca.victream.core.policy`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from tca import TcaError
from tca.victream.core import policy
from tca.victream.core.actions import Action, Drop, Run, SwapIn, SwapOut
from tca.victream.core.dag import Batch, HostCopy, Subtask
from tca.victream.core.memory import EntryState, MemoryManager, SwapOutKind
from tca.victream.core.ready import ReadyList

POLICIES = ("fifo", "ptask", "locality", "victream")
ORACLE = "oracle"  # choices made from outside (the optimal search); schedule() is not used


class SubtaskState(Enum):
    PENDING = "pending"  # waiting for its parents, or in the global list
    PREFETCH = "prefetch"  # chosen for a device; its inputs are being loaded
    QUEUED = "queued"  # in the device's FIFO queue (or running)
    DONE = "done"


@dataclass
class PartState:
    nbytes: int
    host: HostCopy | None  # None: only on a device (or not produced yet)
    producer: int | None
    label: str
    consumers: set[int] = field(default_factory=set)
    holds: int = 0  # references from tasks the DAG analyzer has not expanded yet
    result: bool = False
    persistent: bool = False  # a source partition: its device copies are a cache
    dead: bool = False


@dataclass
class DeviceStats:
    swap_in: int = 0  # bytes loaded onto the device [B]
    swap_out: int = 0  # bytes written back from the device to the host [B] (not results)
    result: int = 0  # bytes of action results copied to the host [B]
    file_read: int = 0  # bytes of swap-ins that first read the source file [B]
    subtasks: int = 0


@dataclass
class Prefetch:
    """The subtask a device chose last, and its inputs still to load / being loaded."""

    sid: int
    waiting: list[int]  # inputs still to load, in order
    loading: set[int] = field(default_factory=set)


class Core:
    """Scheduler, memory managers and DAG bookkeeping for ``len(capacities)`` devices."""

    def __init__(
        self,
        capacities: list[int],
        policy: str = "victream",
        load_threshold: float = 0.7,
        swap_threshold: float = 0.5,
        ptask_wait_ps: int = 2_000_000_000,
    ):
        if policy not in POLICIES and policy != ORACLE:
            raise TcaError(f"unknown scheduler '{policy}' (expected one of: {', '.join(POLICIES)})")
        if not capacities:
            raise TcaError("at least one device is needed")
        self.policy = policy
        self.mem = [MemoryManager(c, load_threshold, swap_threshold) for c in capacities]
        self.stats = [DeviceStats() for _ in capacities]
        self.ptask_wait_ps = ptask_wait_ps
        self.parts: dict[int, PartState] = {}
        self.subtasks: dict[int, Subtask] = {}
        self.state: dict[int, SubtaskState] = {}
        self.device_of: dict[int, int] = {}
        self.unfinished_parents: dict[int, set[int]] = {}
        self.children: dict[int, set[int]] = {}
        self.ready = ReadyList()  # the global list
        self.queued: list[list[int]] = [[] for _ in capacities]
        self.prefetch: list[Prefetch | None] = [None for _ in capacities]
        self.pending = 0  # subtasks not done
        self.inflight = 0  # swap-ins, swap-outs and runs issued and not reported done
        self.declined: set[int] = set()  # devices that declined in the current pass
        self.ptask_since: dict[int, int] = {}  # head subtask -> when ptask started waiting
        self._out: list[Action] = []

    # ----------------------------------------------------------------- getters
    @property
    def n_devices(self) -> int:
        return len(self.mem)

    def finished(self) -> bool:
        return self.pending == 0 and self.inflight == 0

    def local_list(self, g: int) -> list[int]:
        """Fig. 5.6 (a): pending subtasks whose unfinished parents are all queued on ``g``."""
        on_g = set(self.queued[g])
        found = set()
        for parent in self.queued[g]:
            for c in self.children.get(parent, ()):
                if (
                    self.state[c] is SubtaskState.PENDING
                    and c not in self.ready
                    and self.unfinished_parents[c] <= on_g
                ):
                    found.add(c)
        return sorted(found)

    def global_list(self) -> list[int]:
        return self.ready.in_order()

    def candidates(self, g: int) -> tuple[list[int], list[int]]:
        """The global list and ``g``'s local list (an oracle chooses among them)."""
        return self.global_list(), self.local_list(g)

    def swap_cost(self, g: int, sid: int) -> int:
        """Swap I/O [B] that scheduling ``sid`` on ``g`` causes now (§5.4.1)."""
        return policy.swap_cost(self, g, sid)

    def writeback_in_flight(self, pid: int) -> bool:
        return any(m.swapping_out(pid) for m in self.mem)

    def poll_timeout(self) -> int | None:
        """The next time [ps] at which ptask stops waiting for a device, if any."""
        if not self.ptask_since:
            return None
        return min(self.ptask_since.values()) + self.ptask_wait_ps

    def poll_actions(self) -> list[Action]:
        out, self._out = self._out, []
        return out

    def clone(self) -> Core:
        """An independent copy sharing the immutable subtasks (for the optimal search)."""
        c = object.__new__(Core)
        c.__dict__.update(self.__dict__)
        c.mem = [m.clone() for m in self.mem]
        c.stats = [replace(s) for s in self.stats]
        c.parts = {p: replace(ps, consumers=set(ps.consumers)) for p, ps in self.parts.items()}
        c.state = dict(self.state)
        c.device_of = dict(self.device_of)
        c.unfinished_parents = {k: set(v) for k, v in self.unfinished_parents.items()}
        c.children = {k: set(v) for k, v in self.children.items()}
        c.ready = self.ready.clone()
        c.queued = [list(q) for q in self.queued]
        c.prefetch = [
            None if p is None else Prefetch(p.sid, list(p.waiting), set(p.loading)) for p in self.prefetch
        ]
        c.declined = set(self.declined)
        c.ptask_since = dict(self.ptask_since)
        c._out = list(self._out)
        return c

    # ----------------------------------------------------------------- inputs
    def submit(self, batch: Batch) -> None:
        """Adds a batch of partitions and subtasks from the DAG analyzer."""
        for p in batch.partitions:
            if p.pid not in self.parts:
                self.parts[p.pid] = PartState(
                    p.nbytes, p.source, None, p.label, persistent=p.source is not None or p.persist
                )
        self.hold(batch.hold)
        for st in batch.subtasks:
            self.subtasks[st.sid] = st
            self.state[st.sid] = SubtaskState.PENDING
            self.pending += 1
            for o in st.outputs:
                self.parts[o].producer = st.sid
        for st in batch.subtasks:
            self._link_parents(st)
        for pid in batch.results:
            self.parts[pid].result = True
            if not self._unproduced(pid):
                self._return_result(pid)
        self.release(batch.release)
        self.background_swapout()
        self.declined.clear()

    def hold(self, pids) -> None:
        for p in pids:
            self.parts[p].holds += 1

    def release(self, pids) -> None:
        for p in pids:
            self.parts[p].holds -= 1
            self._maybe_free(p)

    def handle_swapin_done(self, now: int, g: int, pid: int) -> None:
        self.inflight -= 1
        self.mem[g].set_state(pid, EntryState.RESIDENT)
        pf = self.prefetch[g]
        assert pf is not None and pid in pf.loading
        pf.loading.discard(pid)
        self._advance(g)
        self._after_event()

    def handle_swapout_done(self, now: int, g: int, pid: int) -> None:
        self.inflight -= 1
        ps, mem = self.parts[pid], self.mem[g]
        if ps.host is None:
            ps.host = HostCopy.RAM
            self.ready.host_copy_made(pid)
        if mem.entries[pid].out is SwapOutKind.EVICT or ps.dead:
            mem.release(pid)
        else:
            mem.mark_out(pid, None)
        for h, pf in enumerate(self.prefetch):  # a write-back another device waited for is done
            if pf is not None:
                self._advance(h)
        self._after_event()

    def handle_run_done(self, now: int, g: int, sid: int, sizes: dict[int, int] | None = None) -> None:
        """``sizes``: the real size [B] of each output; larger than reserved is an error."""
        self.inflight -= 1
        st, mem = self.subtasks[sid], self.mem[g]
        self.state[sid] = SubtaskState.DONE
        self.pending -= 1
        self.queued[g].remove(sid)
        self.stats[g].subtasks += 1
        # inputs first, then outputs: the fresh outputs are the most recently used (LRU)
        for p in dict.fromkeys(st.inputs):
            mem.unlock(p)
            self.parts[p].consumers.discard(sid)
            self._maybe_free(p)
        for o in st.outputs:
            mem.set_state(o, EntryState.RESIDENT)
            if sizes and o in sizes:
                self._shrink(st, g, o, sizes[o])
            mem.unlock(o)
        for o in st.outputs:
            if self.parts[o].result:
                self._return_result(o)
            else:
                self._maybe_free(o)
        for c in self.children.pop(sid, ()):
            self.unfinished_parents[c].discard(sid)
            if not self.unfinished_parents[c] and self.state[c] is SubtaskState.PENDING:
                self._make_ready(c)
        self._after_event()

    def handle_timeout(self, now: int) -> None:
        self.declined.clear()

    # ----------------------------------------------------------------- scheduling
    def poll_decision(self, now: int) -> int | None:
        """The next device that may take a subtask, or None (Fig. 5.8's ``available_gpu``)."""
        with_local = self.policy in ("victream", ORACLE)
        for g, mem in enumerate(self.mem):
            if g in self.declined or self.prefetch[g] is not None:
                continue
            if mem.used - mem.evicting > mem.load_limit:  # not below_load_threshold()
                continue
            if self.ready or (with_local and self.local_list(g)):
                return g
        return None

    def pick(self, now: int, g: int) -> int | None:
        """The policy's choice for device ``g`` (None: ``g`` waits)."""
        if self.policy in ("fifo", "ptask"):
            head = self.ready.head()
            if head is None or self.policy == "fifo":
                return head
            holder = policy.majority_holder(self, head)
            if holder is not None and holder != g:
                since = self.ptask_since.setdefault(head, now)
                if now < since + self.ptask_wait_ps:
                    return None
            self.ptask_since.pop(head, None)
            return head
        gmin = policy.least_io_global(self, g)
        if self.policy == "locality":
            return gmin
        lmin = policy.least_io(self, g, self.local_list(g))
        if lmin is None or (gmin is not None and self.swap_cost(g, gmin) < self.swap_cost(g, lmin)):
            return gmin
        return lmin

    def schedule(self, now: int) -> None:
        """Fig. 5.8 ``schedule()``: gives subtasks to every device that can take one."""
        while (g := self.poll_decision(now)) is not None:
            sid = self.pick(now, g)
            if sid is None or not self.assign(now, g, sid):
                self.decline(g)
        self.background_swapout()

    def decline(self, g: int) -> None:
        """``g`` takes nothing until the next completion or timeout."""
        self.declined.add(g)

    def fits(self, g: int, sid: int) -> bool:
        """Whether :meth:`assign` would succeed now (the same test, without side effects)."""
        to_load, need, _ = self._needs(g, sid)
        mem = self.mem[g]
        inputs = set(self.subtasks[sid].inputs)
        avail = mem.free + mem.evicting + sum(mem.nbytes(v) for v in mem.iter_evictable(inputs))
        return avail >= need

    def assign(self, now: int, g: int, sid: int) -> bool:
        """Schedules ``sid`` on ``g``: locks memory, starts the prefetch. False if it cannot fit
        yet (the device then waits for running subtasks or swap-outs to free memory)."""
        st, mem = self.subtasks[sid], self.mem[g]
        assert self.state[sid] is SubtaskState.PENDING
        to_load, need, held = self._needs(g, sid)
        if need + held > mem.capacity:
            raise TcaError(
                f"subtask {st.name} needs {need + held} B of device memory, more than the "
                f"device capacity of {mem.capacity} B; use smaller partitions"
            )
        ins = list(dict.fromkeys(st.inputs))
        avail = mem.free + mem.evicting
        victims = []
        for v in mem.iter_evictable(set(ins)):
            if avail >= need:
                break
            victims.append(v)
            avail += mem.nbytes(v)
        if avail < need:
            return False
        for v in victims:
            self._evict(g, v)
        if sid in self.ready:
            self.ready.remove(sid)
        self.ptask_since.pop(sid, None)
        self.state[sid] = SubtaskState.PREFETCH
        self.device_of[sid] = g
        for p in ins:
            if p not in to_load:
                mem.lock(p)
        for p in to_load:
            if self.parts[p].host is None:
                self._request_writeback(p)
        self.prefetch[g] = Prefetch(sid, to_load)
        self._advance(g)
        return True

    def background_swapout(self) -> None:
        """§5.4.2: above the swap-out threshold, swap out unlocked partitions in LRU order."""
        for g, mem in enumerate(self.mem):
            while mem.used - mem.evicting > mem.swap_limit:  # above_swap_threshold(), inlined
                victim = next(mem.iter_evictable(), None)
                if victim is None:
                    break
                self._evict(g, victim)

    # ----------------------------------------------------------------- internals
    def _link_parents(self, st: Subtask) -> None:
        parents = set()
        for p in st.inputs:
            ps = self.parts[p]
            ps.consumers.add(st.sid)
            if self._unproduced(p):
                parents.add(ps.producer)
                self.children.setdefault(ps.producer, set()).add(st.sid)
        self.unfinished_parents[st.sid] = parents
        if not parents:
            self._make_ready(st.sid)

    def _unproduced(self, pid: int) -> bool:
        producer = self.parts[pid].producer
        return producer is not None and self.state.get(producer) is not SubtaskState.DONE

    def _make_ready(self, sid: int) -> None:
        st = self.subtasks[sid]
        ins = tuple(dict.fromkeys(st.inputs))
        group = (
            sum(self.parts[p].nbytes for p in ins),
            sum(self.parts[o].nbytes for o in st.outputs),
        )
        self.ready.add(sid, ins, group, {p for p in ins if self.parts[p].host is None})

    def _needs(self, g: int, sid: int) -> tuple[list[int], int, int]:
        """Inputs to load, bytes to reserve (loads and outputs), bytes already held on ``g``."""
        st, mem = self.subtasks[sid], self.mem[g]
        ins = list(dict.fromkeys(st.inputs))
        to_load = [p for p in ins if not mem.usable(p)]
        need = sum(self.parts[p].nbytes for p in to_load) + sum(self.parts[o].nbytes for o in st.outputs)
        held = sum(
            self.parts[p].nbytes for p in ins if p not in to_load and mem.state(p) is not EntryState.FUTURE
        )
        return to_load, need, held

    def _shrink(self, st: Subtask, g: int, o: int, nbytes: int) -> None:
        """An output's real size, no larger than what was reserved for it."""
        if nbytes > self.parts[o].nbytes:
            raise TcaError(
                f"subtask {st.name} produced {nbytes} B for an output reserved "
                f"at {self.parts[o].nbytes} B; give MM(output_size=...)"
            )
        self.mem[g].resize(o, nbytes)
        self.parts[o].nbytes = nbytes

    def _advance(self, g: int) -> None:
        """Issues the swap-ins of ``g``'s prefetch that can start; queues it when all are done."""
        pf, mem = self.prefetch[g], self.mem[g]
        if pf is None:
            return
        while pf.waiting:
            p = pf.waiting[0]
            ps = self.parts[p]
            if mem.has(p) or ps.host is None or mem.free < ps.nbytes:
                break  # wait: an eviction, a write-back on another device, or free memory
            mem.reserve(p, ps.nbytes, EntryState.LOADING)
            mem.lock(p)
            pf.waiting.pop(0)
            pf.loading.add(p)
            from_file = ps.host is HostCopy.FILE
            self.stats[g].swap_in += ps.nbytes
            if from_file:
                self.stats[g].file_read += ps.nbytes
                ps.host = HostCopy.RAM
            self._emit(SwapIn(g, p, ps.nbytes, from_file))
        if pf.waiting or pf.loading:
            return
        st = self.subtasks[pf.sid]
        if mem.free < sum(self.parts[o].nbytes for o in st.outputs):
            return
        for o in st.outputs:
            mem.reserve(o, self.parts[o].nbytes, EntryState.FUTURE)
            mem.lock(o)
        self.prefetch[g] = None
        self.state[pf.sid] = SubtaskState.QUEUED
        self.queued[g].append(pf.sid)
        self._emit(Run(g, pf.sid))

    def _request_writeback(self, pid: int) -> None:
        for h, mem in enumerate(self.mem):
            if mem.state(pid) is EntryState.RESIDENT:
                if not mem.swapping_out(pid):
                    mem.mark_out(pid, SwapOutKind.WRITEBACK)
                    self.stats[h].swap_out += self.parts[pid].nbytes
                    self._emit(SwapOut(h, pid, self.parts[pid].nbytes, keep=True, result=False))
                return

    def _return_result(self, pid: int) -> None:
        ps = self.parts[pid]
        if ps.host is not None:
            return
        for h, mem in enumerate(self.mem):
            if mem.state(pid) is EntryState.RESIDENT and not mem.swapping_out(pid):
                keep = bool(ps.consumers)
                mem.mark_out(pid, SwapOutKind.WRITEBACK if keep else SwapOutKind.EVICT)
                self.stats[h].result += ps.nbytes
                self._emit(SwapOut(h, pid, ps.nbytes, keep=keep, result=True))
                return

    def _evict(self, g: int, v: int) -> None:
        mem, ps = self.mem[g], self.parts[v]
        if ps.host is not None:
            mem.release(v)
            self._emit(Drop(g, v), counted=False)
        else:
            mem.mark_out(v, SwapOutKind.EVICT)
            self.stats[g].swap_out += mem.nbytes(v)
            self._emit(SwapOut(g, v, mem.nbytes(v), keep=False, result=False))

    def _maybe_free(self, pid: int) -> None:
        ps = self.parts[pid]
        if ps.consumers or ps.holds or ps.persistent or ps.result or ps.dead:
            return
        if self._unproduced(pid):
            return
        ps.dead = True
        for g, mem in enumerate(self.mem):
            if mem.has(pid) and not mem.swapping_out(pid):
                assert mem.entries[pid].locks == 0
                mem.release(pid)
                self._emit(Drop(g, pid), counted=False)

    def _after_event(self) -> None:
        self.background_swapout()
        for g, pf in enumerate(self.prefetch):
            if pf is not None:
                self._advance(g)
        self.declined.clear()

    def _emit(self, action: Action, counted: bool = True) -> None:
        if counted:
            self.inflight += 1
        self._out.append(action)
