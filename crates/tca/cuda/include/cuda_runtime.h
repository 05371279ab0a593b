/* cuda_runtime.h of tca: the part of the CUDA runtime API that HA-PACS/TCA programs use for
 * their buffers, with CUDA's names, types and values, implemented by libtcacudart.so on top of
 * the TCA fabric libtca.so runs on (docs/cuda.md).
 *
 *   simulator:  device memory is the simulated GPU memory of the rank's node (the addresses
 *               the TCA model routes: tcaCreateHandle(tcaMemoryGPU) takes a cudaMalloc
 *               pointer); data really moves; cudaMemcpy takes the time the PCIe model gives.
 *   shm fabric: this host has no GPU: device memory is host memory and cudaMemcpy is a CPU
 *               copy (so that the same program runs with its data verified).
 *
 * Not here: kernels (they need nvcc and a GPU), streams, events, textures, managed memory.
 * Every copy is synchronous.
 *
 * Link with -ltcacudart -ltca (either order). */
#ifndef TCA_CUDA_RUNTIME_H
#define TCA_CUDA_RUNTIME_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes: the values of CUDA's runtime. */
enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDevice = 101,
    cudaErrorPeerAccessUnsupported = 217,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorPeerAccessNotEnabled = 705,
    cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4 /* the direction follows from the pointers */
};

enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0, /* memory the runtime did not allocate (pageable) */
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3 /* never returned */
};

/* Both field names: `type` (CUDA 10 and later) and `memoryType` (earlier). */
struct cudaPointerAttributes {
    enum cudaMemoryType memoryType;
    enum cudaMemoryType type;
    int device;          /* cudaInvalidDeviceId for unregistered memory */
    void *devicePointer; /* NULL for unregistered memory */
    void *hostPointer;   /* NULL for device memory */
    int isManaged;       /* always 0 */
};

#define cudaInvalidDeviceId ((int)-2)

/* cudaHostAlloc flags: all accepted, all give the same pinned memory. */
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04

/* ---- devices: the GPUs of the rank's node (one on the shm fabric) ---- */

/* Records the current device of the calling thread (checked once the rank is in the job). */
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceCount(int *count);
/* Nothing is ever pending (copies are synchronous): returns at once. */
cudaError_t cudaDeviceSynchronize(void);
/* 1 for two different GPUs behind the same CPU socket. */
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaDeviceDisablePeerAccess(int peerDevice);

/* ---- memory: zero-filled buffers of the TCA fabric (a CUDA call before tcaInit joins the job) ---- */

cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaFreeHost(void *ptr);
/* A kind that contradicts the pointers is cudaErrorInvalidValue; returns when done. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);

/* ---- errors ---- */

const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
/* The last error of a call on this thread; reset to cudaSuccess. */
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);

#ifdef __cplusplus
}
#endif

#endif /* TCA_CUDA_RUNTIME_H */
