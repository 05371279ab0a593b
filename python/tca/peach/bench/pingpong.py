"""``tca bench pingpong``: ping-pong between two nodes with the TCA API on a simulated platform
(seed 000 §4.2-4.3, Fig. 7-10; seed 001; seed 003), beside models of CUDA and MVAPICH2.

The method is the seeds': one rank sends, the other answers, round trips are timed and halved.
The TCA side runs a real rank program on ``tca.peach.sim`` (data moves and is checked); the baselines
are models (``tca.peach.baselines``, docs/baselines.md). Modes:

- ``pio``: the sender's CPU stores the message into the peer's buffer; the receiver polls the
  last word of its buffer (seed 000 §4.2.1);
- ``dma``: a one-descriptor chain in chaining mode with a notification to the receiver;
- ``dma-register``: the same in register mode, as the seed's ping-pong (seed 000 §4.2.2).
"""

from __future__ import annotations

from collections.abc import Callable

from tca import TcaError, _native
from tca.common.report import Row, attach_references, latency_and_bandwidth
from tca.peach import sim
from tca.peach.api import DMA_NOTIFY, Desc

BENCHMARK = "pingpong"
PAIRS = ("cpu-cpu", "cpu-gpu", "gpu-cpu", "gpu-gpu")
MODES = ("pio", "dma", "dma-register")
DEFAULT_SIZES = [2**k for k in range(3, 23)]  # 8 B .. 4 MiB
BASELINE_LABELS = {
    "cuda-peer": "CUDA peer (noUVA)",
    "cuda-peer-uva": "CUDA peer (UVA)",
    "mvapich2": "MVAPICH2",
    "mvapich2-gdr": "MVAPICH2-GDR",
}


def round_trips(size: int) -> int:
    """100 round trips as the seeds (seed 000 §4.2); 10 above 64 KiB, where the steady state of
    the deterministic model is reached long before."""
    return 100 if size <= 64 * 1024 else 10


def program(mode: str, pair: str, size: int) -> Callable[[sim.Rank], float]:
    """The rank program: returns the one-way latency [us] seen by rank 0."""
    src_mem, dst_mem = pair.split("-")
    trips = round_trips(size)

    def body(ctx: sim.Rank) -> float:
        me, peer = ctx.rank, 1 - ctx.rank
        send = ctx.malloc(size, src_mem)
        recv = ctx.malloc(size, dst_mem)
        peers = ctx.exchange(recv)
        if mode != "pio":
            desc = Desc()
            desc.set_memcpy(peers[peer], 0, send, 0, size, DMA_NOTIFY, 0, me)
            desc.set_mode("register" if mode == "dma-register" else "chaining")
            ctx.desc_set(desc, 0)
        ctx.barrier()
        start = ctx.wtime()
        for i in range(1, trips + 1):
            message = _message(size, i, me)
            if me == 0:
                _send(ctx, mode, peers[peer], send, message)
                _receive(ctx, mode, recv, peers[peer], _message(size, i, peer), peer)
            else:
                _receive(ctx, mode, recv, peers[peer], _message(size, i, peer), peer)
                _send(ctx, mode, peers[peer], send, message)
        elapsed = ctx.wtime() - start
        if ctx.read(recv, 0, size) != _message(size, trips, peer):
            raise TcaError(f"rank {me}: the last message arrived corrupted")
        return elapsed / trips / 2 * 1e6

    return body


def _message(size: int, trip: int, sender: int) -> bytes:
    """Bytes of one message; the last word carries the round trip, so each arrival is new."""
    body = bytes([(sender * 37 + trip) % 251]) * (size - min(size, 4))
    return body + trip.to_bytes(4, "little")[: min(size, 4)]


def _send(ctx: sim.Rank, mode: str, peer_recv, send, message: bytes) -> None:
    if mode == "pio":
        ctx.send_pio(peer_recv, 0, message)
    else:
        ctx.write(send, 0, message)  # the application fills its send buffer
        ctx.start_dma(0)


def _receive(ctx: sim.Rank, mode: str, recv, peer_recv, expected: bytes, peer: int) -> None:
    if mode == "pio":
        # PIO TLPs arrive in order: the last word arriving means the whole message did.
        ctx.wait_pio(recv, len(expected) - min(len(expected), 4), expected[-4:])
    else:
        ctx.wait_dma_recv(peer_recv, 0, peer)


def run(
    platform: _native.Platform,
    pair: str,
    mode: str,
    sizes: list[int] | None = None,
    baselines: list[str] = (),
    progress: Callable[[int, int], None] | None = None,
    trace: str | None = None,
) -> list[Row]:
    """Rows of latency [us] and bandwidth [GB/s] for the TCA ping-pong and the baselines."""
    if pair not in PAIRS:
        raise TcaError(f"unknown pair '{pair}' (expected one of: {', '.join(PAIRS)})")
    if mode not in MODES:
        raise TcaError(f"unknown mode '{mode}' (expected one of: {', '.join(MODES)})")
    if mode == "pio" and not pair.startswith("cpu"):
        raise TcaError("PIO sends with CPU stores from CPU memory: use --pair cpu-cpu or cpu-gpu")
    if platform.nodes < 2:
        raise TcaError(f"platform {platform.name} has one node; ping-pong needs two")
    sizes = sizes or DEFAULT_SIZES
    for n in sizes:
        if n <= 0 or n % 4:
            raise TcaError(f"message size {n} B is not a positive multiple of 4")
    series = f"TCA {mode} {pair}"
    rows: list[Row] = []
    for i, size in enumerate(sizes):
        latency = sim.run(platform, 2, program(mode, pair, size), trace=trace)[0]
        rows += latency_and_bandwidth(BENCHMARK, platform.name, series, size, latency)
        if progress:
            progress(i + 1, len(sizes))
    if baselines:
        from tca.peach import baselines as models

        params = models.load_params(platform.path)
        for name in baselines:
            model = models.BASELINES[name]
            if pair not in model.pairs:
                continue
            label = f"{BASELINE_LABELS[name]} {pair}"
            for size in sizes:
                rows += latency_and_bandwidth(
                    BENCHMARK, platform.name, label, size, model.pingpong_latency_us(params, pair, size)
                )
    attach_references(rows, platform.references(), BENCHMARK)
    return rows
