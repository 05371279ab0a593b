"""Devices the runtime drives: CPU-emulated GPUs and CUDA GPUs through CuPy.

:class:`VirtualGPU` keeps partitions as NumPy arrays, enforces a capacity [bytes], and moves data
over a *bus* that really takes time: a copy of ``n`` bytes lasts ``latency + n / bandwidth``
(the copy, then a sleep for the rest), one transfer at a time in each direction, both directions
in parallel (seed 002 §5.4.2: swap-in and swap-out run in parallel). ``compute_speed`` < 1 slows
kernels down by sleeping ``elapsed * (1 / speed - 1)`` after each.

:class:`CupyGPU` keeps partitions in a CUDA device's memory, with one CUDA stream for each copy
direction and one for kernels, so swap-in, swap-out and compute overlap.

Sizes, bandwidths and times are read by the project's unit parser (:mod:`tca.units`):
``512MiB``, ``1GB``, ``6GB/s``, ``10us``.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from tca import TcaError
from tca.units import parse_bandwidth, parse_bytes, parse_time
from tca.victream.api.formats import block_nbytes


class VirtualGPU:
    """A GPU emulated on the CPU with NumPy: ``capacity`` [B], a throttled bus, a speed factor."""

    kind = "virtual"

    def __init__(
        self,
        capacity="512MiB",
        bus_bandwidth="6GB/s",
        bus_latency="10us",
        compute_speed: float = 1.0,
        name: str = "vgpu",
    ):
        self.capacity = parse_bytes(capacity, "device memory")
        self.bus_bandwidth = parse_bandwidth(bus_bandwidth, "bus bandwidth")
        self.bus_latency = parse_time(bus_latency, "bus latency")
        if not compute_speed > 0:
            raise TcaError("compute_speed must be positive")
        self.compute_speed = float(compute_speed)
        self.name = name
        self._data: dict[int, dict] = {}
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def _throttle(self, start: float, nbytes: int) -> None:
        rest = self.bus_latency + nbytes / self.bus_bandwidth - (time.perf_counter() - start)
        if rest > 0:
            time.sleep(rest)

    def _add(self, pid: int, block: dict) -> None:
        n = block_nbytes(block)
        with self._lock:
            if self._used + n > self.capacity:
                raise MemoryError(
                    f"{self.name}: out of device memory ({self._used} + {n} > {self.capacity} B)"
                )
            self._data[pid] = block
            self._used += n

    def put(self, pid: int, block: dict) -> None:
        """Swap-in: copies a host block onto the device over the bus."""
        start = time.perf_counter()
        dev = {k: np.array(v, copy=True) for k, v in block.items()}
        self._add(pid, dev)
        self._throttle(start, block_nbytes(dev))

    def get(self, pid: int) -> dict:
        """Swap-out: copies a device block to the host over the bus."""
        start = time.perf_counter()
        with self._lock:
            dev = self._data[pid]
        host = {k: np.array(v, copy=True) for k, v in dev.items()}
        self._throttle(start, block_nbytes(host))
        return host

    def block(self, pid: int) -> dict:
        with self._lock:
            return self._data[pid]

    def free(self, pid: int) -> None:
        with self._lock:
            block = self._data.pop(pid, None)
            if block is not None:
                self._used -= block_nbytes(block)

    def clear(self) -> None:
        """Frees every partition."""
        with self._lock:
            self._data.clear()
            self._used = 0

    def run(self, kernel, blocks: list[dict]):
        start = time.perf_counter()
        outs, meta = kernel(blocks)
        outs = [{k: np.ascontiguousarray(v) for k, v in b.items()} for b in outs]
        if self.compute_speed != 1.0:
            elapsed = time.perf_counter() - start
            time.sleep(max(0.0, elapsed * (1.0 / self.compute_speed - 1.0)))
        return outs, meta

    def store(self, pid: int, block: dict) -> None:
        self._add(pid, block)


def cupy_available() -> tuple[bool, str]:
    """(True, '') when CuPy imports and sees a CUDA device; else (False, the reason)."""
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install cupy-cuda12x on a machine with an NVIDIA GPU)"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, no device
        return False, f"no CUDA device: {e}"
    return (n > 0, "" if n > 0 else "no CUDA device")


class CupyGPU:
    """A CUDA GPU through CuPy: partitions in device memory, copies on their own streams.

    ``capacity`` [B] is what the memory manager may use (default: 80 % of the free memory).
    """

    kind = "cupy"

    def __init__(self, device_id: int = 0, capacity=None, name: str | None = None):
        ok, why = cupy_available()
        if not ok:
            raise TcaError(f"cupy mode: {why}")
        import cupy

        self.cp = cupy
        self.device_id = device_id
        self.name = name or f"cuda{device_id}"
        with cupy.cuda.Device(device_id):
            free, _ = cupy.cuda.runtime.memGetInfo()
            self.in_stream = cupy.cuda.Stream(non_blocking=True)
            self.out_stream = cupy.cuda.Stream(non_blocking=True)
            self.compute_stream = cupy.cuda.Stream(non_blocking=True)
        self.capacity = parse_bytes(capacity, "device memory") if capacity is not None else int(free * 0.8)
        self._data: dict[int, dict] = {}
        self._lock = threading.Lock()
        self.compute_speed = 1.0

    def put(self, pid: int, block: dict) -> None:
        cp = self.cp
        with cp.cuda.Device(self.device_id), self.in_stream:
            dev = {}
            for k, v in block.items():
                d = cp.empty(v.shape, dtype=v.dtype)
                d.set(np.ascontiguousarray(v), stream=self.in_stream)
                dev[k] = d
            self.in_stream.synchronize()
        with self._lock:
            self._data[pid] = dev

    def get(self, pid: int) -> dict:
        with self._lock:
            dev = self._data[pid]
        with self.cp.cuda.Device(self.device_id):
            host = {k: v.get(stream=self.out_stream) for k, v in dev.items()}
            self.out_stream.synchronize()
        return host

    def block(self, pid: int) -> dict:
        with self._lock:
            return self._data[pid]

    def free(self, pid: int) -> None:
        with self._lock:
            self._data.pop(pid, None)

    def clear(self) -> None:
        """Frees every partition."""
        with self._lock:
            self._data.clear()

    def run(self, kernel, blocks: list[dict]):
        with self.cp.cuda.Device(self.device_id), self.compute_stream:
            outs, meta = kernel(blocks)
            outs = [{k: self.cp.ascontiguousarray(v) for k, v in b.items()} for b in outs]
            self.compute_stream.synchronize()
        return outs, meta

    def store(self, pid: int, block: dict) -> None:
        with self._lock:
            self._data[pid] = block
