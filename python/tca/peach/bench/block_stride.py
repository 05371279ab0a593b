"""``tca bench block-stride``: the halo exchange of a 3-D stencil with block-stride DMA
(seed 000 §3.7; seed 001 "3次元ステンシル計算の例": the j-k plane is sent block-stride).

Two ranks each hold a cube of N x N x N doubles in GPU memory, i fastest. The face at j = 0 is
N blocks (one per k) of N doubles, each block N*N*8 bytes after the previous: one
``tcaDescSetMemcpy2D`` entry (width N*8, count N, pitch N*N*8 on both sides) registered once and
kicked every iteration. Each rank sends its face into the peer's face at j = N-1 and waits for
the peer's notification; the received face is checked against what the peer sent.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tca import TcaError, _native
from tca.common.report import Row
from tca.peach import sim
from tca.peach.api import DMA_NOTIFY, Desc

BENCHMARK = "block-stride"
DEFAULT_N = [2**k for k in range(1, 9)]  # 2 .. 256 (N = 512 needs 1 GiB per cube)
ITERATIONS = 10


def program(n: int) -> Callable[[sim.Rank], float]:
    plane = n * n * 8  # bytes from one k to the next
    width = n * 8  # one block: N doubles along i
    cube_bytes = n * n * n * 8

    def body(ctx: sim.Rank) -> float:
        me, peer = ctx.rank, 1 - ctx.rank
        cube = ctx.malloc(cube_bytes, "gpu")
        peers = ctx.exchange(cube)
        values = np.arange(n * n * n, dtype=np.float64) + 1e6 * (me + 1)
        ctx.write(cube, 0, values)
        # Face j = 0 of mine -> face j = N-1 of the peer's cube.
        desc = Desc()
        desc.set_memcpy_2d(peers[peer], (n - 1) * width, plane, cube, 0, plane, width, n, DMA_NOTIFY, 0, me)
        ctx.desc_set(desc, 0)
        ctx.barrier()
        start = ctx.wtime()
        for _ in range(ITERATIONS):
            ctx.start_dma(0)
            ctx.wait_dma_recv(peers[peer], 0, peer)
            ctx.wait_dmac(0)
        per_exchange = (ctx.wtime() - start) / ITERATIONS
        got = np.frombuffer(ctx.read(cube, 0, cube_bytes), dtype=np.float64).reshape(n, n, n)  # [k][j][i]
        sent = (np.arange(n * n * n, dtype=np.float64) + 1e6 * (peer + 1)).reshape(n, n, n)
        if not np.array_equal(got[:, n - 1, :], sent[:, 0, :]):
            raise TcaError(f"rank {me}: the received face differs from the one sent (N = {n})")
        if not np.array_equal(got[:, : n - 1, :], values.reshape(n, n, n)[:, : n - 1, :]):
            raise TcaError(f"rank {me}: bytes outside the face were overwritten (N = {n})")
        return per_exchange * 1e6

    return body


def run(
    platform: _native.Platform,
    sizes: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    """Rows of time per face exchange [us] and face bandwidth [GB/s] for each N."""
    if platform.nodes < 2:
        raise TcaError(f"platform {platform.name} has one node; the exchange needs two")
    sizes = sizes or DEFAULT_N
    for n in sizes:
        # At N = 1 the faces j = 0 and j = N-1 are the same memory: nothing to exchange.
        if n < 2 or n > 1024:
            raise TcaError(f"cube edge N = {n} is outside 2..1024 (at N = 1 both faces are one plane)")
    rows: list[Row] = []
    for i, n in enumerate(sizes):
        us = sim.run(platform, 2, program(n))[0]
        face = n * n * 8
        rows.append(Row(BENCHMARK, platform.name, "face exchange", n, "N", us, "us"))
        rows.append(Row(BENCHMARK, platform.name, "face exchange BW", n, "N", face / us / 1e3, "GB/s"))
        if progress:
            progress(i + 1, len(sizes))
    return rows
