/*
 * GPU-GPU ping-pong with PEACH2 DMA between rank 0 and rank 1 (seed 000 §4.2.2), in the
 * manner of the HA-PACS/TCA benchmark programs: MPI starts the job, exchanges the handles and
 * times; cudaMalloc gives the buffers; one DMA request with a notification to the receiver is
 * registered per size (tcaDescSet once) and kicked for every message.
 *
 * The method is that of `tca bench pingpong --pair gpu-gpu --mode dma-register`: no warm-up,
 * ROUND_TRIPS round trips after a barrier (100 up to 64 KiB, 10 above), one-way latency =
 * elapsed / round trips / 2. The send buffer is filled once per size (a cudaMemcpy costs
 * simulated time); after the last round trip each rank copies its receive buffer back and
 * compares it with what the peer sent.
 *
 * usage: gpu_pingpong [MAX_BYTES [ROUND_TRIPS [register|chaining]]]
 *   MAX_BYTES: 8 .. (K/M suffixes), 4M by default; ROUND_TRIPS: 0 (the default) is the bench's
 *   count. The published API lets the library choose the DMA mode: register mode for one
 *   request (seed 000 §3.5.2), as `--mode dma-register`; `chaining` forces chaining mode with
 *   the extension tcaDescSetMode, as `--mode dma`.
 * Ranks other than 0 and 1 only take part in the barriers.
 */
#include "hapacs.h"

static int round_trips(size_t size, int fixed) { return fixed ? fixed : size <= 65536 ? 100 : 10; }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());
    size_t max = argc > 1 ? hp_size(argv[1]) : (size_t)4 << 20;
    int fixed = argc > 2 ? atoi(argv[2]) : 0;
    const char *mode = argc > 3 ? argv[3] : "register";
    int chaining = strcmp(mode, "chaining") == 0;
    if (max < 8 || fixed < 0 || (!chaining && strcmp(mode, "register") != 0))
        hp_usage_error(rank, "usage: gpu_pingpong [MAX_BYTES (>= 8) [ROUND_TRIPS (>= 0) "
                             "[register|chaining]]]");
    if (nprocs < 2) hp_usage_error(rank, "gpu_pingpong: needs 2 ranks");
    int active = rank < 2, peer = 1 - rank;

    uint8_t *sbuf, *rbuf, *host = malloc(max);
    CUDA_SAFE_CALL(cudaMalloc((void **)&sbuf, max));
    CUDA_SAFE_CALL(cudaMalloc((void **)&rbuf, max));
    tcaHandle sh, rh, *all = malloc(sizeof(tcaHandle) * nprocs);
    TCA_SAFE_CALL(tcaCreateHandle(&sh, sbuf, max, tcaMemoryGPU));
    TCA_SAFE_CALL(tcaCreateHandle(&rh, rbuf, max, tcaMemoryGPU));
    hp_exchange(&rh, all);

    if (rank == 0) {
        printf("# TCA GPU-GPU ping-pong (DMA, %s mode, notification), %d ranks\n", mode, nprocs);
        printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    int sizes = 0;
    for (size_t size = 8; size <= max; size *= 2, sizes++) {
        int trips = round_trips(size, fixed);
        tcaDesc *desc = NULL;
        if (active) {
            hp_fill(host, size, (uint32_t)(size * 2 + rank));
            CUDA_SAFE_CALL(cudaMemcpy(sbuf, host, size, cudaMemcpyHostToDevice));
            desc = tcaDescNew();
            TCA_SAFE_CALL(tcaDescSetMemcpy(desc, &all[peer], 0, &sh, 0, size, tcaDMANotify, 0, rank));
            if (chaining) TCA_SAFE_CALL(tcaDescSetMode(desc, tcaDMAModeChaining));
            TCA_SAFE_CALL(tcaDescSet(desc, 0));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < trips && active; i++) {
            for (int turn = 0; turn < 2; turn++) {
                if (turn == rank) {
                    TCA_SAFE_CALL(tcaStartDMADesc(0));
                    /* The run is over long before the answer comes (the status register). */
                    TCA_SAFE_CALL(tcaWaitDMAC(0));
                } else {
                    TCA_SAFE_CALL(tcaWaitDMARecvDesc(&all[peer], 0, peer));
                }
            }
        }
        double us = (MPI_Wtime() - t0) * 1e6 / trips / 2;
        if (active) {
            TCA_SAFE_CALL(tcaDescFree(desc));
            CUDA_SAFE_CALL(cudaMemcpy(host, rbuf, size, cudaMemcpyDeviceToHost));
            size_t bad = hp_mismatch(host, size, (uint32_t)(size * 2 + peer));
            if (bad != size) {
                fprintf(stderr, "gpu_pingpong: rank %d: byte %zu of the %zu-byte message differs\n",
                        rank, bad, size);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        if (rank == 0) {
            printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) printf("# gpu_pingpong: payloads of %d sizes verified on both ranks\n", sizes);
    TCA_SAFE_CALL(tcaDestroyHandle(&sh));
    TCA_SAFE_CALL(tcaDestroyHandle(&rh));
    CUDA_SAFE_CALL(cudaFree(sbuf));
    CUDA_SAFE_CALL(cudaFree(rbuf));
    free(all);
    free(host);
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
