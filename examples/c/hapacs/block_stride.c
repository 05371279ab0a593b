/*
 * Face exchange of an N^3 cube of doubles in GPU memory with block-stride DMA (seed 000 §3.7;
 * seed 001, 3-D stencil example: the j-k plane goes block-stride), in the manner of the
 * HA-PACS/TCA benchmark programs. Ranks pair up (0-1, 2-3, ...); each holds a cube, i fastest.
 * The face at j = 0 is N blocks (one per k) of N doubles, N*N*8 bytes apart: one
 * tcaDescSetMemcpy2D request (width N*8, count N, pitch N*N*8 on both sides) with a
 * notification, registered once per N and kicked every iteration. Each rank sends its face
 * into its partner's face at j = N-1 and waits for the partner's notification.
 *
 * The method is that of `tca bench block-stride`: ITERATIONS exchanges (10 by default) after a
 * barrier, each one start + wait for the partner's notification + tcaWaitDMAC; time per
 * exchange = elapsed / ITERATIONS. Afterwards every rank copies its cube back and checks the
 * received face against the partner's values and every other byte against its own.
 *
 * usage: block_stride [MAX_N [ITERATIONS]]     (N = 2, 4, .. MAX_N; 256 by default)
 */
#include "hapacs.h"

static double value(int rank, size_t index) { return (double)index + 1e6 * (rank + 1); }

/* The number of wrong doubles in the cube `got` of `rank` after an exchange with `peer`. */
static size_t check_cube(const double *got, size_t n, int rank, int peer)
{
    size_t wrong = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < n; i++) {
                size_t at = (k * n + j) * n + i;
                /* j = N-1 holds the partner's face j = 0; the rest is this rank's own. */
                double want = j == n - 1 ? value(peer, k * n * n + i) : value(rank, at);
                wrong += got[at] != want;
            }
    return wrong;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());
    long max_n = argc > 1 ? atol(argv[1]) : 256;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    if (max_n < 2 || max_n > 1024 || iters < 1)
        hp_usage_error(rank, "usage: block_stride [MAX_N (2..1024) [ITERATIONS (>= 1)]]");
    if (nprocs % 2) hp_usage_error(rank, "block_stride: needs an even number of ranks");
    int peer = rank ^ 1;
    tcaHandle *all = malloc(sizeof(tcaHandle) * nprocs);

    if (rank == 0) {
        printf("# TCA face exchange of an N^3 cube of doubles on GPUs (tcaDescSetMemcpy2D), %d ranks\n",
               nprocs);
        printf("# %-6s %12s %14s %16s\n", "N", "Face (B)", "Exchange (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    int sizes = 0;
    for (size_t n = 2; n <= (size_t)max_n; n *= 2, sizes++) {
        size_t cube_bytes = n * n * n * sizeof(double), plane = n * n * sizeof(double);
        size_t width = n * sizeof(double);
        double *host = malloc(cube_bytes), *cube;
        for (size_t x = 0; x < n * n * n; x++) host[x] = value(rank, x);
        CUDA_SAFE_CALL(cudaMalloc((void **)&cube, cube_bytes));
        CUDA_SAFE_CALL(cudaMemcpy(cube, host, cube_bytes, cudaMemcpyHostToDevice));
        tcaHandle h;
        TCA_SAFE_CALL(tcaCreateHandle(&h, cube, cube_bytes, tcaMemoryGPU));
        hp_exchange(&h, all);
        /* Face j = 0 of mine -> face j = N-1 of the partner's cube. */
        tcaDesc *desc = tcaDescNew();
        TCA_SAFE_CALL(tcaDescSetMemcpy2D(desc, &all[peer], (off_t)((n - 1) * width), plane, &h, 0,
                                         plane, width, n, tcaDMANotify, 0, rank));
        TCA_SAFE_CALL(tcaDescSet(desc, 0));

        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters; it++) {
            TCA_SAFE_CALL(tcaStartDMADesc(0));
            TCA_SAFE_CALL(tcaWaitDMARecvDesc(&all[peer], 0, peer));
            TCA_SAFE_CALL(tcaWaitDMAC(0));
        }
        double us = (MPI_Wtime() - t0) * 1e6 / iters;
        TCA_SAFE_CALL(tcaDescFree(desc));

        CUDA_SAFE_CALL(cudaMemcpy(host, cube, cube_bytes, cudaMemcpyDeviceToHost));
        size_t wrong = check_cube(host, n, rank, peer);
        if (wrong) {
            fprintf(stderr, "block_stride: rank %d, N = %zu: %zu doubles wrong\n", rank, n, wrong);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (rank == 0) {
            printf("%-8zu %12zu %14.3f %16.3f\n", n, plane, us, plane / us / 1e3);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        TCA_SAFE_CALL(tcaDestroyHandle(&h));
        CUDA_SAFE_CALL(cudaFree(cube));
        free(host);
    }
    if (rank == 0)
        printf("# block_stride: faces of %d cube sizes verified on %d ranks\n", sizes, nprocs);
    free(all);
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
