/*
 * reflect on TCA: one DMA chain per array, built at the first call, kicked at every call
 * (reflect.h). Entry d carries the data travelling in direction d and notifies its receiver
 * with tag d; a rank waits for the tag opposite to where each neighbour lies.
 */
#include "reflect.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float *array;
    size_t bytes;
    hm_layout l;
    int channel;
    int built, tag;
    tcaHandle me, *all;
} entry;

static entry arrays[REFLECT_ARRAYS];
static double last_barrier;

static const int OPPOSITE[HM_DIRS] = {HM_IP, HM_IM, HM_JP, HM_JM, HM_PP, HM_PM, HM_MP, HM_MM};

static entry *find(const float *array)
{
    for (int n = 0; n < REFLECT_ARRAYS; n++)
        if (arrays[n].array == array && array) return &arrays[n];
    return NULL;
}

tcaresult reflect_align(float *array, size_t bytes, const hm_layout *l, int channel)
{
    if (!array || find(array) || channel < 0 || channel >= TCA_DMA_CHANNELS ||
        bytes < hm_elems(l) * sizeof(float))
        return TCA_ERROR_INVALID_ARGUMENT;
    entry *e = NULL;
    for (int n = 0; n < REFLECT_ARRAYS && !e; n++)
        if (!arrays[n].array) e = &arrays[n];
    if (!e) return TCA_ERROR_INVALID_ARGUMENT;
    memset(e, 0, sizeof *e);
    e->array = array, e->bytes = bytes, e->l = *l, e->channel = channel;
    return TCA_SUCCESS;
}

/* Byte offset of local point (i, j, 0) in a block with lj rows along j. */
static off_t at(const hm_layout *l, int lj, int i, int j)
{
    return (off_t)(hm_at(lj, l->kp, i, j, 0) * sizeof(float));
}

/* Adds the entry that sends this rank's part in direction d to that neighbour's halo. */
static tcaresult add(entry *e, int d, int *slot)
{
    const hm_layout *l = &e->l;
    const tcaHandle *dst = &e->all[l->nb[d]];
    int nli = l->nli[d], nlj = l->nlj[d], li = l->li, lj = l->lj, flags = tcaDMANotify;
    size_t row = (size_t)l->kp * sizeof(float);
    size_t plane = (size_t)lj * row;
    off_t src = 0, dof = 0;
    tcaresult r;
    switch (d) {
    case HM_IM: case HM_IP: /* a j-k plane: lj rows of k, contiguous */
        src = at(l, lj, d == HM_IM ? 1 : li, 1);
        dof = at(l, nlj, d == HM_IM ? nli + 1 : 0, 1);
        r = tcaSetDMADesc_Memcpy(e->tag, *slot, slot, dst, dof, &e->me, src, plane, flags,
                                 e->channel, d);
        break;
    case HM_JM: case HM_JP: /* an i-k plane: li rows of k, one per i: block-stride */
        src = at(l, lj, 1, d == HM_JM ? 1 : lj);
        dof = at(l, nlj, 1, d == HM_JM ? nlj + 1 : 0);
        r = tcaSetDMADesc_Memcpy2D(e->tag, *slot, slot, dst, dof, (size_t)(nlj + 2) * row, &e->me,
                                   src, (size_t)(lj + 2) * row, row, li, flags, e->channel, d);
        break;
    default: { /* an i-j corner: one row of k */
        int si = d == HM_MM || d == HM_MP ? 1 : li, sj = d == HM_MM || d == HM_PM ? 1 : lj;
        int di = d == HM_MM || d == HM_MP ? nli + 1 : 0, dj = d == HM_MM || d == HM_PM ? nlj + 1 : 0;
        r = tcaSetDMADesc_Memcpy(e->tag, *slot, slot, dst, at(l, nlj, di, dj), &e->me,
                                 at(l, lj, si, sj), row, flags, e->channel, d);
    }
    }
    return r;
}

/* The first call's work: handle, handle exchange, the table, the chain on the channel. */
static tcaresult build(entry *e)
{
    int nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tcaresult r = tcaCreateHandle(&e->me, e->array, e->bytes, tcaMemoryGPU);
    if (r != TCA_SUCCESS) return r;
    e->all = malloc(sizeof(tcaHandle) * nprocs);
    if (!e->all) return TCA_ERROR_INVALID_ARGUMENT;
    MPI_Allgather(&e->me, sizeof(tcaHandle), MPI_BYTE, e->all, sizeof(tcaHandle), MPI_BYTE,
                  MPI_COMM_WORLD);
    int requests = 0;
    for (int d = 0; d < HM_DIRS; d++) requests += e->l.nb[d] >= 0;
    if (requests) {
        if ((r = tcaCreateDMADesc(&e->tag, HM_DIRS)) != TCA_SUCCESS) return r;
        int slot = 0;
        for (int d = 0; d < HM_DIRS; d++)
            if (e->l.nb[d] >= 0 && (r = add(e, d, &slot)) != TCA_SUCCESS) return r;
        if ((r = tcaSetDMAChain(e->channel, e->tag)) != TCA_SUCCESS) return r;
    }
    e->built = 1;
    return TCA_SUCCESS;
}

tcaresult reflect(float *array)
{
    entry *e = find(array);
    if (!e) return TCA_ERROR_INVALID_ARGUMENT;
    tcaresult r;
    if (!e->built && (r = build(e)) != TCA_SUCCESS) return r;
    if (e->tag) {
        if ((r = tcaStartDMADesc(e->channel)) != TCA_SUCCESS) return r;
        for (int d = 0; d < HM_DIRS; d++)
            if (e->l.nb[d] >= 0 &&
                (r = tcaWaitDMARecvDesc(&e->all[e->l.nb[d]], e->channel, OPPOSITE[d])) != TCA_SUCCESS)
                return r;
        if ((r = tcaWaitDMAC(e->channel)) != TCA_SUCCESS) return r;
    }
    /* The barrier after the DMA (seed 001, XcalableACC on TCA): the TCA collective library's. */
    double t0 = MPI_Wtime();
    r = tcaCollBarrier();
    last_barrier = MPI_Wtime() - t0;
    return r;
}

double reflect_last_barrier(void) { return last_barrier; }

size_t reflect_sent_bytes(const float *array)
{
    entry *e = find(array);
    if (!e) return 0;
    size_t row = (size_t)e->l.kp * sizeof(float), sent = 0;
    for (int d = 0; d < HM_DIRS; d++) {
        if (e->l.nb[d] < 0) continue;
        sent += d <= HM_IP ? (size_t)e->l.lj * row : d <= HM_JP ? (size_t)e->l.li * row : row;
    }
    return sent;
}

tcaresult reflect_free(float *array)
{
    entry *e = find(array);
    if (!e) return TCA_ERROR_INVALID_ARGUMENT;
    tcaresult r = TCA_SUCCESS;
    if (e->built) {
        r = tcaCollBarrier(); /* no peer writes into this array any more */
        if (e->tag && r == TCA_SUCCESS) r = tcaDestroyDMADesc(e->tag);
        tcaresult h = tcaDestroyHandle(&e->me);
        if (r == TCA_SUCCESS) r = h;
    }
    free(e->all);
    memset(e, 0, sizeof *e);
    return r;
}
