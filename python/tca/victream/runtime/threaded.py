"""The runtime on real devices: I/O executors and subtask executors (seed 002 §5.3.3, Fig. 5.3,
Fig. 5.7).

Each device has three worker threads: a swap-in worker and a swap-out worker (the I/O executor,
both directions in parallel) and a subtask executor that runs the device's FIFO queue serially.
The calling thread is the driver: it owns the scheduler core (:mod:`tca.victream.core.scheduler`),
turns its actions into work items and feeds the workers' events back. Every wait has a timeout;
a failure in any worker stops all of them and is raised on the calling thread.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from dataclasses import dataclass

from tca import TcaError
from tca.victream.api.kernels import UserFunctionError
from tca.victream.core.actions import Action, Drop, Run, SwapIn, SwapOut
from tca.victream.core.spans import Lane, Span
from tca.victream.runtime.events import Failed, Ran, SwappedIn, SwappedOut, WorkerEvent
from tca.victream.runtime.workers import POLL_S, Worker


@dataclass
class DeviceWorkers:
    swap_in: Worker
    swap_out: Worker
    run: Worker

    def all(self) -> tuple[Worker, Worker, Worker]:
        return self.swap_in, self.swap_out, self.run


class ThreadedRuntime:
    """Runs batches of subtasks on ``ctx.devices`` with real data."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.core = ctx.core
        self.events: queue.Queue[WorkerEvent] = queue.Queue()
        self.stop = threading.Event()

    def run(self, plan, batch, progress=None) -> None:
        """Runs ``batch`` and every batch ``plan`` creates on the way, to completion."""
        workers = [self._start_workers(g, dev) for g, dev in enumerate(self.ctx.devices)]
        try:
            with _one_blas_thread(self.ctx.devices):
                self._drive(plan, batch, workers, progress)
        finally:
            self.stop.set()
            for ws in workers:
                for w in ws.all():
                    w.shut()
            for ws in workers:
                for w in ws.all():
                    w.join(timeout=10)

    # ------------------------------------------------------------------ driver
    def _drive(self, plan, batch, workers: list[DeviceWorkers], progress) -> None:
        core, ctx = self.core, self.ctx
        core.submit(batch)
        deadline = time.monotonic() + ctx.timeout
        done = 0
        while True:
            core.schedule(self._now_ps())
            for a in core.poll_actions():
                self._dispatch(a, workers)
            if core.finished():
                return
            if time.monotonic() > deadline:
                raise TcaError(f"the run did not finish within {ctx.timeout:.0f} s")
            ev = self._next_event()
            if ev is None:
                continue
            if self._handle(ev, plan):
                done += 1
                if progress:
                    progress(done, core.pending + done)

    def _next_event(self) -> WorkerEvent | None:
        """The next worker event, or None when a ptask wait expired first."""
        core = self.core
        wait = POLL_S
        t = core.poll_timeout()
        if t is not None:
            wait = min(wait, max(0.0, (t - self._now_ps()) / 1e12))
        try:
            return self.events.get(timeout=wait)
        except queue.Empty:
            if core.inflight == 0 and core.poll_timeout() is None:
                raise TcaError(
                    f"internal error: runtime stalled with {core.pending} subtasks pending"
                ) from None
            core.handle_timeout(self._now_ps())
            return None

    def _dispatch(self, a: Action, workers: list[DeviceWorkers]) -> None:
        if isinstance(a, SwapIn):
            workers[a.device].swap_in.q.put(a)
        elif isinstance(a, SwapOut):
            workers[a.device].swap_out.q.put(a)
        elif isinstance(a, Run):
            workers[a.device].run.q.put(a)
        else:
            assert isinstance(a, Drop)
            self.ctx.devices[a.device].free(a.pid)

    def _handle(self, ev: WorkerEvent, plan) -> bool:
        """Feeds ``ev`` to the core; True when a subtask finished."""
        core = self.core
        if isinstance(ev, Failed):
            error = self._error(ev)
            raise error from (None if error is ev.error else ev.error)
        if isinstance(ev, SwappedIn):
            core.handle_swapin_done(self._now_ps(), ev.device, ev.pid)
            return False
        if isinstance(ev, SwappedOut):
            self.ctx.host[ev.pid] = ev.block
            core.handle_swapout_done(self._now_ps(), ev.device, ev.pid)
            return False
        core.handle_run_done(self._now_ps(), ev.device, ev.sid, ev.sizes)
        for b in plan.on_done(ev.sid, ev.meta):
            core.submit(b)
        return True

    def _error(self, ev: Failed) -> BaseException:
        core, error, item = self.core, ev.error, ev.action
        if isinstance(error, UserFunctionError):
            return error
        if isinstance(item, Run):
            st = core.subtasks[item.sid]
            if isinstance(error, TcaError):
                return TcaError(f"subtask {st.name}: {error}")
            return TcaError(
                f"subtask {st.name} (partition {st.index}) failed: {type(error).__name__}: {error}"
            )
        what = "swap-in" if isinstance(item, SwapIn) else "swap-out"
        return TcaError(
            f"{what} of partition {core.parts[item.pid].label} on device {item.device} failed: "
            f"{type(error).__name__}: {error}"
        )

    # ------------------------------------------------------------------ workers
    def _start_workers(self, g: int, dev) -> DeviceWorkers:
        ctx, core = self.ctx, self.core

        def swap_in(a: SwapIn) -> SwappedIn:
            start = time.perf_counter()
            dev.put(a.pid, ctx.host_block(a.pid))
            self._span(g, Lane.IN, start, core.parts[a.pid].label)
            return SwappedIn(g, a.pid)

        def swap_out(a: SwapOut) -> SwappedOut:
            start = time.perf_counter()
            block = dev.get(a.pid)
            if not a.keep:
                dev.free(a.pid)
            self._span(g, Lane.OUT, start, core.parts[a.pid].label)
            return SwappedOut(g, a.pid, block)

        def run(a: Run) -> Ran:
            st = core.subtasks[a.sid]
            start = time.perf_counter()
            outs, meta = dev.run(st.kernel, [dev.block(p) for p in st.inputs])
            sizes = {}
            for pid, block in zip(st.outputs, outs, strict=True):
                dev.store(pid, block)
                sizes[pid] = sum(int(v.nbytes) for v in block.values())
            ctx.compute_s[g] += time.perf_counter() - start
            self._span(g, Lane.RUN, start, st.name)
            return Ran(g, a.sid, sizes, meta)

        return DeviceWorkers(
            Worker(f"{dev.name}-in", swap_in, self.events, self.stop),
            Worker(f"{dev.name}-out", swap_out, self.events, self.stop),
            Worker(f"{dev.name}-run", run, self.events, self.stop),
        )

    def _now_ps(self) -> int:
        return int((time.perf_counter() - self.ctx.clock_origin) * 1e12)

    def _span(self, g: int, lane: Lane, start: float, label: str) -> None:
        origin = self.ctx.clock_origin
        self.ctx.spans.append(Span(g, lane, int((start - origin) * 1e12), self._now_ps(), label))


def _one_blas_thread(devices):
    """Several emulated GPUs call BLAS from their own threads at once; a multi-threaded BLAS
    then spins against itself, so each device's kernels use one BLAS thread during a run."""
    if not any(getattr(d, "kind", "") == "virtual" for d in devices):
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pinned in requirements.txt; without it BLAS keeps its threads
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")
