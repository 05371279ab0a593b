/*
 * The conjugate gradient method on an nd6k-shaped sparse SPD matrix (cg_matrix.h), rows
 * partitioned over the ranks, one GPU per node, as seed 001 measures it (slide "CG法の性能":
 * 1,000 iterations, 1 GPU per node, the time breakdown of process rank 0).
 *
 * Two variants run in the same program on the same data:
 *   TCA: the halo of p (below) by PEACH2 DMA between GPU buffers, one chain of at most two
 *        requests (one per neighbour, each with a notification) registered on channel 0 once
 *        before the loop and kicked every iteration; dot products by tcaCollAllreduce (8 B).
 *   MPI: the halo by MPI_Irecv / MPI_Isend / MPI_Waitall on the same GPU buffers; dot
 *        products by MPI_Allreduce.
 *
 * Partition: rows in pairs, as evenly as pairs allow (so that every DMA source and destination
 * share their low 4 address bits, as PEACH2 requires). With band half-width W (every non-zero
 * has |i - j| <= W) a rank needs only the last W entries of p of the rank before and the first
 * W of the rank after: p lives in one device array [W from the left | own rows | W from the
 * right], and the local matrix's columns are indices into it. Every rank must own >= W rows.
 *
 * Arrays (matrix, x, r, p, q) are device memory from cudaMalloc; device kernels are out of
 * scope of the simulated CUDA runtime (docs/cuda.md), so the sparse matrix-vector product and
 * the vector updates run in host code on them. On the simulator that computation costs no
 * simulated time unless the run has `--compute declared`: then each phase declares
 * (smpi_execute) the time a K20X would take to stream its data from its memory, at
 * K20X_BANDWIDTH: SPMV_BYTES per non-zero and 8 bytes per vector element read or written
 * (kernel launches and the copy of each dot product to the host are left out, so this is a
 * lower bound of a GPU's computation). On the shm fabric
 * the computation takes the time it takes on this host.
 *
 * Verification: rank 0 runs the same iterations serially on the whole matrix and compares the
 * gathered solution and the final residual norm of each variant with it (equal within
 * rounding: the sums of the dot products are ordered differently).
 *
 * usage: cg [ITERATIONS [ROWS NNZ BAND [SEED]]]   (1000, nd6k's 18000 6897316, 400, 1)
 */
#include <math.h>

#include "cg_matrix.h"
#include "hapacs.h"

#define K20X_BANDWIDTH 250e9 /* B/s; assumption: NVIDIA's K20X specification (seed 001: K20X) */
#define SPMV_BYTES 12        /* per non-zero: an 8-byte value and a 4-byte column index */
#define HALO_CHANNEL 0
#define TAG_LEFTWARD 0  /* p entries moving to the rank before */
#define TAG_RIGHTWARD 1 /* p entries moving to the rank after */
/* Verification against the serial run: max |x - x_serial| / max |x_serial|, and
 * | |r| - |r_serial| | / |b| (relative to b, since past convergence the residual is rounding). */
#define SOLUTION_TOLERANCE 1e-10
#define RESIDUAL_TOLERANCE 1e-12

enum { TCA, MPI };
enum { COMP, HALO, REDUCE, PARTS };
static const char *const VARIANT[] = {"TCA", "MPI"};
static const char *const PART[] = {"computation", "halo", "reduction"};

struct part {
    int rank, nprocs, rows, r0, r1, n, w; /* own rows [r0, r1) of rows, n = r1 - r0, w = band */
    int left, right;                /* neighbour ranks, -1 at the ends */
    long nnz;
    long *rowptr; /* device arrays */
    int *col;     /* indices into p: column - (r0 - w) */
    double *val, *x, *r, *p, *q;
};

/* Declared computation: seconds a K20X takes to stream `bytes` (simulator only). */
static void declare(double bytes)
{
#ifdef SMPI_SAMPLE_DELAY
    smpi_execute(bytes / K20X_BANDWIDTH);
#else
    (void)bytes;
#endif
}

static int rows_before(int rank, int nprocs, int n)
{
    int pairs = n / 2;
    return 2 * (rank * (pairs / nprocs) + (rank < pairs % nprocs ? rank : pairs % nprocs));
}

static void *dev_alloc(size_t bytes)
{
    void *p;
    CUDA_SAFE_CALL(cudaMalloc(&p, bytes ? bytes : 16));
    return p;
}

static void setup(struct part *P, const struct cg_shape *s, int rank, int nprocs)
{
    P->rank = rank, P->nprocs = nprocs, P->rows = s->n, P->w = s->band;
    P->r0 = rows_before(rank, nprocs, s->n), P->r1 = rows_before(rank + 1, nprocs, s->n);
    P->n = P->r1 - P->r0;
    P->left = rank > 0 ? rank - 1 : -1, P->right = rank + 1 < nprocs ? rank + 1 : -1;
    struct cg_rows m;
    if (cg_rows_build(s, P->r0, P->r1, &m)) {
        fprintf(stderr, "cg: out of memory building rows %d..%d\n", P->r0, P->r1);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    P->nnz = m.nnz;
    for (long k = 0; k < m.nnz; k++) m.col[k] -= P->r0 - P->w;
    P->rowptr = dev_alloc(sizeof(long) * (P->n + 1));
    P->col = dev_alloc(sizeof(int) * m.nnz);
    P->val = dev_alloc(sizeof(double) * m.nnz);
    CUDA_SAFE_CALL(cudaMemcpy(P->rowptr, m.rowptr, sizeof(long) * (P->n + 1), cudaMemcpyHostToDevice));
    CUDA_SAFE_CALL(cudaMemcpy(P->col, m.col, sizeof(int) * m.nnz, cudaMemcpyHostToDevice));
    CUDA_SAFE_CALL(cudaMemcpy(P->val, m.val, sizeof(double) * m.nnz, cudaMemcpyHostToDevice));
    cg_rows_free(&m);
    P->x = dev_alloc(sizeof(double) * P->n);
    P->r = dev_alloc(sizeof(double) * P->n);
    P->q = dev_alloc(sizeof(double) * P->n);
    P->p = dev_alloc(sizeof(double) * (P->n + 2 * P->w));
}

/* q = A p on the own rows (p with its halo). */
static void spmv(const struct part *P)
{
    for (int i = 0; i < P->n; i++) {
        double sum = 0;
        for (long k = P->rowptr[i]; k < P->rowptr[i + 1]; k++) sum += P->val[k] * P->p[P->col[k]];
        P->q[i] = sum;
    }
    declare((double)P->nnz * SPMV_BYTES + 8.0 * P->n);
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Rows of rank r. */
static int rows_of(const struct part *P, int r)
{
    return rows_before(r + 1, P->nprocs, P->rows) - rows_before(r, P->nprocs, P->rows);
}

/* ---- halo exchange of p ---- */

struct halo {
    int variant;
    tcaHandle mine, *all; /* TCA */
    tcaDesc *chain;
    int requests;
};

static void halo_setup(struct halo *h, const struct part *P, int variant)
{
    *h = (struct halo){.variant = variant};
    if (variant != TCA) return;
    size_t wb = sizeof(double) * P->w;
    h->all = malloc(sizeof(tcaHandle) * P->nprocs);
    TCA_SAFE_CALL(tcaCreateHandle(&h->mine, P->p, sizeof(double) * (P->n + 2 * P->w), tcaMemoryGPU));
    hp_exchange(&h->mine, h->all);
    h->chain = tcaDescNew();
    if (!h->chain) {
        fprintf(stderr, "cg: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (P->left >= 0) { /* my first W rows (index W) -> the left rank's right halo (W + its n) */
        off_t to = (off_t)(sizeof(double) * (P->w + rows_of(P, P->left)));
        TCA_SAFE_CALL(tcaDescSetMemcpy(h->chain, &h->all[P->left], to, &h->mine, (off_t)wb, wb, tcaDMANotify, 0,
                                       TAG_LEFTWARD));
        h->requests++;
    }
    if (P->right >= 0) { /* my last W rows (index n) -> the right rank's left halo (index 0) */
        TCA_SAFE_CALL(tcaDescSetMemcpy(h->chain, &h->all[P->right], 0, &h->mine, (off_t)(sizeof(double) * P->n), wb,
                                       tcaDMANotify, 0, TAG_RIGHTWARD));
        h->requests++;
    }
    if (h->requests) TCA_SAFE_CALL(tcaDescSet(h->chain, HALO_CHANNEL));
}

static void halo_exchange(struct halo *h, const struct part *P)
{
    if (h->variant == TCA) {
        if (!h->requests) return;
        TCA_SAFE_CALL(tcaStartDMADesc(HALO_CHANNEL));
        if (P->right >= 0) TCA_SAFE_CALL(tcaWaitDMARecvDesc(&h->all[P->right], 0, TAG_LEFTWARD));
        if (P->left >= 0) TCA_SAFE_CALL(tcaWaitDMARecvDesc(&h->all[P->left], 0, TAG_RIGHTWARD));
        TCA_SAFE_CALL(tcaWaitDMAC(HALO_CHANNEL));
        return;
    }
    MPI_Request req[4];
    MPI_Status status[4]; /* not MPI_STATUSES_IGNORE: GCC warns about it with MPICH */
    int k = 0;
    if (P->left >= 0) {
        MPI_Irecv(P->p, P->w, MPI_DOUBLE, P->left, TAG_RIGHTWARD, MPI_COMM_WORLD, &req[k++]);
        MPI_Isend(P->p + P->w, P->w, MPI_DOUBLE, P->left, TAG_LEFTWARD, MPI_COMM_WORLD, &req[k++]);
    }
    if (P->right >= 0) {
        MPI_Irecv(P->p + P->w + P->n, P->w, MPI_DOUBLE, P->right, TAG_LEFTWARD, MPI_COMM_WORLD, &req[k++]);
        MPI_Isend(P->p + P->n, P->w, MPI_DOUBLE, P->right, TAG_RIGHTWARD, MPI_COMM_WORLD, &req[k++]);
    }
    MPI_Waitall(k, req, status);
}

static void halo_free(struct halo *h)
{
    if (h->variant != TCA) return;
    TCA_SAFE_CALL(tcaDescFree(h->chain));
    MPI_Barrier(MPI_COMM_WORLD); /* no neighbour writes through the handle any more */
    TCA_SAFE_CALL(tcaDestroyHandle(&h->mine));
    free(h->all);
}

/* The sum over the ranks of one double. */
static double allreduce(int variant, double mine)
{
    double sum;
    if (variant == TCA) TCA_SAFE_CALL(tcaCollAllreduce(&mine, &sum, 1, TCA_DOUBLE, TCA_OP_SUM));
    else MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

/* ---- the solver ---- */

/* `iters` iterations from x = 0; returns r.r at the end; t[] gets this rank's times. */
static double cg_run(struct part *P, int variant, int iters, double t[PARTS])
{
    struct halo h;
    halo_setup(&h, P, variant);
    double *own_p = P->p + P->w;
    for (int i = 0; i < P->n; i++) {
        P->x[i] = 0;
        P->r[i] = own_p[i] = cg_rhs(P->r0 + i);
    }
    double rr = allreduce(variant, dot(P->r, P->r, P->n));
    for (int k = 0; k < PARTS; k++) t[k] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < iters; it++) {
        double a = MPI_Wtime();
        halo_exchange(&h, P);
        double b = MPI_Wtime();
        spmv(P);
        double pq_mine = dot(own_p, P->q, P->n);
        declare(16.0 * P->n); /* p.q: two reads */
        double c = MPI_Wtime();
        double pq = allreduce(variant, pq_mine);
        double d = MPI_Wtime();
        double alpha = rr / pq;
        for (int i = 0; i < P->n; i++) {
            P->x[i] += alpha * own_p[i];
            P->r[i] -= alpha * P->q[i];
        }
        double rr_mine = dot(P->r, P->r, P->n);
        declare(56.0 * P->n); /* x, r: read + write; p, q: read; r.r: read */
        double e = MPI_Wtime();
        double rr_new = allreduce(variant, rr_mine);
        double f = MPI_Wtime();
        double beta = rr_new / rr;
        rr = rr_new;
        for (int i = 0; i < P->n; i++) own_p[i] = P->r[i] + beta * own_p[i];
        declare(24.0 * P->n); /* p = r + beta p: two reads, a write */
        double g = MPI_Wtime();
        t[HALO] += b - a;
        t[REDUCE] += (d - c) + (f - e);
        t[COMP] += (c - b) + (e - d) + (g - f);
    }
    halo_free(&h);
    return rr;
}

/* The same iterations on the whole matrix in one process; x gets the solution, returns r.r. */
static double cg_serial(const struct cg_shape *s, int iters, double *x)
{
    struct cg_rows m;
    int n = s->n;
    double *r = malloc(sizeof(double) * n), *p = malloc(sizeof(double) * n), *q = malloc(sizeof(double) * n);
    if (!r || !p || !q || cg_rows_build(s, 0, n, &m)) {
        fprintf(stderr, "cg: out of memory for the serial reference\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < n; i++) x[i] = 0, r[i] = p[i] = cg_rhs(i);
    double rr = dot(r, r, n);
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < n; i++) {
            double sum = 0;
            for (long k = m.rowptr[i]; k < m.rowptr[i + 1]; k++) sum += m.val[k] * p[m.col[k]];
            q[i] = sum;
        }
        double alpha = rr / dot(p, q, n);
        for (int i = 0; i < n; i++) x[i] += alpha * p[i], r[i] -= alpha * q[i];
        double rr_new = dot(r, r, n), beta = rr_new / rr;
        rr = rr_new;
        for (int i = 0; i < n; i++) p[i] = r[i] + beta * p[i];
    }
    cg_rows_free(&m);
    free(r);
    free(p);
    free(q);
    return rr;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());
    if (argc != 1 && argc != 2 && argc != 5 && argc != 6)
        hp_usage_error(rank, "usage: cg [ITERATIONS [ROWS NNZ BAND [SEED]]]");
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    struct cg_shape s = {CG_ND6K_ROWS, CG_ND6K_NNZ, CG_DEFAULT_BAND, CG_DEFAULT_SEED};
    if (argc > 4) s.n = atoi(argv[2]), s.nnz = atol(argv[3]), s.band = atoi(argv[4]);
    if (argc > 5) s.seed = strtoull(argv[5], NULL, 10);
    const char *bad = cg_shape_check(&s);
    if (iters < 1) bad = "ITERATIONS must be at least 1";
    if (bad) {
        char line[160];
        snprintf(line, sizeof line, "cg: %s", bad);
        hp_usage_error(rank, line);
    }
    /* The last ranks own the fewest rows. */
    if (nprocs > 1 && rows_before(nprocs, nprocs, s.n) - rows_before(nprocs - 1, nprocs, s.n) < s.band)
        hp_usage_error(rank, "cg: every rank needs at least BAND rows (the halo reaches the next rank only)");

    struct part P;
    setup(&P, &s, rank, nprocs);
    double t[2][PARTS], rr[2], *x[2];
    int *counts = malloc(sizeof(int) * nprocs), *displs = malloc(sizeof(int) * nprocs);
    for (int r = 0; r < nprocs; r++) counts[r] = rows_of(&P, r), displs[r] = rows_before(r, nprocs, s.n);
    for (int v = 0; v < 2; v++) {
        rr[v] = cg_run(&P, v, iters, t[v]);
        double *mine = malloc(sizeof(double) * (P.n ? P.n : 1));
        CUDA_SAFE_CALL(cudaMemcpy(mine, P.x, sizeof(double) * P.n, cudaMemcpyDeviceToHost));
        x[v] = rank == 0 ? malloc(sizeof(double) * s.n) : NULL;
        MPI_Gatherv(mine, P.n, MPI_DOUBLE, x[v], counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        free(mine);
    }
    if (rank == 0) {
        printf("# CG, %d rows, %ld non-zeros, band %d, seed %llu, %d ranks (1 GPU each), %d iterations\n", s.n,
               s.nnz, s.band, (unsigned long long)s.seed, nprocs, iters);
        printf("# rank 0: %d rows, %ld non-zeros; time in seconds\n", P.n, P.nnz);
        printf("# %-8s %12s %12s %12s %12s\n", "variant", "total", PART[COMP], PART[HALO], PART[REDUCE]);
        for (int v = 0; v < 2; v++) {
            double total = t[v][COMP] + t[v][HALO] + t[v][REDUCE];
            printf("  %-8s %12.6f %12.6f %12.6f %12.6f\n", VARIANT[v], total, t[v][COMP], t[v][HALO], t[v][REDUCE]);
            printf("#row {\"series\": \"%s CG\", \"x\": %d, \"x_unit\": \"nodes\", \"value\": %.9f, \"unit\": \"s\", "
                   "\"rank\": 0, \"iterations\": %d}\n", VARIANT[v], nprocs, total, iters);
            for (int k = 0; k < PARTS; k++)
                printf("#row {\"series\": \"%s CG %s\", \"x\": %d, \"x_unit\": \"nodes\", \"value\": %.9f, "
                       "\"unit\": \"s\", \"rank\": 0, \"iterations\": %d}\n",
                       VARIANT[v], PART[k], nprocs, t[v][k], iters);
        }
        double *ref = malloc(sizeof(double) * s.n);
        double rr_ref = cg_serial(&s, iters, ref), scale = 0, bb = 0;
        for (int i = 0; i < s.n; i++) scale = fmax(scale, fabs(ref[i])), bb += cg_rhs(i) * cg_rhs(i);
        for (int v = 0; v < 2; v++) {
            double worst = 0;
            for (int i = 0; i < s.n; i++) worst = fmax(worst, fabs(x[v][i] - ref[i]));
            double dx = worst / scale, dr = fabs(sqrt(rr[v]) - sqrt(rr_ref)) / sqrt(bb);
            printf("# %s: |r| = %.6e (serial %.6e, difference / |b| %.1e), max |x - x_serial| / max |x| = %.1e\n",
                   VARIANT[v], sqrt(rr[v]), sqrt(rr_ref), dr, dx);
            if (!(dx <= SOLUTION_TOLERANCE) || !(dr <= RESIDUAL_TOLERANCE)) {
                fprintf(stderr, "cg: the %s variant differs from the serial run (tolerances %.0e, %.0e)\n",
                        VARIANT[v], SOLUTION_TOLERANCE, RESIDUAL_TOLERANCE);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        printf("# cg: both variants verified against a serial run (solution within %.0e, residual within %.0e)\n",
               SOLUTION_TOLERANCE, RESIDUAL_TOLERANCE);
        free(ref);
        free(x[0]);
        free(x[1]);
    }
    free(counts);
    free(displs);
    CUDA_SAFE_CALL(cudaFree(P.rowptr));
    CUDA_SAFE_CALL(cudaFree(P.col));
    CUDA_SAFE_CALL(cudaFree(P.val));
    CUDA_SAFE_CALL(cudaFree(P.x));
    CUDA_SAFE_CALL(cudaFree(P.r));
    CUDA_SAFE_CALL(cudaFree(P.q));
    CUDA_SAFE_CALL(cudaFree(P.p));
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
