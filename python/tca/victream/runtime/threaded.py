"""The runtime on real devices: I/O executors and subtask executors (seed 002 §5.3.3, Fig. 5.3,
Fig. 5.7).

Each device has three worker threads: a swap-in worker and a swap-out worker (the I/O executor,
both directions in parallel) and a subtask executor that runs the device's FIFO queue serially.
The calling thread is the driver: it owns the scheduler core (:mod:`tca.victream.scheduler`),
turns its actions into work items and feeds completions back. Every wait has a timeout; a
failure in any worker stops all of them and is raised on the calling thread.
"""

from __future__ import annotations

import queue
import threading
import time

from tca import TcaError
from tca.victream.analyzer import UserFunctionError
from tca.victream.scheduler import Drop, Run, SwapIn, SwapOut
from tca.victream.sim import Span

POLL_S = 0.05  # how often idle workers and the driver check for shutdown


class _Worker:
    def __init__(self, name: str, fn, events: queue.Queue, stop: threading.Event):
        self.q: queue.Queue = queue.Queue()
        self.fn, self.events, self.stop = fn, events, stop
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                item = self.q.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if item is None:
                return
            try:
                self.events.put(self.fn(item))
            except BaseException as e:  # reported to the driver, which shuts everything down
                self.events.put(("error", None, item, e))
                return


class ThreadedRuntime:
    """Runs batches of subtasks on ``ctx.devices`` with real data."""

    def __init__(self, ctx):
        self.ctx = ctx

    def run(self, plan, batch, progress=None) -> None:
        ctx, core = self.ctx, self.ctx.core
        events: queue.Queue = queue.Queue()
        stop = threading.Event()
        t0 = ctx._clock_origin

        def now_ps() -> int:
            return int((time.perf_counter() - t0) * 1e12)

        def span(g, lane, start, label):
            ctx.spans.append(Span(g, lane, int((start - t0) * 1e12), now_ps(), label))

        workers = []
        for g, dev in enumerate(ctx.devices):

            def swap_in(a, g=g, dev=dev):
                start = time.perf_counter()
                dev.put(a.pid, ctx._host_block(a.pid))
                span(g, "in", start, core.parts[a.pid].label)
                return ("in", g, a.pid, None)

            def swap_out(a, g=g, dev=dev):
                start = time.perf_counter()
                block = dev.get(a.pid)
                if not a.keep:
                    dev.free(a.pid)
                span(g, "out", start, core.parts[a.pid].label)
                return ("out", g, a.pid, block)

            def run(a, g=g, dev=dev):
                st = core.subtasks[a.sid]
                start = time.perf_counter()
                outs, meta = dev.run(st.kernel, [dev.block(p) for p in st.inputs])
                sizes = {}
                for pid, block in zip(st.outputs, outs, strict=True):
                    dev.store(pid, block)
                    sizes[pid] = sum(int(v.nbytes) for v in block.values())
                ctx.compute_s[g] += time.perf_counter() - start
                span(g, "run", start, st.name)
                return ("run", g, a.sid, (sizes, meta))

            workers.append(
                (
                    _Worker(f"{dev.name}-in", swap_in, events, stop),
                    _Worker(f"{dev.name}-out", swap_out, events, stop),
                    _Worker(f"{dev.name}-run", run, events, stop),
                )
            )

        done = 0
        # Several emulated GPUs call BLAS from their own threads at once; a multi-threaded BLAS
        # then spins against itself, so each device's kernels use one BLAS thread during a run.
        limits = None
        if any(getattr(d, "kind", "") == "virtual" for d in ctx.devices):
            try:
                from threadpoolctl import threadpool_limits
            except ImportError:  # pinned in requirements.txt; without it BLAS keeps its threads
                threadpool_limits = None
            if threadpool_limits is not None:
                limits = threadpool_limits(limits=1, user_api="blas")
        try:
            core.submit(batch)
            deadline = time.monotonic() + ctx.timeout
            while True:
                core.schedule(now_ps())
                for a in core.poll_actions():
                    if isinstance(a, SwapIn):
                        workers[a.device][0].q.put(a)
                    elif isinstance(a, SwapOut):
                        workers[a.device][1].q.put(a)
                    elif isinstance(a, Run):
                        workers[a.device][2].q.put(a)
                    elif isinstance(a, Drop):
                        ctx.devices[a.device].free(a.pid)
                if core.finished():
                    return
                if time.monotonic() > deadline:
                    raise TcaError(f"the run did not finish within {ctx.timeout:.0f} s")
                wait = POLL_S
                t = core.poll_timeout()
                if t is not None:
                    wait = min(wait, max(0.0, (t - now_ps()) / 1e12))
                try:
                    ev = events.get(timeout=wait)
                except queue.Empty:
                    if core.inflight == 0 and core.poll_timeout() is None:
                        raise TcaError(
                            f"internal error: runtime stalled with {core.pending} subtasks pending"
                        ) from None
                    core.handle_timeout(now_ps())
                    continue
                kind, g, x, payload = ev
                if kind == "error":
                    self._raise(x, payload)
                if kind == "in":
                    core.handle_swapin_done(now_ps(), g, x)
                elif kind == "out":
                    ctx.host[x] = payload
                    core.handle_swapout_done(now_ps(), g, x)
                else:
                    sizes, meta = payload
                    core.handle_run_done(now_ps(), g, x, sizes)
                    for b in plan.on_done(x, meta):
                        core.submit(b)
                    done += 1
                    if progress:
                        progress(done, core.pending + done)
        finally:
            if limits is not None:
                limits.restore_original_limits()
            stop.set()
            for ws in workers:
                for w in ws:
                    w.q.put(None)
            for ws in workers:
                for w in ws:
                    w.thread.join(timeout=10)

    def _raise(self, item, error: BaseException):
        core = self.ctx.core
        if isinstance(error, UserFunctionError):
            raise error
        if isinstance(item, Run):
            st = core.subtasks[item.sid]
            if isinstance(error, TcaError):
                raise TcaError(f"subtask {st.name}: {error}") from error
            raise TcaError(
                f"subtask {st.name} (partition {st.index}) failed: {type(error).__name__}: {error}"
            ) from error
        what = "swap-in" if isinstance(item, SwapIn) else "swap-out"
        raise TcaError(
            f"{what} of partition {core.parts[item.pid].label} on device {item.device} failed: "
            f"{type(error).__name__}: {error}"
        ) from error
