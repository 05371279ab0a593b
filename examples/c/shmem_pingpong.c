/*
 * The OpenSHMEM counterpart of pingpong.c, for comparison on the same machine: symmetric
 * buffers from shmem_malloc, each message a shmem_putmem of the payload + shmem_quiet, then a
 * put of a flag word (shmem_uint32_p) + shmem_quiet; the receiver waits on the flag in its own
 * symmetric memory with shmem_uint32_wait_until. One-way latency = half the round trip, mean
 * over the iterations after a warm-up, with the osu_put_latency iteration counts.
 *
 * usage: shmem_pingpong [MAX_BYTES] [ITER_SCALE]   (oshrun -n 2)
 */
#define _GNU_SOURCE
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor.h"

#define FLAG_BYTES 64

static int iters_for(size_t size, double scale)
{
    int n = (int)((size <= 8192 ? 10000 : 1000) * scale);
    return n < 2 ? 2 : n;
}

int main(int argc, char **argv)
{
    shmem_init();
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (n < 2) {
        fprintf(stderr, "shmem_pingpong: needs 2 PEs\n");
        shmem_global_exit(2);
    }
    int peer = me == 0 ? 1 : 0;
    /* Symmetric: the flag word in its own cache line, then the payload. */
    uint8_t *rbuf = shmem_malloc(FLAG_BYTES + max);
    uint8_t *sbuf = malloc(max);
    if (rbuf == NULL || sbuf == NULL) {
        fprintf(stderr, "shmem_pingpong: out of memory\n");
        shmem_global_exit(1);
    }
    memset(rbuf, 0, FLAG_BYTES + max);
    for (size_t i = 0; i < max; i++) sbuf[i] = (uint8_t)(i * 7 + me);
    uint32_t *flag = (uint32_t *)rbuf;
    shmem_barrier_all();
    if (me == 0) {
        printf("# OpenSHMEM ping-pong: shmem_putmem + shmem_quiet + flag put + shmem_quiet, wait_until\n");
        printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    uint32_t seq = 0;
    for (size_t size = 8; size <= max; size *= 2) {
        /* Warm-up: a tenth of the iterations; ten times them before the first size. */
        int iters = iters_for(size, scale), warm = size == 8 ? 10 * iters : iters / 10 + 1;
        shmem_barrier_all();
        double t0 = 0;
        for (int i = 0; i < warm + iters && me < 2; i++) {
            if (i == warm) t0 = now_us();
            seq++;
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == (me == 0)) {
                    shmem_putmem(rbuf + FLAG_BYTES, sbuf, size, peer);
                    shmem_quiet();
                    shmem_uint32_p(flag, seq, peer);
                    shmem_quiet();
                } else {
                    shmem_uint32_wait_until(flag, SHMEM_CMP_EQ, seq);
                }
            }
        }
        double us = (now_us() - t0) / (2.0 * iters);
        if (me < 2)
            for (size_t i = 0; i < size; i++)
                if (rbuf[FLAG_BYTES + i] != (uint8_t)(i * 7 + peer)) {
                    fprintf(stderr, "PE %d: payload of %zu B corrupted\n", me, size);
                    shmem_global_exit(1);
                }
        if (me == 0) {
            printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
            fflush(stdout);
        }
    }
    shmem_barrier_all();
    shmem_free(rbuf);
    free(sbuf);
    shmem_finalize();
    return 0;
}
