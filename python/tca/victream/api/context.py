"""The Victream user library entry point: :class:`Context` (seed 002 §5.3, Fig. 5.3).

A context owns the devices, the runtime (scheduler core, memory managers, executors) and the
host copies of the data. GRDDs are created from arrays or files; transformations build the DAG;
each action runs it and keeps device memory between actions, so data loaded by one action can
be reused by the next (what makes iterative work such as logistic regression profit from a
locality-aware scheduler, §6.1.2).

Modes: ``virtual`` (NumPy on :class:`VirtualGPU`), ``cupy`` (CUDA GPUs), ``sim`` (nothing is
executed; time comes from :class:`tca.victream.sim.cost.CostModel`).
"""

from __future__ import annotations

import time

import numpy as np

from tca import TcaError
from tca.common.progress import progress_bar
from tca.units import parse_bandwidth, parse_bytes, parse_time
from tca.victream.api import formats as F
from tca.victream.api.grdd import GRDD
from tca.victream.api.sources import SourceCatalog
from tca.victream.api.summary import DeviceSummary, Summary
from tca.victream.core.analyzer import Plan
from tca.victream.core.dag import Block, HostCopy
from tca.victream.core.scheduler import POLICIES, Core
from tca.victream.runtime.devices import CupyGPU, VirtualGPU, cupy_available
from tca.victream.sim.cost import PS, CostModel
from tca.victream.sim.simulation import Simulation

MODES = ("virtual", "cupy", "sim")


class Context:
    """Devices plus the Victream runtime.

    ``devices``: a number of devices or a list of :class:`VirtualGPU` / :class:`CupyGPU` (in
    sim mode, VirtualGPU objects describe the simulated devices: capacity, bus, speed; with
    ``mode="cupy"`` and more devices than GPUs, devices share GPUs round-robin).
    ``device_memory`` [B], ``bus_bandwidth`` [B/s], ``bus_latency`` [s] and ``compute_speed``
    describe generated devices (virtual and sim). ``scheduler``: fifo, ptask, locality or
    victream. ``partition_size`` [B]: about 256 MiB by default (seed 002 §6.1.2).
    ``load_threshold`` / ``swap_threshold``: fractions of device memory (70 % / 50 %, §6.1).
    ``kernel_bandwidth`` [B/s] and ``flops`` [1/s] set simulated kernel costs;
    ``file_read`` / ``file_write`` [B/s] the simulated host files (Table 6.1).
    ``ptask_wait`` [s]: how long ptask waits for the device holding a subtask's inputs
    (default: the time of two swap-ins of a partition).
    """

    def __init__(
        self,
        devices=2,
        *,
        mode: str = "virtual",
        device_memory="512MiB",
        bus_bandwidth="6GB/s",
        bus_latency="10us",
        compute_speed: float = 1.0,
        scheduler: str = "victream",
        partition_size="256MiB",
        load_threshold: float = 0.7,
        swap_threshold: float = 0.5,
        kernel_bandwidth="100GB/s",
        flops: float = 1e12,
        file_read="2482MB/s",
        file_write="1680MB/s",
        ptask_wait=None,
        progress: bool = False,
        timeout: float = 600.0,
    ):
        _check_choices(mode, scheduler, load_threshold, swap_threshold)
        self.mode, self.scheduler = mode, scheduler
        self.partition_size = F.check_partition_size(parse_bytes(partition_size, "partition_size"))
        self.kernel_bandwidth = parse_bandwidth(kernel_bandwidth, "kernel_bandwidth")
        self.flops = float(flops)
        self.timeout = float(timeout)
        self.progress = progress
        if isinstance(devices, int):
            devices = _make_devices(devices, mode, device_memory, bus_bandwidth, bus_latency, compute_speed)
        self.devices = list(devices)
        if not self.devices:
            raise TcaError("at least one device is needed")
        if ptask_wait is None:  # "briefly": about two swap-ins of a partition
            bus_s = self.partition_size / parse_bandwidth(bus_bandwidth, "bus_bandwidth")
            ptask_wait = 2 * (bus_s + parse_time(bus_latency, "bus_latency"))
        self._core_args = (
            [d.capacity for d in self.devices],
            scheduler,
            load_threshold,
            swap_threshold,
            int(parse_time(ptask_wait, "ptask_wait") * PS),
        )
        self.core = Core(*self._core_args)
        self.cost = _cost_model(self.devices, bus_bandwidth, bus_latency, file_read, file_write)
        self.sim = Simulation(self.core, self.cost) if mode == "sim" else None
        self.host: dict[int, Block] = {}  # host copies of partitions (sources load on demand)
        self.catalog = SourceCatalog()
        self.cached: dict[int, list[tuple[int, ...]]] = {}  # GRDD id -> its partitions, once computed
        self.spans: list = []
        self.compute_s = [0.0] * len(self.devices)
        self.elapsed_s = 0.0
        self.clock_origin = time.perf_counter()  # time 0 of the threaded runtime's timeline

    # ------------------------------------------------------------------ GRDD creation
    def array(
        self, data, format: str = "dense", partition_size=None, partition_rows: int | None = None
    ) -> GRDD:
        """A dense matrix or image (rows are partitioned) from a NumPy array; ``partition_rows``
        fixes the rows per partition (e.g. to align an image with a lower-resolution one)."""
        data = np.asarray(data)
        if format not in ("dense", "image"):
            raise TcaError("array() creates dense or image GRDDs; use sparse() or kv() for the others")
        if data.ndim == 0:
            raise TcaError("a GRDD needs at least one dimension")
        return self._rows_source(
            format,
            data.dtype,
            data.shape,
            lambda r0, r1: {"a": data[r0:r1]},
            partition_size,
            HostCopy.RAM,
            partition_rows,
        )

    def image(self, data, partition_size=None, partition_rows: int | None = None) -> GRDD:
        return self.array(data, "image", partition_size, partition_rows)

    def from_file(
        self, path: str, format: str = "dense", dtype=None, shape=None, partition_size=None
    ) -> GRDD:
        """A dense matrix or image from a .npy file, or from a raw binary file with ``dtype`` and
        ``shape``. Partitions are read on first use."""
        try:
            if str(path).endswith(".npy"):
                data = np.load(path, mmap_mode="r")
            else:
                if dtype is None or shape is None:
                    raise TcaError("a raw file needs dtype= and shape=")
                data = np.memmap(path, dtype=np.dtype(dtype), mode="r", shape=tuple(shape))
        except (OSError, ValueError) as e:
            raise TcaError(f"cannot read {path}: {e}") from None
        if format not in ("dense", "image"):
            raise TcaError("from_file reads dense or image data")
        return self._rows_source(
            format,
            data.dtype,
            data.shape,
            lambda r0, r1: {"a": np.array(data[r0:r1])},
            partition_size,
            HostCopy.FILE,
        )

    def sparse(self, data, indices, indptr, shape, partition_size=None) -> GRDD:
        """A sparse matrix in CSR form, partitioned into blocks of rows."""
        data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
        n, m = shape
        if len(indptr) != n + 1 or len(data) != len(indices) or int(indptr[-1]) != len(data):
            raise TcaError("sparse(): inconsistent CSR arrays (indptr needs rows+1 entries ending at nnz)")
        avg_row = max(1, (data.nbytes + indices.nbytes) // max(1, n) + indptr.itemsize)
        bounds = F.split_rows(n, avg_row, self._partition_bytes(partition_size))
        pids = []
        for r0, r1 in bounds:
            block = F.csr_rows(data, indices, indptr, r0, r1)
            pids.append(self.catalog.add(F.block_nbytes(block), HostCopy.RAM, lambda b=block: b))
        return GRDD(self, "source", fmts=("sparse",), dtype=data.dtype, bounds=bounds, ncols=m, pids=pids)

    def kv(self, keys, values, partition_size=None) -> GRDD:
        """A key-value GRDD from equally long key and value arrays."""
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.ndim != 1 or keys.shape != values.shape[:1]:
            raise TcaError("kv(): keys must be 1-D and as long as values")
        rec = keys.itemsize + values.itemsize
        bounds = F.split_rows(len(keys), rec, self._partition_bytes(partition_size))
        pids = [
            self.catalog.add(
                (r1 - r0) * rec, HostCopy.RAM, lambda r0=r0, r1=r1: {"k": keys[r0:r1], "v": values[r0:r1]}
            )
            for r0, r1 in bounds
        ]
        return GRDD(
            self,
            "source",
            fmts=("kv",),
            dtype=values.dtype,
            bounds=bounds,
            pids=pids,
            extra=(keys.dtype, values.dtype),
        )

    def virtual(
        self,
        format: str,
        shape,
        dtype="float32",
        partition_size=None,
        key_dtype="int64",
        partition_rows: int | None = None,
    ) -> GRDD:
        """A GRDD with metadata only, for sim mode (what-if studies on data that does not exist)."""
        if self.mode != "sim":
            raise TcaError("virtual GRDDs have no data: use them in sim mode")
        dt = np.dtype(dtype)
        if format == "kv":
            kd = np.dtype(key_dtype)
            rec = kd.itemsize + dt.itemsize
            bounds = F.split_rows(int(shape[0]), rec, self._partition_bytes(partition_size))
            pids = [self.catalog.add((r1 - r0) * rec, HostCopy.FILE, None) for r0, r1 in bounds]
            return GRDD(self, "source", fmts=("kv",), dtype=dt, bounds=bounds, pids=pids, extra=(kd, dt))
        if format not in ("dense", "image"):
            raise TcaError("virtual() supports dense, image and kv")
        return self._rows_source(
            format, dt, tuple(shape), None, partition_size, HostCopy.FILE, partition_rows
        )

    def _rows_source(
        self, fmt, dtype, shape, loader, partition_size, kind: HostCopy, partition_rows=None
    ) -> GRDD:
        dtype = np.dtype(dtype)
        row_elems = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        if partition_rows is not None:
            if partition_rows < 1:
                raise TcaError("partition_rows must be at least 1")
            bounds = F.split_rows(int(shape[0]), 1, int(partition_rows))
        else:
            bounds = F.split_rows(
                int(shape[0]), row_elems * dtype.itemsize, self._partition_bytes(partition_size)
            )
        pids = [
            self.catalog.add(
                (r1 - r0) * row_elems * dtype.itemsize,
                kind,
                None if loader is None else (lambda r0=r0, r1=r1: loader(r0, r1)),
            )
            for r0, r1 in bounds
        ]
        return GRDD(self, "source", fmts=(fmt,), dtype=dtype, bounds=bounds, ncols=row_elems, pids=pids)

    def _partition_bytes(self, partition_size) -> int:
        if partition_size is None:
            return self.partition_size
        return F.check_partition_size(parse_bytes(partition_size, "partition_size"))

    def host_block(self, pid: int) -> Block:
        """The host copy of partition ``pid`` (a source is loaded if it has none yet)."""
        block = self.host.get(pid)
        if block is None:
            block = self.catalog.load(pid)
        return block

    # ------------------------------------------------------------------ running
    def kernel_cost_s(self, in_bytes: int, factor: float, flops: float) -> float:
        """Simulated compute time [s]: a pass over the inputs at ``kernel_bandwidth``, times the
        MM cost factor, plus ``flops`` at the context's flop rate."""
        return in_bytes / self.kernel_bandwidth * factor + flops / self.flops

    def run_action(self, node: GRDD, action: str) -> list[Block] | None:
        """Runs the DAG under ``node`` for an action; the result blocks (None in sim mode)."""
        plan = Plan(self)
        batch = plan.start(node, action)
        if self.sim is not None:
            t0 = self.sim.now
            self.sim.file_results |= plan.file_results
            self.sim.run_batch(batch, plan.on_done)
            self.elapsed_s += (self.sim.now - t0) / PS
            self.spans = self.sim.spans
            return None
        from tca.victream.runtime.threaded import ThreadedRuntime

        start = time.perf_counter()
        try:
            with progress_bar(f"victream {action}", self.progress) as update:
                ThreadedRuntime(self).run(plan, batch, update)
        except BaseException:
            self._reset()  # the failed run's subtasks and device contents are discarded
            raise
        self.elapsed_s += time.perf_counter() - start
        out = [self.host_block(pid) for pid in plan.result_pids]
        # host copies of intermediate partitions are no longer needed
        for pid in list(self.host):
            ps = self.core.parts.get(pid)
            if pid not in self.catalog and not (ps is not None and ps.persistent):
                del self.host[pid]
        return out

    def summary(self) -> Summary:
        """Time, swap bytes per device and utilisation over every action run so far."""
        el = max(self.elapsed_s, 1e-12)
        compute = [c / PS for c in self.sim.compute_ps] if self.sim is not None else self.compute_s
        devs = [
            DeviceSummary(
                d.name,
                s.swap_in,
                s.swap_out,
                s.result,
                compute[i],
                min(1.0, compute[i] / el),
                s.subtasks,
                m.peak,
                m.capacity,
            )
            for i, (d, s, m) in enumerate(zip(self.devices, self.core.stats, self.core.mem, strict=True))
        ]
        return Summary(self.scheduler, self.mode, self.elapsed_s, devs, list(self.spans))

    def _reset(self) -> None:
        """Forgets every device copy and cached GRDD after a failed action; statistics so far
        are kept. Sources keep their host copies, so the context stays usable."""
        stats = self.core.stats
        self.close()
        self.core = Core(*self._core_args)
        self.core.stats = stats
        self.cached.clear()
        for pid in [p for p in self.host if p not in self.catalog]:
            del self.host[pid]

    def close(self) -> None:
        for d in self.devices:
            d.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_choices(mode: str, scheduler: str, load_threshold: float, swap_threshold: float) -> None:
    if mode not in MODES:
        raise TcaError(f"unknown mode '{mode}' (expected one of: {', '.join(MODES)})")
    if scheduler not in POLICIES:
        raise TcaError(f"unknown scheduler '{scheduler}' (expected one of: {', '.join(POLICIES)})")
    if not (0 < swap_threshold <= load_threshold <= 1):
        raise TcaError("thresholds must satisfy 0 < swap_threshold <= load_threshold <= 1")


def _make_devices(n: int, mode: str, memory, bus_bandwidth, bus_latency, compute_speed) -> list:
    """``n`` generated devices: CUDA GPUs (shared round-robin) in cupy mode, else VirtualGPUs
    (in sim mode they only describe capacity, bus and speed)."""
    if n < 1:
        raise TcaError("devices must be at least 1")
    if mode == "cupy":
        ok, why = cupy_available()
        if not ok:
            raise TcaError(f"cupy mode: {why}")
        return [CupyGPU(i % _cuda_count(), memory, f"gpu{i}") for i in range(n)]
    return [VirtualGPU(memory, bus_bandwidth, bus_latency, compute_speed, f"gpu{i}") for i in range(n)]


def _cost_model(devices, bus_bandwidth, bus_latency, file_read, file_write) -> CostModel:
    """The simulated durations; each device's own bus (devices may differ, e.g. some behind a
    network), the context's values for devices that have none (CUDA GPUs)."""
    return CostModel(
        bus_bandwidth=[
            float(getattr(d, "bus_bandwidth", parse_bandwidth(bus_bandwidth, "bus_bandwidth")))
            for d in devices
        ],
        bus_latency=[
            float(getattr(d, "bus_latency", parse_time(bus_latency, "bus_latency"))) for d in devices
        ],
        file_read=parse_bandwidth(file_read, "file_read"),
        file_write=parse_bandwidth(file_write, "file_write"),
        compute_speed=[getattr(d, "compute_speed", 1.0) for d in devices],
    )


def _cuda_count() -> int:
    import cupy

    return cupy.cuda.runtime.getDeviceCount()
