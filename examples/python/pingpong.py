"""Ping-pong between two ranks with TCA DMA, as in seed 000 §4.2.2.

Rank 0 sends a buffer to rank 1 with a DMA that notifies the receiver; rank 1 answers the same
way. The time of 100 round trips, halved, is the one-way latency. The same file runs on a
simulated platform or for real on this host (see tca.peach.program):

    python examples/python/pingpong.py [SIZE] [--json]               # simulated 2013 testbed
    TCA_PLATFORM=ha-pacs-tca python examples/python/pingpong.py 4096  # simulated HA-PACS/TCA
    tca run -n 2 examples/python/pingpong.py 4K                        # this host, shm fabric

With ``--json`` rank 0 prints the result as benchmark rows (latency and bandwidth).
"""

import sys

import tca.peach.program
from tca.common.report import latency_and_bandwidth, to_json
from tca.peach.api import DMA_NOTIFY, Desc

ROUND_TRIPS = 100


def pingpong(ctx, size=8):
    """One-way latency [us] of a GPU-GPU DMA ping-pong of `size` bytes."""
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
    assert ctx.read(recv, 0, size) == bytes([peer + 1]) * size, "the peer's data arrived"
    ctx.barrier()
    return one_way_us


def main():
    args = sys.argv[1:]
    as_json = "--json" in args
    sizes = [a for a in args if a != "--json"]
    if len(sizes) > 1:
        tca.peach.program.fail("usage: pingpong.py [SIZE] [--json]")
    size = tca.peach.program.size_argument(sizes[0] if sizes else None, default=8)

    def program(ctx):
        if ctx.size != 2:
            tca.peach.program.fail(f"a ping-pong needs 2 ranks, not {ctx.size}")
        one_way_us = pingpong(ctx, size)
        if ctx.rank == 0 and as_json:
            kind = "measured" if tca.peach.program.fabric() == "shm" else "predicted"
            label = tca.peach.program.platform_label()
            rows = latency_and_bandwidth("pingpong", label, "GPU-GPU DMA", size, one_way_us, kind)
            print(to_json(rows), flush=True)
        elif ctx.rank == 0:
            print(f"GPU-GPU DMA ping-pong, {size} B: {one_way_us:.2f} us one way", flush=True)
        return one_way_us

    tca.peach.program.main(program)


if __name__ == "__main__":
    main()
