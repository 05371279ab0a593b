/*
 * Every failure of the C ABI is a tcaresult, never a crash: calls before tcaInit, NULL
 * pointers, bad handles (garbage bytes, destroyed, foreign memory), bad offsets, sizes,
 * alignments, slots, channels, flags and descriptors. Run with `tca run -n 2`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tca-api.h"

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

int main(void)
{
    void *p = NULL;
    tcaHandle h, peer, bad;
    EXPECT(tcaMalloc(&p, 64, tcaMemoryCPU), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaStartDMADesc(0), TCA_ERROR_NOT_INITIALIZED);
    if (strcmp(tcaGetErrorString(TCA_ERROR_TIMEOUT), "timed out") != 0) failures++;
    if (strcmp(tcaGetErrorString(TCA_SUCCESS), "success") != 0) failures++;
    if (strcmp(tcaGetErrorString(12345), "unknown error code") != 0) failures++;

    EXPECT(tcaInit(), TCA_SUCCESS);
    EXPECT(tcaInit(), TCA_SUCCESS); /* harmless while the job runs */
    int me, n;
    EXPECT(tcaGetNodeId(&me), TCA_SUCCESS);
    EXPECT(tcaGetNodeCount(&n), TCA_SUCCESS);
    EXPECT(tcaGetNodeId(NULL), TCA_ERROR_INVALID_ARGUMENT);

    EXPECT(tcaMalloc(NULL, 64, tcaMemoryCPU), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaMalloc(&p, 0, tcaMemoryCPU), TCA_ERROR_ZERO_SIZE);
    EXPECT(tcaMalloc(&p, 64, 7), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaMalloc(&p, (size_t)1 << 45, tcaMemoryCPU), TCA_ERROR_OUT_OF_MEMORY);
    EXPECT(tcaMalloc(&p, 4096, tcaMemoryGPU), TCA_SUCCESS);
    char stack[64];
    EXPECT(tcaCreateHandle(&h, stack, sizeof stack, tcaMemoryCPU), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaCreateHandle(&h, p, 8192, tcaMemoryCPU), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaCreateHandle(NULL, p, 64, tcaMemoryCPU), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaCreateHandle(&h, p, 4096, tcaMemoryGPU), TCA_SUCCESS);
    EXPECT(tcaFree(stack), TCA_ERROR_INVALID_HANDLE);

    tcaHandle *all = malloc(sizeof(tcaHandle) * n);
    EXPECT(tcaAllgather(&h, all, sizeof(tcaHandle)), TCA_SUCCESS);
    EXPECT(tcaAllgather(NULL, all, sizeof(tcaHandle)), TCA_ERROR_INVALID_ARGUMENT);
    peer = all[(me + 1) % n];
    memset(&bad, 0x5a, sizeof bad);

    tcaDesc *d = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(d, &bad, 0, &h, 0, 64, 0, 0, 0), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaDescSetMemcpy(d, NULL, 0, &h, 0, 64, 0, 0, 0), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 6, 0, 0, 0), TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4);
    EXPECT(tcaDescSetMemcpy(d, &peer, 4, &h, 0, 8, 0, 0, 0), TCA_ERROR_ALIGNMENT_MISMATCH);
    EXPECT(tcaDescSetMemcpy(d, &peer, 4032, &h, 4032, 128, 0, 0, 0), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0, 64, 0), TCA_ERROR_INVALID_SLOT);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0, -1, 0), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0x40, 0, 0), TCA_ERROR_UNKNOWN_FLAGS);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, tcaDMAUseNotifyInternal, 0, 0),
           TCA_ERROR_INVALID_FLAG_COMBINATION);
    EXPECT(tcaDescSetMemcpy2D(d, &peer, 0, 16, &h, 0, 32, 32, 4, 0, 0, 0), TCA_ERROR_INVALID_PITCH);
    EXPECT(tcaDescSet(d, 0), TCA_ERROR_INVALID_DESCRIPTOR); /* still empty */
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, tcaDMANotify, 0, 5), TCA_SUCCESS);
    EXPECT(tcaDescSet(d, 4), TCA_ERROR_INVALID_CHANNEL);
    EXPECT(tcaDescSet(d, -1), TCA_ERROR_INVALID_CHANNEL);
    EXPECT(tcaStartDMADesc(3), TCA_ERROR_CHANNEL_NOT_SET);
    EXPECT(tcaDescSet(d, 0), TCA_SUCCESS);
    EXPECT(tcaDescFree(d), TCA_SUCCESS);
    EXPECT(tcaDescFree(d), TCA_ERROR_INVALID_DESCRIPTOR);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0, 0, 0), TCA_ERROR_INVALID_DESCRIPTOR);
    EXPECT(tcaDescSet((tcaDesc *)0x1234, 0), TCA_ERROR_INVALID_DESCRIPTOR);
    EXPECT(tcaStartDMADesc(0), TCA_SUCCESS); /* the channel kept its copy */
    EXPECT(tcaWaitDMAC(0), TCA_SUCCESS);
    EXPECT(tcaWaitDMARecvDesc(&all[(me + n - 1) % n], 0, 5), TCA_SUCCESS);
    EXPECT(tcaWaitDMARecvDesc(&bad, 0, 5), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaWaitDMARecvDesc(&peer, 99, 5), TCA_ERROR_INVALID_SLOT);
    EXPECT(tcaWaitDMAC(7), TCA_ERROR_INVALID_CHANNEL);

    tcaPIOHandle pio, badpio;
    memset(&badpio, 0, sizeof badpio);
    uint32_t word = 1;
    EXPECT(tcaSetPIORegion(&pio, &peer, 4090, 64), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaSetPIORegion(&pio, &bad, 0, 64), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaSetPIORegion(&pio, &peer, 0, 64), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 0, &word, 3), TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4);
    EXPECT(tcaSendPIO(&pio, 64, &word, 4), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaSendPIO(&badpio, 0, &word, 4), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaSendPIO(&pio, 0, NULL, 4), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaWaitPIO(&peer, 0, 1, 0), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaWaitPIO(&h, 2, 1, 0), TCA_ERROR_ALIGNMENT_MISMATCH);
    EXPECT(tcaWaitPIO(&h, 0, 1, 99), TCA_ERROR_INVALID_NODE);
    EXPECT(tcaBarrier(), TCA_SUCCESS);

    EXPECT(tcaDestroyHandle(&h), TCA_SUCCESS);
    EXPECT(tcaDestroyHandle(&h), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaFree(p), TCA_SUCCESS);
    EXPECT(tcaFree(p), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    EXPECT(tcaFinalize(), TCA_SUCCESS);
    EXPECT(tcaFinalize(), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaMalloc(&p, 64, tcaMemoryCPU), TCA_ERROR_NOT_INITIALIZED);
    free(all);
    if (failures) {
        fprintf(stderr, "rank %d: %d failures\n", me, failures);
        return 1;
    }
    printf("rank %d: C API errors ok\n", me);
    return 0;
}
