/*
 * The Himeno benchmark's grid sizes, decomposition, initial values and Jacobi sweep
 * (himeno.h). The sweep is the benchmark's: a 19-point stencil with coefficient arrays a, b, c,
 * relaxation factor 0.8, single precision. It runs as host code on the block's arrays (on the
 * simulator and the shm fabric device memory is addressable host memory, docs/cuda.md); the
 * simulated time it stands for is charged by the caller.
 */
#include "himeno.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The benchmark's sizes as its C source defines them (points along i, j, k, boundary included):
 * XS 32x32x64, S 64x64x128, M 128x128x256, L 256x256x512, XL 512x512x1024 intervals. */
static const hm_size SIZES[] = {
    {"XS", 33, 33, 65}, {"S", 65, 65, 129}, {"M", 129, 129, 257},
    {"L", 257, 257, 513}, {"XL", 513, 513, 1025},
};

static const float OMEGA = 0.8f;

const hm_size *hm_size_parse(const char *text, hm_size *custom)
{
    for (size_t n = 0; n < sizeof SIZES / sizeof SIZES[0]; n++)
        if (!strcmp(text, SIZES[n].name)) return &SIZES[n];
    int i, j, k;
    char end;
    if (sscanf(text, "%dx%dx%d%c", &i, &j, &k, &end) != 3) return NULL;
    if (i < 3 || j < 3 || k < 3 || i > 4097 || j > 4097 || k > 4097) return NULL;
    *custom = (hm_size){"custom", i, j, k};
    return custom;
}

/* Block c of p over n interior points: its length and the global index of its halo plane. */
static void split(int n, int p, int c, int *len, int *start)
{
    int base = n / p, rem = n % p;
    *len = base + (c < rem);
    *start = c * base + (c < rem ? c : rem);
}

int hm_layout_init(hm_layout *l, const hm_size *s, int pi, int pj, int rank)
{
    memset(l, 0, sizeof *l);
    l->pi = pi, l->pj = pj, l->ci = rank / pj, l->cj = rank % pj;
    int ni = s->mimax - 2, nj = s->mjmax - 2;
    if (pi > ni || pj > nj) return -1;
    split(ni, pi, l->ci, &l->li, &l->i0);
    split(nj, pj, l->cj, &l->lj, &l->j0);
    l->nk = s->mkmax;
    l->kp = (s->mkmax + 3) & ~3;
    static const int di[HM_DIRS] = {-1, 1, 0, 0, -1, -1, 1, 1};
    static const int dj[HM_DIRS] = {0, 0, -1, 1, -1, 1, -1, 1};
    for (int d = 0; d < HM_DIRS; d++) {
        int ci = l->ci + di[d], cj = l->cj + dj[d], unused;
        int inside = ci >= 0 && ci < pi && cj >= 0 && cj < pj;
        l->nb[d] = inside ? ci * pj + cj : -1;
        if (inside) {
            split(ni, pi, ci, &l->nli[d], &unused);
            split(nj, pj, cj, &l->nlj[d], &unused);
        }
    }
    return 0;
}

size_t hm_elems(const hm_layout *l) { return (size_t)(l->li + 2) * (l->lj + 2) * l->kp; }

float hm_p0(const hm_size *s, hm_init init, int i, int j, int k)
{
    if (init == HM_INIT_OFFICIAL) return (float)(i * i) / (float)((s->mimax - 1) * (s->mimax - 1));
    return (float)((i * 7 + j * 13 + k * 3) % 23) / 22.0f;
}

void hm_fill(const hm_arrays *m, const hm_layout *l, const hm_size *s, hm_init init)
{
    float bv = init == HM_INIT_OFFICIAL ? 0.0f : 1.0f / 32;
    for (int i = 0; i < l->li + 2; i++)
        for (int j = 0; j < l->lj + 2; j++)
            for (int k = 0; k < l->kp; k++) {
                size_t x = hm_at(l->lj, l->kp, i, j, k);
                int real = k < l->nk; /* padding stays zero */
                for (int n = 0; n < 3; n++) {
                    m->a[n][x] = real ? 1.0f : 0.0f;
                    m->b[n][x] = real ? bv : 0.0f;
                    m->c[n][x] = real ? 1.0f : 0.0f;
                }
                m->a[3][x] = real ? 1.0f / 6.0f : 0.0f;
                m->bnd[x] = real ? 1.0f : 0.0f;
                m->wrk1[x] = 0.0f;
                m->wrk2[x] = 0.0f;
                m->p[x] = real ? hm_p0(s, init, l->i0 + i, l->j0 + j, k) : 0.0f;
            }
}

double hm_sweep(const hm_arrays *m, const hm_layout *l)
{
    const size_t sk = 1, sj = l->kp, si = (size_t)(l->lj + 2) * l->kp;
    const float *p = m->p;
    double gosa = 0.0;
    for (int i = 1; i <= l->li; i++)
        for (int j = 1; j <= l->lj; j++)
            for (int k = 1; k < l->nk - 1; k++) {
                size_t x = hm_at(l->lj, l->kp, i, j, k);
                float s0 = m->a[0][x] * p[x + si] + m->a[1][x] * p[x + sj] + m->a[2][x] * p[x + sk] +
                           m->b[0][x] * (p[x + si + sj] - p[x + si - sj] - p[x - si + sj] + p[x - si - sj]) +
                           m->b[1][x] * (p[x + sj + sk] - p[x - sj + sk] - p[x + sj - sk] + p[x - sj - sk]) +
                           m->b[2][x] * (p[x + si + sk] - p[x - si + sk] - p[x + si - sk] + p[x - si - sk]) +
                           m->c[0][x] * p[x - si] + m->c[1][x] * p[x - sj] + m->c[2][x] * p[x - sk] +
                           m->wrk1[x];
                float ss = (s0 * m->a[3][x] - p[x]) * m->bnd[x];
                gosa += (double)(ss * ss);
                m->wrk2[x] = p[x] + OMEGA * ss;
            }
    return gosa;
}

void hm_copy_back(const hm_arrays *m, const hm_layout *l)
{
    for (int i = 1; i <= l->li; i++)
        for (int j = 1; j <= l->lj; j++) {
            size_t x = hm_at(l->lj, l->kp, i, j, 1);
            memcpy(m->p + x, m->wrk2 + x, sizeof(float) * (l->nk - 2));
        }
}
