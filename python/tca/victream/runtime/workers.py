"""Worker threads: each takes actions from its queue, carries them out with a function and
reports a :data:`WorkerEvent` (seed 002 Fig. 5.3: I/O executor and subtask executor)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from tca.victream.runtime.events import Failed, WorkerEvent

POLL_S = 0.05  # how often idle workers and the driver check for shutdown


class Worker:
    def __init__(self, name: str, fn: Callable[..., WorkerEvent], events: queue.Queue, stop: threading.Event):
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
                self.events.put(Failed(item, e))
                return

    def shut(self) -> None:
        self.q.put(None)

    def join(self, timeout: float) -> None:
        self.thread.join(timeout=timeout)
