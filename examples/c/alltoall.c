/*
 * All-to-all with DMA: every rank writes a block of BYTES to every other rank, as one chain
 * of N-1 requests set once and kicked every iteration, each request notifying its
 * destination; an iteration ends when this rank's chain is done and the N-1 blocks of the
 * others have arrived. Prints the mean time of an iteration (after a warm-up of a tenth),
 * the figure that shows how waits behave when ranks outnumber cores. Every received block
 * is checked after the last iteration.
 *
 * usage: alltoall [BYTES] [ITERATIONS]
 */
#include "example.h"

int main(int argc, char **argv)
{
    ex_start(&argc, &argv);
    size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 64;
    int iters = argc > 2 ? atoi(argv[2]) : 1000;
    if (bytes == 0 || bytes % 4 != 0 || iters < 1) {
        fprintf(stderr, "alltoall: BYTES must be a positive multiple of 4, ITERATIONS >= 1\n");
        return 2;
    }
    int me, n;
    CHECK(tcaGetNodeId(&me));
    CHECK(tcaGetNodeCount(&n));
    /* Blocks start on cache lines, so that source and destination share their low bits. */
    size_t stride = (bytes + 63) / 64 * 64;
    uint8_t *send, *recv;
    CHECK(tcaMalloc((void **)&send, stride * n, tcaMemoryCPU));
    CHECK(tcaMalloc((void **)&recv, stride * n, tcaMemoryCPU));
    for (int p = 0; p < n; p++) ex_fill(send + p * stride, bytes, (uint32_t)(me * 64 + p));
    tcaHandle sh, rh, *all = malloc(sizeof(tcaHandle) * n);
    CHECK(tcaCreateHandle(&sh, send, stride * n, tcaMemoryCPU));
    CHECK(tcaCreateHandle(&rh, recv, stride * n, tcaMemoryCPU));
    ex_allgather(&rh, all, sizeof(tcaHandle));

    tcaDesc *d = tcaDescNew();
    for (int k = 1; k < n; k++) {
        int p = (me + k) % n; /* start with the next rank, so that not all write rank 0 first */
        CHECK(tcaDescSetMemcpy(d, &all[p], me * stride, &sh, p * stride, bytes,
                               tcaDMANotify | (k + 1 < n ? tcaDMAContinue : 0), 0, 1));
    }
    if (n > 1) CHECK(tcaDescSet(d, 0));
    int warm = iters / 10 + 1;
    double t0 = 0;
    ex_barrier();
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm) t0 = ex_now_us();
        if (n == 1) continue;
        CHECK(tcaStartDMADesc(0));
        for (int k = 1; k < n; k++) CHECK(tcaWaitDMARecvDesc(&all[(me + n - k) % n], 0, 1));
        CHECK(tcaWaitDMAC(0));
    }
    double us = (ex_now_us() - t0) / iters;
    ex_barrier();
    for (int q = 0; q < n; q++) {
        if (q != me && !ex_check(recv + q * stride, bytes, (uint32_t)(q * 64 + me))) {
            fprintf(stderr, "rank %d: block from rank %d corrupted\n", me, q);
            return 1;
        }
    }
    if (me == 0) {
        printf("# TCA all-to-all, shm fabric, %d ranks, %zu B per pair, launched by %s\n", n, bytes,
               EX_LAUNCHER);
        printf("%-12zu %14.3f us per iteration\n", bytes, us);
    }
    CHECK(tcaDescFree(d));
    CHECK(tcaDestroyHandle(&sh));
    CHECK(tcaDestroyHandle(&rh));
    CHECK(tcaFree(send, tcaMemoryCPU));
    CHECK(tcaFree(recv, tcaMemoryCPU));
    free(all);
    ex_end();
    return 0;
}
