/*
 * Block-stride face exchange of an N^3 cube on a ring of ranks through the descriptor-table
 * calls, as the HA-PACS/TCA benchmark programs (tables by tag) and XcalableMP (internal memory)
 * write them. Each rank sends its high y face to the next rank's low y halo and its low y face
 * to the previous rank's high y halo (block-stride: N-2 bursts of one row), and its high z
 * plane's interior rows to the next rank's low z halo (contiguous). Even iterations run the
 * chain of two tables (the second table's entries at the slots the first call handed on) on
 * channel 0; odd ones the same chain from internal memory on channel 1. Every halo value is
 * checked; then every misuse must give its code. Run with `tca run -n N` (N = 2, 4, ...).
 *
 * usage: desc_table [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>

#include "tca-api.h"

#define N 16
#define AT(z, y, x) ((off_t)((((z) * N + (y)) * N + (x)) * sizeof(double)))
#define FLAGS (tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify)
#define WAIT_SLOT 1

#define CALL(call)                                                                          \
    do {                                                                                    \
        tcaresult r_ = (call);                                                              \
        if (r_ != TCA_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                   \
                    tcaGetErrorString(r_));                                                 \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static int failures = 0;

#define EXPECT(call, code)                                                                  \
    do {                                                                                    \
        tcaresult r_ = (call);                                                              \
        if (r_ != (code)) {                                                                 \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__,     \
                    __LINE__, #call, r_, tcaGetErrorString(r_), (code),                     \
                    tcaGetErrorString(code));                                               \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

static double value(int rank, int iter, int z, int y, int x)
{
    return rank * 1e6 + iter * 1e4 + z * 100 + y + x * 1e-3;
}

/* XcalableMP's flags: every entry but the last continues the chain. */
static tcaDMAFlag chain_flag(int j, int entries)
{
    return j != entries - 1 ? FLAGS | tcaDMAContinue : FLAGS;
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    CALL(tcaInit());
    int me, n;
    CALL(tcaGetNodeId(&me));
    CALL(tcaGetNodeCount(&n));
    int next = (me + 1) % n, prev = (me + n - 1) % n;

    size_t bytes = (size_t)N * N * N * sizeof(double);
    double *cube;
    CALL(tcaMalloc((void **)&cube, bytes, tcaMemoryGPU));
    tcaHandle h, *all = malloc(sizeof(tcaHandle) * n);
    CALL(tcaCreateHandle(&h, cube, bytes, tcaMemoryGPU));
    CALL(tcaAllgather(&h, all, sizeof(tcaHandle)));

    size_t pitch = (size_t)N * N * sizeof(double), width = N * sizeof(double);
    size_t plane = (size_t)(N - 2) * N * sizeof(double);
    /* Tables by tag: the y faces' tag holds one entry, the other tag takes the slots after. */
    int tag[2] = {0, 0}, slot = 0;
    CALL(tcaCreateDMADesc(&tag[0], 1024));
    CALL(tcaCreateDMADesc(&tag[1], 1024));
    CALL(tcaSetDMADesc_Memcpy2D(tag[0], slot, &slot, &all[next], AT(1, 0, 0), pitch, &h,
                                AT(1, N - 2, 0), pitch, width, N - 2, FLAGS, WAIT_SLOT, 1));
    CALL(tcaSetDMADesc_Memcpy2D(tag[1], slot, &slot, &all[prev], AT(1, N - 1, 0), pitch, &h,
                                AT(1, 1, 0), pitch, width, N - 2, FLAGS, WAIT_SLOT, 2));
    CALL(tcaSetDMADesc_Memcpy(tag[1], slot, &slot, &all[next], AT(0, 1, 0), &h, AT(N - 2, 1, 0),
                              plane, FLAGS, WAIT_SLOT, 3));
    if (slot != 3) {
        fprintf(stderr, "rank %d: next slot %d, expected 3\n", me, slot);
        return 1;
    }
    CALL(tcaSetDMAChain(0, tag[0]));
    CALL(tcaSetDMAChain(0, tag[1]));
    /* The same chain in PEACH2's internal memory. */
    CALL(tcaDMADescInt_Init());
    slot = 0;
    CALL(tcaSetDMADescInt_Memcpy2D(slot, &slot, &all[next], AT(1, 0, 0), pitch, &h,
                                   AT(1, N - 2, 0), pitch, width, N - 2, chain_flag(0, 3),
                                   WAIT_SLOT, 1));
    CALL(tcaSetDMADescInt_Memcpy2D(slot, &slot, &all[prev], AT(1, N - 1, 0), pitch, &h,
                                   AT(1, 1, 0), pitch, width, N - 2, chain_flag(1, 3), WAIT_SLOT,
                                   2));
    CALL(tcaSetDMADescInt_Memcpy(slot, &slot, &all[next], AT(0, 1, 0), &h, AT(N - 2, 1, 0), plane,
                                 chain_flag(2, 3), WAIT_SLOT, 3));
    CALL(tcaSetDMAChainInt(1, 0));

    for (int it = 0; it < iters; it++) {
        for (int z = 1; z < N - 1; z++)
            for (int y = 1; y < N - 1; y++)
                for (int x = 0; x < N; x++) cube[AT(z, y, x) / sizeof(double)] = value(me, it, z, y, x);
        CALL(tcaBarrier()); /* neighbours have checked their halos of the previous iteration */
        int ch = it % 2;
        CALL(tcaStartDMADesc(ch));
        CALL(tcaWaitDMARecvDesc(&all[prev], WAIT_SLOT, 1));
        CALL(tcaWaitDMARecvDesc(&all[next], WAIT_SLOT, 2));
        CALL(tcaWaitDMARecvDesc(&all[prev], WAIT_SLOT, 3));
        CALL(tcaWaitDMAC(ch));
        int bad = 0;
        for (int z = 1; z < N - 1; z++)
            for (int x = 0; x < N; x++) {
                bad += cube[AT(z, 0, x) / sizeof(double)] != value(prev, it, z, N - 2, x);
                bad += cube[AT(z, N - 1, x) / sizeof(double)] != value(next, it, z, 1, x);
            }
        for (int y = 1; y < N - 1; y++)
            for (int x = 0; x < N; x++)
                bad += cube[AT(0, y, x) / sizeof(double)] != value(prev, it, N - 2, y, x);
        if (bad) {
            fprintf(stderr, "rank %d iteration %d (channel %d): %d halo values wrong\n", me, it, ch,
                    bad);
            return 1;
        }
        CALL(tcaBarrier());
    }

    /* Misuse: each has its code, and none changes what runs. */
    int empty, none = 0;
    CALL(tcaCreateDMADesc(&empty, 4));
    EXPECT(tcaSetDMAChain(0, empty), TCA_ERROR_EMPTY_TABLE);
    EXPECT(tcaSetDMAChain(0, none), TCA_ERROR_UNKNOWN_TAG);
    EXPECT(tcaSetDMADesc_Memcpy(empty, 4, NULL, &all[next], 0, &h, 0, 64, FLAGS, 0, 0),
           TCA_ERROR_DESC_SLOT_OUT_OF_RANGE);
    EXPECT(tcaSetDMADesc_Memcpy(empty, -1, NULL, &all[next], 0, &h, 0, 64, FLAGS, 0, 0),
           TCA_ERROR_DESC_SLOT_OUT_OF_RANGE);
    EXPECT(tcaSetDMADesc_Memcpy(empty, 0, NULL, &all[next], 0, &h, 0, 6, FLAGS, 0, 0),
           TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4);
    EXPECT(tcaSetDMADescInt_Memcpy(TCA_DMA_DESC_INT_SLOTS, NULL, &all[next], 0, &h, 0, 64, FLAGS,
                                   0, 0),
           TCA_ERROR_INTERNAL_MEMORY_FULL);
    EXPECT(tcaSetDMAChainInt(1, 3), TCA_ERROR_EMPTY_TABLE);
    EXPECT(tcaSetDMAChain(TCA_DMA_CHANNELS, tag[0]), TCA_ERROR_INVALID_CHANNEL);
    CALL(tcaDestroyDMADesc(empty));
    EXPECT(tcaDestroyDMADesc(empty), TCA_ERROR_DESTROYED_TAG);
    CALL(tcaDestroyDMADesc(tag[0]));
    CALL(tcaDestroyDMADesc(tag[1]));
    EXPECT(tcaSetDMAChain(0, tag[1]), TCA_ERROR_DESTROYED_TAG);
    EXPECT(tcaStartDMADesc(0), TCA_ERROR_CHANNEL_NOT_SET); /* its tables are gone */
    CALL(tcaBarrier());

    if (me == 0 && failures == 0)
        printf("desc_table: %d ranks, %d face exchanges of %d x %zu B x 2 + %zu B checked "
               "(tables by tag on channel 0, internal memory on channel 1)\n",
               n, iters, N - 2, width, plane);
    CALL(tcaDestroyHandle(&h));
    CALL(tcaFree(cube, tcaMemoryGPU));
    free(all);
    CALL(tcaFinalize());
    return failures != 0;
}
