/*
 * Halo exchange of a 2D grid with block-stride DMA (seed 000 §3.5.2, §3.7): each rank owns
 * NY rows of NX doubles plus a halo of 2 columns on each side, on a ring of ranks. Its two
 * outermost interior columns go to the neighbours' halos as one chain of two block-stride
 * requests (NY bursts of 16 bytes, pitch = one row), registered once and kicked every
 * iteration; each request notifies its destination. Every halo value is checked.
 *
 * usage: block_stride [ITERATIONS]
 */
#include "example.h"

#define NX 64
#define NY 100
#define H 2                    /* halo width [doubles] */
#define ROW (NX + 2 * H)       /* doubles per row */

static double value(int rank, int iter, int y, int x) { return rank * 1e6 + iter * 1e3 + y + x * 1e-3; }

int main(int argc, char **argv)
{
    ex_start(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    int me, n;
    CHECK(tcaGetNodeId(&me));
    CHECK(tcaGetNodeCount(&n));
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    size_t bytes = sizeof(double) * ROW * NY;
    double *grid;
    CHECK(tcaMalloc((void **)&grid, bytes, tcaMemoryCPU));
    tcaHandle h, *all = malloc(sizeof(tcaHandle) * n);
    CHECK(tcaCreateHandle(&h, grid, bytes, tcaMemoryCPU));
    ex_allgather(&h, all, sizeof(tcaHandle));

    size_t pitch = ROW * sizeof(double), width = H * sizeof(double);
    tcaDesc *d = tcaDescNew();
    /* Right interior columns -> next rank's left halo; left interior -> prev's right halo. */
    CHECK(tcaDescSetMemcpy2D(d, &all[next], 0, pitch, &h, NX * sizeof(double), pitch, width, NY,
                             tcaDMANotify | tcaDMAContinue, 1, 1));
    CHECK(tcaDescSetMemcpy2D(d, &all[prev], (NX + H) * sizeof(double), pitch, &h,
                             H * sizeof(double), pitch, width, NY, tcaDMANotify, 1, 2));
    CHECK(tcaDescSet(d, 0));

    double t0 = ex_now_us();
    for (int it = 0; it < iters; it++) {
        for (int y = 0; y < NY; y++)
            for (int x = H; x < NX + H; x++) grid[y * ROW + x] = value(me, it, y, x);
        ex_barrier(); /* neighbours have checked their halos of the previous iteration */
        CHECK(tcaStartDMADesc(0));
        CHECK(tcaWaitDMARecvDesc(&all[prev], 1, 1));
        CHECK(tcaWaitDMARecvDesc(&all[next], 1, 2));
        CHECK(tcaWaitDMAC(0));
        for (int y = 0; y < NY; y++)
            for (int k = 0; k < H; k++) {
                double left = grid[y * ROW + k], want_left = value(prev, it, y, NX + k);
                double right = grid[y * ROW + NX + H + k], want_right = value(next, it, y, H + k);
                if (left != want_left || right != want_right) {
                    fprintf(stderr, "rank %d iter %d row %d: halo %g/%g, expected %g/%g\n", me,
                            it, y, left, right, want_left, want_right);
                    return 1;
                }
            }
        ex_barrier();
    }
    double us = (ex_now_us() - t0) / iters;
    if (me == 0)
        printf("block_stride: %d ranks (%s), %d halo exchanges of 2 x %d x %zu B checked, %.2f us each\n",
               n, EX_LAUNCHER, iters, NY, width, us);
    CHECK(tcaDescFree(d));
    CHECK(tcaDestroyHandle(&h));
    CHECK(tcaFree(grid, tcaMemoryCPU));
    free(all);
    ex_end();
    return 0;
}
