/*
 * Allgather by recursive doubling over PEACH2 DMA between GPU buffers, in the manner of the
 * HA-PACS/TCA benchmark programs: 2, 4, 8 or 16 ranks (one PEACH2 sub-cluster holds 16 nodes,
 * seed 000 §3.1), one DMA channel per step (log2 P <= 4 steps = the 4 channels of PEACH2,
 * seed 000 §3.5.2).
 *
 * Every rank has a GPU buffer of P blocks of SIZE bytes; its own block is block `rank`. At step
 * k (distance d = 2^k) a rank sends the d blocks it holds (those of its group of d ranks, one
 * contiguous range) to the same place of partner rank ^ d, with a notification (slot k). The
 * chain of each step is registered on channel k once per size; an iteration kicks channel k,
 * waits for the partner's notification of step k before the next step (whose range includes
 * what just came), and ends with tcaWaitDMAC on every channel.
 *
 * Before the timed iterations of a size every rank clears its buffer and writes its own block;
 * afterwards it copies the buffer back and checks all P blocks. Time per allgather = elapsed
 * (MPI_Wtime after a barrier) / ITERATIONS, as osu_allgather reports it, from rank 0.
 *
 * usage: allgather [MAX_BYTES [ITERATIONS]]     (SIZE = 16 B .. MAX_BYTES per rank, K/M
 *                                               suffixes; 512K and 100 by default)
 */
#include "hapacs.h"

static uint32_t seed(size_t size, int rank) { return (uint32_t)(size * 31 + rank); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());
    size_t max = argc > 1 ? hp_size(argv[1]) : (size_t)512 << 10;
    int iters = argc > 2 ? atoi(argv[2]) : 100;
    if (max < 16 || iters < 1)
        hp_usage_error(rank, "usage: allgather [MAX_BYTES (>= 16) [ITERATIONS (>= 1)]]");
    int steps = 0;
    while ((1 << steps) < nprocs) steps++;
    if (nprocs < 2 || nprocs > 16 || (1 << steps) != nprocs)
        hp_usage_error(rank, "allgather: needs 2, 4, 8 or 16 ranks (recursive doubling, one DMA "
                             "channel per step)");

    size_t bytes = max * nprocs;
    uint8_t *buf, *host = malloc(bytes);
    CUDA_SAFE_CALL(cudaMalloc((void **)&buf, bytes));
    tcaHandle h, *all = malloc(sizeof(tcaHandle) * nprocs);
    TCA_SAFE_CALL(tcaCreateHandle(&h, buf, bytes, tcaMemoryGPU));
    hp_exchange(&h, all);

    if (rank == 0) {
        printf("# TCA allgather, recursive doubling on GPU buffers, %d ranks, %d steps on %d DMA "
               "channels, %d iterations\n", nprocs, steps, steps, iters);
        printf("# %-10s %14s\n", "Size", "Latency (us)");
        fflush(stdout);
    }
    int sizes = 0;
    for (size_t size = 16; size <= max; size *= 2, sizes++) {
        tcaDesc *desc[4];
        for (int k = 0; k < steps; k++) {
            int d = 1 << k, partner = rank ^ d, first = rank & ~(d - 1);
            off_t at = (off_t)(first * size);
            desc[k] = tcaDescNew();
            TCA_SAFE_CALL(tcaDescSetMemcpy(desc[k], &all[partner], at, &h, at, d * size,
                                           tcaDMANotify, k, rank));
            TCA_SAFE_CALL(tcaDescSet(desc[k], k));
        }
        memset(host, 0, size * nprocs);
        hp_fill(host + rank * size, size, seed(size, rank));
        CUDA_SAFE_CALL(cudaMemcpy(buf, host, size * nprocs, cudaMemcpyHostToDevice));

        /* Every rank has cleared its buffer before any partner writes into it. */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters; it++) {
            for (int k = 0; k < steps; k++) {
                int partner = rank ^ (1 << k);
                TCA_SAFE_CALL(tcaStartDMADesc(k));
                TCA_SAFE_CALL(tcaWaitDMARecvDesc(&all[partner], k, partner));
            }
            for (int k = 0; k < steps; k++) TCA_SAFE_CALL(tcaWaitDMAC(k));
        }
        double us = (MPI_Wtime() - t0) * 1e6 / iters;
        for (int k = 0; k < steps; k++) TCA_SAFE_CALL(tcaDescFree(desc[k]));

        CUDA_SAFE_CALL(cudaMemcpy(host, buf, size * nprocs, cudaMemcpyDeviceToHost));
        for (int r = 0; r < nprocs; r++) {
            size_t bad = hp_mismatch(host + r * size, size, seed(size, r));
            if (bad != size) {
                fprintf(stderr, "allgather: rank %d, %zu B: byte %zu of rank %d's block differs\n",
                        rank, size, bad, r);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        if (rank == 0) {
            printf("%-12zu %14.3f\n", size, us);
            fflush(stdout);
        }
    }
    if (rank == 0)
        printf("# allgather: all %d blocks of %d sizes verified on every rank\n", nprocs, sizes);
    TCA_SAFE_CALL(tcaDestroyHandle(&h));
    CUDA_SAFE_CALL(cudaFree(buf));
    free(all);
    free(host);
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
