"""The Victream scheduler as a state machine with no I/O (seed 002 §5.4, Fig. 5.5-5.8).

Contract: deterministic; owns no clock, thread or device. Time ``now`` [ps] is an argument.
The same object drives real devices (:mod:`tca.victream.executors`), the simulator
(:mod:`tca.victream.sim`) and the optimal-schedule search (:mod:`tca.victream.optimal`).

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

State (per device ``g``): a memory manager (capacity, thresholds, locks, LRU), the subtasks
queued on ``g`` in FIFO order (the subtask executor runs them serially), and at most one
*prefetch*: the subtask chosen last, whose input swap-ins are in flight; scheduling on ``g``
waits until they complete (§5.4.2). Global: the *global list* (subtasks whose parents are all
done, schedulable on any device) and, computed on demand, each device's *local list* (subtasks
whose unfinished parents are all queued on ``g``, schedulable only there; Fig. 5.6).

Schedulers (``POLICIES``), all on the same prefetching pipeline:
  fifo      the oldest subtask of the global list (§6.1 baseline).
  ptask     as fifo, but if another device holds most of the head's input bytes, this device
            waits up to ``ptask_wait_ps`` for that one to take it (§6.1, PTask [52]).
  locality  the subtask of the global list with the least swap I/O (§5.4.1, "拡張前").
  victream  the least swap I/O over the global list and this device's local list; on a tie the
            local list wins (Fig. 5.8: global only if ``glob_min < local_min``).
Swap I/O of a subtask on ``g`` = bytes to load + bytes another device must write back first +
dirty bytes that must be swapped out of ``g`` to make room (§5.4.1). Ties: the earlier entry
into the global list, then the lower subtask id.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tca import TcaError
from tca.victream.dag import Batch, Subtask
from tca.victream.memory import MemoryManager

POLICIES = ("fifo", "ptask", "locality", "victream")


@dataclass(frozen=True)
class SwapIn:
    device: int
    pid: int
    nbytes: int
    from_file: bool  # the host copy is still in its file (first read)


@dataclass(frozen=True)
class SwapOut:
    device: int
    pid: int
    nbytes: int
    keep: bool  # True: write back and keep the device copy; False: free it afterwards
    result: bool  # the data an action returns (not counted as swap I/O)


@dataclass(frozen=True)
class Drop:
    """Free a device copy at once (the host has the data, or nobody needs it any more)."""

    device: int
    pid: int


@dataclass(frozen=True)
class Run:
    device: int
    sid: int


@dataclass
class PartState:
    nbytes: int
    host: str | None  # None (only on a device) | "ram" | "file"
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
class _Prefetch:
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
        if policy not in POLICIES and policy != "oracle":
            raise TcaError(f"unknown scheduler '{policy}' (expected one of: {', '.join(POLICIES)})")
        if not capacities:
            raise TcaError("at least one device is needed")
        self.policy = policy
        self.mem = [MemoryManager(c, load_threshold, swap_threshold) for c in capacities]
        self.stats = [DeviceStats() for _ in capacities]
        self.ptask_wait_ps = ptask_wait_ps
        self.parts: dict[int, PartState] = {}
        self.subtasks: dict[int, Subtask] = {}
        self.state: dict[int, str] = {}  # sid -> pending | prefetch | queued | done
        self.device_of: dict[int, int] = {}
        self.unfinished_parents: dict[int, set[int]] = {}
        self.children: dict[int, set[int]] = {}
        self.ready: dict[int, int] = {}  # the global list: sid -> entry sequence number
        self.queued: list[list[int]] = [[] for _ in capacities]
        self.prefetch: list[_Prefetch | None] = [None for _ in capacities]
        self.pending = 0  # subtasks not done
        self.inflight = 0  # swap-ins, swap-outs and runs issued and not reported done
        self._seq = 0
        self._passed: set[int] = set()  # devices that declined in the current pass
        self._ptask_since: dict[int, int] = {}
        self._out: list = []

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
                if self.state[c] == "pending" and c not in self.ready and self.unfinished_parents[c] <= on_g:
                    found.add(c)
        return sorted(found)

    def global_list(self) -> list[int]:
        return sorted(self.ready, key=self.ready.__getitem__)

    def swap_cost(self, g: int, sid: int) -> int:
        """Swap I/O [B] that scheduling ``sid`` on ``g`` causes now (§5.4.1)."""
        mem, st = self.mem[g], self.subtasks[sid]
        ins = list(dict.fromkeys(st.inputs))
        load = wb = 0
        for p in ins:
            if not mem.has(p) or mem.entries[p].out == "evict":
                load += self.parts[p].nbytes
                if self.parts[p].host is None and not self._writeback_in_flight(p):
                    wb += self.parts[p].nbytes
        need = load + sum(self.parts[o].nbytes for o in st.outputs)
        deficit = need - mem.free - mem.evicting
        dirty = 0
        if deficit > 0:
            for v in mem.evictable(set(ins)):
                if deficit <= 0:
                    break
                if self.parts[v].host is None:
                    dirty += mem.entries[v].nbytes
                deficit -= mem.entries[v].nbytes
        return load + wb + dirty

    def poll_timeout(self) -> int | None:
        """The next time [ps] at which ptask stops waiting for a device, if any."""
        if not self._ptask_since:
            return None
        return min(self._ptask_since.values()) + self.ptask_wait_ps

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
        c.ready = dict(self.ready)
        c.queued = [list(q) for q in self.queued]
        c.prefetch = [
            None if p is None else _Prefetch(p.sid, list(p.waiting), set(p.loading)) for p in self.prefetch
        ]
        c._passed = set(self._passed)
        c._ptask_since = dict(self._ptask_since)
        c._out = list(self._out)
        return c

    def poll_actions(self) -> list:
        out, self._out = self._out, []
        return out

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
            self.state[st.sid] = "pending"
            self.pending += 1
            for o in st.outputs:
                self.parts[o].producer = st.sid
        for st in batch.subtasks:
            parents = set()
            for p in st.inputs:
                ps = self.parts[p]
                ps.consumers.add(st.sid)
                if ps.producer is not None and self.state[ps.producer] != "done":
                    parents.add(ps.producer)
                    self.children.setdefault(ps.producer, set()).add(st.sid)
            self.unfinished_parents[st.sid] = parents
            if not parents:
                self._make_ready(st.sid)
        for pid in batch.results:
            self.parts[pid].result = True
            if self.parts[pid].producer is None or self.state[self.parts[pid].producer] == "done":
                self._return_result(pid)
        self.release(batch.release)
        self._background_swapout()
        self._passed.clear()

    def hold(self, pids) -> None:
        for p in pids:
            self.parts[p].holds += 1

    def release(self, pids) -> None:
        for p in pids:
            self.parts[p].holds -= 1
            self._maybe_free(p)

    def handle_swapin_done(self, now: int, g: int, pid: int) -> None:
        self.inflight -= 1
        self.mem[g].set_state(pid, "resident")
        pf = self.prefetch[g]
        assert pf is not None and pid in pf.loading
        pf.loading.discard(pid)
        self._advance(g)
        self._after_event()

    def handle_swapout_done(self, now: int, g: int, pid: int) -> None:
        self.inflight -= 1
        ps, mem = self.parts[pid], self.mem[g]
        ps.host = "ram"
        if mem.entries[pid].out == "evict" or ps.dead:
            mem.release(pid)
        else:
            mem.mark_out(pid, None)
        for h in range(self.n_devices):
            if self.prefetch[h] is not None:
                self._advance(h)
        self._after_event()

    def handle_run_done(self, now: int, g: int, sid: int, sizes: dict[int, int] | None = None) -> None:
        """``sizes``: the real size [B] of each output; larger than reserved is an error."""
        self.inflight -= 1
        st, mem = self.subtasks[sid], self.mem[g]
        self.state[sid] = "done"
        self.pending -= 1
        self.queued[g].remove(sid)
        self.stats[g].subtasks += 1
        # inputs first, then outputs: the fresh outputs are the most recently used (LRU)
        for p in dict.fromkeys(st.inputs):
            mem.unlock(p)
            self.parts[p].consumers.discard(sid)
            self._maybe_free(p)
        for o in st.outputs:
            mem.set_state(o, "resident")
            if sizes and o in sizes:
                if sizes[o] > self.parts[o].nbytes:
                    raise TcaError(
                        f"subtask {st.name} produced {sizes[o]} B for an output reserved "
                        f"at {self.parts[o].nbytes} B; give MM(output_size=...)"
                    )
                mem.resize(o, sizes[o])
                self.parts[o].nbytes = sizes[o]
            mem.unlock(o)
        for o in st.outputs:
            if self.parts[o].result:
                self._return_result(o)
            else:
                self._maybe_free(o)
        for c in self.children.pop(sid, ()):
            self.unfinished_parents[c].discard(sid)
            if not self.unfinished_parents[c] and self.state[c] == "pending":
                self._make_ready(c)
        self._after_event()

    def handle_timeout(self, now: int) -> None:
        self._passed.clear()

    # ----------------------------------------------------------------- scheduling
    def poll_decision(self, now: int, with_local: bool = True):
        """The next device that may take a subtask, with its candidates, or None.

        Returns ``(g, global_list, local_list)``; Fig. 5.8's loop over ``available_gpu``.
        """
        for g in range(self.n_devices):
            if g in self._passed or self.prefetch[g] is not None:
                continue
            if not self.mem[g].below_load_threshold():
                continue
            glob = self.global_list()
            local = self.local_list(g) if with_local else []
            if glob or local:
                return g, glob, local
        return None

    def pick(self, now: int, g: int, glob: list[int], local: list[int]) -> int | None:
        """The policy's choice for device ``g`` (None: ``g`` waits)."""
        if self.policy == "fifo":
            return glob[0] if glob else None
        if self.policy == "ptask":
            if not glob:
                return None
            head = glob[0]
            holder = self._majority_holder(head)
            if holder is not None and holder != g:
                since = self._ptask_since.setdefault(head, now)
                if now < since + self.ptask_wait_ps:
                    return None
            self._ptask_since.pop(head, None)
            return head
        gmin = self._iomin(g, glob)
        if self.policy == "locality":
            return gmin
        lmin = self._iomin(g, local)
        if lmin is None or (gmin is not None and self.swap_cost(g, gmin) < self.swap_cost(g, lmin)):
            return gmin
        return lmin

    def schedule(self, now: int) -> None:
        """Fig. 5.8 ``schedule()``: gives subtasks to every device that can take one."""
        while (d := self.poll_decision(now, with_local=self.policy == "victream")) is not None:
            g, glob, local = d
            sid = self.pick(now, g, glob, local)
            if sid is None or not self.assign(now, g, sid):
                self._passed.add(g)
        self._background_swapout()

    def assign(self, now: int, g: int, sid: int) -> bool:
        """Schedules ``sid`` on ``g``: locks memory, starts the prefetch. False if it cannot fit
        yet (the device then waits for running subtasks or swap-outs to free memory)."""
        st, mem = self.subtasks[sid], self.mem[g]
        assert self.state[sid] == "pending"
        ins = list(dict.fromkeys(st.inputs))
        to_load = [p for p in ins if not mem.has(p) or mem.entries[p].out == "evict"]
        need = sum(self.parts[p].nbytes for p in to_load) + sum(self.parts[o].nbytes for o in st.outputs)
        held = sum(self.parts[p].nbytes for p in ins if p not in to_load and mem.state(p) != "future")
        if need + held > mem.capacity:
            raise TcaError(
                f"subtask {st.name} needs {need + held} B of device memory, more than the "
                f"device capacity of {mem.capacity} B; use smaller partitions"
            )
        avail = mem.free + mem.evicting
        victims = []
        for v in mem.evictable(set(ins)):
            if avail >= need:
                break
            victims.append(v)
            avail += mem.entries[v].nbytes
        if avail < need:
            return False
        for v in victims:
            self._evict(g, v)
        self.ready.pop(sid, None)
        self._ptask_since.pop(sid, None)
        self.state[sid] = "prefetch"
        self.device_of[sid] = g
        for p in ins:
            if p not in to_load:
                mem.lock(p)
        for p in to_load:
            if self.parts[p].host is None:
                self._request_writeback(p)
        self.prefetch[g] = _Prefetch(sid, to_load)
        self._advance(g)
        return True

    # ----------------------------------------------------------------- internals
    def _make_ready(self, sid: int) -> None:
        self._seq += 1
        self.ready[sid] = self._seq

    def _iomin(self, g: int, cands: list[int]) -> int | None:
        best = None
        for i, sid in enumerate(cands):
            key = (self.swap_cost(g, sid), i)
            if best is None or key < best[0]:
                best = (key, sid)
        return None if best is None else best[1]

    def _majority_holder(self, sid: int) -> int | None:
        held = [0] * self.n_devices
        for p in set(self.subtasks[sid].inputs):
            for g, mem in enumerate(self.mem):
                if mem.has(p) and mem.entries[p].out != "evict":
                    held[g] += self.parts[p].nbytes
        best = max(range(self.n_devices), key=lambda g: (held[g], -g))
        return best if held[best] > 0 else None

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
            mem.reserve(p, ps.nbytes, "loading")
            mem.lock(p)
            pf.waiting.pop(0)
            pf.loading.add(p)
            self.stats[g].swap_in += ps.nbytes
            if ps.host == "file":
                self.stats[g].file_read += ps.nbytes
            self._emit(SwapIn(g, p, ps.nbytes, ps.host == "file"))
            ps.host = "ram" if ps.host == "file" else ps.host
        if pf.waiting or pf.loading:
            return
        st = self.subtasks[pf.sid]
        if mem.free < sum(self.parts[o].nbytes for o in st.outputs):
            return
        for o in st.outputs:
            mem.reserve(o, self.parts[o].nbytes, "future")
            mem.lock(o)
        self.prefetch[g] = None
        self.state[pf.sid] = "queued"
        self.queued[g].append(pf.sid)
        self._emit(Run(g, pf.sid))

    def _request_writeback(self, pid: int) -> None:
        for h, mem in enumerate(self.mem):
            if mem.has(pid) and mem.state(pid) == "resident":
                if mem.entries[pid].out is None:
                    mem.mark_out(pid, "writeback")
                    self.stats[h].swap_out += self.parts[pid].nbytes
                    self._emit(SwapOut(h, pid, self.parts[pid].nbytes, keep=True, result=False))
                return

    def _writeback_in_flight(self, pid: int) -> bool:
        return any(m.has(pid) and m.entries[pid].out is not None for m in self.mem)

    def _return_result(self, pid: int) -> None:
        ps = self.parts[pid]
        if ps.host is not None:
            return
        for h, mem in enumerate(self.mem):
            if mem.has(pid) and mem.state(pid) == "resident" and mem.entries[pid].out is None:
                keep = bool(ps.consumers)
                mem.mark_out(pid, "writeback" if keep else "evict")
                self.stats[h].result += ps.nbytes
                self._emit(SwapOut(h, pid, ps.nbytes, keep=keep, result=True))
                return

    def _evict(self, g: int, v: int) -> None:
        mem, ps = self.mem[g], self.parts[v]
        if ps.host is not None:
            mem.release(v)
            self._emit(Drop(g, v), counted=False)
        else:
            mem.mark_out(v, "evict")
            self.stats[g].swap_out += mem.entries[v].nbytes
            self._emit(SwapOut(g, v, mem.entries[v].nbytes, keep=False, result=False))

    def _maybe_free(self, pid: int) -> None:
        ps = self.parts[pid]
        if ps.consumers or ps.holds or ps.persistent or ps.result or ps.dead:
            return
        if ps.producer is not None and self.state.get(ps.producer) != "done":
            return
        ps.dead = True
        for g, mem in enumerate(self.mem):
            if mem.has(pid) and mem.entries[pid].out is None:
                assert mem.entries[pid].locks == 0
                mem.release(pid)
                self._emit(Drop(g, pid), counted=False)

    def _background_swapout(self) -> None:
        """§5.4.2: above the swap-out threshold, swap out unlocked partitions in LRU order."""
        for g, mem in enumerate(self.mem):
            while mem.above_swap_threshold():
                victims = mem.evictable()
                if not victims:
                    break
                self._evict(g, victims[0])

    def _after_event(self) -> None:
        self._background_swapout()
        for g in range(self.n_devices):
            self._advance(g)
        self._passed.clear()

    def _emit(self, action, counted: bool = True) -> None:
        if counted:
            self.inflight += 1
        self._out.append(action)
