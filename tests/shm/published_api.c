/*
 * The published forms of the TCA API, as HA-PACS/TCA programs write them: the typedef'd
 * enums (tcaMemoryType, tcaOp, tcaDataType, whose value carries the type's size in bits 8 and
 * up), off_t offsets, tcaFree(ptr, type), tcaSendPIOCommit(void), TCA_LIB_VERSION; and
 * tcaDescSet on a channel whose previous run is still in flight, which must succeed.
 *
 * Each round, every rank reads 1 MiB from the previous rank's GPU buffer (a proxy read: the
 * run waits for that rank's driver), sets at once a second chain on the same channel that
 * writes 4 KiB to the next rank with tcaDMANotify|tcaDMANotifySelf, starts it, and waits for
 * the notifications. Run with `tca run -n N` (N = 2, 4, 8, ...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tca-api.h"

#define BIG (1 << 20)
#define SMALL 4096
#define ROUNDS 8
#define CH 0
#define TAG 0x100

#define CALL(call)                                                                          \
    do {                                                                                    \
        tcaresult r_ = (call);                                                              \
        if (r_ != TCA_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                   \
                    tcaGetErrorString(r_));                                                 \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

static unsigned char pattern(int rank, int round, size_t i)
{
    return (unsigned char)(rank * 31 + round * 7 + i * 13 % 251 + 1);
}

int main(void)
{
    /* The size of a type is its value >> 8, as programs compute it. */
    tcaDataType types[] = {TCA_INT, TCA_LONG, TCA_DOUBLE, TCA_CHAR, TCA_LONG_DOUBLE};
    size_t sizes[] = {sizeof(int), sizeof(long), sizeof(double), sizeof(char), sizeof(long double)};
    for (int i = 0; i < 5; i++)
        if ((size_t)(types[i] >> 8) != sizes[i]) {
            fprintf(stderr, "type %d: size %d, expected %zu\n", i, types[i] >> 8, sizes[i]);
            return 1;
        }
    tcaOp op = TCA_OP_SUM;
    if (op >= TCA_OP_NOOP || strlen(TCA_LIB_VERSION) == 0) return 1;

    CALL(tcaInit());
    int me, n;
    CALL(tcaGetNodeId(&me));
    CALL(tcaGetNodeCount(&n));
    int next = (me + 1) % n, prev = (me + n - 1) % n;

    unsigned char *src, *dst;
    tcaMemoryType gpu = tcaMemoryGPU;
    CALL(tcaMalloc((void **)&src, BIG + SMALL, gpu));
    CALL(tcaMalloc((void **)&dst, BIG + SMALL, gpu));
    tcaHandle hs, hd, *srcs = malloc(n * sizeof(tcaHandle)), *dsts = malloc(n * sizeof(tcaHandle));
    CALL(tcaCreateHandle(&hs, src, BIG + SMALL, gpu));
    CALL(tcaCreateHandle(&hd, dst, BIG + SMALL, gpu));
    CALL(tcaAllgather(&hs, srcs, sizeof(tcaHandle)));
    CALL(tcaAllgather(&hd, dsts, sizeof(tcaHandle)));

    const int flags = tcaDMAUseInternal | tcaDMAUseNotifyInternal | tcaDMANotify | tcaDMANotifySelf;
    off_t zero = 0, tail = BIG;
    tcaDesc *read = tcaDescNew(), *write = tcaDescNew();
    CALL(tcaDescSetMemcpy(read, &hd, zero, &srcs[prev], zero, BIG, tcaDMAUseInternal, 0, 0));
    CALL(tcaDescSetMemcpy(write, &dsts[next], tail, &hs, tail, SMALL, flags, 1, TAG));

    int bad = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < BIG + SMALL; i++) src[i] = pattern(me, round, i);
        CALL(tcaBarrier());
        CALL(tcaDescSet(read, CH));
        CALL(tcaStartDMADesc(CH));
        CALL(tcaDescSet(write, CH)); /* the read is still in flight */
        CALL(tcaStartDMADesc(CH));
        CALL(tcaWaitDMARecvDesc(&hs, 1, TAG));          /* tcaDMANotifySelf */
        CALL(tcaWaitDMARecvDesc(&srcs[prev], 1, TAG));  /* the previous rank's write */
        for (size_t i = 0; i < BIG + SMALL; i++)
            if (dst[i] != pattern(prev, round, i)) {
                fprintf(stderr, "rank %d round %d: byte %zu from rank %d differs\n", me, round, i, prev);
                bad = 1;
                break;
            }
        CALL(tcaBarrier()); /* every read of this round's sources is done */
    }
    CALL(tcaWaitDMAC(CH));
    CALL(tcaSendPIOCommit());

    CALL(tcaDescFree(read));
    CALL(tcaDescFree(write));
    CALL(tcaDestroyHandle(&hs));
    CALL(tcaDestroyHandle(&hd));
    CALL(tcaFree(src, tcaMemoryGPU));
    CALL(tcaFree(dst, tcaMemoryGPU));
    free(srcs);
    free(dsts);
    CALL(tcaFinalize());
    if (bad) return 1;
    printf("rank %d of %d: published API ok (%s)\n", me, n, TCA_LIB_VERSION);
    return 0;
}
