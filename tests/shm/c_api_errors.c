/*
 * Every failure of the C ABI is a tcaresult, never a crash: calls before tcaInit, an unknown
 * TCA_FABRIC, NULL pointers, bad handles (garbage bytes, destroyed, foreign memory), bad
 * offsets, sizes, alignments, slots, channels, flags and descriptors; writes through a peer's
 * handle after the peer destroyed it or freed its memory; a failed allgather; calls after
 * tcaFinalize. Run with `tca run -n 2` (or more ranks).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tca-api.h"

static int failures = 0;

#define EXPECT(call, code)                                                                  \
    do {                                                                                    \
        tcaresult r_ = (call);                                                              \
        if (r_ != (code)) {                                                                 \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s)\n", __FILE__,     \
                    __LINE__, #call, r_, tcaGetErrorString(r_), (code),                     \
                    tcaGetErrorString(code));                                               \
            failures++;                                                                     \
        }                                                                                   \
    } while (0)

/*
 * Writes through a peer's handles after the peer destroyed one and freed the memory of the
 * other fail on the writer's side, and nothing reaches what the peer allocated next at the
 * same address; the same for this rank's own handle used as a DMA source after tcaFree.
 */
static void stale_handles(int me, int n)
{
    uint8_t *a, *b, *src;
    tcaHandle ha, hb, hs, *as = malloc(sizeof(tcaHandle) * n), *bs = malloc(sizeof(tcaHandle) * n);
    EXPECT(tcaMalloc((void **)&a, 4096, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaMalloc((void **)&b, 4096, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaMalloc((void **)&src, 4096, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&ha, a, 4096, tcaMemoryGPU), TCA_ERROR_MEMORY_TYPE_MISMATCH);
    EXPECT(tcaCreateHandle(&ha, a, 4096, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&hb, b, 4096, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&hs, src, 4096, tcaMemoryCPU), TCA_SUCCESS);
    uint8_t *g;
    tcaHandle hg;
    EXPECT(tcaMalloc((void **)&g, 4096, tcaMemoryGPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&hg, g + 64, 64, tcaMemoryCPU), TCA_ERROR_MEMORY_TYPE_MISMATCH);
    EXPECT(tcaCreateHandle(&hg, g + 64, 64, tcaMemoryGPU), TCA_SUCCESS);
    EXPECT(tcaDestroyHandle(&hg), TCA_SUCCESS);
    EXPECT(tcaFree(g, tcaMemoryGPU), TCA_SUCCESS);
    EXPECT(tcaAllgather(&ha, as, sizeof(tcaHandle)), TCA_SUCCESS);
    EXPECT(tcaAllgather(&hb, bs, sizeof(tcaHandle)), TCA_SUCCESS);
    int next = (me + 1) % n;
    tcaPIOHandle pa, pb;
    EXPECT(tcaSetPIORegion(&pa, &as[next], 0, 4096), TCA_SUCCESS);
    EXPECT(tcaSetPIORegion(&pb, &bs[next], 0, 4096), TCA_SUCCESS);
    tcaDesc *da = tcaDescNew(), *db = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(da, &as[next], 0, &hs, 0, 4096, 0, 0, 0), TCA_SUCCESS);
    EXPECT(tcaDescSetMemcpy(db, &bs[next], 0, &hs, 0, 4096, 0, 0, 0), TCA_SUCCESS);
    EXPECT(tcaDescSet(da, 1), TCA_SUCCESS);
    EXPECT(tcaDescSet(db, 2), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    /* The owners: destroy ha (keeping a), free b without destroying hb, allocate again. */
    EXPECT(tcaDestroyHandle(&ha), TCA_SUCCESS);
    EXPECT(tcaFree(b, tcaMemoryCPU), TCA_SUCCESS);
    uint8_t *b2;
    EXPECT(tcaMalloc((void **)&b2, 4096, tcaMemoryCPU), TCA_SUCCESS);
    if (b2 != b) fprintf(stderr, "rank %d: note: the heap did not reuse the freed block\n", me);
    memset(b2, 0x5a, 4096);
    memset(a, 0x5a, 4096);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    uint32_t word = 0xdeadbeef;
    EXPECT(tcaSendPIO(&pa, 0, &word, 4), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaSendPIO(&pb, 0, &word, 4), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaStartDMADesc(1), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaStartDMADesc(2), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaSetPIORegion(&pa, &as[next], 0, 64), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaDestroyHandle(&hb), TCA_ERROR_INVALID_HANDLE); /* tcaFree destroyed it */
    /* Own handle as a DMA source after tcaFree (into the next rank's live b2). */
    tcaHandle hb2, *b2s = malloc(sizeof(tcaHandle) * n);
    EXPECT(tcaCreateHandle(&hb2, b2, 4096, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaAllgather(&hb2, b2s, sizeof(tcaHandle)), TCA_SUCCESS);
    tcaDesc *ds = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(ds, &b2s[next], 0, &hs, 0, 4096, 0, 0, 0), TCA_SUCCESS);
    EXPECT(tcaDescSet(ds, 3), TCA_SUCCESS);
    EXPECT(tcaFree(src, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaStartDMADesc(3), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    for (int i = 0; i < 4096; i++) {
        if (a[i] != 0x5a || b2[i] != 0x5a) {
            fprintf(stderr, "rank %d: a write through a stale handle landed at byte %d\n", me, i);
            failures++;
            break;
        }
    }
    EXPECT(tcaDescFree(da), TCA_SUCCESS);
    EXPECT(tcaDescFree(db), TCA_SUCCESS);
    EXPECT(tcaDescFree(ds), TCA_SUCCESS);
    EXPECT(tcaDestroyHandle(&hb2), TCA_SUCCESS);
    EXPECT(tcaFree(a, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaFree(b2, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    free(as);
    free(bs);
    free(b2s);
}

/*
 * The header's inline tcaSendPIO: a window is stored into directly when the ranks do not
 * outnumber the CPUs (its `direct` part follows the header's formula), the data of inline and
 * library stores arrives, and a window whose `direct` part was altered goes to the library,
 * which checks it.
 */
/*
 * The header's inline tcaWaitPIO: this rank's memory is waited on inline exactly when its
 * stores are (and waits spin: not with TCA_SPIN_US=0), at the address of the word; whatever
 * it cannot take (another rank's handle, an altered one, bad offsets and peers) gets the
 * library's answer; a value that comes after the inline polls is waited for by the library.
 * buf (bytes of mine) holds at its first word what the previous rank stored there.
 */
static void inline_wait(int me, int n, const tcaHandle *mine, const tcaHandle *all, uint8_t *buf, size_t bytes,
                        int stores_inline)
{
    const char *spin = getenv("TCA_SPIN_US");
    int expected = stores_inline && !(spin != NULL && atoi(spin) == 0);
    int view = tca_pio_epoch != 0 && tca_pio_wait_view.epoch == tca_pio_epoch;
    if (view != expected) {
        fprintf(stderr, "rank %d: waits inline: %d, expected %d\n", me, view, expected);
        failures++;
    }
    tcaHandle longer = *mine, other = all[(me + 1) % n];
    uint64_t size;
    memcpy(&size, longer.bytes + 16, 8);
    size += 4096;
    memcpy(longer.bytes + 16, &size, 8);
    const uint32_t *at[][2] = {
        {tca_wait_word(&tca_pio_wait_view, mine, 0), view ? (const uint32_t *)buf : NULL},
        {tca_wait_word(&tca_pio_wait_view, mine, 64), view ? (const uint32_t *)(buf + 64) : NULL},
        {tca_wait_word(&tca_pio_wait_view, mine, bytes - 4), view ? (const uint32_t *)(buf + bytes - 4) : NULL},
        {tca_wait_word(&tca_pio_wait_view, mine, bytes - 2), NULL},
        {tca_wait_word(&tca_pio_wait_view, mine, bytes), NULL},
        {tca_wait_word(&tca_pio_wait_view, &longer, 0), NULL},
        {tca_wait_word(&tca_pio_wait_view, n > 1 ? &other : &longer, 0), NULL},
        {tca_wait_word(&tca_pio_wait_view, NULL, 0), NULL},
    };
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        if (at[k][0] != at[k][1]) {
            fprintf(stderr, "rank %d: inline wait %zu finds its word at %p, expected %p\n", me, k, (void *)at[k][0],
                    (void *)at[k][1]);
            failures++;
        }
    }
    int from = (me + n - 1) % n;
    uint32_t first = 0;
    for (int i = 3; i >= 0; i--) first = first << 8 | (uint8_t)(i * 7 + from);
    EXPECT(tcaWaitPIO(mine, 0, first, from), TCA_SUCCESS);
    EXPECT((tcaWaitPIO)(mine, 0, first, from), TCA_SUCCESS);
    EXPECT(tcaWaitPIO(mine, 0, first, n), TCA_ERROR_INVALID_NODE);
    EXPECT(tcaWaitPIO(mine, 0, first, -1), TCA_ERROR_INVALID_NODE);
    EXPECT(tcaWaitPIO(mine, 2, first, from), TCA_ERROR_ALIGNMENT_MISMATCH);
    EXPECT(tcaWaitPIO(mine, bytes, first, from), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaWaitPIO(&longer, 0, first, from), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaWaitPIO(NULL, 0, first, from), TCA_ERROR_INVALID_ARGUMENT);
    if (n > 1) EXPECT(tcaWaitPIO(&other, 0, first, from), TCA_ERROR_INVALID_HANDLE);

    /* A value stored 3 ms later, long after the inline polls: rank 0 waits first, every other
     * rank stores to the next one after 3 ms, then waits. */
    tcaPIOHandle next;
    uint32_t late = 0x5a5a0000u + (uint32_t)me;
    EXPECT(tcaSetPIORegion(&next, &all[(me + 1) % n], 8, 4), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    if (me != 0) {
        usleep(3000);
        EXPECT(tcaSendPIO(&next, 0, &late, 4), TCA_SUCCESS);
    }
    EXPECT(tcaWaitPIO(mine, 8, 0x5a5a0000u + (uint32_t)from, from), TCA_SUCCESS);
    if (me == 0) EXPECT(tcaSendPIO(&next, 0, &late, 4), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
}

/*
 * The header's inline tcaWaitDMARecvDesc: notifications to this rank are taken inline exactly
 * when waits on its memory are (`spin_view`), from the ring of the sending rank; what it
 * cannot take (this rank's own or a malformed handle, a rank outside the job, a bad slot)
 * gets the library's answer; a notification behind another one in its ring, one the library
 * already holds, and one that comes after the inline polls are waited for by the library.
 * Each notification is taken once.
 */
static void send_notify(tcaDesc *d, const tcaHandle *to, const tcaHandle *from, int tag)
{
    EXPECT(tcaDescSetMemcpy(d, to, 0, from, 0, 4, tcaDMANotify, 5, tag), TCA_SUCCESS);
    EXPECT(tcaDescSet(d, 0), TCA_SUCCESS);
    EXPECT(tcaStartDMADesc(0), TCA_SUCCESS);
    EXPECT(tcaWaitDMAC(0), TCA_SUCCESS);
}

static void inline_recv(int me, int n, const tcaHandle *mine, const tcaHandle *all, int spin_view)
{
    const tcaDMAWaitView *v = &tca_dma_wait_view;
    int view = tca_pio_epoch != 0 && v->epoch == tca_pio_epoch;
    if (view != spin_view) {
        fprintf(stderr, "rank %d: notifications waited for inline: %d, expected %d\n", me, view, spin_view);
        failures++;
    }
    int from = (me + n - 1) % n, next = (me + 1) % n;
    tcaHandle bad[6];
    for (int k = 0; k < 6; k++) bad[k] = all[from];
    bad[0].bytes[0] = 'X';    /* magic */
    bad[1].bytes[6] = 2;      /* memory type */
    bad[2].bytes[7] = 1;      /* reserved byte */
    bad[3].bytes[29] = 1;     /* reserved word */
    memset(bad[4].bytes + 24, 0, 4); /* id 0 */
    bad[5].bytes[4] = (uint8_t)n; /* a node outside the job */
    if (view) {
        uint16_t node;
        uint8_t *ring = tca_notify_ring(v, &all[from], &node);
        if (ring != v->rings + from * v->ring_bytes || node != from || tca_notify_ring(v, mine, &node) != NULL ||
            tca_notify_ring(v, NULL, &node)) {
            fprintf(stderr, "rank %d: the ring from rank %d is not found where it lies\n", me, from);
            failures++;
        }
        for (int k = 0; k < 6; k++) {
            if (tca_notify_ring(v, &bad[k], &node) != NULL) {
                fprintf(stderr, "rank %d: malformed handle %d is waited for inline\n", me, k);
                failures++;
            }
        }
    }
    EXPECT(tcaWaitDMARecvDesc(&all[from], TCA_NOTIFY_SLOTS, 1), TCA_ERROR_INVALID_SLOT);
    EXPECT(tcaWaitDMARecvDesc(&all[from], -1, 1), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaWaitDMARecvDesc(NULL, 5, 1), TCA_ERROR_INVALID_ARGUMENT);
    for (int k = 0; k < 5; k++) EXPECT(tcaWaitDMARecvDesc(&bad[k], 5, 1), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaWaitDMARecvDesc(&bad[5], 5, 1), TCA_ERROR_INVALID_NODE);

    /* Tags 1 and 2 in order, then 4 before 3 (3 is at the front: the library takes 4 and
     * holds 3, which the next wait asks it for). */
    tcaDesc *d = tcaDescNew();
    for (int tag = 1; tag <= 4; tag++) send_notify(d, &all[next], mine, tag);
    EXPECT(tcaWaitDMARecvDesc(&all[from], 5, 1), TCA_SUCCESS);
    EXPECT(tcaWaitDMARecvDesc(&all[from], 5, 2), TCA_SUCCESS);
    if (view && *v->helper != 0) {
        fprintf(stderr, "rank %d: an inline wait left its announcement\n", me);
        failures++;
    }
    EXPECT(tcaWaitDMARecvDesc(&all[from], 5, 4), TCA_SUCCESS);
    if (view && *v->held == 0) {
        fprintf(stderr, "rank %d: the library holds tag 3, its mirror says not\n", me);
        failures++;
    }
    EXPECT(tcaWaitDMARecvDesc(&all[from], 5, 3), TCA_SUCCESS);
    /* A notification sent 3 ms later, long after the inline polls: rank 0 waits first, every
     * other rank sends after 3 ms, then waits. */
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    if (me != 0) {
        usleep(3000);
        send_notify(d, &all[next], mine, 6);
    }
    EXPECT(tcaWaitDMARecvDesc(&all[from], 5, 6), TCA_SUCCESS);
    if (me == 0) send_notify(d, &all[next], mine, 6);
    EXPECT(tcaDescFree(d), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
}

/*
 * The header's inline tcaStartDMADesc and tcaWaitDMAC: a chain of one write kicked again is
 * repeated inline exactly when PIO stores are (`start_view`), for descriptors in registers or
 * internal memory and writes up to 16 KiB; each repeat carries the source's bytes of that
 * moment and one notification. A chain set again is repeated from its own first run; a larger
 * write or one in chaining mode goes to the library; a destroyed descriptor table, a destroyed
 * destination, a freed source and a full ring get the library's answers.
 */
static void kick_and_receive(int ch, const tcaHandle *from_node, int tag)
{
    EXPECT(tcaWaitDMAC(ch), TCA_SUCCESS);
    EXPECT(tcaStartDMADesc(ch), TCA_SUCCESS);
    EXPECT(tcaWaitDMAC(ch), TCA_SUCCESS);
    EXPECT(tcaWaitDMARecvDesc(from_node, 7, tag), TCA_SUCCESS);
}

static int repeated_inline(const tcaDMAStartView *v, int view, int ch)
{
    return view && v->repeats[ch].inline_ok;
}

static void inline_start(int me, int n, int start_view)
{
    enum { BYTES = 65536 };
    const tcaDMAStartView *v = &tca_dma_start_view;
    int view = tca_pio_epoch != 0 && v->epoch == tca_pio_epoch;
    if (view != start_view) {
        fprintf(stderr, "rank %d: channels started inline: %d, expected %d\n", me, view, start_view);
        failures++;
    }
    int next = (me + 1) % n, from = (me + n - 1) % n;
    uint8_t *src, *dst;
    tcaHandle hs, hd, *dsts = malloc(sizeof(tcaHandle) * n);
    EXPECT(tcaMalloc((void **)&src, BYTES, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaMalloc((void **)&dst, BYTES, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&hs, src, BYTES, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&hd, dst, BYTES, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaAllgather(&hd, dsts, sizeof(tcaHandle)), TCA_SUCCESS);
    const tcaHandle *from_node = &dsts[from];

    /* Twenty kicks of one chain: the first through the library, the others repeated. */
    tcaDesc *d = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(d, &dsts[next], 0, &hs, 0, 64, tcaDMANotify, 7, 1), TCA_SUCCESS);
    EXPECT(tcaDescSet(d, 1), TCA_SUCCESS);
    for (int round = 0; round < 20; round++) {
        memset(src, round * 16 + me, 64);
        kick_and_receive(1, from_node, 1);
        for (int i = 0; i < 64; i++) {
            if (dst[i] != (uint8_t)(round * 16 + from)) {
                fprintf(stderr, "rank %d: kick %d: byte %d is %u, expected %u\n", me, round, i, dst[i],
                        (uint8_t)(round * 16 + from));
                failures++;
                break;
            }
        }
        EXPECT(tcaBarrier(), TCA_SUCCESS);
    }
    if (repeated_inline(v, view, 1) != start_view || (view && v->finished[1] != v->kicks[1])) {
        fprintf(stderr, "rank %d: the chain of one write is not repeated inline\n", me);
        failures++;
    }
    /* Set again: to offset 128, tag 2. */
    tcaDescFree(d);
    d = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(d, &dsts[next], 128, &hs, 0, 64, tcaDMANotify, 7, 2), TCA_SUCCESS);
    EXPECT(tcaDescSet(d, 1), TCA_SUCCESS);
    if (view && v->repeats[1].inline_ok) {
        fprintf(stderr, "rank %d: tcaDescSet kept the run of the previous chain\n", me);
        failures++;
    }
    memset(src, 0xa0 + me, 64);
    kick_and_receive(1, from_node, 2);
    kick_and_receive(1, from_node, 2);
    if (dst[128] != (uint8_t)(0xa0 + from) || dst[191] != (uint8_t)(0xa0 + from)) {
        fprintf(stderr, "rank %d: the chain set again did not write at its offset\n", me);
        failures++;
    }
    EXPECT(tcaBarrier(), TCA_SUCCESS); /* before the next writes into dst */
    /* Larger than 16 KiB, and chaining mode: the library repeats them. */
    tcaDesc *big = tcaDescNew(), *chained = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(big, &dsts[next], 0, &hs, 0, 16384 + 4, tcaDMANotify, 7, 3), TCA_SUCCESS);
    EXPECT(tcaDescSet(big, 2), TCA_SUCCESS);
    EXPECT(tcaDescSetMemcpy(chained, &dsts[next], 0, &hs, 0, 64, tcaDMANotify, 7, 4), TCA_SUCCESS);
    EXPECT(tcaDescSetMode(chained, tcaDMAModeChaining), TCA_SUCCESS);
    EXPECT(tcaDescSet(chained, 3), TCA_SUCCESS);
    for (int k = 0; k < 2; k++) {
        kick_and_receive(2, from_node, 3);
        kick_and_receive(3, from_node, 4);
    }
    if (repeated_inline(v, view, 2) || repeated_inline(v, view, 3)) {
        fprintf(stderr, "rank %d: a large or chaining-mode write is repeated inline\n", me);
        failures++;
    }
    /* Descriptors in internal memory, from a table: repeated inline until the table goes. */
    int tag;
    EXPECT(tcaCreateDMADesc(&tag, 1), TCA_SUCCESS);
    EXPECT(tcaSetDMADesc_Memcpy(tag, 0, NULL, &dsts[next], 256, &hs, 0, 64, tcaDMAUseInternal | tcaDMANotify, 7, 5),
           TCA_SUCCESS);
    EXPECT(tcaSetDMAChain(2, tag), TCA_SUCCESS);
    kick_and_receive(2, from_node, 5);
    kick_and_receive(2, from_node, 5);
    if (repeated_inline(v, view, 2) != start_view) {
        fprintf(stderr, "rank %d: a chain of internal memory is not repeated inline\n", me);
        failures++;
    }
    EXPECT(tcaDestroyDMADesc(tag), TCA_SUCCESS);
    EXPECT(tcaStartDMADesc(2), TCA_ERROR_CHANNEL_NOT_SET);
    EXPECT(tcaBarrier(), TCA_SUCCESS);

    /* A full ring: even ranks kick 1100 notifications to the next odd rank, which takes them
     * only 30 ms later (a ring holds 1024): the kicks past a full ring wait in the library. */
    enum { KICKS = 1100 };
    if (me % 2 == 0 && next == me + 1) {
        for (int k = 0; k < KICKS; k++) {
            EXPECT(tcaWaitDMAC(3), TCA_SUCCESS);
            EXPECT(tcaStartDMADesc(1), TCA_SUCCESS);
            EXPECT(tcaWaitDMAC(1), TCA_SUCCESS);
        }
    } else if (me % 2 == 1) {
        usleep(30000);
        for (int k = 0; k < KICKS; k++) EXPECT(tcaWaitDMARecvDesc(from_node, 7, 2), TCA_SUCCESS);
    }
    EXPECT(tcaBarrier(), TCA_SUCCESS);

    /* The destination destroyed, the source freed: the library's answers. */
    uint8_t *src2;
    tcaHandle hs2;
    EXPECT(tcaMalloc((void **)&src2, 64, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaCreateHandle(&hs2, src2, 64, tcaMemoryCPU), TCA_SUCCESS);
    tcaDesc *own = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(own, &hs, 0, &hs2, 0, 64, 0, 0, 0), TCA_SUCCESS);
    EXPECT(tcaDescSet(own, 0), TCA_SUCCESS);
    for (int k = 0; k < 2; k++) {
        EXPECT(tcaStartDMADesc(0), TCA_SUCCESS);
        EXPECT(tcaWaitDMAC(0), TCA_SUCCESS);
    }
    EXPECT(tcaFree(src2, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaStartDMADesc(0), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaDestroyHandle(&hd), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    EXPECT(tcaStartDMADesc(1), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    EXPECT(tcaDescFree(d), TCA_SUCCESS);
    EXPECT(tcaDescFree(big), TCA_SUCCESS);
    EXPECT(tcaDescFree(chained), TCA_SUCCESS);
    EXPECT(tcaDescFree(own), TCA_SUCCESS);
    EXPECT(tcaDestroyHandle(&hs), TCA_SUCCESS);
    EXPECT(tcaFree(src, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaFree(dst, tcaMemoryCPU), TCA_SUCCESS);
    free(dsts);
}

static void inline_pio(int me, int n)
{
    enum { BYTES = 32768 };
    uint8_t *buf;
    tcaHandle mine, *all = malloc(sizeof(tcaHandle) * n);
    EXPECT(tcaMalloc((void **)&buf, BYTES, tcaMemoryCPU), TCA_SUCCESS);
    memset(buf, 0, BYTES);
    EXPECT(tcaCreateHandle(&mine, buf, BYTES, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaAllgather(&mine, all, sizeof(tcaHandle)), TCA_SUCCESS);
    tcaPIOHandle pio;
    EXPECT(tcaSetPIORegion(&pio, &all[(me + 1) % n], 0, BYTES), TCA_SUCCESS);

    /* The fabric's policy: oversubscribed when the union of every rank's CPUs is smaller than
     * the job. */
    cpu_set_t cpus, *every = malloc(sizeof(cpu_set_t) * n);
    CPU_ZERO(&cpus);
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) CPU_SET(0, &cpus);
    EXPECT(tcaAllgather(&cpus, every, sizeof cpus), TCA_SUCCESS);
    for (int r = 0; r < n; r++) CPU_OR(&cpus, &cpus, &every[r]);
    free(every);
    int ncpus = CPU_COUNT(&cpus);
    const tcaPIODirect *d = &pio.direct;
    uint64_t check = tca_pio_epoch ^ (uint64_t)(uintptr_t)d->base ^ (uint64_t)(uintptr_t)d->live ^ d->len ^
                     (uint64_t)d->id << 32;
    int direct = d->base != NULL && d->check == check && d->len == BYTES && *d->live == d->id;
    if (direct != (ncpus >= n)) {
        fprintf(stderr, "rank %d: window stored inline: %d, expected %d (%d CPUs, %d ranks)\n", me, direct,
                ncpus >= n, ncpus, n);
        failures++;
    }

    /* Inline sizes (4 B up to TCA_PIO_INLINE_MAX) and a larger one (the library's). */
    static uint8_t src[BYTES];
    for (int i = 0; i < BYTES; i++) src[i] = (uint8_t)(i * 7 + me);
    EXPECT(tcaSendPIO(&pio, 0, src, 4), TCA_SUCCESS);
    /* 8, 12 and 16 B are two moves that overlap or meet; gaps between them stay 0. */
    EXPECT(tcaSendPIO(&pio, 8, src + 8, 8), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 20, src + 20, 12), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 36, src + 36, 16), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 64, src + 64, 64), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 128, src + 128, TCA_PIO_INLINE_MAX), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 128 + TCA_PIO_INLINE_MAX, src + 128 + TCA_PIO_INLINE_MAX, 8192 + 4), TCA_SUCCESS);
    EXPECT((tcaSendPIO)(&pio, BYTES - 4, src + BYTES - 4, 4), TCA_SUCCESS);
    EXPECT(tcaSendPIOCommit(), TCA_SUCCESS);
    EXPECT((tcaSendPIOCommit)(), TCA_SUCCESS);
    /* Checked as inline stores: size, bounds, arguments. */
    EXPECT(tcaSendPIO(&pio, 0, src, 6), TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4);
    EXPECT(tcaSendPIO(&pio, BYTES - 4, src, 8), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaSendPIO(&pio, (size_t)-4, src, 8), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaSendPIO(NULL, 0, src, 4), TCA_ERROR_INVALID_ARGUMENT);
    /* An altered window (a longer `direct` length) does not match its check: the library
     * refuses the store beyond the real window. */
    tcaPIOHandle altered = pio;
    altered.direct.len += 4096;
    EXPECT(tcaSendPIO(&altered, BYTES, src, 4), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);

    /* What the previous rank stored here. */
    int from = (me + n - 1) % n;
    size_t stored[][2] = {{0, 4}, {8, 8}, {20, 12}, {36, 16}, {64, 64}, {128, TCA_PIO_INLINE_MAX}, {128 + TCA_PIO_INLINE_MAX, 8192 + 4},
                          {BYTES - 4, 4}};
    for (size_t k = 0; k < sizeof stored / sizeof stored[0]; k++) {
        for (size_t i = stored[k][0]; i < stored[k][0] + stored[k][1]; i++) {
            if (buf[i] != (uint8_t)(i * 7 + from)) {
                fprintf(stderr, "rank %d: PIO byte %zu is %u, expected %u\n", me, i, buf[i], (uint8_t)(i * 7 + from));
                failures++;
                break;
            }
        }
    }
    if (buf[BYTES - 8] != 0 || buf[4] != 0) {
        fprintf(stderr, "rank %d: a refused PIO store landed\n", me);
        failures++;
    }
    size_t gaps[][2] = {{4, 8}, {16, 20}, {32, 36}, {52, 64}};
    for (size_t k = 0; k < sizeof gaps / sizeof gaps[0]; k++) {
        for (size_t i = gaps[k][0]; i < gaps[k][1]; i++) {
            if (buf[i] != 0) {
                fprintf(stderr, "rank %d: PIO byte %zu was never stored but is %u\n", me, i, buf[i]);
                failures++;
                break;
            }
        }
    }
    inline_wait(me, n, &mine, all, buf, BYTES, ncpus >= n);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    if (n > 1) inline_recv(me, n, &mine, all, tca_pio_wait_view.epoch == tca_pio_epoch && tca_pio_epoch != 0);
    if (n > 1) inline_start(me, n, ncpus >= n);
    EXPECT(tcaDestroyHandle(&mine), TCA_SUCCESS);
    /* The word still holds the value, but the handle is gone. */
    if (tca_wait_word(&tca_pio_wait_view, &mine, 0) != NULL) {
        fprintf(stderr, "rank %d: a destroyed handle is waited on inline\n", me);
        failures++;
    }
    uint32_t first;
    memcpy(&first, buf, 4);
    EXPECT(tcaWaitPIO(&mine, 0, first, from), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaFree(buf, tcaMemoryCPU), TCA_SUCCESS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    free(all);
}

int main(void)
{
    void *p = NULL;
    tcaHandle h, peer, bad;
    EXPECT(tcaMalloc(&p, 64, tcaMemoryCPU), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaStartDMADesc(0), TCA_ERROR_NOT_INITIALIZED);
    if (strcmp(tcaGetErrorString(TCA_ERROR_TIMEOUT), "timed out") != 0) failures++;
    if (strcmp(tcaGetErrorString(TCA_SUCCESS), "success") != 0) failures++;
    if (strcmp(tcaGetErrorString(12345), "unknown error code") != 0) failures++;

    setenv("TCA_FABRIC", "no-such-fabric", 1);
    EXPECT(tcaInit(), TCA_ERROR_UNKNOWN_FABRIC);
    unsetenv("TCA_FABRIC"); /* the default: shm */
    EXPECT(tcaInit(), TCA_SUCCESS);
    EXPECT(tcaInit(), TCA_SUCCESS); /* harmless while the job runs */
    int me, n;
    EXPECT(tcaGetNodeId(&me), TCA_SUCCESS);
    EXPECT(tcaGetNodeCount(&n), TCA_SUCCESS);
    EXPECT(tcaGetNodeId(NULL), TCA_ERROR_INVALID_ARGUMENT);

    EXPECT(tcaMalloc(NULL, 64, tcaMemoryCPU), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaMalloc(&p, 0, tcaMemoryCPU), TCA_ERROR_ZERO_SIZE);
    EXPECT(tcaMalloc(&p, 64, 7), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaMalloc(&p, (size_t)1 << 45, tcaMemoryCPU), TCA_ERROR_OUT_OF_MEMORY);
    EXPECT(tcaMalloc(&p, 4096, tcaMemoryGPU), TCA_SUCCESS);
    char stack[64];
    EXPECT(tcaCreateHandle(&h, stack, sizeof stack, tcaMemoryCPU), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaCreateHandle(&h, p, 8192, tcaMemoryGPU), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaCreateHandle(NULL, p, 64, tcaMemoryCPU), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaCreateHandle(&h, p, 4096, tcaMemoryGPU), TCA_SUCCESS);
    EXPECT(tcaFree(stack, tcaMemoryCPU), TCA_ERROR_INVALID_HANDLE);

    tcaHandle *all = malloc(sizeof(tcaHandle) * n);
    EXPECT(tcaAllgather(&h, all, sizeof(tcaHandle)), TCA_SUCCESS);
    EXPECT(tcaAllgather(NULL, all, sizeof(tcaHandle)), TCA_ERROR_INVALID_ARGUMENT);
    peer = all[(me + 1) % n];
    memset(&bad, 0x5a, sizeof bad);

    tcaDesc *d = tcaDescNew();
    EXPECT(tcaDescSetMemcpy(d, &bad, 0, &h, 0, 64, 0, 0, 0), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaDescSetMemcpy(d, NULL, 0, &h, 0, 64, 0, 0, 0), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 6, 0, 0, 0), TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4);
    EXPECT(tcaDescSetMemcpy(d, &peer, 4, &h, 0, 8, 0, 0, 0), TCA_ERROR_ALIGNMENT_MISMATCH);
    EXPECT(tcaDescSetMemcpy(d, &peer, 4032, &h, 4032, 128, 0, 0, 0), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0, 64, 0), TCA_ERROR_INVALID_SLOT);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0, -1, 0), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0x40, 0, 0), TCA_ERROR_UNKNOWN_FLAGS);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, tcaDMAUseNotifyInternal, 0, 0),
           TCA_ERROR_INVALID_FLAG_COMBINATION);
    EXPECT(tcaDescSetMemcpy2D(d, &peer, 0, 16, &h, 0, 32, 32, 4, 0, 0, 0), TCA_ERROR_INVALID_PITCH);
    EXPECT(tcaDescSet(d, 0), TCA_ERROR_INVALID_DESCRIPTOR); /* still empty */
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, tcaDMANotify, 0, 5), TCA_SUCCESS);
    EXPECT(tcaDescSet(d, 4), TCA_ERROR_INVALID_CHANNEL);
    EXPECT(tcaDescSet(d, -1), TCA_ERROR_INVALID_CHANNEL);
    EXPECT(tcaStartDMADesc(3), TCA_ERROR_CHANNEL_NOT_SET);
    EXPECT(tcaDescSet(d, 0), TCA_SUCCESS);
    EXPECT(tcaDescFree(d), TCA_SUCCESS);
    EXPECT(tcaDescFree(d), TCA_ERROR_INVALID_DESCRIPTOR);
    EXPECT(tcaDescSetMemcpy(d, &peer, 0, &h, 0, 64, 0, 0, 0), TCA_ERROR_INVALID_DESCRIPTOR);
    EXPECT(tcaDescSet((tcaDesc *)0x1234, 0), TCA_ERROR_INVALID_DESCRIPTOR);
    EXPECT(tcaStartDMADesc(0), TCA_SUCCESS); /* the channel kept its copy */
    EXPECT(tcaWaitDMAC(0), TCA_SUCCESS);
    EXPECT(tcaWaitDMARecvDesc(&all[(me + n - 1) % n], 0, 5), TCA_SUCCESS);
    EXPECT(tcaWaitDMARecvDesc(&bad, 0, 5), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaWaitDMARecvDesc(&peer, 99, 5), TCA_ERROR_INVALID_SLOT);
    EXPECT(tcaWaitDMAC(7), TCA_ERROR_INVALID_CHANNEL);

    tcaPIOHandle pio, badpio;
    memset(&badpio, 0, sizeof badpio);
    uint32_t word = 1;
    EXPECT(tcaSetPIORegion(&pio, &peer, 4090, 64), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaSetPIORegion(&pio, &bad, 0, 64), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaSetPIORegion(&pio, &peer, 0, 64), TCA_SUCCESS);
    EXPECT(tcaSendPIO(&pio, 0, &word, 3), TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4);
    EXPECT(tcaSendPIO(&pio, 64, &word, 4), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaSendPIO(&badpio, 0, &word, 4), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaSendPIO(&pio, 0, NULL, 4), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaWaitPIO(&peer, 0, 1, 0), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaWaitPIO(&h, 2, 1, 0), TCA_ERROR_ALIGNMENT_MISMATCH);
    EXPECT(tcaWaitPIO(&h, 0, 1, 99), TCA_ERROR_INVALID_NODE);
    EXPECT(tcaBarrier(), TCA_SUCCESS);

    stale_handles(me, n);
    inline_pio(me, n);
    /* Ranks passing different sizes: every rank fails, and the job goes on. */
    char gsend[64] = {0}, gather[64 * TCA_MAX_NODES];
    EXPECT(tcaAllgather(gsend, gather, (size_t)(4 + 4 * me)), TCA_ERROR_OUT_OF_BOUNDS);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    EXPECT(tcaAllgather(&me, gather, sizeof me), TCA_SUCCESS);
    for (int r = 0; r < n; r++)
        if (((int *)gather)[r] != r) failures++;

    EXPECT(tcaDestroyHandle(&h), TCA_SUCCESS);
    EXPECT(tcaDestroyHandle(&h), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaFree(p, tcaMemoryCPU), TCA_ERROR_MEMORY_TYPE_MISMATCH); /* p is a GPU block */
    EXPECT(tcaFree(p, 7), TCA_ERROR_INVALID_ARGUMENT);
    EXPECT(tcaFree(p, tcaMemoryGPU), TCA_SUCCESS);
    EXPECT(tcaFree(p, tcaMemoryGPU), TCA_ERROR_INVALID_HANDLE);
    EXPECT(tcaBarrier(), TCA_SUCCESS);
    EXPECT(tcaFinalize(), TCA_SUCCESS);
    EXPECT(tcaFinalize(), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaMalloc(&p, 64, tcaMemoryCPU), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaSendPIO(&pio, 0, &word, 4), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaSendPIOCommit(), TCA_ERROR_NOT_INITIALIZED);
    int id = -1, count = -1;
    EXPECT(tcaGetNodeId(&id), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaGetNodeCount(&count), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaBarrier(), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaInit(), TCA_ERROR_NOT_INITIALIZED); /* a finished rank does not join again */
    /* Descriptor tables went with the job (as on the simulator); a chain in memory needs none. */
    int table = 0;
    EXPECT(tcaCreateDMADesc(&table, 4), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaDMADescInt_Init(), TCA_ERROR_NOT_INITIALIZED);
    tcaDesc *chain = tcaDescNew();
    if (chain == NULL) {
        fprintf(stderr, "rank %d: tcaDescNew after tcaFinalize gave NULL\n", me);
        failures++;
    }
    EXPECT(tcaDescSet(chain, 0), TCA_ERROR_NOT_INITIALIZED);
    EXPECT(tcaDescFree(chain), TCA_SUCCESS);
    free(all);
    if (failures) {
        fprintf(stderr, "rank %d: %d failures\n", me, failures);
        return 1;
    }
    printf("rank %d: C API errors ok\n", me);
    return 0;
}
