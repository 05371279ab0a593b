/*
 * What the C examples share: start-up and handle exchange either through MPI (built with
 * mpicc -DTCA_EXAMPLE_MPI, run under mpirun, as the original TCA benchmarks were) or through
 * the TCA library's own bootstrap (built with cc, run under `tca run`), a clock, and CHECK.
 */
#ifndef TCA_EXAMPLE_H
#define TCA_EXAMPLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tca-api.h"

#define CHECK(call)                                                                     \
    do {                                                                                \
        tcaresult r_ = (call);                                                          \
        if (r_ != TCA_SUCCESS) {                                                        \
            fprintf(stderr, "%s:%d: %s: %s (%d)\n", __FILE__, __LINE__, #call,          \
                    tcaGetErrorString(r_), r_);                                         \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#ifdef TCA_EXAMPLE_MPI
#include <mpi.h>
#define EX_LAUNCHER "mpirun"
static inline void ex_start(int *argc, char ***argv) { MPI_Init(argc, argv); CHECK(tcaInit()); }
static inline void ex_allgather(const void *send, void *recv, size_t n)
{
    MPI_Allgather(send, (int)n, MPI_BYTE, recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
}
static inline void ex_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
static inline void ex_end(void) { CHECK(tcaFinalize()); MPI_Finalize(); }
#else
#define EX_LAUNCHER "tca run"
static inline void ex_start(int *argc, char ***argv) { (void)argc; (void)argv; CHECK(tcaInit()); }
static inline void ex_allgather(const void *send, void *recv, size_t n) { CHECK(tcaAllgather(send, recv, n)); }
static inline void ex_barrier(void) { CHECK(tcaBarrier()); }
static inline void ex_end(void) { CHECK(tcaFinalize()); }
#endif

static inline double ex_now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* A deterministic byte pattern for payload checks. */
static inline void ex_fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

static inline int ex_check(const uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        if (p[i] != (uint8_t)x) return 0;
    }
    return 1;
}

/* osu_latency iteration counts: 10,000 up to 8 KB, 1,000 above; scaled by `scale` (<= 1). */
static inline int ex_iters(size_t size, double scale)
{
    int n = size <= 8192 ? 10000 : 1000;
    n = (int)(n * scale);
    return n < 2 ? 2 : n;
}

#endif
