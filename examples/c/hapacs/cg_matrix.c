/* The generated nd6k-shaped SPD matrix of cg_matrix.h. */
#include "cg_matrix.h"

#include <math.h>
#include <stdlib.h>

/* splitmix64: a well-mixed 64-bit hash, also the step of a generator. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int avail(const struct cg_shape *s, int i)
{
    int a = s->n - 1 - i;
    return a < s->band ? a : s->band;
}

static long upper_total(const struct cg_shape *s, int b)
{
    long sum = 0;
    for (int i = 0; i < s->n; i++) sum += avail(s, i) < b ? avail(s, i) : b;
    return sum;
}

const char *cg_shape_check(const struct cg_shape *s)
{
    if (s->n < 2 || s->n % 2) return "the matrix needs an even number of rows, at least 2";
    if (s->band < 2 || s->band % 2) return "the band half-width must be even and at least 2";
    if (s->nnz < s->n || (s->nnz - s->n) % 2) return "non-zeros minus rows must be even and not negative";
    if ((s->nnz - s->n) / 2 > upper_total(s, s->band)) return "the band has no room for that many non-zeros";
    return NULL;
}

/* Upper-triangle entries per row: c[i] for every row (see cg_matrix.h). */
static int *upper_counts(const struct cg_shape *s)
{
    long want = (s->nnz - s->n) / 2;
    int lo = 0, hi = s->band; /* largest b with upper_total(b) <= want */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (upper_total(s, mid) <= want) lo = mid;
        else hi = mid - 1;
    }
    int *c = malloc(sizeof(int) * s->n);
    if (!c) return NULL;
    long extra = want - upper_total(s, lo);
    for (int i = 0; i < s->n; i++) {
        c[i] = avail(s, i) < lo ? avail(s, i) : lo;
        if (extra > 0 && avail(s, i) > lo) c[i]++, extra--;
    }
    return c;
}

static int by_value(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* Row i's c columns above the diagonal, increasing, into out (scratch: band ints). */
static void upper_columns(const struct cg_shape *s, int i, int c, int *out, int *scratch)
{
    int a = avail(s, i);
    uint64_t state = mix(s->seed ^ mix((uint64_t)i));
    for (int k = 0; k < a; k++) scratch[k] = i + 1 + k;
    for (int k = 0; k < c; k++) {
        state = mix(state);
        int pick = k + (int)(state % (uint64_t)(a - k));
        int t = scratch[k];
        scratch[k] = scratch[pick];
        scratch[pick] = t;
    }
    for (int k = 0; k < c; k++) out[k] = scratch[k];
    qsort(out, c, sizeof(int), by_value);
}

/* a_ij (i != j), the same for (j, i). */
static double offdiag(const struct cg_shape *s, int i, int j)
{
    uint64_t lo = (uint64_t)(i < j ? i : j), hi = (uint64_t)(i < j ? j : i);
    uint64_t h = mix(s->seed ^ mix(lo * 0x100000001ull + hi));
    return -(0.1 + 0.9 * (double)(h >> 11) / 9007199254740992.0);
}

double cg_surplus(const struct cg_shape *s, int i)
{
    uint64_t h = mix(~s->seed ^ mix((uint64_t)i));
    return pow(10.0, CG_SURPLUS_DECADES * (double)(h >> 11) / 9007199254740992.0);
}

double cg_rhs(int i) { return 1.0 + (double)((i * 37) % 101) / 100.0; }

void cg_rows_free(struct cg_rows *m)
{
    free(m->rowptr);
    free(m->col);
    free(m->val);
    m->rowptr = NULL, m->col = NULL, m->val = NULL;
}

int cg_rows_build(const struct cg_shape *s, int r0, int r1, struct cg_rows *m)
{
    int first = r0 - s->band > 0 ? r0 - s->band : 0, rows = r1 - r0, span = r1 - first;
    int *c = upper_counts(s), *scratch = malloc(sizeof(int) * (s->band + 1));
    long *start = malloc(sizeof(long) * (span + 1)); /* picks of row first+k at start[k] */
    *m = (struct cg_rows){r0, r1, 0, calloc(rows + 1, sizeof(long)), NULL, NULL};
    if (!c || !scratch || !start || !m->rowptr) goto oom;
    start[0] = 0;
    for (int k = 0; k < span; k++) start[k + 1] = start[k] + c[first + k];
    int *picks = malloc(sizeof(int) * (start[span] ? start[span] : 1));
    if (!picks) goto oom;
    for (int k = 0; k < span; k++) upper_columns(s, first + k, c[first + k], picks + start[k], scratch);

    /* Row lengths: entries below the diagonal (mirrors of earlier rows' picks), 1, c_i. */
    for (int k = 0; k < span; k++)
        for (long p = start[k]; p < start[k + 1]; p++)
            if (picks[p] >= r0 && picks[p] < r1) m->rowptr[picks[p] - r0 + 1]++;
    for (int i = r0; i < r1; i++) m->rowptr[i - r0 + 1] += 1 + c[i];
    for (int k = 0; k < rows; k++) m->rowptr[k + 1] += m->rowptr[k];
    m->nnz = m->rowptr[rows];
    m->col = malloc(sizeof(int) * m->nnz);
    m->val = malloc(sizeof(double) * m->nnz);
    long *cursor = malloc(sizeof(long) * (rows ? rows : 1));
    if (!m->col || !m->val || !cursor) {
        free(picks);
        free(cursor);
        goto oom;
    }
    for (int k = 0; k < rows; k++) cursor[k] = m->rowptr[k];
    /* Rows in increasing order: when row i is reached, every row before it has appended its
     * mirror entries to row i, in increasing column order; then come the diagonal and the
     * picks (increasing). */
    for (int k = 0; k < span; k++) {
        int i = first + k;
        long diag = -1;
        if (i >= r0) {
            diag = cursor[i - r0]++;
            m->col[diag] = i;
        }
        for (long p = start[k]; p < start[k + 1]; p++) {
            int j = picks[p];
            double v = offdiag(s, i, j);
            if (i >= r0) {
                long at = cursor[i - r0]++;
                m->col[at] = j, m->val[at] = v;
            }
            if (j >= r0 && j < r1) {
                long at = cursor[j - r0]++;
                m->col[at] = i, m->val[at] = v;
            }
        }
    }
    /* Diagonals: the sum of |a_ij| over the row plus the row's surplus. */
    for (int k = 0; k < rows; k++) {
        double sum = cg_surplus(s, r0 + k);
        long diag = -1;
        for (long p = m->rowptr[k]; p < m->rowptr[k + 1]; p++) {
            if (m->col[p] == r0 + k) diag = p;
            else sum -= m->val[p];
        }
        m->val[diag] = sum;
    }
    free(picks);
    free(cursor);
    free(start);
    free(scratch);
    free(c);
    return 0;
oom:
    free(start);
    free(scratch);
    free(c);
    cg_rows_free(m);
    return -1;
}
