/*
 * The MPI-3 RMA counterpart of pingpong.c, for comparison on the same machine: windows from
 * MPI_Win_allocate, passive target (MPI_Win_lock_all), each message an MPI_Put of the payload
 * + MPI_Win_flush, then an MPI_Put of a flag word + MPI_Win_flush; the receiver polls the flag
 * in its own window (MPI_Win_sync, with an MPI_Iprobe every 64 polls for progress). One-way latency = half the round trip, mean over the
 * iterations after a warm-up, with the osu_put_latency iteration counts.
 *
 * usage: mpi_rma_pingpong [MAX_BYTES] [ITER_SCALE]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLAG_BYTES 64

static int iters_for(size_t size, double scale)
{
    int n = (int)((size <= 8192 ? 10000 : 1000) * scale);
    return n < 2 ? 2 : n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2) {
        fprintf(stderr, "mpi_rma_pingpong: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int peer = me == 0 ? 1 : 0;
    uint8_t *win_base, *sbuf = malloc(max);
    MPI_Win win;
    /* The payload area is at least 64 B: MPICH was seen to stall for good with a 72-byte
     * window (max = 8) and not with 80 bytes or more. */
    size_t area = max < 64 ? 64 : max;
    MPI_Win_allocate((MPI_Aint)(FLAG_BYTES + area), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_base, &win);
    memset(win_base, 0, FLAG_BYTES + area);
    for (size_t i = 0; i < max; i++) sbuf[i] = (uint8_t)(i * 7 + me);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    const char *lib = "MPI";
#ifdef OPEN_MPI
    lib = "Open MPI";
#elif defined(MPICH_VERSION)
    lib = "MPICH";
#endif
    if (me == 0) {
        printf("# MPI-3 RMA ping-pong (%s): MPI_Put + MPI_Win_flush + flag, passive target\n", lib);
        printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    volatile uint32_t *flag = (volatile uint32_t *)win_base;
    uint32_t seq = 0;
    int probe;
    for (size_t size = 8; size <= max; size *= 2) {
        /* Warm-up: a tenth of the iterations; ten times them before the first size. */
        int iters = iters_for(size, scale), warm = size == 8 ? 10 * iters : iters / 10 + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = 0;
        for (int i = 0; i < warm + iters && me < 2; i++) {
            if (i == warm) t0 = MPI_Wtime();
            seq++;
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == (me == 0)) {
                    MPI_Put(sbuf, (int)size, MPI_BYTE, peer, FLAG_BYTES, (int)size, MPI_BYTE, win);
                    MPI_Win_flush(peer, win);
                    MPI_Put(&seq, 4, MPI_BYTE, peer, 0, 4, MPI_BYTE, win);
                    MPI_Win_flush(peer, win);
                } else {
                    /* MPI_Win_sync orders the window's memory; MPI_Iprobe lets
                     * implementations whose RMA needs target progress (MPICH) make it. */
                    for (unsigned k = 1; *flag != seq; k++) {
                        MPI_Win_sync(win);
                        if (k % 64 == 0) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &probe, MPI_STATUS_IGNORE);
                    }
                }
            }
        }
        double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
        if (me < 2) {
            MPI_Win_sync(win);
            for (size_t i = 0; i < size; i++)
                if (win_base[FLAG_BYTES + i] != (uint8_t)(i * 7 + peer)) {
                    fprintf(stderr, "rank %d: payload of %zu B corrupted\n", me, size);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
        }
        if (me == 0) {
            printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
            fflush(stdout);
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(sbuf);
    MPI_Finalize();
    return 0;
}
