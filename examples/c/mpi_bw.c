/*
 * MPI point-to-point bandwidth, in the manner of osu_bw: rank 0 posts a window of MPI_Isend of
 * SIZE bytes to rank 1, which has a window of MPI_Irecv posted; after each window rank 1
 * answers with a 4-byte message; ITERS windows after WARMUP windows. Rank 0 prints one line:
 * "<size> <bytes moved> <seconds>", seconds from the first timed send to the last ack.
 * The baseline "Open MPI TCP k links" of `hxb-net-bench bandwidth` runs it (docs/hxb.md).
 *
 * usage: mpi_bw SIZE ITERS [WINDOW] [WARMUP]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long arg(int argc, char **argv, int i, long dflt)
{
    return argc > i ? strtol(argv[i], NULL, 0) : dflt;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long size = arg(argc, argv, 1, 0), iters = arg(argc, argv, 2, 0);
    long window = arg(argc, argv, 3, 64), warmup = arg(argc, argv, 4, 2);
    if (n != 2 || size < 1 || size > (1L << 26) || iters < 1 || window < 1 || window > 1024 || warmup < 0) {
        if (me == 0)
            fprintf(stderr, "usage: mpirun -n 2 mpi_bw SIZE(1..64M) ITERS(>0) [WINDOW(1..1024)] [WARMUP]\n");
        MPI_Finalize();
        return 2;
    }
    char *buf = malloc((size_t)size);
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)window);
    if (!buf || !req) {
        fprintf(stderr, "mpi_bw: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, me + 1, (size_t)size);
    int ack = 0;
    double start = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long it = 0; it < warmup + iters; it++) {
        if (it == warmup)
            start = MPI_Wtime();
        for (long w = 0; w < window; w++) {
            if (me == 0)
                MPI_Isend(buf, (int)size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, &req[w]);
            else
                MPI_Irecv(buf, (int)size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, &req[w]);
        }
        MPI_Waitall((int)window, req, MPI_STATUSES_IGNORE);
        if (me == 0)
            MPI_Recv(&ack, 1, MPI_INT, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(&ack, 1, MPI_INT, 0, 101, MPI_COMM_WORLD);
    }
    double took = MPI_Wtime() - start;
    if (me == 0)
        printf("%ld %ld %.9f\n", size, size * window * iters, took);
    free(req);
    free(buf);
    MPI_Finalize();
    return 0;
}
