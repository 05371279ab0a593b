"""Ping-pong between two ranks with TCA DMA, as in seed 000 §4.2.2.

Rank 0 sends a buffer to rank 1 with a DMA that notifies the receiver; rank 1 answers the same
way. The time of 100 round trips, halved, is the one-way latency.

    python examples/python/pingpong.py [PLATFORM] [SIZE]
"""

import sys

import tca.sim
from tca.api import DMA_NOTIFY, Desc

ROUND_TRIPS = 100


def pingpong(ctx, size):
    me, peer = ctx.rank, 1 - ctx.rank
    send, recv = ctx.malloc(size, "gpu"), ctx.malloc(size, "gpu")
    handles = ctx.exchange(recv)
    ctx.write(send, 0, bytes([me + 1]) * size)

    # One descriptor, registered once: my send buffer -> the peer's receive buffer, then
    # notify the peer with (slot 0, tag = my rank).
    desc = Desc()
    desc.set_memcpy(handles[peer], 0, send, 0, size, DMA_NOTIFY, 0, me)
    ctx.desc_set(desc, 0)
    ctx.barrier()

    start = ctx.wtime()
    for _ in range(ROUND_TRIPS):
        if me == 0:
            ctx.start_dma(0)
            ctx.wait_dma_recv(handles[peer], 0, peer)
        else:
            ctx.wait_dma_recv(handles[peer], 0, peer)
            ctx.start_dma(0)
    one_way_us = (ctx.wtime() - start) / ROUND_TRIPS / 2 * 1e6
    received = ctx.read(recv, 0, size)
    assert received == bytes([peer + 1]) * size, "the peer's data arrived"
    return one_way_us


if __name__ == "__main__":
    platform = sys.argv[1] if len(sys.argv) > 1 else "peach2-testbed-2013"
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    latency = tca.sim.run(platform, 2, lambda ctx: pingpong(ctx, size))[0]
    print(f"{platform}: GPU-GPU DMA ping-pong, {size} B: {latency:.2f} us one way")
