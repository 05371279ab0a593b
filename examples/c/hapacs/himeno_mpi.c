/*
 * MPI halo exchange on GPU buffers (himeno_mpi.h). A message travelling in direction d carries
 * tag d; a rank receives from the neighbour in direction d the message tagged with the
 * opposite direction.
 */
#include "himeno_mpi.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <string.h>

static const int OPPOSITE[HM_DIRS] = {HM_IP, HM_IM, HM_JP, HM_JM, HM_PP, HM_PM, HM_MP, HM_MM};

int hm_mpi_init(hm_mpi *h, float *p, const hm_layout *l)
{
    memset(h, 0, sizeof *h);
    h->l = *l, h->p = p;
    size_t face = (size_t)l->li * l->kp * sizeof(float);
    for (int d = HM_JM; d <= HM_JP; d++) {
        if (l->nb[d] < 0) continue;
        if (cudaMalloc((void **)&h->send[d], face) != cudaSuccess ||
            cudaMalloc((void **)&h->recv[d], face) != cudaSuccess)
            return -1;
    }
    return 0;
}

/* The local (i, j) where the data sent in direction d starts, and where the data received
 * from direction d lands (its halo). */
static void place(const hm_layout *l, int d, int *si, int *sj, int *ri, int *rj)
{
    int lo_i = d == HM_IM || d == HM_MM || d == HM_MP, hi_i = d == HM_IP || d == HM_PM || d == HM_PP;
    int lo_j = d == HM_JM || d == HM_MM || d == HM_PM, hi_j = d == HM_JP || d == HM_MP || d == HM_PP;
    *si = lo_i ? 1 : hi_i ? l->li : 1;
    *ri = lo_i ? 0 : hi_i ? l->li + 1 : 1;
    *sj = lo_j ? 1 : hi_j ? l->lj : 1;
    *rj = lo_j ? 0 : hi_j ? l->lj + 1 : 1;
}

/* Copies the i-k plane at j between p and a packed buffer (to_p: unpack). */
static void pack(const hm_layout *l, float *p, float *buf, int j, int to_p)
{
    size_t row = (size_t)l->kp;
    for (int i = 1; i <= l->li; i++) {
        float *at = p + hm_at(l->lj, l->kp, i, j, 0), *packed = buf + (size_t)(i - 1) * row;
        if (to_p) memcpy(at, packed, row * sizeof(float));
        else memcpy(packed, at, row * sizeof(float));
    }
}

int hm_mpi_exchange(hm_mpi *h)
{
    const hm_layout *l = &h->l;
    MPI_Request req[2 * HM_DIRS];
    int n = 0, packed = 0;
    size_t row = (size_t)l->kp;
    for (int d = 0; d < HM_DIRS; d++) {
        if (l->nb[d] < 0) continue;
        int si, sj, ri, rj;
        place(l, d, &si, &sj, &ri, &rj);
        float *rbuf = h->recv[d] ? h->recv[d] : h->p + hm_at(l->lj, l->kp, ri, rj, 0);
        int count = (int)(d <= HM_IP ? l->lj * row : d <= HM_JP ? l->li * row : row);
        MPI_Irecv(rbuf, count, MPI_FLOAT, l->nb[d], OPPOSITE[d], MPI_COMM_WORLD, &req[n++]);
        if (h->send[d]) pack(l, h->p, h->send[d], sj, 0), packed++;
    }
    if (packed) hm_kernel(2.0 * packed * l->li * row * sizeof(float)); /* one pack kernel */
    for (int d = 0; d < HM_DIRS; d++) {
        if (l->nb[d] < 0) continue;
        int si, sj, ri, rj;
        place(l, d, &si, &sj, &ri, &rj);
        float *sbuf = h->send[d] ? h->send[d] : h->p + hm_at(l->lj, l->kp, si, sj, 0);
        int count = (int)(d <= HM_IP ? l->lj * row : d <= HM_JP ? l->li * row : row);
        MPI_Isend(sbuf, count, MPI_FLOAT, l->nb[d], d, MPI_COMM_WORLD, &req[n++]);
    }
    MPI_Status st[2 * HM_DIRS];
    if (MPI_Waitall(n, req, st) != MPI_SUCCESS) return -1;
    for (int d = HM_JM; d <= HM_JP; d++) {
        if (!h->recv[d]) continue;
        int si, sj, ri, rj;
        place(l, d, &si, &sj, &ri, &rj);
        pack(l, h->p, h->recv[d], rj, 1);
    }
    if (packed) hm_kernel(2.0 * packed * l->li * row * sizeof(float)); /* one unpack kernel */
    return 0;
}

size_t hm_mpi_sent_bytes(const hm_mpi *h)
{
    const hm_layout *l = &h->l;
    size_t row = (size_t)l->kp * sizeof(float), sent = 0;
    for (int d = 0; d < HM_DIRS; d++)
        if (l->nb[d] >= 0) sent += d <= HM_IP ? (size_t)l->lj * row : d <= HM_JP ? (size_t)l->li * row : row;
    return sent;
}

void hm_mpi_free(hm_mpi *h)
{
    for (int d = 0; d < HM_DIRS; d++) {
        if (h->send[d]) cudaFree(h->send[d]);
        if (h->recv[d]) cudaFree(h->recv[d]);
    }
    memset(h, 0, sizeof *h);
}
