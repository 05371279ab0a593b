/*
 * Collective benchmark, OSU style: the TCA collective library (tcaColl*) and the MPI collective
 * of the same operation, timed in the same run on the same buffers, both results verified
 * against a reference each rank computes locally.
 *
 * For each size: one verified call of each (output buffer cleared first), WARMUP untimed calls,
 * ITERATIONS timed calls (each call timed alone with MPI_Wtime, an MPI_Barrier after every
 * call, as osu_allreduce does), and a second check of the output after the last call. A
 * rank's latency is its mean time per call; rank 0 reports the mean, minimum and maximum of
 * the ranks' latencies (OSU's avg, min, max), TCA first, then MPI.
 *
 * Operations (root 0 where there is one, as OSU):
 *   allreduce, reduce  SIZE bytes of doubles, TCA_OP_SUM / MPI_SUM; the values are small
 *                      integers, so every summation order gives the exact reference;
 *   allgather          SIZE bytes per rank (the receive buffer holds SIZE x ranks);
 *   bcast              SIZE bytes from rank 0;
 *   barrier            no data; checked by every rank leaving after the last one entered.
 *
 * Output: a table on stdout and one `#row {...}` JSON line per result (python/tca/peach/cprog.py
 * reads them): series "TCA OP" and "MPI (IMPL) OP", x the size in bytes (the node count for the
 * barrier), value the mean latency [us], and extra keys min, max, nodes, op, memory, iterations.
 * IMPL is the MPI this program was built with: MVAPICH2 under SimGrid SMPI (its collective
 * selector, MVAPICH2-GDR costs on GPU buffers, docs/smpi.md), Open MPI or MPICH.
 *
 * usage: coll_bench [--op OP] [--sizes LOW:HIGH|A,B,...] [--iterations N] [--warmup N]
 *                   [--gpu] [--mpi-only] [--mpi-label NAME]
 * (defaults: allreduce, 8:1M, 50 iterations as seed 001's Allreduce, 5 warm-up calls, host
 * memory; LOW:HIGH is LOW, 2 LOW, 4 LOW ... up to HIGH; K and M suffixes.)
 */
#include <math.h>
#include <time.h>

#include "hapacs.h"

enum op { ALLREDUCE, ALLGATHER, BCAST, REDUCE, BARRIER };
static const char *const OPS[] = {"allreduce", "allgather", "bcast", "reduce", "barrier"};
enum { ROOT = 0 };

enum { MAX_SIZES = 64 };

struct config {
    enum op op;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int iterations, warmup;
    int gpu, mpi_only;
    const char *mpi_label;
};

/* Everything one size's calls work on: the buffers the collectives see (host or device), their
 * host copies, and the expected output. */
struct bench {
    const struct config *cfg;
    int rank, nprocs;
    size_t size;      /* bytes per rank (allgather), bytes in all (the others) */
    size_t in_bytes;  /* send buffer */
    size_t out_bytes; /* receive buffer (the broadcast buffer for bcast) */
    void *send, *recv;
    uint8_t *host;   /* the input (the root's data for bcast) */
    uint8_t *got;    /* a host copy of the output */
    uint8_t *expect; /* the reference output */
};

static const char *mpi_name(const struct config *cfg)
{
    if (cfg->mpi_label) return cfg->mpi_label;
#if defined(SMPI_H)
    return cfg->gpu ? "MVAPICH2-GDR" : "MVAPICH2";
#elif defined(OMPI_MAJOR_VERSION)
    return "Open MPI";
#elif defined(MPICH_VERSION)
    return "MPICH";
#else
    return "MPI";
#endif
}

static void usage(int rank, const char *why)
{
    if (rank == 0)
        fprintf(stderr, "coll_bench: %s (usage: coll_bench [--op allreduce|allgather|bcast|reduce|"
                        "barrier] [--sizes LOW:HIGH|A,B,...] [--iterations N] [--warmup N] "
                        "[--gpu] [--mpi-only] [--mpi-label NAME])\n", why);
    MPI_Finalize();
    exit(2);
}

static int positive(const char *text, int rank, const char *what)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < 0 || v > 1000000) {
        char why[96];
        snprintf(why, sizeof why, "%s '%s' is not a number from 0 to 1000000", what, text);
        usage(rank, why);
    }
    return (int)v;
}

/* --sizes LOW:HIGH (LOW, 2 LOW, 4 LOW ... up to HIGH) or a comma list; K and M suffixes. */
static void parse_sizes(struct config *c, const char *text, int rank)
{
    char buf[512], *save = NULL;
    const char *bad = "--sizes: expected LOW:HIGH or a comma list of positive sizes (K, M suffixes)";
    if (strlen(text) >= sizeof buf) usage(rank, bad);
    strcpy(buf, text);
    c->nsizes = 0;
    char *colon = strchr(buf, ':');
    if (colon) {
        *colon = 0;
        size_t lo = hp_size(buf), hi = hp_size(colon + 1);
        if (!lo || !hi || lo > hi) usage(rank, bad);
        for (size_t n = lo; n <= hi && c->nsizes < MAX_SIZES; n *= 2) c->sizes[c->nsizes++] = n;
        return;
    }
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t n = hp_size(t);
        if (!n || c->nsizes == MAX_SIZES) usage(rank, bad);
        c->sizes[c->nsizes++] = n;
    }
    if (c->nsizes == 0) usage(rank, bad);
}

static struct config parse(int argc, char **argv, int rank)
{
    struct config c = {.op = ALLREDUCE, .iterations = 50, .warmup = 5};
    parse_sizes(&c, "8:1M", rank);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--gpu")) { c.gpu = 1; continue; }
        if (!strcmp(a, "--mpi-only")) { c.mpi_only = 1; continue; }
        if (i + 1 >= argc) {
            char why[96];
            snprintf(why, sizeof why, "unknown option or missing value: '%s'", a);
            usage(rank, why);
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--op")) {
            int found = -1;
            for (int k = 0; k < 5; k++)
                if (!strcmp(v, OPS[k])) found = k;
            if (found < 0) usage(rank, "unknown --op");
            c.op = (enum op)found;
        } else if (!strcmp(a, "--sizes")) {
            parse_sizes(&c, v, rank);
        } else if (!strcmp(a, "--iterations")) {
            c.iterations = positive(v, rank, "--iterations");
        } else if (!strcmp(a, "--warmup")) {
            c.warmup = positive(v, rank, "--warmup");
        } else if (!strcmp(a, "--mpi-label")) {
            c.mpi_label = v;
        } else {
            char why[96];
            snprintf(why, sizeof why, "unknown option '%s'", a);
            usage(rank, why);
        }
    }
    if (c.iterations < 1) usage(rank, "--iterations must be at least 1");
    for (int k = 0; k < c.nsizes; k++)
        if ((c.op == ALLREDUCE || c.op == REDUCE) && c.sizes[k] % sizeof(double))
            usage(rank, "allreduce and reduce sizes must be multiples of 8 bytes (doubles)");
    if (c.op == BARRIER) c.nsizes = 1; /* no data: one measurement */
    return c;
}

/* The value element i of rank r contributes to a sum: a small integer, exact in a double. */
static double element(size_t size, int r, size_t i)
{
    return (double)((r + 1) * (int)(i % 13 + 1) + (int)(size % 7));
}

static uint32_t pattern(size_t size, int r) { return (uint32_t)(size * 31 + (size_t)r * 7 + 1); }

/* Fills the host copy of the send buffer and the expected output; returns nothing to check on
 * ranks that receive nothing (reduce off the root). */
static void prepare(struct bench *b)
{
    size_t n = b->size;
    switch (b->cfg->op) {
    case ALLREDUCE:
    case REDUCE: {
        double *in = (double *)b->host, *want = (double *)b->expect;
        for (size_t i = 0; i < n / sizeof(double); i++) {
            in[i] = element(n, b->rank, i);
            want[i] = 0;
            for (int r = 0; r < b->nprocs; r++) want[i] += element(n, r, i);
        }
        break;
    }
    case ALLGATHER:
        hp_fill(b->host, n, pattern(n, b->rank));
        for (int r = 0; r < b->nprocs; r++) hp_fill(b->expect + (size_t)r * n, n, pattern(n, r));
        break;
    case BCAST:
        hp_fill(b->expect, n, pattern(n, ROOT));
        memcpy(b->host, b->expect, n);
        break;
    case BARRIER:
        break;
    }
}

static void to_device(void *dst, const void *src, size_t n, int gpu)
{
    if (gpu) CUDA_SAFE_CALL(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
    else memcpy(dst, src, n);
}

static void from_device(void *dst, const void *src, size_t n, int gpu)
{
    if (gpu) CUDA_SAFE_CALL(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
    else memcpy(dst, src, n);
}

/* Sets the buffers up for a verified call: the input in place, the output cleared (on bcast
 * only the non-root ranks' buffer, which is the output). */
static void reset(struct bench *b)
{
    int gpu = b->cfg->gpu;
    if (b->cfg->op == BARRIER) return;
    if (b->cfg->op == BCAST) {
        if (b->rank == ROOT) to_device(b->recv, b->host, b->size, gpu);
        else if (gpu) CUDA_SAFE_CALL(cudaMemset(b->recv, 0, b->size));
        else memset(b->recv, 0, b->size);
        return;
    }
    to_device(b->send, b->host, b->in_bytes, gpu);
    if (gpu) CUDA_SAFE_CALL(cudaMemset(b->recv, 0, b->out_bytes));
    else memset(b->recv, 0, b->out_bytes);
}

static void call(const struct bench *b, int tca)
{
    size_t n = b->size, count = n / sizeof(double);
    switch (b->cfg->op) {
    case ALLREDUCE:
        if (tca) TCA_SAFE_CALL(tcaCollAllreduce(b->send, b->recv, count, TCA_DOUBLE, TCA_OP_SUM));
        else MPI_Allreduce(b->send, b->recv, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE:
        if (tca)
            TCA_SAFE_CALL(tcaCollReduce(b->send, b->recv, count, TCA_DOUBLE, TCA_OP_SUM, ROOT));
        else MPI_Reduce(b->send, b->recv, (int)count, MPI_DOUBLE, MPI_SUM, ROOT, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        if (tca) TCA_SAFE_CALL(tcaCollAllgather(b->send, b->recv, n));
        else MPI_Allgather(b->send, (int)n, MPI_BYTE, b->recv, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        break;
    case BCAST:
        if (tca) TCA_SAFE_CALL(tcaCollBcast(b->recv, n, ROOT));
        else MPI_Bcast(b->recv, (int)n, MPI_BYTE, ROOT, MPI_COMM_WORLD);
        break;
    case BARRIER:
        if (tca) TCA_SAFE_CALL(tcaCollBarrier());
        else MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

/* Stops every rank if this rank's output differs from the reference. */
static void verify(const struct bench *b, const char *who, const char *when)
{
    if (b->cfg->op == BARRIER || (b->cfg->op == REDUCE && b->rank != ROOT)) return;
    size_t n = b->cfg->op == BCAST ? b->size : b->out_bytes;
    uint8_t *got = b->got;
    from_device(got, b->recv, n, b->cfg->gpu);
    for (size_t i = 0; i < n; i++) {
        if (got[i] != b->expect[i]) {
            fprintf(stderr, "coll_bench: %s %s, %zu B, rank %d, %s: byte %zu is %u, expected %u\n",
                    who, OPS[b->cfg->op], b->size, b->rank, when, i, got[i], b->expect[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* A clock every rank reads alike: SMPI's virtual time on the simulator, this host's monotonic
 * clock on the shm fabric (Open MPI's MPI_Wtime counts from each process's own start). */
static double shared_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The barrier's check: no rank leaves before the last one entered. */
static void verify_barrier(const struct bench *b, int tca)
{
    double times[2], all[2 * 16];
    times[0] = shared_clock();
    call(b, tca);
    times[1] = shared_clock();
    MPI_Allgather(times, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    double last_in = 0;
    for (int r = 0; r < b->nprocs; r++) last_in = fmax(last_in, all[2 * r]);
    if (times[1] < last_in) {
        fprintf(stderr, "coll_bench: %s barrier: rank %d left at %.9f s, before the last rank "
                        "entered at %.9f s\n", tca ? "TCA" : "MPI", b->rank, times[1], last_in);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* OSU: each call timed alone, a barrier after it; returns this rank's mean per call [us]. */
static double timed(const struct bench *b, int tca)
{
    double total = 0;
    int n = b->cfg->warmup + b->cfg->iterations;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        double t0 = MPI_Wtime();
        call(b, tca);
        double t = MPI_Wtime() - t0;
        if (i >= b->cfg->warmup) total += t;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return total * 1e6 / b->cfg->iterations;
}

struct latency { double avg, min, max; };

/* One implementation at one size: verified call, timed calls, verified again. */
static struct latency measure(struct bench *b, int tca)
{
    const char *who = tca ? "TCA" : "MPI";
    reset(b);
    MPI_Barrier(MPI_COMM_WORLD); /* every output is cleared before anyone writes into it */
    if (b->cfg->op == BARRIER) verify_barrier(b, tca);
    else call(b, tca);
    verify(b, who, "first call");
    double us = timed(b, tca);
    verify(b, who, "after the timed calls");
    struct latency l;
    MPI_Reduce(&us, &l.avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&us, &l.min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&us, &l.max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    l.avg /= b->nprocs;
    return l;
}

static void row(const struct bench *b, const char *series, double x, const char *x_unit,
                struct latency l)
{
    printf("#row {\"series\": \"%s\", \"x\": %.0f, \"x_unit\": \"%s\", \"value\": %.6f, "
           "\"unit\": \"us\", \"min\": %.6f, \"max\": %.6f, \"nodes\": %d, \"op\": \"%s\", "
           "\"memory\": \"%s\", \"iterations\": %d}\n",
           series, x, x_unit, l.avg, l.min, l.max, b->nprocs, OPS[b->cfg->op],
           b->cfg->gpu ? "gpu" : "host", b->cfg->iterations);
}

static void report(const struct bench *b, struct latency tca, struct latency mpi)
{
    const struct config *c = b->cfg;
    const char *op = OPS[c->op];
    int barrier = c->op == BARRIER;
    double x = barrier ? b->nprocs : (double)b->size;
    const char *x_unit = barrier ? "nodes" : "B";
    char series[96];
    if (c->mpi_only) printf("%-10.0f %12s %12s %12.3f %12.3f %9s\n", x, "-", "-", mpi.avg, mpi.max, "-");
    else printf("%-10.0f %12.3f %12.3f %12.3f %12.3f %9.3f\n", x, tca.avg, tca.max, mpi.avg,
                mpi.max, tca.avg / mpi.avg);
    if (!c->mpi_only) {
        snprintf(series, sizeof series, "TCA %s", op);
        row(b, series, x, x_unit, tca);
    }
    snprintf(series, sizeof series, "MPI (%s) %s", mpi_name(c), op);
    row(b, series, x, x_unit, mpi);
    fflush(stdout);
}

static void *alloc(size_t n, int gpu)
{
    void *p = NULL;
    if (gpu) CUDA_SAFE_CALL(cudaMalloc(&p, n ? n : 1));
    else if (!(p = malloc(n ? n : 1))) {
        fprintf(stderr, "coll_bench: out of memory (%zu B)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void release(void *p, int gpu)
{
    if (gpu) CUDA_SAFE_CALL(cudaFree(p));
    else free(p);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    struct config cfg = parse(argc, argv, rank);
    if (nprocs > 16) usage(rank, "at most 16 ranks (one PEACH2 sub-cluster, seed 000 §2.2)");
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());

    if (rank == 0) {
        printf("# coll_bench %s: TCA (tcaColl) vs MPI (%s), %d ranks, %s buffers, %d iterations "
               "after %d warm-up calls; latency per call, mean and max over ranks\n",
               OPS[cfg.op], mpi_name(&cfg), nprocs, cfg.gpu ? "GPU" : "host", cfg.iterations,
               cfg.warmup);
        printf("# %-8s %12s %12s %12s %12s %9s\n", cfg.op == BARRIER ? "Nodes" : "Size (B)",
               "TCA avg(us)", "TCA max(us)", "MPI avg(us)", "MPI max(us)", "TCA/MPI");
        fflush(stdout);
    }
    int checked = 0;
    for (int k = 0; k < cfg.nsizes; k++) {
        size_t size = cfg.sizes[k];
        struct bench b = {&cfg, rank, nprocs, size, 0, 0, NULL, NULL, NULL, NULL, NULL};
        int op = cfg.op;
        b.in_bytes = op == BARRIER || op == BCAST ? 0 : size;
        b.out_bytes = op == BARRIER ? 0 : op == ALLGATHER ? size * (size_t)nprocs : size;
        if (op != BCAST && op != BARRIER) b.send = alloc(b.in_bytes, cfg.gpu);
        b.recv = alloc(b.out_bytes, cfg.gpu);
        b.host = malloc(size + 1);
        b.got = malloc(b.out_bytes + 1);
        b.expect = malloc(b.out_bytes + 1);
        if (!b.host || !b.got || !b.expect) {
            fprintf(stderr, "coll_bench: out of memory (%zu B)\n", 3 * b.out_bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        prepare(&b);
        struct latency tca = {0, 0, 0};
        if (!cfg.mpi_only) tca = measure(&b, 1);
        struct latency mpi = measure(&b, 0);
        if (rank == 0) report(&b, tca, mpi);
        if (b.send) release(b.send, cfg.gpu);
        release(b.recv, cfg.gpu);
        free(b.host);
        free(b.got);
        free(b.expect);
        checked++;
    }
    if (rank == 0)
        printf("# coll_bench %s: %d size(s) verified on every rank (%s)\n", OPS[cfg.op], checked,
               cfg.mpi_only ? "MPI" : "TCA and MPI");
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
