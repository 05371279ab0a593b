/*
 * The latency floor the shm fabric is measured against: the same ping-pong as pingpong.c pio
 * (payload, then a flag word in its own cache line; the peer polls the flag), written as plain
 * stores by two processes (fork) sharing an anonymous mapping, pinned to CPUs 0 and 1, with no
 * library in between. Same sizes and iteration counts as pingpong.c.
 *
 * usage: store_pingpong [MAX_BYTES] [ITER_SCALE]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define FLAG_BYTES 64

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    size_t region = FLAG_BYTES + max;
    /* Rank r's receive buffer at r * region; private send buffers. */
    uint8_t *shared = mmap(NULL, 2 * region, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) return 1;
    memset(shared, 0, 2 * region);
    pid_t child = fork();
    int me = child == 0 ? 1 : 0, peer = 1 - me;
    pin(me);
    uint8_t *sbuf = malloc(max), *mine = shared + me * region, *theirs = shared + peer * region;
    memset(sbuf, me + 1, max);
    volatile uint32_t *my_flag = (volatile uint32_t *)mine, *their_flag = (volatile uint32_t *)theirs;
    if (me == 0) {
        printf("# plain-store ping-pong: memcpy + flag store, peer polls the flag (2 processes)\n");
        printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    uint32_t seq = 0;
    for (size_t size = 8; size <= max; size *= 2) {
        int iters = (int)((size <= 8192 ? 10000 : 1000) * scale), warm;
        if (iters < 2) iters = 2;
        warm = size == 8 ? 10 * iters : iters / 10 + 1; /* ten times them before the first size */
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) t0 = now_us();
            seq++;
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == (me == 0)) {
                    copy_small(theirs + FLAG_BYTES, sbuf, size);
                    __atomic_store_n(their_flag, seq, __ATOMIC_RELEASE);
                } else {
                    while (__atomic_load_n(my_flag, __ATOMIC_ACQUIRE) != seq) __builtin_ia32_pause();
                }
            }
        }
        double us = (now_us() - t0) / (2.0 * iters);
        if (me == 0) {
            printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
            fflush(stdout);
        }
    }
    free(sbuf);
    if (child > 0) {
        int st;
        waitpid(child, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    return 0;
}
