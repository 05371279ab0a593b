/*
 * What the HA-PACS/TCA style examples share: the error-checking macros such programs define
 * around every TCA, CUDA and MPI call, and a deterministic byte pattern for payload checks.
 * Nothing here depends on the fabric: the same source builds with `tca cc` for the simulator
 * and with mpicc for the shm fabric.
 */
#ifndef HAPACS_EXAMPLE_H
#define HAPACS_EXAMPLE_H

#include <cuda_runtime.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tca-api.h"

#define TCA_SAFE_CALL(call)                                                             \
    do {                                                                                \
        tcaresult r_ = (call);                                                          \
        if (r_ != TCA_SUCCESS) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,          \
                    tcaGetErrorString(r_), r_);                                         \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

#define CUDA_SAFE_CALL(call)                                                            \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorString(e_));                                            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                               \
        }                                                                               \
    } while (0)

/* Stops every rank with a message from rank 0 (bad arguments, wrong number of ranks). */
static inline void hp_usage_error(int rank, const char *message)
{
    if (rank == 0) fprintf(stderr, "%s\n", message);
    MPI_Finalize();
    exit(2);
}

/* Every rank registers its buffer; all[r] is rank r's handle afterwards (MPI_Allgather of the
 * handle's bytes, as HA-PACS/TCA programs exchange them). */
static inline void hp_exchange(tcaHandle *mine, tcaHandle *all)
{
    MPI_Allgather(mine, sizeof(tcaHandle), MPI_BYTE, all, sizeof(tcaHandle), MPI_BYTE,
                  MPI_COMM_WORLD);
}

/* A deterministic byte pattern (xorshift), different for every seed. */
static inline void hp_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

/* The first byte where p differs from the pattern, or n when it matches. */
static inline size_t hp_mismatch(const uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        if (p[i] != (uint8_t)x) return i;
    }
    return n;
}

/* Parses a size with an optional K or M suffix (binary); 0 when it is not one. */
static inline size_t hp_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text) return 0;
    if (*end == 'K' || *end == 'k') v <<= 10, end++;
    else if (*end == 'M' || *end == 'm') v <<= 20, end++;
    return *end ? 0 : (size_t)v;
}

#endif
