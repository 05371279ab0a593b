/*
 * A 2-D Jacobi stencil on a PX x PY grid of ranks with the halo exchange over PEACH2 DMA
 * between GPU buffers, in the manner of the HA-PACS/TCA stencil programs: the exchange is one
 * chain (a request per neighbour, each with a notification) registered once before the loop
 * and kicked every iteration; the rank then waits for one notification per neighbour and for
 * its own channel.
 *
 * The global grid has NX x NY points inside a fixed border; each rank holds NX/PX x NY/PY of
 * them in GPU memory with a halo of one point, x fastest. Rows to the north and south
 * neighbours are contiguous (tcaDescSetMemcpy); columns to the east and west are block-stride
 * (tcaDescSetMemcpy2D: 8-byte bursts, pitch one row). NX / PX must be even, so that every
 * request's source and destination share their low 4 address bits as PEACH2 requires.
 *
 * Device kernels are out of scope of the simulated CUDA runtime (docs/cuda.md), so the sweep
 * (u' = average of the four neighbours) runs on the CPU between a cudaMemcpy of the block to
 * the host and one back. The copy back rewrites the halo too, so a barrier ends each iteration:
 * no neighbour writes the next halo before it is done.
 *
 * At the end rank 0 gathers the blocks (MPI_Gather), repeats the computation serially on the
 * whole grid and compares every point; both must be bit for bit equal.
 *
 * usage: stencil2d [PX PY [NX NY [ITERATIONS]]]    (MPI_Dims_create's grid, 256 x 256, 100)
 */
#include "hapacs.h"

/* The initial value of global point (x, y), border included (x = 0 and x = NX+1 are border). */
static double initial(int x, int y, int nx, int ny)
{
    if (x == 0) return 1.0;
    if (y == 0 || x == nx + 1 || y == ny + 1) return 0.0;
    return ((x * 7 + y * 13) % 17) / 16.0;
}

/* One sweep over the interior of a (w+2) x (h+2) array: out = mean of in's four neighbours. */
static void sweep(const double *in, double *out, int w, int h)
{
    int row = w + 2;
    for (int y = 1; y <= h; y++)
        for (int x = 1; x <= w; x++)
            out[y * row + x] = 0.25 * (in[y * row + x - 1] + in[y * row + x + 1] +
                                       in[(y - 1) * row + x] + in[(y + 1) * row + x]);
}

/* Jacobi on a (w+2) x (h+2) array: a and b hold the same border; the result ends in a. */
static void jacobi_serial(double *a, double *b, int w, int h, int iters)
{
    size_t bytes = sizeof(double) * (w + 2) * (h + 2);
    for (int it = 0; it < iters; it++) {
        sweep(a, b, w, h);
        memcpy(a, b, bytes);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());
    if (argc != 1 && argc != 3 && argc != 5 && argc != 6)
        hp_usage_error(rank, "usage: stencil2d [PX PY [NX NY [ITERATIONS]]]: PX and PY together, "
                             "NX and NY together");
    int dims[2] = {0, 0};
    MPI_Dims_create(nprocs, 2, dims);
    int px = argc > 2 ? atoi(argv[1]) : dims[0], py = argc > 2 ? atoi(argv[2]) : dims[1];
    int nx = argc > 4 ? atoi(argv[3]) : 256, ny = argc > 4 ? atoi(argv[4]) : 256;
    int iters = argc > 5 ? atoi(argv[5]) : 100;
    if (px < 1 || py < 1 || px * py != nprocs)
        hp_usage_error(rank, "stencil2d: PX x PY must equal the number of ranks");
    if (nx < px || ny < py || nx % px || ny % py)
        hp_usage_error(rank, "usage: stencil2d [PX PY [NX NY [ITERATIONS]]]: PX must divide NX "
                             "and PY divide NY");
    if (iters < 1)
        hp_usage_error(rank, "stencil2d: ITERATIONS must be at least 1");
    /* PEACH2 DMA needs source and destination to share their low 4 address bits (SYSTEMS.md
     * §1): with an even block width every row starts 16-byte aligned relative to the block. */
    if ((nx / px) % 2)
        hp_usage_error(rank, "stencil2d: NX / PX must be even (DMA source and destination share "
                             "their low 4 address bits)");
    int cx = rank % px, cy = rank / px, w = nx / px, h = ny / py, row = w + 2;
    size_t bytes = sizeof(double) * row * (h + 2);

    /* The block with its halo, from the global initial values. */
    double *host = malloc(bytes), *next = malloc(bytes), *u;
    for (int y = 0; y < h + 2; y++)
        for (int x = 0; x < row; x++)
            host[y * row + x] = initial(cx * w + x, cy * h + y, nx, ny);
    memcpy(next, host, bytes);
    CUDA_SAFE_CALL(cudaMalloc((void **)&u, bytes));
    CUDA_SAFE_CALL(cudaMemcpy(u, host, bytes, cudaMemcpyHostToDevice));
    tcaHandle me, *all = malloc(sizeof(tcaHandle) * nprocs);
    TCA_SAFE_CALL(tcaCreateHandle(&me, u, bytes, tcaMemoryGPU));
    hp_exchange(&me, all);

    /* Neighbours: north (+y), south, east (+x), west; -1 at the grid's edge. A request's tag
     * is the direction it travels, so the receiver waits for the opposite of where it points. */
    enum { NORTH, SOUTH, EAST, WEST };
    int nb[4] = {cy + 1 < py ? rank + px : -1, cy > 0 ? rank - px : -1,
                 cx + 1 < px ? rank + 1 : -1, cx > 0 ? rank - 1 : -1};
    const int opposite[4] = {SOUTH, NORTH, WEST, EAST};
    const off_t d = sizeof(double);
    size_t pitch = row * sizeof(double);
    tcaDesc *chain = tcaDescNew();
    int requests = 0;
    if (nb[NORTH] >= 0) /* my top row -> the north block's bottom halo */
        TCA_SAFE_CALL(tcaDescSetMemcpy(chain, &all[nb[NORTH]], d * (0 * row + 1), &me,
                                       d * (h * row + 1), w * sizeof(double), tcaDMANotify, 0, NORTH));
    if (nb[SOUTH] >= 0) /* my bottom row -> the south block's top halo */
        TCA_SAFE_CALL(tcaDescSetMemcpy(chain, &all[nb[SOUTH]], d * ((h + 1) * row + 1), &me,
                                       d * (1 * row + 1), w * sizeof(double), tcaDMANotify, 0, SOUTH));
    if (nb[EAST] >= 0) /* my east column -> the east block's west halo */
        TCA_SAFE_CALL(tcaDescSetMemcpy2D(chain, &all[nb[EAST]], d * (row + 0), pitch, &me,
                                         d * (row + w), pitch, sizeof(double), h, tcaDMANotify, 0, EAST));
    if (nb[WEST] >= 0) /* my west column -> the west block's east halo */
        TCA_SAFE_CALL(tcaDescSetMemcpy2D(chain, &all[nb[WEST]], d * (row + w + 1), pitch, &me,
                                         d * (row + 1), pitch, sizeof(double), h, tcaDMANotify, 0, WEST));
    for (int dir = 0; dir < 4; dir++) requests += nb[dir] >= 0;
    if (requests) TCA_SAFE_CALL(tcaDescSet(chain, 0));

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), exchange = 0;
    for (int it = 0; it < iters; it++) {
        double te = MPI_Wtime();
        if (requests) {
            TCA_SAFE_CALL(tcaStartDMADesc(0));
            for (int dir = 0; dir < 4; dir++)
                if (nb[dir] >= 0) TCA_SAFE_CALL(tcaWaitDMARecvDesc(&all[nb[dir]], 0, opposite[dir]));
            TCA_SAFE_CALL(tcaWaitDMAC(0));
        }
        exchange += MPI_Wtime() - te;
        CUDA_SAFE_CALL(cudaMemcpy(host, u, bytes, cudaMemcpyDeviceToHost));
        sweep(host, next, w, h);
        for (int y = 1; y <= h; y++) memcpy(host + y * row + 1, next + y * row + 1, w * sizeof(double));
        CUDA_SAFE_CALL(cudaMemcpy(u, host, bytes, cudaMemcpyHostToDevice));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double total = MPI_Wtime() - t0;

    /* Gather the interiors on rank 0 and compare with the serial computation. */
    double *mine = malloc(sizeof(double) * w * h), *blocks = NULL;
    for (int y = 0; y < h; y++) memcpy(mine + y * w, host + (y + 1) * row + 1, w * sizeof(double));
    if (rank == 0) blocks = malloc(sizeof(double) * nx * ny);
    MPI_Gather(mine, w * h, MPI_DOUBLE, blocks, w * h, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        int grow = nx + 2;
        double *a = malloc(sizeof(double) * grow * (ny + 2)), *b = malloc(sizeof(double) * grow * (ny + 2));
        for (int y = 0; y < ny + 2; y++)
            for (int x = 0; x < grow; x++) a[y * grow + x] = b[y * grow + x] = initial(x, y, nx, ny);
        jacobi_serial(a, b, nx, ny, iters);
        long wrong = 0;
        double sum = 0;
        for (int r = 0; r < nprocs; r++)
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int gx = (r % px) * w + x + 1, gy = (r / px) * h + y + 1;
                    wrong += blocks[(size_t)r * w * h + y * w + x] != a[gy * grow + gx];
                }
        for (int y = 1; y <= ny; y++)
            for (int x = 1; x <= nx; x++) sum += a[y * grow + x];
        printf("# TCA 2-D Jacobi stencil on GPU buffers, %d x %d ranks, %d x %d points, %d iterations\n",
               px, py, nx, ny, iters);
        printf("time per iteration (us):    %12.3f\n", total * 1e6 / iters);
        printf("halo exchange (us):         %12.3f\n", exchange * 1e6 / iters);
        if (wrong) {
            fprintf(stderr, "stencil2d: %ld of %d points differ from the serial computation\n", wrong,
                    nx * ny);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("# stencil2d: all %d points verified against a serial run (checksum %.9f)\n", nx * ny, sum);
        free(a);
        free(b);
        free(blocks);
    }
    TCA_SAFE_CALL(tcaDescFree(chain));
    TCA_SAFE_CALL(tcaDestroyHandle(&me));
    CUDA_SAFE_CALL(cudaFree(u));
    free(mine);
    free(host);
    free(next);
    free(all);
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
