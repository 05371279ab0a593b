"""``tca bench local-copy``: copies between host and GPU memory inside one node with the TCA API,
beside ``cudaMemcpy`` (seed 003 §3.1, Fig. 2-3: pinned host memory, mean of 100 transfers).

The TCA side is a one-rank program: a one-entry chain (register mode) from host to GPU memory
or back, kicked and waited for with ``tcaWaitDMAC``. Every byte goes through PEACH's N port
twice (read, then write), which is why ``cudaMemcpy`` over the GPU's own x16 link wins for large
copies (seed 003 §3.1). ``cudaMemcpy`` is the CUDA baseline model (docs/baselines.md).
"""

from __future__ import annotations

from collections.abc import Callable

from tca import TcaError, _native
from tca.common.report import Row, attach_references, latency_and_bandwidth
from tca.peach import sim
from tca.peach.api import Desc

BENCHMARK = "local-copy"
DEFAULT_SIZES = [2**k for k in range(2, 23)]  # 4 B .. 4 MiB
TRANSFERS = 100
DIRECTIONS = {"HostToDevice": ("cpu", "gpu"), "DeviceToHost": ("gpu", "cpu")}


def program(src_mem: str, dst_mem: str, size: int) -> Callable[[sim.Rank], float]:
    transfers = TRANSFERS if size <= 64 * 1024 else 10

    def body(ctx: sim.Rank) -> float:
        src, dst = ctx.malloc(size, src_mem), ctx.malloc(size, dst_mem)
        payload = bytes((i * 13) % 256 for i in range(size))
        ctx.write(src, 0, payload)
        desc = Desc()
        desc.set_memcpy(dst, 0, src, 0, size)
        desc.set_mode("register")
        ctx.desc_set(desc, 0)
        start = ctx.wtime()
        for _ in range(transfers):
            ctx.start_dma(0)
            ctx.wait_dmac(0)
        mean = (ctx.wtime() - start) / transfers
        ctx.compute(1e-3)  # let the last writes land before checking them
        if ctx.read(dst, 0, size) != payload:
            raise TcaError("the copied data differs from the source")
        return mean * 1e6

    return body


def run(
    platform: _native.Platform,
    sizes: list[int] | None = None,
    baseline: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    sizes = sizes or DEFAULT_SIZES
    for n in sizes:
        if n <= 0 or n % 4:
            raise TcaError(f"copy size {n} B is not a positive multiple of 4")
    if platform.gpus < 1:
        raise TcaError(f"platform {platform.name} has no GPU")
    rows: list[Row] = []
    done = 0
    for direction, (src, dst) in DIRECTIONS.items():
        for size in sizes:
            us = sim.run(platform, 1, program(src, dst, size))[0]
            rows += latency_and_bandwidth(BENCHMARK, platform.name, f"TCA {direction}", size, us)
            done += 1
            if progress:
                progress(done, 2 * len(sizes))
    if baseline:
        from tca.peach import baselines

        params = baselines.load_params(platform.path)
        model = baselines.BASELINES["cuda-peer-uva"]
        for direction, (src, dst) in DIRECTIONS.items():
            for size in sizes:
                us = model.pingpong_latency_us(params, f"{src}-{dst}", size)
                rows += latency_and_bandwidth(BENCHMARK, platform.name, f"cudaMemcpy {direction}", size, us)
    attach_references(rows, platform.references(), BENCHMARK)
    return rows
