/*
 * The Himeno benchmark's Jacobi sweep (19-point Poisson, single precision) on a block of a
 * 2-D decomposition: what himeno.c, reflect.c and himeno_mpi.c share.
 *
 * Arrays are stored as in the benchmark's C source, [i][j][k] with k fastest. The grid is
 * decomposed over PI x PJ ranks along i and j (k whole: seed 001 "3次元ステンシル計算の例",
 * a 2-D decomposition of 3-D data, 1x2x2 on 4 nodes). Each rank holds its interior block and
 * one halo plane on each side in i and j; the global boundary planes sit where a neighbour's
 * halo would. Rows along k are padded to a multiple of 4 floats, so that every row starts at a
 * 16-byte boundary (PEACH2 DMA: source and destination share their low 4 address bits).
 */
#ifndef HIMENO_H
#define HIMENO_H

#include <stddef.h>

/* One of the benchmark's grid sizes: points along i, j, k, boundary included. */
typedef struct {
    const char *name;
    int mimax, mjmax, mkmax;
} hm_size;

/* The named sizes (XS, S, M, L, XL) and "IxJxK" for any other grid; NULL if text is neither
 * (the result of a custom size lives in *custom). */
const hm_size *hm_size_parse(const char *text, hm_size *custom);

/* Neighbour directions: faces across i and j, then the four i-j corners (lines along k). */
enum { HM_IM, HM_IP, HM_JM, HM_JP, HM_MM, HM_MP, HM_PM, HM_PP, HM_DIRS };

/* Where a rank's block lies and who its neighbours are. */
typedef struct {
    int pi, pj;            /* process grid */
    int ci, cj;            /* this rank's place in it (rank = ci * pj + cj) */
    int i0, j0;            /* global index of the block's halo plane i = 0 and j = 0 */
    int li, lj;            /* interior points of the block along i and j */
    int nk, kp;            /* points along k (boundary included) and the padded row length */
    int nb[HM_DIRS];       /* neighbour rank in each direction, -1 at the grid's edge */
    int nli[HM_DIRS], nlj[HM_DIRS]; /* that neighbour's li and lj */
} hm_layout;

/* The layout of rank `rank` of pi x pj on grid `s`; 0 on success, -1 if a block would be empty. */
int hm_layout_init(hm_layout *l, const hm_size *s, int pi, int pj, int rank);

/* Elements (floats) of one array of the block, halos and padding included. */
size_t hm_elems(const hm_layout *l);

/* The index of local point (i, j, k) in an array of a block with lj interior rows along j. */
static inline size_t hm_at(int lj, int kp, int i, int j, int k)
{
    return ((size_t)i * (lj + 2) + j) * kp + k;
}

/* The benchmark's arrays for one block (or the whole grid). */
typedef struct {
    float *a[4], *b[3], *c[3], *bnd, *wrk1, *wrk2, *p;
} hm_arrays;

#define HM_ARRAYS 14

/* Initial values: "official" is the benchmark's (b = 0, p depends on i only); "varied" makes
 * every term and every halo count (b != 0, p varies along i, j and k), for verification. */
typedef enum { HM_INIT_OFFICIAL, HM_INIT_VARIED } hm_init;

/* Fills the block's arrays, halos included, with the initial values of the global grid. */
void hm_fill(const hm_arrays *m, const hm_layout *l, const hm_size *s, hm_init init);

/* The initial value of p at global point (i, j, k). */
float hm_p0(const hm_size *s, hm_init init, int i, int j, int k);

/* One Jacobi sweep over the block's interior (k = 1 .. nk-2): wrk2 from p; returns the sum of
 * the squared residuals ss^2 (each a float, summed in double in loop order). */
double hm_sweep(const hm_arrays *m, const hm_layout *l);

/* p = wrk2 on the interior. */
void hm_copy_back(const hm_arrays *m, const hm_layout *l);

/* Floating-point operations per interior point, as the benchmark counts them. */
#define HM_FLOPS_PER_POINT 34.0
/* Device-memory bytes per interior point and iteration: the sweep reads 12 coefficient and
 * work arrays and p (neighbours from cache) and writes wrk2; the copy back reads wrk2 and
 * writes p. */
#define HM_BYTES_PER_POINT (14.0 * 4 + 2.0 * 4)

#endif
