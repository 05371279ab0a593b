/*
 * What the comparison programs of the ping-pong benchmark share (memcpy_floor, store_pingpong,
 * shmem_pingpong, ucx_pingpong): a microsecond clock, pinning to the n-th allowed CPU, and a
 * copy of small payloads without a call.
 * Include after defining _GNU_SOURCE (for the CPU-set macros).
 */
#ifndef TCA_EXAMPLE_FLOOR_H
#define TCA_EXAMPLE_FLOOR_H

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Monotonic time [us]. */
static inline double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

/* Pins the calling process to the cpu-th CPU of its affinity mask (no change if it has fewer). */
static inline void pin(int cpu)
{
    cpu_set_t allowed, one;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && n++ == cpu) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
}

/* Copies n bytes; up to 16 as two moves (which may overlap) of a size the compiler knows,
 * as the TCA header's inline tcaSendPIO does, so that the floor pays no call either. */
static inline void copy_small(uint8_t *to, const uint8_t *from, size_t n)
{
    if (n >= 8 && n <= 16) {
        uint64_t head, tail;
        memcpy(&head, from, 8);
        memcpy(&tail, from + n - 8, 8);
        memcpy(to, &head, 8);
        memcpy(to + n - 8, &tail, 8);
    } else if (n >= 4 && n < 8) {
        uint32_t head, tail;
        memcpy(&head, from, 4);
        memcpy(&tail, from + n - 4, 4);
        memcpy(to, &head, 4);
        memcpy(to + n - 4, &tail, 4);
    } else {
        memcpy(to, from, n);
    }
}

#endif
