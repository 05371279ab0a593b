/*
 * Ping-pong between rank 0 and rank 1 with the TCA API (seed 000 §4.2), OSU-style output:
 * one-way latency (half the round trip, mean over the iterations after a warm-up) and the
 * bandwidth it gives, from 8 B to MAX bytes.
 *
 *   pio        CPU stores into the peer's buffer (tcaSendPIO + tcaSendPIOCommit), then a flag
 *              word; the peer polls its own memory (seed 000 §4.2.1).
 *   dma        one request in register mode, set once and kicked every time, with a
 *              notification written to the peer on completion (seed 000 §4.2.2).
 *   dma-chain  the same request in chaining mode (descriptor fetched from memory).
 *
 * usage: pingpong [pio|dma|dma-chain] [MAX_BYTES] [ITER_SCALE]
 * Every received payload of the last iteration of each size is checked.
 */
#include "example.h"

#define FLAG_BYTES 64 /* the flag word, padded to a cache line; the payload follows */

int main(int argc, char **argv)
{
    ex_start(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "pio";
    size_t max = argc > 2 ? strtoull(argv[2], NULL, 0) : (4u << 20);
    double scale = argc > 3 ? atof(argv[3]) : 1.0;
    int pio = strcmp(mode, "pio") == 0;
    int chain = strcmp(mode, "dma-chain") == 0;
    if (!pio && !chain && strcmp(mode, "dma") != 0) {
        fprintf(stderr, "pingpong: unknown mode '%s' (pio, dma, dma-chain)\n", mode);
        return 2;
    }
    int me, n;
    CHECK(tcaGetNodeId(&me));
    CHECK(tcaGetNodeCount(&n));
    if (n < 2) {
        fprintf(stderr, "pingpong: needs 2 ranks\n");
        return 2;
    }
    int peer = me == 0 ? 1 : 0;

    uint8_t *sbuf, *rbuf;
    CHECK(tcaMalloc((void **)&sbuf, max, tcaMemoryCPU));
    CHECK(tcaMalloc((void **)&rbuf, FLAG_BYTES + max, tcaMemoryCPU));
    memset(rbuf, 0, FLAG_BYTES + max);
    tcaHandle sh, rh, *all = malloc(sizeof(tcaHandle) * n);
    CHECK(tcaCreateHandle(&sh, sbuf, max, tcaMemoryCPU));
    CHECK(tcaCreateHandle(&rh, rbuf, FLAG_BYTES + max, tcaMemoryCPU));
    ex_allgather(&rh, all, sizeof(tcaHandle));
    tcaHandle *peer_rh = &all[peer];

    if (me == 0) {
        printf("# TCA ping-pong, shm fabric, %s, %d ranks, launched by %s\n", mode, n, EX_LAUNCHER);
        printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    uint32_t seq = 0;
    int tag = 0;
    for (size_t size = 8; size <= max; size *= 2) {
        /* Warm-up: a tenth of the iterations; ten times them before the first size. */
        int iters = ex_iters(size, scale), warm = size == 8 ? 10 * iters : iters / 10 + 1;
        ex_fill(sbuf, size, (uint32_t)(size * 2 + me));
        tcaPIOHandle pioh;
        tcaDesc *desc = NULL;
        if (pio) {
            CHECK(tcaSetPIORegion(&pioh, peer_rh, 0, FLAG_BYTES + size));
        } else if (me < 2) {
            tag++;
            desc = tcaDescNew();
            CHECK(tcaDescSetMemcpy(desc, peer_rh, FLAG_BYTES, &sh, 0, size, tcaDMANotify, 0, tag));
            CHECK(tcaDescSetMode(desc, chain ? tcaDMAModeChaining : tcaDMAModeRegister));
            CHECK(tcaDescSet(desc, 0));
        }
        ex_barrier();
        double t0 = 0;
        for (int i = 0; i < warm + iters && me < 2; i++) {
            if (i == warm) t0 = ex_now_us();
            int sends_first = me == 0;
            seq++;
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == sends_first) {
                    if (pio) {
                        CHECK(tcaSendPIO(&pioh, FLAG_BYTES, sbuf, size));
                        CHECK(tcaSendPIOCommit());
                        CHECK(tcaSendPIO(&pioh, 0, &seq, 4));
                        CHECK(tcaSendPIOCommit());
                    } else {
                        CHECK(tcaWaitDMAC(0));
                        CHECK(tcaStartDMADesc(0));
                    }
                } else {
                    if (pio) {
                        CHECK(tcaWaitPIO(&rh, 0, seq, peer));
                    } else {
                        CHECK(tcaWaitDMARecvDesc(peer_rh, 0, tag));
                    }
                }
            }
        }
        double us = (ex_now_us() - t0) / (2.0 * iters);
        if (!pio && me < 2) {
            CHECK(tcaWaitDMAC(0));
            CHECK(tcaDescFree(desc));
        }
        if (me < 2 && !ex_check(rbuf + FLAG_BYTES, size, (uint32_t)(size * 2 + peer))) {
            fprintf(stderr, "rank %d: payload of %zu B corrupted\n", me, size);
            return 1;
        }
        if (me == 0) {
            printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
            fflush(stdout);
        }
        ex_barrier();
    }
    CHECK(tcaDestroyHandle(&sh));
    CHECK(tcaDestroyHandle(&rh));
    CHECK(tcaFree(sbuf, tcaMemoryCPU));
    CHECK(tcaFree(rbuf, tcaMemoryCPU));
    free(all);
    ex_end();
    return 0;
}
