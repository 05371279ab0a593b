"""Ping-pong between two Python ranks on this host: the TCA Python API on the shm fabric (DMA in
register mode, notification, wait) against mpi4py's Send/Recv, for the Python rows of
``tca bench pingpong --fabric shm`` (:mod:`tca.peach.shm_bench`).

    tca run -n 2 --bind-to core py_pingpong.py tca MAX SCALE
    mpirun.openmpi --bind-to core -n 2 python py_pingpong.py mpi4py MAX SCALE

Rank 0 prints an OSU-style table (size in bytes, one-way latency in us: the round trips' time
halved) for 8 B, 64 B and 4 KiB up to MAX, with 5,000 x SCALE round trips per size after 10 %
as warm-up. Both sides send from and receive into buffers allocated once per size.
"""

from __future__ import annotations

import sys
import time

SIZES = (8, 64, 4096)


def sizes_up_to(max_bytes: int) -> list[int]:
    return [s for s in SIZES if s <= max_bytes] or [SIZES[0]]


def tca_rank(max_bytes: int, scale: float) -> None:
    import tca.peach.program
    from tca.peach.api import DMA_NOTIFY, Desc

    def program(ctx) -> None:
        me, peer = ctx.rank, 1 - ctx.rank
        for size in sizes_up_to(max_bytes):
            send, recv = ctx.malloc(size), ctx.malloc(size)
            handles = ctx.exchange(recv)
            desc = Desc()
            desc.set_memcpy(handles[peer], 0, send, 0, size, DMA_NOTIFY, 0, me)
            ctx.desc_set(desc, 0)
            start_dma, wait = ctx.start_dma, ctx.wait_dma_recv
            n = max(10, int(5000 * scale))
            for timed in (False, True):
                ctx.barrier()
                t = time.perf_counter()
                for _ in range(n if timed else n // 10):
                    if me == 0:
                        start_dma(0)
                        wait(handles[peer], 0, peer)
                    else:
                        wait(handles[peer], 0, peer)
                        start_dma(0)
            if me == 0:
                print(f"{size:>10} {(time.perf_counter() - t) / n / 2 * 1e6:12.3f}", flush=True)
            ctx.barrier()
            ctx.free(send)
            ctx.free(recv)

    tca.peach.program.main(program)


def mpi4py_rank(max_bytes: int, scale: float) -> None:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    me = comm.Get_rank()
    peer = 1 - me
    for size in sizes_up_to(max_bytes):
        send, recv = bytearray(size), bytearray(size)
        n = max(10, int(5000 * scale))
        for timed in (False, True):
            comm.Barrier()
            t = time.perf_counter()
            for _ in range(n if timed else n // 10):
                if me == 0:
                    comm.Send(send, dest=peer, tag=0)
                    comm.Recv(recv, source=peer, tag=0)
                else:
                    comm.Recv(recv, source=peer, tag=0)
                    comm.Send(send, dest=peer, tag=0)
        if me == 0:
            print(f"{size:>10} {(time.perf_counter() - t) / n / 2 * 1e6:12.3f}", flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("tca", "mpi4py"):
        print("usage: py_pingpong.py tca|mpi4py MAX_BYTES SCALE", file=sys.stderr)
        return 2
    max_bytes, scale = int(argv[1]), float(argv[2])
    (tca_rank if argv[0] == "tca" else mpi4py_rank)(max_bytes, scale)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
