/*
 * The halo exchange of a Wilson-Dirac operator on an 8^4 lattice over a PX x PY process grid
 * (x, y distributed and periodic; z, t local), through the RMA layer of rma.h with each back
 * end, against plain MPI point-to-point (Isend/Irecv/Waitall) on the same buffers, in the
 * manner of seed 001's QUDA on TCA (slides "QUDA Library", "QUDA Small Model (8^4)").
 *
 * Message length: seed 001 gives "各次元のメッセージ長 = 2 × (24KB / 各次元のノード数)", taken
 * literally: in a dimension of P > 1 nodes a rank sends one face of 24 KB / P forward and one
 * backward (24 KB = 8^3 sites x 6 complex numbers of a spin-projected half spinor x 8 bytes in
 * single precision). A dimension of one node wraps around inside the rank and sends nothing.
 * Only the communication is modelled: faces are filled with a pattern, not packed from a field.
 *
 * Buffers are device memory (cudaMalloc): for each distributed dimension and direction a send
 * face and a receive ghost. Each method runs WARMUP exchanges, then ITERATIONS timed ones;
 * the time per exchange is the slowest rank's mean. After each method every ghost is compared
 * with the face its neighbour sent (the reference is recomputed from the pattern), and a
 * checksum of all ghosts of all ranks is printed: the methods must agree on it.
 *
 * usage: qcd_halo PX PY [ITERATIONS [METHODS]]   METHODS: a comma list of tca, mpi-fence,
 *        mpi-pscw, p2p (default all)
 */
#include "hapacs.h"
#include "rma.h"

#define FACE_BYTES (24 * 1024) /* seed 001: 24 KB per dimension before division */
#define WARMUP 10
#define METHODS (RMA_BACKENDS + 1)
#define P2P RMA_BACKENDS /* the method after the RMA back ends */

enum { FWD, BWD };

struct layout {
    int dims;              /* distributed dimensions with more than one node (0..2) */
    int dim[2];            /* which: 0 = x, 1 = y */
    int nb[2][2];          /* neighbour rank by [k][FWD/BWD] */
    size_t bytes[2];       /* one face in dimension dim[k] */
    size_t face[2][2];     /* offset of the send face [k][dir] */
    size_t ghost[2][2];    /* offset of the receive ghost [k][dir]: data from neighbour [k][dir] */
    size_t total;
};

/* The pattern seed of the face rank r sends in dimension d, direction dir. */
static uint32_t face_seed(int r, int d, int dir) { return (uint32_t)(r * 4 + d * 2 + dir + 1); }

static struct layout plan(int px, int py, int rank)
{
    struct layout l = {0};
    int p[2] = {px, py}, c[2] = {rank % px, rank / px};
    size_t off = 0;
    for (int d = 0; d < 2; d++) {
        if (p[d] == 1) continue;
        int k = l.dims++;
        l.dim[k] = d;
        l.bytes[k] = FACE_BYTES / p[d];
        for (int dir = 0; dir < 2; dir++) {
            int cc[2] = {c[0], c[1]};
            cc[d] = (c[d] + (dir == FWD ? 1 : p[d] - 1)) % p[d];
            l.nb[k][dir] = cc[0] + px * cc[1];
            l.face[k][dir] = off, off += l.bytes[k];
            l.ghost[k][dir] = off, off += l.bytes[k];
        }
    }
    l.total = off ? off : 64;
    return l;
}

/* What the ghost [k][dir] must hold: the face the neighbour in direction dir sent the other
 * way. */
static uint32_t ghost_seed(const struct layout *l, int k, int dir)
{
    return face_seed(l->nb[k][dir], l->dim[k], dir == FWD ? BWD : FWD);
}

static void p2p_exchange(const struct layout *l, char *buf)
{
    MPI_Request req[8];
    MPI_Status status[8]; /* not MPI_STATUSES_IGNORE: GCC warns about it with MPICH */
    int n = 0;
    for (int k = 0; k < l->dims; k++)
        for (int dir = 0; dir < 2; dir++) {
            /* Tag: the direction the data travels; ghost [dir] receives what moved the other way. */
            int travel = dir == FWD ? BWD : FWD;
            MPI_Irecv(buf + l->ghost[k][dir], (int)l->bytes[k], MPI_BYTE, l->nb[k][dir], k * 2 + travel,
                      MPI_COMM_WORLD, &req[n++]);
        }
    for (int k = 0; k < l->dims; k++)
        for (int dir = 0; dir < 2; dir++)
            MPI_Isend(buf + l->face[k][dir], (int)l->bytes[k], MPI_BYTE, l->nb[k][dir], k * 2 + dir,
                      MPI_COMM_WORLD, &req[n++]);
    MPI_Waitall(n, req, status);
}

/* Runs `iters` exchanges of one method; returns the slowest rank's mean time [s]. */
static double run_method(int method, const struct layout *l, char *dev, int iters)
{
    rma_win *w = NULL;
    if (method != P2P) {
        w = rma_win_create((rma_backend)method, dev, l->total, 1);
        for (int k = 0; k < l->dims; k++)
            for (int dir = 0; dir < 2; dir++) {
                /* My face [dir] lands in the neighbour's ghost of the opposite direction. */
                int back = dir == FWD ? BWD : FWD;
                rma_put(w, l->nb[k][dir], l->ghost[k][back], l->face[k][dir], l->bytes[k]);
            }
        rma_commit(w);
    }
    double t = 0;
    for (int i = 0; i < WARMUP + iters; i++) {
        if (i == WARMUP) {
            MPI_Barrier(MPI_COMM_WORLD);
            t = MPI_Wtime();
        }
        if (w) rma_epoch(w);
        else p2p_exchange(l, dev);
    }
    double mine = (MPI_Wtime() - t) / iters, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (w) rma_win_free(w);
    return slowest;
}

/* FNV-1a over bytes. */
static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());
    const char *usage = "usage: qcd_halo PX PY [ITERATIONS [METHODS]] (METHODS: comma list of tca, "
                        "mpi-fence, mpi-pscw, p2p)";
    if (argc < 3) hp_usage_error(rank, usage);
    int px = atoi(argv[1]), py = atoi(argv[2]), iters = argc > 3 ? atoi(argv[3]) : 100;
    if (px < 1 || py < 1 || px * py != nprocs)
        hp_usage_error(rank, "qcd_halo: PX x PY must equal the number of ranks");
    /* A face of 24 KB / P in the RMA layer's 16-byte units: P = 1, 2, 3, 4, 6 or 8. */
    for (int d = 0; d < 2; d++) {
        int p = d ? py : px;
        if (p > 8 || FACE_BYTES % p != 0 || FACE_BYTES / p % 16 != 0)
            hp_usage_error(rank, "qcd_halo: PX and PY must each be 1, 2, 3, 4, 6 or 8 "
                                 "(a face of 24 KB / P in 16-byte units)");
    }
    if (iters < 1) hp_usage_error(rank, "qcd_halo: ITERATIONS >= 1");
    int use[METHODS] = {0};
    char list[128];
    snprintf(list, sizeof list, "%s", argc > 4 ? argv[4] : "tca,mpi-fence,mpi-pscw,p2p");
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        rma_backend b;
        if (strcmp(tok, "p2p") == 0) use[P2P] = 1;
        else if (rma_backend_parse(tok, &b) == 0) use[b] = 1;
        else hp_usage_error(rank, usage);
    }
    int methods = 0;
    for (int m = 0; m < METHODS; m++) methods += use[m];
    if (methods == 0) hp_usage_error(rank, usage);

    struct layout l = plan(px, py, rank);
    char *dev, *host = malloc(l.total);
    CUDA_SAFE_CALL(cudaMalloc((void **)&dev, l.total));
    static const char *const series[METHODS] = {"TCA RMA", "MPI-3 RMA fence", "MPI-3 RMA PSCW", "MPI P2P"};
    double time[METHODS] = {0};
    uint64_t sums[METHODS] = {0};
    if (rank == 0) {
        printf("# Wilson-Dirac halo exchange, 8^4 lattice, %d x %d ranks (x, y), %d exchanges\n", px, py, iters);
        printf("# per exchange: ");
        for (int k = 0; k < l.dims; k++)
            printf("%s2 x %zu B in %c", k ? ", " : "", l.bytes[k], "xy"[l.dim[k]]);
        printf("%s\n", l.dims ? "" : "nothing (one rank)");
        printf("# %-18s %12s\n", "method", "time (us)");
    }
    for (int m = 0; m < METHODS; m++) {
        if (!use[m]) continue;
        /* Faces from the pattern, ghosts zero: no method sees another's data. */
        memset(host, 0, l.total);
        for (int k = 0; k < l.dims; k++)
            for (int dir = 0; dir < 2; dir++)
                hp_fill((uint8_t *)host + l.face[k][dir], l.bytes[k], face_seed(rank, l.dim[k], dir));
        CUDA_SAFE_CALL(cudaMemcpy(dev, host, l.total, cudaMemcpyHostToDevice));
        time[m] = run_method(m, &l, dev, iters);
        CUDA_SAFE_CALL(cudaMemcpy(host, dev, l.total, cudaMemcpyDeviceToHost));
        uint64_t h = 14695981039346656037ull;
        for (int k = 0; k < l.dims; k++)
            for (int dir = 0; dir < 2; dir++) {
                const uint8_t *g = (uint8_t *)host + l.ghost[k][dir];
                size_t at = hp_mismatch(g, l.bytes[k], ghost_seed(&l, k, dir));
                if (at != l.bytes[k]) {
                    fprintf(stderr, "qcd_halo: %s: rank %d: ghost %c%s differs from the neighbour's face at byte %zu\n",
                            series[m], rank, "xy"[l.dim[k]], dir == FWD ? "+" : "-", at);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                h = fnv(h, g, l.bytes[k]);
            }
        uint64_t *all = rank == 0 ? malloc(sizeof(uint64_t) * nprocs) : NULL;
        MPI_Gather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            sums[m] = fnv(14695981039346656037ull, (const uint8_t *)all, sizeof(uint64_t) * nprocs);
            free(all);
            printf("  %-18s %12.3f\n", series[m], time[m] * 1e6);
            printf("#row {\"series\": \"%s halo\", \"x\": %d, \"x_unit\": \"nodes\", \"value\": %.6f, "
                   "\"unit\": \"us\", \"grid\": \"%dx%d\", \"face_bytes\": [%zu, %zu]}\n",
                   series[m], nprocs, time[m] * 1e6, px, py, l.dims > 0 ? l.bytes[0] : 0,
                   l.dims > 1 ? l.bytes[1] : 0);
        }
    }
    if (rank == 0) {
        uint64_t first = 0;
        for (int m = 0; m < METHODS; m++) {
            if (!use[m]) continue;
            if (first && sums[m] != first) {
                fprintf(stderr, "qcd_halo: %s's ghosts differ from the first method's\n", series[m]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            first = sums[m];
        }
        if (use[P2P] && use[RMA_TCA] && time[RMA_TCA] > 0)
            printf("#row {\"series\": \"MPI P2P / TCA RMA\", \"x\": %d, \"x_unit\": \"nodes\", \"value\": %.6f, "
                   "\"unit\": \"x\", \"grid\": \"%dx%d\"}\n",
                   nprocs, time[P2P] / time[RMA_TCA], px, py);
        printf("# qcd_halo: every ghost verified against its neighbour's face; methods agree (checksum %016llx)\n",
               (unsigned long long)first);
    }
    CUDA_SAFE_CALL(cudaFree(dev));
    free(host);
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
