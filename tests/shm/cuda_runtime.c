/*
 * The CUDA runtime of tca (cuda_runtime.h, libtcacudart) with the TCA API, as HA-PACS/TCA
 * programs use them: buffers from cudaMalloc (before tcaInit, which the first CUDA call does for
 * the program), cudaMemcpy in every direction, tcaCreateHandle(tcaMemoryGPU) of a cudaMalloc
 * pointer, and a DMA from each rank's GPU buffer into the next rank's, with the data checked.
 * On the shm fabric "GPU memory" is host memory and cudaMemcpy a CPU copy; the same source runs
 * on the simulator. Run with `tca run -n 2` (or more ranks).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_runtime.h"
#include "tca-api.h"

#define N (256 * 1024)

static int failures = 0;

#define CUDA_EXPECT(call, code)                                                             \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != (code)) {                                                                 \
            fprintf(stderr, "%s:%d: %s returned %s (%s), expected %s\n", __FILE__, __LINE__, \
                    #call, cudaGetErrorName(e_), cudaGetErrorString(e_),                    \
                    cudaGetErrorName(code));                                                \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

#define TCA_EXPECT(call)                                                                    \
    do {                                                                                    \
        tcaresult r_ = (call);                                                              \
        if (r_ != TCA_SUCCESS) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, r_,  \
                    tcaGetErrorString(r_));                                                 \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fputc('\n', stderr);                                                            \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

static uint8_t byte_of(int rank, size_t i) { return (uint8_t)(i * 13 + (size_t)rank * 101 + 1); }

/* The type and device cudaPointerGetAttributes reports for p. */
static void expect_pointer(const void *p, enum cudaMemoryType type, int device)
{
    struct cudaPointerAttributes a;
    CUDA_EXPECT(cudaPointerGetAttributes(&a, p), cudaSuccess);
    CHECK(a.type == type && a.memoryType == type, "pointer type %d, expected %d", a.type, type);
    CHECK(a.device == device, "pointer device %d, expected %d", a.device, device);
}

int main(void)
{
    int devices = 0;
    /* CUDA first, as HA-PACS/TCA programs do: the first call that needs the job joins it. */
    CUDA_EXPECT(cudaSetDevice(0), cudaSuccess);
    uint8_t *dev, *recv, *pinned;
    CUDA_EXPECT(cudaMalloc((void **)&dev, N), cudaSuccess);
    CUDA_EXPECT(cudaMalloc((void **)&recv, N), cudaSuccess);
    CUDA_EXPECT(cudaMallocHost((void **)&pinned, N), cudaSuccess);
    CUDA_EXPECT(cudaGetDeviceCount(&devices), cudaSuccess);
    CHECK(devices >= 1, "%d devices", devices);
    CUDA_EXPECT(cudaSetDevice(devices), cudaErrorInvalidDevice);
    CUDA_EXPECT(cudaGetLastError(), cudaErrorInvalidDevice);
    CUDA_EXPECT(cudaGetLastError(), cudaSuccess);

    TCA_EXPECT(tcaInit());
    int me = -1, n = 0;
    TCA_EXPECT(tcaGetNodeId(&me));
    TCA_EXPECT(tcaGetNodeCount(&n));
    if (failures || n < 2) {
        fprintf(stderr, "cuda_runtime: set-up failed (%d ranks)\n", n);
        return 1;
    }

    /* Pageable -> device -> pinned -> pageable; pointers as CUDA reports them. */
    uint8_t *page = malloc(N), *back = malloc(N);
    for (size_t i = 0; i < N; i++) page[i] = byte_of(me, i);
    CUDA_EXPECT(cudaMemcpy(dev, page, N, cudaMemcpyHostToDevice), cudaSuccess);
    CUDA_EXPECT(cudaMemcpy(pinned, dev, N, cudaMemcpyDefault), cudaSuccess);
    CUDA_EXPECT(cudaMemcpy(back, pinned, N, cudaMemcpyHostToHost), cudaSuccess);
    CHECK(memcmp(back, page, N) == 0, "rank %d: the bytes did not come back", me);
    expect_pointer(dev + 100, cudaMemoryTypeDevice, 0);
    expect_pointer(pinned, cudaMemoryTypeHost, 0);
    expect_pointer(page, cudaMemoryTypeUnregistered, cudaInvalidDeviceId);

    /* What CUDA refuses: a kind that contradicts the pointers, an unknown kind, a copy past
     * the end of a buffer, cudaFree of pinned memory. */
    CUDA_EXPECT(cudaMemcpy(dev, page, 64, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    CUDA_EXPECT(cudaMemcpy(page, pinned, 64, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
    CUDA_EXPECT(cudaMemcpy(dev, page, 64, (enum cudaMemcpyKind)7), cudaErrorInvalidMemcpyDirection);
    CUDA_EXPECT(cudaMemcpy(dev + N - 8, page, 64, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CUDA_EXPECT(cudaFree(pinned), cudaErrorInvalidValue);
    CUDA_EXPECT(cudaPeekAtLastError(), cudaErrorInvalidValue);
    (void)cudaGetLastError();

    /* A DMA from this rank's GPU buffer into the next rank's, notified. */
    tcaHandle mine, in, *ins = malloc(sizeof(tcaHandle) * (size_t)n);
    TCA_EXPECT(tcaCreateHandle(&mine, dev, N, tcaMemoryGPU));
    TCA_EXPECT(tcaCreateHandle(&in, recv, N, tcaMemoryGPU));
    TCA_EXPECT(tcaAllgather(&in, ins, sizeof(tcaHandle)));
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    tcaDesc *d = tcaDescNew();
    TCA_EXPECT(tcaDescSetMemcpy(d, &ins[next], 0, &mine, 0, N, tcaDMANotify, 0, me));
    TCA_EXPECT(tcaDescSet(d, 0));
    TCA_EXPECT(tcaBarrier());
    TCA_EXPECT(tcaStartDMADesc(0));
    TCA_EXPECT(tcaWaitDMAC(0));
    TCA_EXPECT(tcaWaitDMARecvDesc(&ins[prev], 0, prev)); /* from the node of that handle */
    CUDA_EXPECT(cudaMemcpy(back, recv, N, cudaMemcpyDeviceToHost), cudaSuccess);
    size_t bad = 0;
    for (size_t i = 0; i < N; i++) bad += back[i] != byte_of(prev, i);
    CHECK(bad == 0, "rank %d: %zu bytes from rank %d wrong", me, bad, prev);

    /* cudaMemset of device memory. */
    CUDA_EXPECT(cudaMemset(dev + 8, 0x5a, 16), cudaSuccess);
    CUDA_EXPECT(cudaMemcpy(back, dev, 32, cudaMemcpyDefault), cudaSuccess);
    CHECK(back[7] == byte_of(me, 7) && back[8] == 0x5a && back[23] == 0x5a && back[24] == byte_of(me, 24),
          "cudaMemset wrote the wrong bytes");
    CUDA_EXPECT(cudaDeviceSynchronize(), cudaSuccess);

    TCA_EXPECT(tcaBarrier());
    TCA_EXPECT(tcaDescFree(d));
    TCA_EXPECT(tcaDestroyHandle(&mine));
    TCA_EXPECT(tcaDestroyHandle(&in));
    CUDA_EXPECT(cudaFree(dev), cudaSuccess);
    CUDA_EXPECT(cudaFree(recv), cudaSuccess);
    CUDA_EXPECT(cudaFreeHost(pinned), cudaSuccess);
    CUDA_EXPECT(cudaFree(NULL), cudaSuccess);
    TCA_EXPECT(tcaFinalize());
    free(page);
    free(back);
    free(ins);
    if (failures) {
        fprintf(stderr, "cuda_runtime: rank %d: %d failures\n", me, failures);
        return 1;
    }
    printf("cuda_runtime: rank %d of %d: data verified\n", me, n);
    return 0;
}
