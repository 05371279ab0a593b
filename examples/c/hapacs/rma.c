/*
 * The RMA layer of rma.h: one window type, three back ends (TCA DMA, MPI-3 RMA with fences,
 * MPI-3 RMA with post-start-complete-wait).
 */
#include "rma.h"

#include "hapacs.h"

struct put {
    int target;
    size_t target_off, local_off, size;
};

struct rma_win {
    rma_backend backend;
    void *base;
    size_t size;
    int rank, nprocs, channel;
    struct put *puts;
    int nputs, cap;
    int *incoming; /* incoming[r]: puts rank r makes into this window per epoch */
    int committed;
    /* TCA */
    tcaHandle mine, *all;
    tcaDesc *chain;
    /* MPI-3 RMA */
    MPI_Win win;
    MPI_Group exposure, access; /* PSCW: the ranks that put here, the ranks this one puts to */
};

static const char *const NAMES[RMA_BACKENDS] = {"tca", "mpi-fence", "mpi-pscw"};

int rma_backend_parse(const char *name, rma_backend *out)
{
    for (int b = 0; b < RMA_BACKENDS; b++)
        if (strcmp(name, NAMES[b]) == 0) {
            *out = (rma_backend)b;
            return 0;
        }
    return -1;
}

const char *rma_backend_name(rma_backend b) { return NAMES[b]; }

static void rma_fail(const char *message)
{
    fprintf(stderr, "rma: %s\n", message);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

rma_win *rma_win_create(rma_backend b, void *base, size_t size, int channel)
{
    rma_win *w = calloc(1, sizeof *w);
    if (!w) rma_fail("out of memory");
    w->backend = b;
    w->base = base;
    w->size = size;
    w->channel = channel;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->nprocs);
    w->incoming = calloc(w->nprocs, sizeof(int));
    if (!w->incoming) rma_fail("out of memory");
    if (b == RMA_TCA) {
        w->all = malloc(sizeof(tcaHandle) * w->nprocs);
        if (!w->all) rma_fail("out of memory");
        TCA_SAFE_CALL(tcaCreateHandle(&w->mine, base, size, tcaMemoryGPU));
        hp_exchange(&w->mine, w->all);
    } else {
        MPI_Win_create(base, (MPI_Aint)size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
    }
    return w;
}

void rma_put(rma_win *w, int target, size_t target_off, size_t local_off, size_t size)
{
    if (w->committed) rma_fail("rma_put after rma_commit");
    if (target < 0 || target >= w->nprocs || target == w->rank) rma_fail("put target is not another rank");
    if (local_off + size > w->size || (target_off | local_off | size) % 16 || size == 0)
        rma_fail("put outside the window, or not in 16-byte units");
    if (w->nputs == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 8;
        w->puts = realloc(w->puts, sizeof(struct put) * w->cap);
        if (!w->puts) rma_fail("out of memory");
    }
    w->puts[w->nputs++] = (struct put){target, target_off, local_off, size};
}

/* A group of the ranks r with flag[r] != 0. */
static MPI_Group group_of(const int *flag, int n)
{
    MPI_Group world, g;
    int *ranks = malloc(sizeof(int) * n), k = 0;
    if (!ranks) rma_fail("out of memory");
    for (int r = 0; r < n; r++)
        if (flag[r]) ranks[k++] = r;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, k, ranks, &g);
    MPI_Group_free(&world);
    free(ranks);
    return g;
}

void rma_commit(rma_win *w)
{
    int n = w->nprocs, *outgoing = calloc(n, sizeof(int));
    if (!outgoing) rma_fail("out of memory");
    for (int i = 0; i < w->nputs; i++) outgoing[w->puts[i].target]++;
    MPI_Alltoall(outgoing, 1, MPI_INT, w->incoming, 1, MPI_INT, MPI_COMM_WORLD);
    if (w->backend == RMA_TCA) {
        /* The k-th put of a rank to one target carries tag k: the target waits for tags
         * 0 .. incoming-1 from that rank. */
        int *sent = calloc(n, sizeof(int));
        if (!sent) rma_fail("out of memory");
        w->chain = tcaDescNew();
        if (!w->chain) rma_fail("out of memory");
        for (int i = 0; i < w->nputs; i++) {
            struct put *p = &w->puts[i];
            TCA_SAFE_CALL(tcaDescSetMemcpy(w->chain, &w->all[p->target], (off_t)p->target_off, &w->mine,
                                           (off_t)p->local_off, p->size, tcaDMANotify, 0, sent[p->target]++));
        }
        if (w->nputs) TCA_SAFE_CALL(tcaDescSet(w->chain, w->channel));
        free(sent);
    } else if (w->backend == RMA_MPI_PSCW) {
        w->exposure = group_of(w->incoming, n);
        w->access = group_of(outgoing, n);
    } else {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
    }
    free(outgoing);
    w->committed = 1;
}

static void mpi_puts(rma_win *w)
{
    for (int i = 0; i < w->nputs; i++) {
        struct put *p = &w->puts[i];
        MPI_Put((char *)w->base + p->local_off, (int)p->size, MPI_BYTE, p->target, (MPI_Aint)p->target_off,
                (int)p->size, MPI_BYTE, w->win);
    }
}

void rma_epoch(rma_win *w)
{
    if (!w->committed) rma_fail("rma_epoch before rma_commit");
    switch (w->backend) {
    case RMA_TCA:
        if (w->nputs) TCA_SAFE_CALL(tcaStartDMADesc(w->channel));
        for (int r = 0; r < w->nprocs; r++)
            for (int k = 0; k < w->incoming[r]; k++) TCA_SAFE_CALL(tcaWaitDMARecvDesc(&w->all[r], 0, k));
        if (w->nputs) TCA_SAFE_CALL(tcaWaitDMAC(w->channel));
        break;
    case RMA_MPI_FENCE:
        mpi_puts(w);
        MPI_Win_fence(0, w->win);
        break;
    case RMA_MPI_PSCW:
        MPI_Win_post(w->exposure, 0, w->win);
        MPI_Win_start(w->access, 0, w->win);
        mpi_puts(w);
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        break;
    }
}

void rma_win_free(rma_win *w)
{
    if (w->backend == RMA_TCA) {
        if (w->chain) TCA_SAFE_CALL(tcaDescFree(w->chain));
        MPI_Barrier(MPI_COMM_WORLD); /* no peer writes through the handle any more */
        TCA_SAFE_CALL(tcaDestroyHandle(&w->mine));
        free(w->all);
    } else {
        if (w->backend == RMA_MPI_PSCW && w->committed) {
            MPI_Group_free(&w->exposure);
            MPI_Group_free(&w->access);
        }
        MPI_Win_free(&w->win);
    }
    free(w->puts);
    free(w->incoming);
    free(w);
}
