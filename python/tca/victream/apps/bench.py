"""``tca victream bench``: the schedulers compared on one workload (seed 002 §6.1.2, Fig. 6.2-6.7).

For each scheduler a fresh context runs the workload on the same inputs; the rows report the
time, the swap bytes (swap-in + swap-out, the "data I/O for swapping" of Fig. 6.6-6.7) and,
per device, swap-in, swap-out and utilisation. Row conventions (DESIGN.md): a scheduler's totals
have ``series`` equal to its name (``unit`` ``s`` for time, ``B`` for swap bytes); per-device
rows have ``series`` "<scheduler> gpu<i>".
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from tca import TcaError
from tca.common.report import Row
from tca.units import parse_bytes
from tca.victream.api.context import Context
from tca.victream.api.formats import MIN_PARTITION_BYTES, check_partition_size
from tca.victream.api.summary import Summary
from tca.victream.apps import workloads as W
from tca.victream.core.scheduler import POLICIES

# What the seed reports for the comparison of schedulers (4 x K20, §6.1.2 and §6.1.1).
SEED_CLAIMS = {
    "logreg": "seed 002 §6.1.2, Fig. 6.2(a): logistic regression 92-117 % faster with Victream than PTask; "
    "the local lists add 9-38 % over plain locality-aware scheduling",
    "sort": "seed 002 §6.1.2, Fig. 6.2(b)/6.6(b): Victream faster than FIFO and PTask, less swap I/O",
    "blur": "seed 002 §6.1.2, Fig. 6.3(a)/6.7(c): Victream faster than FIFO and PTask, less swap I/O",
    "matmul": "seed 002 §6.1.2, Fig. 6.3(b)/6.7(d): compute-bound, schedulers within a few percent; "
    "Victream still swaps less",
    "pansharpen": "seed 002 §6.1.1, Fig. 6.1: on 1 GPU Victream 32 % faster than PTask, 31 % than FIFO",
}


@dataclass
class BenchConfig:
    workload: str = "logreg"
    devices: int = 3
    device_memory: str = "64MiB"
    bus_bandwidth: str = "2GB/s"
    bus_latency: str = "10us"
    data: str = "512MiB"
    partition: str = "auto"
    schedulers: tuple[str, ...] = POLICIES
    mode: str = "virtual"
    iterations: int | None = None
    compute_speed: float = 1.0
    seed: int = 1
    check: bool = False

    def partition_bytes(self) -> int:
        if self.partition != "auto":
            return check_partition_size(parse_bytes(self.partition, "--partition"), "--partition")
        # the seed's ~256 MB, but at least 16 partitions per device
        size = min(256 * 2**20, parse_bytes(self.device_memory, "--device-memory") // 16)
        if size < MIN_PARTITION_BYTES:
            raise TcaError(
                f"--device-memory {self.device_memory} gives automatic partitions of {size} B "
                f"(device memory / 16), below the minimum of {MIN_PARTITION_BYTES} B: "
                "give more device memory or --partition"
            )
        return size


def run(cfg: BenchConfig, progress: bool = False) -> list[Summary]:
    """Runs the workload once per scheduler; returns the summaries in scheduler order."""
    for s in cfg.schedulers:
        if s not in POLICIES:
            raise TcaError(f"unknown scheduler '{s}' (expected some of: {', '.join(POLICIES)})")
    if cfg.workload not in W.WORKLOADS:
        raise TcaError(f"unknown workload '{cfg.workload}' (expected one of: {', '.join(W.WORKLOADS)})")
    kw = {}
    if cfg.iterations is not None:
        if cfg.workload in ("sort", "pansharpen"):
            raise TcaError(f"--iterations does not apply to {cfg.workload}")
        kw["iterations"] = cfg.iterations
    partition = cfg.partition_bytes()
    data = parse_bytes(cfg.data, "--data")
    inputs = W.make_inputs(cfg.workload, data, cfg.seed, real=cfg.mode != "sim", **kw)
    ref = W.reference(inputs) if cfg.check and cfg.mode != "sim" else None
    parallel = cfg.mode == "sim" and len(cfg.schedulers) > 1 and (os.cpu_count() or 1) > 1
    if parallel:
        # Simulated runs are independent and deterministic: one process per core.
        workers = min(len(cfg.schedulers), os.cpu_count() or 1)
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_run_one, cfg, s, partition, inputs, None, False) for s in cfg.schedulers]
            return [f.result() for f in futures]
    return [_run_one(cfg, s, partition, inputs, ref, progress) for s in cfg.schedulers]


def _run_one(cfg: BenchConfig, scheduler: str, partition: int, inputs, ref, progress: bool) -> Summary:
    """One scheduler's run of the workload, checked against ``ref`` when given."""
    ctx = Context(
        cfg.devices,
        mode=cfg.mode,
        device_memory=cfg.device_memory,
        bus_bandwidth=cfg.bus_bandwidth,
        bus_latency=cfg.bus_latency,
        compute_speed=cfg.compute_speed,
        scheduler=scheduler,
        partition_size=partition,
        progress=progress,
    )
    try:
        result = W.run(ctx, inputs)
        if ref is not None:
            try:
                W.check(inputs, result, ref, rtol=2e-3, atol=2e-3)
            except AssertionError as e:
                raise TcaError(
                    f"{scheduler}: result differs from the NumPy reference: {str(e).splitlines()[0]}"
                ) from None
        return ctx.summary()
    finally:
        ctx.close()


def rows(cfg: BenchConfig, summaries: list[Summary]) -> list[Row]:
    kind = "predicted" if cfg.mode == "sim" else "measured"
    platform = f"{cfg.mode} {cfg.devices}x{cfg.device_memory} bus {cfg.bus_bandwidth}"
    bench = f"victream-{cfg.workload}"
    x = float(cfg.devices)
    out = []
    for s in summaries:
        out.append(Row(f"{bench} time", platform, s.scheduler, x, "devices", s.elapsed_s, "s", kind=kind))
        out.append(
            Row(
                f"{bench} swap",
                platform,
                s.scheduler,
                x,
                "devices",
                float(s.swap_in + s.swap_out),
                "B",
                kind=kind,
            )
        )
        for d in s.devices:
            series = f"{s.scheduler} {d.name}"
            out.append(
                Row(f"{bench} swap-in", platform, series, x, "devices", float(d.swap_in), "B", kind=kind)
            )
            out.append(
                Row(f"{bench} swap-out", platform, series, x, "devices", float(d.swap_out), "B", kind=kind)
            )
            out.append(
                Row(
                    f"{bench} utilisation",
                    platform,
                    series,
                    x,
                    "devices",
                    100.0 * d.utilisation,
                    "%",
                    kind=kind,
                )
            )
    return out


def table(cfg: BenchConfig, summaries: list[Summary]) -> str:
    """The human-readable comparison (OSU style: a commented header, one line per scheduler)."""
    lines = [
        f"# tca victream bench {cfg.workload}: {cfg.devices} devices x {cfg.device_memory}, bus "
        f"{cfg.bus_bandwidth}, data {cfg.data}, partitions {cfg.partition_bytes() / 2**20:g} MiB, "
        f"mode {cfg.mode}",
        f"# {'Scheduler':<11}{'Time (s)':>10}{'Swap-in (MiB)':>15}{'Swap-out (MiB)':>16}{'Swap (MiB)':>12}"
        f"{'Util (%)':>10}",
    ]
    for s in summaries:
        util = 100.0 * sum(d.utilisation for d in s.devices) / len(s.devices)
        lines.append(
            f"  {s.scheduler:<11}{s.elapsed_s:>10.3f}{s.swap_in / 2**20:>15.1f}{s.swap_out / 2**20:>16.1f}"
            f"{(s.swap_in + s.swap_out) / 2**20:>12.1f}{util:>10.1f}"
        )
    lines.append("#")
    lines.append(
        f"# {'Device':<17}{'Swap-in (MiB)':>15}{'Swap-out (MiB)':>16}{'Subtasks':>10}{'Util (%)':>10}"
        f"{'Peak mem (MiB)':>16}"
    )
    for s in summaries:
        for d in s.devices:
            lines.append(
                f"  {s.scheduler + ' ' + d.name:<17}{d.swap_in / 2**20:>15.1f}{d.swap_out / 2**20:>16.1f}"
                f"{d.subtasks:>10}{100 * d.utilisation:>10.1f}{d.peak / 2**20:>16.1f}"
            )
    by = {s.scheduler: s for s in summaries}
    if "victream" in by:
        v = by["victream"]
        lines.append("#")
        for other in ("fifo", "ptask", "locality"):
            if other in by:
                o = by[other]
                sw_o, sw_v = o.swap_in + o.swap_out, v.swap_in + v.swap_out
                red = 100.0 * (1 - sw_v / sw_o) if sw_o else 0.0
                lines.append(
                    f"# victream vs {other:<8}: {o.elapsed_s / v.elapsed_s:.2f}x speed, "
                    f"{red:.0f} % less swap I/O"
                )
    lines.append(f"# {SEED_CLAIMS[cfg.workload]}")
    return "\n".join(lines)
