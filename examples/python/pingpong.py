"""Ping-pong between two ranks with TCA DMA, as in seed 000 §4.2.2.

Rank 0 sends a buffer to rank 1 with a DMA that notifies the receiver; rank 1 answers the same
way. The time of 100 round trips, halved, is the one-way latency. The same file runs on a
simulated platform or for real on this host (see tca.program):

    python examples/python/pingpong.py [SIZE]                        # simulated 2013 testbed
    TCA_PLATFORM=ha-pacs-tca python examples/python/pingpong.py 4096  # simulated HA-PACS/TCA
    tca run -n 2 examples/python/pingpong.py 4096                      # this host, shm fabric
"""

import sys

import tca.program
from tca.api import DMA_NOTIFY, Desc

ROUND_TRIPS = 100
SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 8


def pingpong(ctx):
    me, peer = ctx.rank, 1 - ctx.rank
    send, recv = ctx.malloc(SIZE, "gpu"), ctx.malloc(SIZE, "gpu")
    handles = ctx.exchange(recv)
    ctx.write(send, 0, bytes([me + 1]) * SIZE)

    # One descriptor, registered once: my send buffer -> the peer's receive buffer, then
    # notify the peer with (slot 0, tag = my rank).
    desc = Desc()
    desc.set_memcpy(handles[peer], 0, send, 0, SIZE, DMA_NOTIFY, 0, me)
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
    assert ctx.read(recv, 0, SIZE) == bytes([peer + 1]) * SIZE, "the peer's data arrived"
    ctx.barrier()
    if me == 0:
        print(f"GPU-GPU DMA ping-pong, {SIZE} B: {one_way_us:.2f} us one way")
    return one_way_us


if __name__ == "__main__":
    tca.program.main(pingpong)
