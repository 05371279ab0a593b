/*
 * The CG example's matrix: a sparse symmetric positive definite matrix of the shape of nd6k
 * (seed 001, slide "CG法の性能": 18,000 rows, 6,897,316 non-zeros, from the University of
 * Florida collection, which cannot be downloaded here), generated deterministically from a seed
 * so that any rank can build any row range by itself.
 *
 * Pattern: banded, as nd6k's non-zeros cluster about the diagonal [assumption: the seed gives
 * only the size; the band half-width is ours]. Row i's entries above the diagonal are c_i
 * distinct columns in i+1 .. i+band, picked by a partial Fisher-Yates shuffle driven by a
 * generator seeded with (seed, i); the entries below the diagonal are the mirror images of the
 * earlier rows' picks. The counts make the total exact: with a_i = min(band, n-1-i) candidates
 * and U = (nnz - n) / 2 entries to place above the diagonal, every row takes min(a_i, b) for the
 * largest b that does not overshoot U, and the first rows with a_i > b one more until the sum
 * is U.
 *
 * Values: a_ij = a_ji = -(0.1 + 0.9 u) with u uniform in [0, 1) from a hash of (seed, i, j);
 * the diagonal is the sum of |a_ij| over the row plus a surplus 10^(CG_SURPLUS_DECADES u_i)
 * (u_i from a hash of (seed, i)). The matrix is strictly diagonally dominant with positive
 * diagonal, hence symmetric positive definite (Gershgorin: every eigenvalue is at least 1),
 * and CG converges on it. The surplus spread over decades widens the spectrum so that 1,000
 * iterations do not drive r.r below the smallest double (with a surplus of 1 everywhere,
 * |r| falls by about 1e-18 per 100 iterations and r.r underflows before iteration 1,000).
 */
#ifndef HAPACS_CG_MATRIX_H
#define HAPACS_CG_MATRIX_H

#include <stdint.h>
#include <stddef.h>

#define CG_ND6K_ROWS 18000   /* seed 001, slide "CG法の性能" */
#define CG_ND6K_NNZ 6897316L /* seed 001, slide "CG法の性能" */
#define CG_DEFAULT_BAND 400  /* assumption: half-width of the band (about 48 % filled) */
#define CG_DEFAULT_SEED 1
#define CG_SURPLUS_DECADES 4 /* the diagonal surplus spans 1 .. 1e4 */

struct cg_shape {
    int n;       /* rows */
    long nnz;    /* non-zeros, diagonal included */
    int band;    /* half-width: |i - j| <= band for every non-zero */
    uint64_t seed;
};

/* Rows [r0, r1) in CSR form; columns are global indices, increasing within a row. */
struct cg_rows {
    int r0, r1;
    long nnz;
    long *rowptr; /* r1 - r0 + 1 entries */
    int *col;
    double *val;
};

/* NULL when the shape is consistent (n >= 2, nnz - n even and >= 0, enough room in the band),
 * else a one-line reason. */
const char *cg_shape_check(const struct cg_shape *s);
/* Builds rows [r0, r1) of the matrix; the arrays come from malloc (cg_rows_free). 0 on
 * success, -1 when out of memory. */
int cg_rows_build(const struct cg_shape *s, int r0, int r1, struct cg_rows *out);
void cg_rows_free(struct cg_rows *m);
/* The diagonal surplus of row i: a_ii minus the sum of |a_ij| over the row. */
double cg_surplus(const struct cg_shape *s, int i);
/* The right-hand side entry of global row i. */
double cg_rhs(int i);

#endif
