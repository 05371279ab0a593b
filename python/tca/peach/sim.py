"""Running rank programs on a simulated platform.

    import tca.peach.sim

    def program(ctx):
        buf = ctx.malloc(4096, "gpu")
        peers = ctx.exchange(buf)          # every rank's handle, by rank
        ...
        return ctx.wtime()

    results = tca.peach.sim.run("peach2-testbed-2013", 2, program)

Each rank runs ``program(ctx)`` in its own thread, one rank per node of the platform, against
one virtual clock: API calls take the time the hardware model says, data really moves, and two
runs give the same results. ``ctx`` is a :class:`Rank`; its methods mirror the TCA API
(``malloc``/``free``, ``desc_set``, ``start_dma``, ``wait_dmac``, ``wait_dma_recv``, ``send_pio``)
plus what the original programs did with MPI (``barrier``, ``allgather``, ``exchange``) and
``wtime()`` / ``compute(seconds)``, and the collective library on the TCA API
(``coll_barrier``, ``coll_allgather``, ``coll_allreduce``, ``coll_reduce``, ``coll_bcast``:
:mod:`tca.peach.coll`). When every rank waits for something that cannot happen,
every waiting call raises :class:`tca.peach.api.DeadlockError` saying what each rank waits for.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tca import TcaError, _native
from tca.common.outfile import writable_file
from tca.peach import platforms
from tca.peach.api import DeadlockError, Handle, TcaApiError
from tca.peach.coll import Collectives


class Rank(Collectives):
    """The TCA API of one rank (a thin layer over the native context)."""

    def __init__(self, native: _native.Rank):
        self._ctx = native
        self.rank: int = native.rank
        self.size: int = native.size

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._ctx, name)
        if callable(value):
            # A native method, bound once: later lookups find it in the instance at once
            # (a failed class lookup and this call cost about 0.6 us per API call).
            self.__dict__[name] = value
        return value

    def write(self, handle: Handle, offset: int, data) -> None:
        """Stores ``data`` (bytes, bytearray, memoryview or a NumPy array) into an own buffer."""
        self._ctx.write(handle, offset, bytes(memoryview(data).cast("B")))

    def send_pio(self, handle: Handle, offset: int, data) -> None:
        """``tcaSendPIO``: CPU stores of ``data`` into ``handle`` at ``offset`` (any node)."""
        self._ctx.send_pio(handle, offset, bytes(memoryview(data).cast("B")))

    def wait_pio(self, handle: Handle, offset: int, data, peer: int | None = None) -> None:
        """Polls an own buffer until the bytes at ``offset`` equal ``data``; ``peer`` is the rank
        expected to write them (a real fabric fails the wait if it dies)."""
        self._ctx.wait_pio(handle, offset, bytes(memoryview(data).cast("B")), peer)

    def allgather(self, data) -> list[bytes]:
        return self._ctx.allgather(bytes(memoryview(data).cast("B")))

    def exchange(self, handle: Handle) -> list[Handle]:
        """Every rank's handle, by rank: the MPI_Allgather of ``sizeof(tcaHandle)`` bytes."""
        return [Handle.from_bytes(b) for b in self._ctx.allgather(handle.to_bytes())]


def run(
    platform: str | Path | _native.Platform,
    nranks: int,
    program: Callable[[Rank], Any],
    *,
    trace: str | Path | None = None,
) -> list[Any]:
    """Runs ``program(ctx)`` on ``nranks`` ranks of ``platform``; returns each rank's result.

    Raises the first rank's exception if any program raised (a program error before a
    deadlock it caused), and writes a Chrome trace of the hardware to ``trace`` if given.
    """
    if not isinstance(platform, _native.Platform):
        platform = platforms.load(str(platform))
    if nranks < 1:
        raise TcaError(f"nranks must be at least 1, got {nranks}")
    if trace is not None:
        trace = writable_file(trace, "trace", (".json",))
    job = _native.SimJob(platform, nranks, trace is not None)
    results: list[Any] = [None] * nranks
    errors: list[BaseException | None] = [None] * nranks

    def body(r: int) -> None:
        try:
            results[r] = program(Rank(job.rank(r)))
        except BaseException as e:  # reported below, after every rank has stopped
            errors[r] = e
        finally:
            job.finish(r)

    threads = [threading.Thread(target=body, args=(r,), name=f"tca-rank-{r}") for r in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if trace is not None:
        try:
            trace.write_text(job.trace_json())
        except OSError as e:
            raise TcaError(f"cannot write trace {trace}: {e.strerror or e}") from None
        if dropped := job.trace_dropped():
            print(
                f"tca: the trace {trace} is full (a million spans): {dropped} later ones were dropped",
                file=sys.stderr,
            )
    failures = [e for e in errors if e is not None]
    if failures:
        # A rank's own failure, rather than what its peers saw of it (a deadlock, a lost peer).
        def consequence(e: BaseException) -> bool:
            return isinstance(e, DeadlockError) or (isinstance(e, TcaApiError) and e.name == "PeerDead")

        raise next((e for e in failures if not consequence(e)), failures[0])
    return results
