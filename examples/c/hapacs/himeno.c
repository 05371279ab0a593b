/*
 * The Himeno benchmark (3-D Jacobi, 19-point Poisson, single precision) on a PI x PJ grid of
 * ranks with its arrays in GPU memory, in the manner of the XcalableACC Himeno runs on
 * HA-PACS/TCA (seed 001 "XcalableACCの性能評価一例"; seed 000 §3.7). Both halo exchanges run in
 * one program, one after the other from the same initial values:
 *   TCA: reflect(p) (reflect.h): one DMA chain built at the first call, kicked every iteration,
 *        block-stride for the i-k faces, then the barrier after the DMA;
 *   MPI: MPI_Isend / MPI_Irecv on GPU buffers, the strided faces packed (himeno_mpi.h).
 * An iteration is: halo exchange of p, the sweep (wrk2 and the local residual), p = wrk2, the
 * residual gosa summed over the ranks. The residual is gathered (MPI_Allgather of each rank's
 * double) and summed in rank order, so every rank, fabric and MPI gets the same bits.
 *
 * Device kernels are out of scope of the simulated CUDA runtime (docs/cuda.md): the sweep runs
 * as host code on the GPU buffers, and each kernel is charged `-l` microseconds plus its
 * device-memory bytes at `-b` GB/s with smpi_execute (simulator, `tca run --compute declared`);
 * on the shm fabric the host code's own time is measured. The partial residual goes to the
 * host by cudaMemcpy, as from a reduction kernel.
 *
 * With -v 1 (default) rank 0 also runs the serial benchmark on the whole grid and checks
 * that every point of p equals it bit for bit after each variant, and gosa within 1e-10
 * (relative: the sums run in another order).
 *
 * usage: himeno [-s SIZE] [-n ITERATIONS] [-g PIxPJ] [-i official|varied] [-b GB/s] [-l us]
 *               [-v 0|1]
 *   SIZE: XS, S, M, L, XL or IxJxK (points, boundary included); default S, 10 iterations,
 *   MPI_Dims_create's grid, official initial values, no charged kernel time.
 */
#include <math.h>
#include <unistd.h>

#include "hapacs.h"
#include "himeno.h"
#include "himeno_mpi.h"
#include "reflect.h"

static double gpu_bytes_per_s = 0, launch_s = 0;

void hm_kernel(double bytes)
{
    if (gpu_bytes_per_s <= 0) return;
#ifdef SMPI_SAMPLE_DELAY /* SimGrid SMPI: declared time (tca run --compute declared) */
    smpi_execute(launch_s + bytes / gpu_bytes_per_s);
#else
    (void)bytes;
#endif
}

typedef struct {
    double halo, barrier, compute, reduce, total, first_halo, gosa;
} times;

/* Allocates the 14 arrays of a block in GPU memory. */
static void alloc_device(hm_arrays *m, size_t bytes)
{
    float **all[HM_ARRAYS] = {&m->a[0], &m->a[1], &m->a[2], &m->a[3], &m->b[0], &m->b[1], &m->b[2],
                              &m->c[0], &m->c[1], &m->c[2], &m->bnd, &m->wrk1, &m->wrk2, &m->p};
    for (int n = 0; n < HM_ARRAYS; n++) CUDA_SAFE_CALL(cudaMalloc((void **)all[n], bytes));
}

static void free_device(hm_arrays *m)
{
    float *all[HM_ARRAYS] = {m->a[0], m->a[1], m->a[2], m->a[3], m->b[0], m->b[1], m->b[2],
                             m->c[0], m->c[1], m->c[2], m->bnd, m->wrk1, m->wrk2, m->p};
    for (int n = 0; n < HM_ARRAYS; n++) CUDA_SAFE_CALL(cudaFree(all[n]));
}

/* The serial benchmark on the whole grid (host memory); returns the last iteration's gosa. */
static double serial(const hm_size *s, hm_init init, int iters, hm_arrays *g, hm_layout *gl)
{
    hm_layout_init(gl, s, 1, 1, 0);
    size_t n = hm_elems(gl);
    float *block = malloc(sizeof(float) * n * HM_ARRAYS);
    if (!block) {
        fprintf(stderr, "himeno: no memory for the serial reference (%zu MB)\n", n * HM_ARRAYS * 4 >> 20);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float **all[HM_ARRAYS] = {&g->a[0], &g->a[1], &g->a[2], &g->a[3], &g->b[0], &g->b[1], &g->b[2],
                              &g->c[0], &g->c[1], &g->c[2], &g->bnd, &g->wrk1, &g->wrk2, &g->p};
    for (int a = 0; a < HM_ARRAYS; a++) *all[a] = block + a * n;
    hm_fill(g, gl, s, init);
    double gosa = 0;
    for (int it = 0; it < iters; it++) {
        gosa = hm_sweep(g, gl);
        hm_copy_back(g, gl);
    }
    return gosa;
}

/* Runs one variant (tca: reflect, else MPI) for iters iterations from the initial values. */
static times run(int tca, hm_arrays *m, const hm_layout *l, const hm_size *s, hm_init init, int iters,
                 double *gosa_dev, int nprocs)
{
    hm_fill(m, l, s, init);
    hm_mpi mpi;
    if (!tca && hm_mpi_init(&mpi, m->p, l)) {
        fprintf(stderr, "himeno: cudaMalloc of the packing buffers failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *parts = malloc(sizeof(double) * nprocs);
    size_t points = (size_t)l->li * l->lj * (l->nk - 2);
    times t = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < iters; it++) {
        double t0 = MPI_Wtime();
        if (tca) TCA_SAFE_CALL(reflect(m->p));
        else if (hm_mpi_exchange(&mpi)) MPI_Abort(MPI_COMM_WORLD, 1);
        double t1 = MPI_Wtime();
        double part = hm_sweep(m, l);
        hm_kernel(points * (HM_BYTES_PER_POINT - 8));
        hm_copy_back(m, l);
        hm_kernel(points * 8.0);
        memcpy(gosa_dev, &part, sizeof part); /* the reduction kernel's result */
        CUDA_SAFE_CALL(cudaMemcpy(&part, gosa_dev, sizeof part, cudaMemcpyDeviceToHost));
        double t2 = MPI_Wtime();
        MPI_Allgather(&part, 1, MPI_DOUBLE, parts, 1, MPI_DOUBLE, MPI_COMM_WORLD);
        t.gosa = 0;
        for (int r = 0; r < nprocs; r++) t.gosa += parts[r];
        double t3 = MPI_Wtime();
        if (it == 0) t.first_halo = t1 - t0;
        /* Steady state: the first iteration (chain built, buffers touched) only if it is the only one. */
        if (it > 0 || iters == 1)
            t.halo += t1 - t0, t.barrier += tca ? reflect_last_barrier() : 0, t.compute += t2 - t1, t.reduce += t3 - t2, t.total += t3 - t0;
    }
    int counted = iters > 1 ? iters - 1 : 1;
    t.halo /= counted, t.barrier /= counted, t.compute /= counted, t.reduce /= counted, t.total /= counted;
    if (!tca) hm_mpi_free(&mpi);
    free(parts);
    return t;
}

/* Rank 0 compares every rank's interior of p with the serial grid; returns the wrong points. */
static long verify(const hm_arrays *m, const hm_layout *l, const hm_size *s, int rank, int nprocs,
                   const hm_arrays *g, const hm_layout *gl)
{
    size_t n = hm_elems(l);
    float *mine = malloc(sizeof(float) * n);
    CUDA_SAFE_CALL(cudaMemcpy(mine, m->p, sizeof(float) * n, cudaMemcpyDeviceToHost));
    long wrong = 0;
    if (rank != 0) {
        MPI_Send(mine, (int)n, MPI_FLOAT, 0, 99, MPI_COMM_WORLD);
    } else {
        for (int r = 0; r < nprocs; r++) {
            hm_layout o;
            hm_layout_init(&o, s, l->pi, l->pj, r);
            float *got = mine;
            if (r) {
                got = malloc(sizeof(float) * hm_elems(&o));
                MPI_Recv(got, (int)hm_elems(&o), MPI_FLOAT, r, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            for (int i = 1; i <= o.li; i++)
                for (int j = 1; j <= o.lj; j++)
                    for (int k = 0; k < o.nk; k++) {
                        float want = g->p[hm_at(gl->lj, gl->kp, o.i0 + i, o.j0 + j, k)];
                        wrong += memcmp(&got[hm_at(o.lj, o.kp, i, j, k)], &want, sizeof want) != 0;
                    }
            if (r) free(got);
        }
    }
    free(mine);
    MPI_Bcast(&wrong, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return wrong;
}

static double max_of(double v)
{
    double out;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
}

static void row(const char *series, const hm_size *s, double points, double us, const times *t,
                size_t bytes, int nprocs, int pi, int pj, int iters)
{
    printf("#row {\"series\": \"%s\", \"x\": %.0f, \"x_unit\": \"points\", \"value\": %.6f, "
           "\"unit\": \"us\", \"size\": \"%s\", \"grid\": \"%dx%dx%d\", \"nodes\": %d, "
           "\"decomposition\": \"%dx%d\", \"iterations\": %d, \"halo_bytes\": %zu, "
           "\"gosa\": %.17g}\n",
           series, points, us, s->name, s->mimax, s->mjmax, s->mkmax, nprocs, pi, pj, iters, bytes,
           t->gosa);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    CUDA_SAFE_CALL(cudaSetDevice(0));
    TCA_SAFE_CALL(tcaInit());

    const char *size_text = "S", *init_text = "official";
    int iters = 10, pi = 0, pj = 0, check = 1, opt;
    double gbps = 0, launch_us = 0;
    char end;
    const char *usage = "usage: himeno [-s XS|S|M|L|XL|IxJxK] [-n ITERATIONS] [-g PIxPJ] "
                        "[-i official|varied] [-b GPU_GB/s] [-l KERNEL_LAUNCH_us] [-v 0|1]";
    while ((opt = getopt(argc, argv, "s:n:g:i:b:l:v:")) != -1) {
        int ok = 1;
        switch (opt) {
        case 's': size_text = optarg; break;
        case 'n': ok = sscanf(optarg, "%d%c", &iters, &end) == 1 && iters >= 1; break;
        case 'g': ok = sscanf(optarg, "%dx%d%c", &pi, &pj, &end) == 2 && pi >= 1 && pj >= 1; break;
        case 'i': init_text = optarg; break;
        case 'b': ok = sscanf(optarg, "%lf%c", &gbps, &end) == 1 && gbps >= 0 && isfinite(gbps); break;
        case 'l': ok = sscanf(optarg, "%lf%c", &launch_us, &end) == 1 && launch_us >= 0 && isfinite(launch_us); break;
        case 'v': ok = sscanf(optarg, "%d%c", &check, &end) == 1 && (check == 0 || check == 1); break;
        default: ok = 0;
        }
        if (!ok) hp_usage_error(rank, usage);
    }
    if (optind != argc) hp_usage_error(rank, usage);
    hm_size custom;
    const hm_size *s = hm_size_parse(size_text, &custom);
    if (!s) hp_usage_error(rank, "himeno: SIZE is XS, S, M, L, XL or IxJxK with each of I, J, K in 3..4097");
    hm_init init = !strcmp(init_text, "official") ? HM_INIT_OFFICIAL : HM_INIT_VARIED;
    if (strcmp(init_text, "official") && strcmp(init_text, "varied"))
        hp_usage_error(rank, "himeno: -i takes official or varied");
    if (!pi) {
        int dims[2] = {0, 0};
        MPI_Dims_create(nprocs, 2, dims);
        pi = dims[0], pj = dims[1];
    }
    if (pi * pj != nprocs) hp_usage_error(rank, "himeno: PI x PJ must equal the number of ranks");
    gpu_bytes_per_s = gbps * 1e9, launch_s = launch_us * 1e-6;
    hm_layout l;
    if (hm_layout_init(&l, s, pi, pj, rank))
        hp_usage_error(rank, "himeno: more ranks along i or j than interior points");

    /* The serial reference first (rank 0), so that a grid too big for it fails early. */
    hm_arrays g = {0};
    hm_layout gl;
    double gosa_ref = 0;
    if (check && rank == 0) gosa_ref = serial(s, init, iters, &g, &gl);

    size_t bytes = hm_elems(&l) * sizeof(float);
    hm_arrays m;
    alloc_device(&m, bytes);
    double *gosa_dev;
    CUDA_SAFE_CALL(cudaMalloc((void **)&gosa_dev, sizeof(double)));
    TCA_SAFE_CALL(reflect_align(m.p, bytes, &l, 0));

    times tt = run(1, &m, &l, s, init, iters, gosa_dev, nprocs);
    long wrong_tca = check ? verify(&m, &l, s, rank, nprocs, &g, &gl) : 0;
    times tm = run(0, &m, &l, s, init, iters, gosa_dev, nprocs);
    long wrong_mpi = check ? verify(&m, &l, s, rank, nprocs, &g, &gl) : 0;
    size_t sent = reflect_sent_bytes(m.p), max_sent;
    MPI_Allreduce(&sent, &max_sent, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
    TCA_SAFE_CALL(reflect_free(m.p));
    double th = max_of(tt.halo), tc = max_of(tt.compute), tr = max_of(tt.reduce), ttot = max_of(tt.total);
    double mh = max_of(tm.halo), mc = max_of(tm.compute), mr = max_of(tm.reduce), mtot = max_of(tm.total);
    double tfirst = max_of(tt.first_halo), tb = max_of(tt.barrier);

    if (rank == 0) {
        double points = (double)(s->mimax - 2) * (s->mjmax - 2) * (s->mkmax - 2);
        printf("# Himeno %s (%d x %d x %d points), %d ranks as %d x %d (i x j), %d iterations, %s values\n",
               s->name, s->mimax, s->mjmax, s->mkmax, nprocs, pi, pj, iters, init_text);
        printf("# halo per rank: %zu B sent per exchange (most of any rank)\n", max_sent);
        printf("# %-10s %14s %14s %14s %14s %12s\n", "variant", "halo (us)", "compute (us)",
               "reduce (us)", "iteration (us)", "GFLOPS");
        printf("  %-10s %14.3f %14.3f %14.3f %14.3f %12.3f\n", "TCA", th * 1e6, tc * 1e6, tr * 1e6,
               ttot * 1e6, points * HM_FLOPS_PER_POINT / ttot / 1e9);
        printf("  %-10s %14.3f %14.3f %14.3f %14.3f %12.3f\n", "MPI", mh * 1e6, mc * 1e6, mr * 1e6,
               mtot * 1e6, points * HM_FLOPS_PER_POINT / mtot / 1e9);
        printf("# TCA halo includes the barrier after the DMA: %.3f us; the first reflect (builds the "
               "chain) took %.3f us\n# gosa TCA %.17g, MPI %.17g\n", tb * 1e6, tfirst * 1e6, tt.gosa, tm.gosa);
        row("TCA halo", s, points, th * 1e6, &tt, max_sent, nprocs, pi, pj, iters);
        row("MPI halo", s, points, mh * 1e6, &tm, max_sent, nprocs, pi, pj, iters);
        row("TCA barrier", s, points, tb * 1e6, &tt, max_sent, nprocs, pi, pj, iters);
        row("compute", s, points, tc * 1e6, &tt, max_sent, nprocs, pi, pj, iters);
        row("TCA iteration", s, points, ttot * 1e6, &tt, max_sent, nprocs, pi, pj, iters);
        row("MPI iteration", s, points, mtot * 1e6, &tm, max_sent, nprocs, pi, pj, iters);
        row("MPI gosa reduction", s, points, mr * 1e6, &tm, max_sent, nprocs, pi, pj, iters);
        if (check) {
            double dt = fabs(tt.gosa - gosa_ref), dm = fabs(tm.gosa - gosa_ref), tol = 1e-10 * fabs(gosa_ref);
            if (wrong_tca || wrong_mpi || dt > tol || dm > tol || tt.gosa != tm.gosa) {
                fprintf(stderr, "himeno: differs from the serial run: %ld (TCA) and %ld (MPI) points of p; "
                                "gosa TCA %.17g MPI %.17g serial %.17g\n", wrong_tca, wrong_mpi, tt.gosa,
                        tm.gosa, gosa_ref);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            printf("# himeno: p verified bit for bit against a serial run after both exchanges, gosa %.17g "
                   "(serial %.17g)\n", tt.gosa, gosa_ref);
        }
        fflush(stdout);
        free(g.p ? g.a[0] : NULL);
    }
    free_device(&m);
    CUDA_SAFE_CALL(cudaFree(gosa_dev));
    TCA_SAFE_CALL(tcaFinalize());
    MPI_Finalize();
    return 0;
}
