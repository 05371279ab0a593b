/*
 * What the comparison programs of the ping-pong benchmark share (memcpy_floor, store_pingpong,
 * shmem_pingpong, ucx_pingpong): a microsecond clock and pinning to the n-th allowed CPU.
 * Include after defining _GNU_SOURCE (for the CPU-set macros).
 */
#ifndef TCA_EXAMPLE_FLOOR_H
#define TCA_EXAMPLE_FLOOR_H

#include <sched.h>
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

#endif
