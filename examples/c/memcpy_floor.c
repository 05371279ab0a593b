/*
 * The floor the shm fabric is measured against: a plain single-threaded memcpy loop between
 * two buffers of this process, same sizes and iteration counts as pingpong.c. Time per copy
 * and the bandwidth it gives.
 *
 * usage: memcpy_floor [MAX_BYTES] [ITER_SCALE]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor.h"

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    uint8_t *src = aligned_alloc(64, max), *dst = aligned_alloc(64, max);
    memset(src, 1, max);
    memset(dst, 0, max);
    printf("# memcpy floor: one thread, two buffers\n");
    printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
    for (size_t size = 8; size <= max; size *= 2) {
        int iters = (int)((size <= 8192 ? 10000 : 1000) * scale), warm = size == 8 ? 10 * iters : iters / 10 + 1;
        if (iters < 2) iters = 2;
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) t0 = now_us();
            src[i % size] = (uint8_t)i;
            memcpy(dst, src, size);
            __asm__ __volatile__("" : : "r"(dst) : "memory");
        }
        double us = (now_us() - t0) / iters;
        printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
    }
    free(src);
    free(dst);
    return 0;
}
