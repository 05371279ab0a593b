"""The Victream user library entry point: :class:`Context` (seed 002 §5.3, Fig. 5.3).

A context owns the devices, the runtime (scheduler core, memory managers, executors) and the
host copies of the data. GRDDs are created from arrays or files; transformations build the DAG;
each action runs it and keeps device memory between actions, so data loaded by one action can
be reused by the next (what makes iterative work such as logistic regression profit from a
locality-aware scheduler, §6.1.2).

Modes: ``virtual`` (NumPy on :class:`VirtualGPU`), ``cupy`` (CUDA GPUs), ``sim`` (nothing is
executed; time comes from :class:`tca.victream.sim.CostModel`).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import numpy as np

from tca import TcaError
from tca.progress import progress_bar
from tca.victream import formats as F
from tca.victream.analyzer import Plan
from tca.victream.devices import CupyGPU, VirtualGPU, cupy_available, parse_bytes, parse_rate, parse_time
from tca.victream.grdd import GRDD
from tca.victream.scheduler import POLICIES, Core
from tca.victream.sim import PS, CostModel, Simulation

MODES = ("virtual", "cupy", "sim")


@dataclass
class DeviceSummary:
    name: str
    swap_in: int  # [B]
    swap_out: int  # [B]
    result: int  # [B] action results copied to the host
    compute_s: float  # time the subtask executor was busy [s]
    utilisation: float  # compute_s / elapsed
    subtasks: int
    peak: int  # peak reserved memory [B]
    capacity: int  # [B]


@dataclass
class Summary:
    scheduler: str
    mode: str
    elapsed_s: float
    devices: list[DeviceSummary]
    spans: list = field(default_factory=list, repr=False)  # timeline (tca.victream.sim.Span)

    @property
    def swap_in(self) -> int:
        return sum(d.swap_in for d in self.devices)

    @property
    def swap_out(self) -> int:
        return sum(d.swap_out for d in self.devices)

    def text(self) -> str:
        lines = [
            f"# {self.scheduler} ({self.mode}): {self.elapsed_s:.3f} s, swap-in {_mib(self.swap_in)}, "
            f"swap-out {_mib(self.swap_out)}",
            f"# {'device':<10}{'swap-in':>12}{'swap-out':>12}{'subtasks':>10}{'util':>8}{'peak mem':>12}",
        ]
        for d in self.devices:
            lines.append(
                f"  {d.name:<10}{_mib(d.swap_in):>12}{_mib(d.swap_out):>12}{d.subtasks:>10}"
                f"{d.utilisation * 100:>7.1f}%{_mib(d.peak):>12}"
            )
        return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


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
        if mode not in MODES:
            raise TcaError(f"unknown mode '{mode}' (expected one of: {', '.join(MODES)})")
        if scheduler not in POLICIES:
            raise TcaError(f"unknown scheduler '{scheduler}' (expected one of: {', '.join(POLICIES)})")
        if not (0 < swap_threshold <= load_threshold <= 1):
            raise TcaError("thresholds must satisfy 0 < swap_threshold <= load_threshold <= 1")
        self.mode, self.scheduler = mode, scheduler
        self.partition_size = parse_bytes(partition_size)
        self.kernel_bandwidth = parse_rate(kernel_bandwidth)
        self.flops = float(flops)
        self.timeout = float(timeout)
        self.progress = progress
        if isinstance(devices, int):
            if devices < 1:
                raise TcaError("devices must be at least 1")
            if mode == "virtual":
                devices = [
                    VirtualGPU(device_memory, bus_bandwidth, bus_latency, compute_speed, f"gpu{i}")
                    for i in range(devices)
                ]
            elif mode == "cupy":
                ok, why = cupy_available()
                if not ok:
                    raise TcaError(f"cupy mode: {why}")
                devices = [CupyGPU(i % _cuda_count(), device_memory, f"gpu{i}") for i in range(devices)]
            else:
                devices = [
                    VirtualGPU(device_memory, bus_bandwidth, bus_latency, compute_speed, f"gpu{i}")
                    for i in range(devices)
                ]
        self.devices = list(devices)
        if not self.devices:
            raise TcaError("at least one device is needed")
        if ptask_wait is None:  # "briefly": about two swap-ins of a partition
            ptask_wait = 2 * (self.partition_size / parse_rate(bus_bandwidth) + parse_time(bus_latency))
        self._core_args = (
            [d.capacity for d in self.devices],
            scheduler,
            load_threshold,
            swap_threshold,
            int(parse_time(ptask_wait) * PS),
        )
        self.core = Core(*self._core_args)
        self.cost = CostModel(
            # each device's own bus (a list lets devices differ, e.g. some behind a network)
            bus_bandwidth=[
                float(getattr(d, "bus_bandwidth", parse_rate(bus_bandwidth))) for d in self.devices
            ],
            bus_latency=[float(getattr(d, "bus_latency", parse_time(bus_latency))) for d in self.devices],
            file_read=parse_rate(file_read),
            file_write=parse_rate(file_write),
            compute_speed=[getattr(d, "compute_speed", 1.0) for d in self.devices],
        )
        self.sim = Simulation(self.core, self.cost) if mode == "sim" else None
        self.host: dict[int, dict] = {}
        self._loaders: dict[int, callable] = {}
        self._source_nbytes: dict[int, int] = {}
        self._source_kind: dict[int, str] = {}
        self._ids = itertools.count(1)
        self._cached: dict[int, list[tuple[int, ...]]] = {}
        self._edge_pids: dict[
            tuple[int, int], list[tuple[int, int]]
        ] = {}  # GRDD id -> its partitions, once computed
        self.spans: list = []
        self.compute_s = [0.0] * len(self.devices)
        self.elapsed_s = 0.0
        self._clock_origin = time.perf_counter()

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
            "ram",
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
            "file",
        )

    def sparse(self, data, indices, indptr, shape, partition_size=None) -> GRDD:
        """A sparse matrix in CSR form, partitioned into blocks of rows."""
        data, indices, indptr = np.asarray(data), np.asarray(indices), np.asarray(indptr)
        n, m = shape
        if len(indptr) != n + 1 or len(data) != len(indices) or int(indptr[-1]) != len(data):
            raise TcaError("sparse(): inconsistent CSR arrays (indptr needs rows+1 entries ending at nnz)")
        avg_row = max(1, (data.nbytes + indices.nbytes) // max(1, n) + indptr.itemsize)
        bounds = F.split_rows(n, avg_row, parse_bytes(partition_size or self.partition_size))
        pids = []
        for r0, r1 in bounds:
            block = F.csr_rows(data, indices, indptr, r0, r1)
            pids.append(self._add_source(F.block_nbytes(block), "ram", lambda b=block: b))
        return GRDD(self, "source", fmts=("sparse",), dtype=data.dtype, bounds=bounds, ncols=m, pids=pids)

    def kv(self, keys, values, partition_size=None) -> GRDD:
        """A key-value GRDD from equally long key and value arrays."""
        keys, values = np.asarray(keys), np.asarray(values)
        if keys.ndim != 1 or keys.shape != values.shape[:1]:
            raise TcaError("kv(): keys must be 1-D and as long as values")
        rec = keys.itemsize + values.itemsize
        bounds = F.split_rows(len(keys), rec, parse_bytes(partition_size or self.partition_size))
        pids = [
            self._add_source(
                (r1 - r0) * rec, "ram", lambda r0=r0, r1=r1: {"k": keys[r0:r1], "v": values[r0:r1]}
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
            bounds = F.split_rows(int(shape[0]), rec, parse_bytes(partition_size or self.partition_size))
            pids = [self._add_source((r1 - r0) * rec, "file", None) for r0, r1 in bounds]
            return GRDD(self, "source", fmts=("kv",), dtype=dt, bounds=bounds, pids=pids, extra=(kd, dt))
        if format not in ("dense", "image"):
            raise TcaError("virtual() supports dense, image and kv")
        return self._rows_source(format, dt, tuple(shape), None, partition_size, "file", partition_rows)

    def _rows_source(self, fmt, dtype, shape, loader, partition_size, kind, partition_rows=None) -> GRDD:
        dtype = np.dtype(dtype)
        row_elems = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        if partition_rows is not None:
            if partition_rows < 1:
                raise TcaError("partition_rows must be at least 1")
            bounds = F.split_rows(int(shape[0]), 1, int(partition_rows))
        else:
            bounds = F.split_rows(
                int(shape[0]), row_elems * dtype.itemsize, parse_bytes(partition_size or self.partition_size)
            )
        pids = [
            self._add_source(
                (r1 - r0) * row_elems * dtype.itemsize,
                kind,
                None if loader is None else (lambda r0=r0, r1=r1: loader(r0, r1)),
            )
            for r0, r1 in bounds
        ]
        return GRDD(self, "source", fmts=(fmt,), dtype=dtype, bounds=bounds, ncols=row_elems, pids=pids)

    def _source_edges(self, node, rows: int) -> list[tuple[int, int]]:
        """Top and bottom ``rows`` of each partition of a source GRDD, as small source partitions
        (created once per GRDD, then reused by every action)."""
        key = (node.id, rows)
        if key not in self._edge_pids:
            row_bytes = node.ncols * node.dtype.itemsize
            pairs = []
            for pid in node.pids:
                load, kind = self._loaders.get(pid), self._source_kind[pid]
                pair = []
                for sl in (slice(0, rows), slice(-rows, None)):
                    loader = (
                        None if load is None else (lambda load=load, sl=sl: {"a": np.array(load()["a"][sl])})
                    )
                    pair.append(self._add_source(rows * row_bytes, kind, loader))
                pairs.append(tuple(pair))
            self._edge_pids[key] = pairs
        return self._edge_pids[key]

    def _add_source(self, nbytes: int, kind: str, loader) -> int:
        pid = self._new_id()
        self._source_nbytes[pid] = int(nbytes)
        self._source_kind[pid] = kind
        if loader is not None:
            self._loaders[pid] = loader
        return pid

    def _new_id(self) -> int:
        return next(self._ids)

    def _host_block(self, pid: int) -> dict:
        block = self.host.get(pid)
        if block is None:
            block = self._loaders[pid]()
        return block

    # ------------------------------------------------------------------ running
    def kernel_cost_s(self, in_bytes: int, factor: float, flops: float) -> float:
        """Simulated compute time [s]: a pass over the inputs at ``kernel_bandwidth``, times the
        MM cost factor, plus ``flops`` at the context's flop rate."""
        return in_bytes / self.kernel_bandwidth * factor + flops / self.flops

    def _run(self, node: GRDD, action: str):
        plan = Plan(self, self.mode == "sim")
        batch = plan.start(node, action)
        start = time.perf_counter()
        if self.sim is not None:
            t0 = self.sim.now
            self.sim.file_results |= plan.file_results
            self.sim.run_batch(batch, plan.on_done)
            self.elapsed_s += (self.sim.now - t0) / PS
            self.spans = self.sim.spans
            return None
        from tca.victream.executors import ThreadedRuntime

        try:
            with progress_bar(f"victream {action}", self.progress) as update:
                ThreadedRuntime(self).run(plan, batch, update)
        except BaseException:
            self._reset()  # the failed run's subtasks and device contents are discarded
            raise
        self.elapsed_s += time.perf_counter() - start
        out = [self._host_block(pid) for pid in plan.result_pids]
        # host copies of intermediate partitions are no longer needed
        for pid in list(self.host):
            ps = self.core.parts.get(pid)
            if pid not in self._source_nbytes and not (ps is not None and ps.persistent):
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
        self._cached.clear()
        for pid in [p for p in self.host if p not in self._source_nbytes]:
            del self.host[pid]

    def close(self) -> None:
        for d in self.devices:
            for pid in list(getattr(d, "_data", {})):
                d.free(pid)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _cuda_count() -> int:
    import cupy

    return cupy.cuda.runtime.getDeviceCount()
