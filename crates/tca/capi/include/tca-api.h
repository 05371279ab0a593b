/*
 * tca-api.h: the TCA user API (C) of tca, implemented by libtca.so.
 *
 * Names, signatures, flags and the call sequence follow the published TCA API as SYSTEMS.md §1
 * lists it and HA-PACS/TCA programs use it; the seeds name the functions only in words (seed
 * 001, "TCAアーキテクチャのユーザ利用": initialise, map GPU memory, prepare DMA descriptors, start
 * PIO and DMA, check arrival). docs/c-api.md lists what was checked and the differences left. Calls marked "Extension" are this library's own.
 * This library runs it on the fabric TCA_FABRIC names (see
 * tcaInit): by default the shm fabric, whose ranks are processes on one host, started by
 * `tca run -n N` or by mpirun (docs/shm-fabric.md).
 *
 * Every function returns a tcaresult: TCA_SUCCESS (0) or one of the codes below, which are
 * stable. tcaGetErrorString turns a code into one line of text. No call aborts the process.
 *
 * Build:  cc prog.c $(pkg-config --cflags --libs tca)
 */
#ifndef TCA_API_H
#define TCA_API_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>    /* memcpy (the inline tcaSendPIO) */
#include <sys/types.h> /* off_t */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this library (programs print it). */
#define TCA_LIB_VERSION "tca 0.1.0"

/* ---- results ---- */

/* The published API gives TCA_SUCCESS; the TCA_ERROR_* names and codes are this library's
 * (an extension; programs compare with TCA_SUCCESS and print tcaGetErrorString). */
typedef int tcaresult;

#define TCA_SUCCESS 0
#define TCA_ERROR_SIZE_NOT_MULTIPLE_OF_4 1  /* sizes and widths are multiples of 4 bytes */
#define TCA_ERROR_ALIGNMENT_MISMATCH 2      /* src and dst differ in their low 4 address bits */
#define TCA_ERROR_OUT_OF_BOUNDS 3           /* offset + size outside the handle */
#define TCA_ERROR_TOO_MANY_NODES 4          /* more than 16 nodes */
#define TCA_ERROR_INVALID_CHANNEL 5         /* DMA channel outside 0..3 */
#define TCA_ERROR_INVALID_SLOT 6            /* wait slot outside 0..63 */
#define TCA_ERROR_INVALID_HANDLE 7          /* malformed, unknown, destroyed, freed or foreign */
#define TCA_ERROR_INVALID_DESCRIPTOR 8      /* empty, freed or unknown descriptor */
#define TCA_ERROR_REGISTER_MODE_FULL 9      /* register mode holds at most 16 requests */
#define TCA_ERROR_UNKNOWN_FLAGS 10
#define TCA_ERROR_NOT_INITIALIZED 11        /* before tcaInit or after tcaFinalize */
#define TCA_ERROR_OUT_OF_MEMORY 12
#define TCA_ERROR_TIMEOUT 13                /* a wait passed TCA_TIMEOUT_MS */
#define TCA_ERROR_PEER_DEAD 14              /* the awaited rank died or finished */
#define TCA_ERROR_ZERO_SIZE 15
#define TCA_ERROR_INVALID_PITCH 16
#define TCA_ERROR_TOO_LARGE 17
#define TCA_ERROR_INVALID_NODE 18
#define TCA_ERROR_INVALID_FLAG_COMBINATION 19
#define TCA_ERROR_CHANNEL_BUSY 20
#define TCA_ERROR_CHANNEL_NOT_SET 21
#define TCA_ERROR_UNEXPECTED_COMPLETION 22
#define TCA_ERROR_DEADLOCK 23
/* A NULL pointer, a negative number, or a value no call takes (an unknown data type, a size
 * that overflows); C ABI only. */
#define TCA_ERROR_INVALID_ARGUMENT 100
#define TCA_ERROR_INTERNAL 101              /* a bug in the library, reported instead of a crash */
#define TCA_ERROR_UNKNOWN_FABRIC 102        /* TCA_FABRIC names no fabric of this process */
#define TCA_ERROR_MEMORY_TYPE_MISMATCH 103  /* tcaFree or tcaCreateHandle with another type than the block's */
#define TCA_ERROR_UNKNOWN_TAG 104           /* no tcaCreateDMADesc of this rank gave the tag */
#define TCA_ERROR_DESTROYED_TAG 105         /* the tag's table was destroyed */
#define TCA_ERROR_DESC_SLOT_OUT_OF_RANGE 106 /* descriptor slot < 0 or >= the table's entries */
#define TCA_ERROR_EMPTY_TABLE 107           /* chain of a table (or internal slot) without entry */
#define TCA_ERROR_INTERNAL_MEMORY_FULL 108  /* internal slot >= TCA_DMA_DESC_INT_SLOTS */
#define TCA_ERROR_INVALID_OP 109            /* TCA_OP_NOOP, or a bitwise operator on a float type */
#define TCA_ERROR_COLL_MISMATCH 110         /* ranks called a tcaColl* with different arguments */
#define TCA_ERROR_CHANNEL_TAKEN 111         /* a tcaColl* set its chain on the channel: set yours again */

/* One line of English text for a code ("success", "timed out", ...). Never NULL. */
const char *tcaGetErrorString(tcaresult code);

/* ---- memory types, DMA flags, modes ---- */

typedef enum tcaMemoryType { tcaMemoryCPU = 0, tcaMemoryGPU = 1 } tcaMemoryType;

/* Flags of tcaDescSetMemcpy / tcaDescSetMemcpy2D (bit values are stable). */
#define tcaDMAUseInternal 0x01       /* descriptor kept in the controller's internal memory */
#define tcaDMAUseNotifyInternal 0x02 /* notification lands in internal memory (with a notify) */
#define tcaDMANotify 0x04            /* notify the destination (slot, tag) when the data is in */
#define tcaDMANotifySelf 0x08        /* notify the node running the chain */
#define tcaDMAContinue 0x10          /* next entry starts without waiting for this one */
#define tcaDMAPipeline 0x20          /* stage through internal memory (a timing property) */
typedef int tcaDMAFlag;              /* an OR of the flags above (programs declare it) */

/* Extension: how the DMA controller gets the requests (seed 000 §3.5.2). */
typedef enum tcaDMAMode { tcaDMAModeAuto = 0, tcaDMAModeRegister = 1, tcaDMAModeChaining = 2 } tcaDMAMode;

/* Reduction operators and types of the published API (tcaCollAllreduce, tcaCollReduce).
 * TCA_OP_NOOP is the last operator. A type's value is its size in bytes << 8 | its index
 * (programs take the size as type >> 8 and index tables with type & 0xff). */
typedef enum tcaOp { TCA_OP_SUM, TCA_OP_PROD, TCA_OP_MAX, TCA_OP_MIN, TCA_OP_BAND, TCA_OP_LAND,
                     TCA_OP_BOR, TCA_OP_LOR, TCA_OP_BXOR, TCA_OP_LXOR, TCA_OP_NOOP } tcaOp;
typedef enum tcaDataType {
    TCA_CHAR = 1 << 8 | 0, TCA_SIGNED_CHAR = 1 << 8 | 1, TCA_UNSIGNED_CHAR = 1 << 8 | 2,
    TCA_BYTE = 1 << 8 | 3, TCA_SHORT = 2 << 8 | 4, TCA_UNSIGNED_SHORT = 2 << 8 | 5,
    TCA_INT = 4 << 8 | 6, TCA_UNSIGNED = 4 << 8 | 7, TCA_LONG = 8 << 8 | 8,
    TCA_UNSIGNED_LONG = 8 << 8 | 9, TCA_LONG_LONG = 8 << 8 | 10, TCA_UNSIGNED_LONG_LONG = 8 << 8 | 11,
    TCA_FLOAT = 4 << 8 | 12, TCA_DOUBLE = 8 << 8 | 13, TCA_LONG_DOUBLE = 16 << 8 | 14
} tcaDataType;

#define TCA_DMA_CHANNELS 4
#define TCA_NOTIFY_SLOTS 64
#define TCA_MAX_NODES 16

/* ---- handles ---- */

/* A registered region of one node's memory: node id, address, size, type, in a fixed 32-byte
 * wire form. Plain bytes: send sizeof(tcaHandle) bytes to other ranks (MPI_Allgather). */
typedef struct tcaHandle { uint8_t bytes[32]; } tcaHandle;

/* An open PIO window into a (usually remote) handle: its 48-byte wire form (plain bytes, which
 * every library call checks), then where its stores go in this process when the fabric maps
 * the window here (the shm fabric): what the inline tcaSendPIO below reads, and all it checks
 * (that part's check word and the handle still live), not the wire form. Set it with
 * tcaSetPIORegion only; a copy whose wire form was changed may still store inline. */
typedef struct tcaPIODirect {
    uint8_t *base;          /* the window's first byte in this process */
    const uint32_t *live;   /* the owner's handle-table word: the handle's id while live */
    uint64_t len;           /* the window's length */
    uint32_t id, reserved;  /* the handle's id */
    uint64_t check;         /* tca_pio_epoch ^ base ^ live ^ len ^ id << 32 */
} tcaPIODirect;
typedef struct tcaPIOHandle {
    uint8_t bytes[48];
    tcaPIODirect direct;
} tcaPIOHandle;

/* A descriptor chain under construction (opaque). */
typedef struct tcaDesc tcaDesc;

/* ---- set-up ---- */

/* Joins the job (collective: every rank calls it) on the fabric TCA_FABRIC names: "shm" (the
 * default) or one the program embedding this library registered (the simulator); any other
 * name gives TCA_ERROR_UNKNOWN_FABRIC. The shm fabric reads rank and size from `tca run`
 * (TCA_RANK, TCA_SIZE, TCA_JOB_ID) or from mpirun (Open MPI, MPICH), and how waits behave from
 * TCA_TIMEOUT_MS (default 10000) and TCA_SPIN_US (busy-poll time before a wait sleeps; default
 * 1000, or 0 when the job's ranks outnumber the CPUs they may run on). A TCA_SPIN_US longer
 * than TCA_TIMEOUT_MS is rejected. On failure the reason is also printed on stderr. */
tcaresult tcaInit(void);
/* Leaves the job; every later call that needs it returns TCA_ERROR_NOT_INITIALIZED. Building a
 * chain in memory (tcaDescNew, tcaDescSetMemcpy*, tcaDescSetMode, tcaDescFree) needs no job,
 * before tcaInit or after tcaFinalize; registering one (tcaDescSet) does. */
tcaresult tcaFinalize(void);
/* Extensions: this rank's node id, and the number of nodes. */
tcaresult tcaGetNodeId(int *node);
tcaresult tcaGetNodeCount(int *nodes);

/* Allocates size bytes that peers can reach (64-byte aligned). type: tcaMemoryCPU or
 * tcaMemoryGPU (host memory on the shm fabric). */
tcaresult tcaMalloc(void **ptr, size_t size, tcaMemoryType type);
/* Frees a tcaMalloc block allocated with the same type (TCA_ERROR_MEMORY_TYPE_MISMATCH
 * otherwise, and the block stays); every handle inside it stops working on every rank (writes
 * through it return TCA_ERROR_INVALID_HANDLE; so does a later tcaDestroyHandle of it). */
tcaresult tcaFree(void *ptr, tcaMemoryType type);

/* Registers size bytes at ptr (inside one tcaMalloc block, of that type: else
 * TCA_ERROR_MEMORY_TYPE_MISMATCH). A rank holds at most 4096 live handles:
 * TCA_ERROR_OUT_OF_MEMORY beyond (destroy those no longer used). */
tcaresult tcaCreateHandle(tcaHandle *handle, void *ptr, size_t size, tcaMemoryType type);
/* Unregisters a handle of this rank. Any rank's later write through it (tcaStartDMADesc of a
 * chain that uses it, tcaSetPIORegion, tcaSendPIO) returns TCA_ERROR_INVALID_HANDLE. */
tcaresult tcaDestroyHandle(tcaHandle *handle);

/* ---- DMA ---- */

tcaDesc *tcaDescNew(void); /* NULL when out of memory */
tcaresult tcaDescFree(tcaDesc *desc);
/* Appends a copy of size bytes; repeated calls chain. Notification (wait_slot, wait_tag).
 * A negative offset gives TCA_ERROR_INVALID_ARGUMENT. A copy whose source and destination
 * overlap leaves the bytes undefined, as memcpy does: the DMA engine reads ahead of its
 * writes in 4 KiB requests, and the fabrics differ (the shm fabric moves them as memmove). */
tcaresult tcaDescSetMemcpy(tcaDesc *desc, const tcaHandle *dst_handle, off_t dst_offset,
                           const tcaHandle *src_handle, off_t src_offset, size_t size,
                           int flags, int wait_slot, int wait_tag);
/* Appends a block-stride copy: count bursts of width bytes, pitches in bytes. */
tcaresult tcaDescSetMemcpy2D(tcaDesc *desc, const tcaHandle *dst_handle, off_t dst_offset,
                             size_t dst_pitch, const tcaHandle *src_handle, off_t src_offset,
                             size_t src_pitch, size_t width, size_t count, int flags,
                             int wait_slot, int wait_tag);
/* Extension: forces register or chaining mode (default: register up to 16 entries). */
tcaresult tcaDescSetMode(tcaDesc *desc, int mode);
/* Registers the chain on DMA channel ch (0..3); the channel keeps a copy. While the channel's
 * previous run is in flight it first waits for that run to end, as tcaWaitDMAC does
 * (TCA_ERROR_TIMEOUT after TCA_TIMEOUT_MS on the shm fabric). TCA_ERROR_INVALID_HANDLE at once
 * for a handle its owner destroyed or freed; TCA_ERROR_TOO_LARGE for a chain of more than
 * 131072 entries (a channel's 4 MiB descriptor table). */
tcaresult tcaDescSet(tcaDesc *desc, int ch);
/* Kicks channel ch; tcaWaitDMAC waits until its run is over. While the previous run is in
 * flight (no tcaWaitDMAC since the last start) it first waits for that run to end, as
 * tcaDescSet does. TCA_ERROR_INVALID_HANDLE when a handle of the chain was destroyed or freed
 * by its owner since tcaDescSet; TCA_ERROR_PEER_DEAD for a read from a rank that left the job;
 * TCA_ERROR_CHANNEL_TAKEN (nothing runs) when a tcaColl* call registered its own chain on ch
 * since this rank's last tcaDescSet, tcaSetDMAChain or tcaSetDMAChainInt there. */
tcaresult tcaStartDMADesc(int ch);
tcaresult tcaWaitDMAC(int ch);
/* Waits for (and consumes) one notification (wait_slot, wait_tag) from handle's node. */
tcaresult tcaWaitDMARecvDesc(const tcaHandle *handle, int wait_slot, int wait_tag);

/* Descriptor tables (chaining mode, seed 000 §3.5.2, §3.7). tcaCreateDMADesc makes a table of
 * `entries` slots and returns its tag (1, 2, ... per rank, never reused). A set call validates
 * and writes one entry at `slot` (replacing one there), as tcaDescSetMemcpy(2D) would append
 * it, and stores slot + 1 in *next_slot (may be NULL). A table's chain is its set slots in
 * increasing order. tcaSetDMAChain appends the table's chain to the tags already chained on ch
 * (tcaDescSet and tcaSetDMAChainInt begin a new list; a tag chained again is read again, not
 * run twice) and registers the whole, as tcaDescSet does: later changes of a table need another
 * tcaSetDMAChain. tcaDestroyDMADesc takes the tag off its channels; a channel left without a
 * tag answers tcaStartDMADesc with TCA_ERROR_CHANNEL_NOT_SET. */
tcaresult tcaCreateDMADesc(int *tag, int entries);
tcaresult tcaSetDMADesc_Memcpy(int tag, int slot, int *next_slot, const tcaHandle *dst_handle,
                               off_t dst_offset, const tcaHandle *src_handle, off_t src_offset,
                               size_t size, int flags, int wait_slot, int wait_tag);
tcaresult tcaSetDMADesc_Memcpy2D(int tag, int slot, int *next_slot, const tcaHandle *dst_handle,
                                 off_t dst_offset, size_t dst_pitch, const tcaHandle *src_handle,
                                 off_t src_offset, size_t src_pitch, size_t width, size_t count,
                                 int flags, int wait_slot, int wait_tag);
tcaresult tcaSetDMAChain(int ch, int tag);
tcaresult tcaDestroyDMADesc(int tag);

/* The descriptor table in PEACH2's internal memory: TCA_DMA_DESC_INT_SLOTS slots per rank
 * (Extension: the constant), empty from tcaInit; tcaDMADescInt_Init empties it. Entries carry
 * tcaDMAUseInternal. tcaSetDMAChainInt registers the chain from `slot` through the following
 * set slots up to the first empty one, replacing the channel's chain. */
#define TCA_DMA_DESC_INT_SLOTS 1024
tcaresult tcaDMADescInt_Init(void);
tcaresult tcaSetDMADescInt_Memcpy(int slot, int *next_slot, const tcaHandle *dst_handle,
                                  off_t dst_offset, const tcaHandle *src_handle, off_t src_offset,
                                  size_t size, int flags, int wait_slot, int wait_tag);
tcaresult tcaSetDMADescInt_Memcpy2D(int slot, int *next_slot, const tcaHandle *dst_handle,
                                    off_t dst_offset, size_t dst_pitch, const tcaHandle *src_handle,
                                    off_t src_offset, size_t src_pitch, size_t width, size_t count,
                                    int flags, int wait_slot, int wait_tag);
tcaresult tcaSetDMAChainInt(int ch, int slot);

/* ---- PIO ---- */

/* Opens size bytes at offset of handle for PIO stores. */
tcaresult tcaSetPIORegion(tcaPIOHandle *pio, const tcaHandle *handle, size_t offset, size_t size);
/* Stores size bytes (a multiple of 4) at offset of the window. */
tcaresult tcaSendPIO(const tcaPIOHandle *pio, size_t offset, const void *src, size_t size);
/* Orders all earlier PIO stores of this rank (any window) before all later ones. */
tcaresult tcaSendPIOCommit(void);
/* Extension: waits until the 32-bit word at offset of this rank's handle equals value,
 * failing when rank `peer` dies or leaves the job (TCA_ERROR_PEER_DEAD, once what it sent has
 * arrived) or after the timeout (the receiving side of PIO). The word's address (the handle's
 * plus offset) must be a multiple of 4 (TCA_ERROR_ALIGNMENT_MISMATCH). */
tcaresult tcaWaitPIO(const tcaHandle *handle, size_t offset, uint32_t value, int peer);

/* tcaSendPIO, tcaSendPIOCommit, tcaWaitPIO and tcaWaitDMARecvDesc without a library call (GNU
 * C; the functions stay, and `(tcaSendPIO)(...)` or `&tcaSendPIO` reach them). On the shm
 * fabric a store into a window whose handle is live, a non-zero multiple of 4 bytes up to
 * TCA_PIO_INLINE_MAX, within the window, is a copy into the peer's mapped memory, and a
 * commit is a release fence: the CPU stores of seed 000 §3.5.1 without the cost of a call. A
 * wait on a live handle of this rank polls the word for TCA_PIO_WAIT_POLLS rounds and returns
 * when it holds the value. A wait for a notification from another rank polls the front of
 * that rank's ring for as long and takes the notification there. Every other case (the
 * simulator, ranks outnumbering CPUs, a destroyed handle, a bad size, offset, slot or peer,
 * after tcaFinalize, a value or notification that has not come yet) calls the library, which
 * checks everything and returns the error or waits. docs/shm-fabric.md. */
#if defined(__GNUC__) && !defined(TCA_NO_INLINE_PIO)
/* Non-zero while this process's shm fabric is initialised (a value of its own each time). */
extern uint64_t tca_pio_epoch;
#define TCA_PIO_INLINE_MAX 16384

static __inline__ tcaresult tca_send_pio_inline(const tcaPIOHandle *pio, size_t offset, const void *src, size_t size)
{
    uint64_t epoch = __atomic_load_n(&tca_pio_epoch, __ATOMIC_ACQUIRE);
    if (epoch != 0 && pio != NULL && src != NULL && size != 0 && size % 4 == 0 && size <= TCA_PIO_INLINE_MAX) {
        const tcaPIODirect *d = &pio->direct;
        uint64_t check = epoch ^ (uint64_t)(uintptr_t)d->base ^ (uint64_t)(uintptr_t)d->live ^ d->len ^ (uint64_t)d->id << 32;
        if (d->check == check && offset <= d->len && size <= d->len - offset &&
            __atomic_load_n(d->live, __ATOMIC_ACQUIRE) == d->id) {
            uint8_t *to = d->base + offset;
            const uint8_t *from = (const uint8_t *)src;
            if (size <= 16) {
                /* Two moves (which may overlap) of a size known here: a call to memcpy would
                 * cost a fifth of an 8-byte message (docs/shm-fabric.md, "Small stores"). */
                if (size >= 8) {
                    uint64_t head, tail;
                    memcpy(&head, from, 8);
                    memcpy(&tail, from + size - 8, 8);
                    memcpy(to, &head, 8);
                    memcpy(to + size - 8, &tail, 8);
                } else {
                    uint32_t head, tail;
                    memcpy(&head, from, 4);
                    memcpy(&tail, from + size - 4, 4);
                    memcpy(to, &head, 4);
                    memcpy(to + size - 4, &tail, 4);
                }
            } else {
                memcpy(to, from, size);
            }
            return TCA_SUCCESS;
        }
    }
    return (tcaSendPIO)(pio, offset, src, size);
}

static __inline__ tcaresult tca_send_pio_commit_inline(void)
{
    if (__atomic_load_n(&tca_pio_epoch, __ATOMIC_ACQUIRE) != 0) {
        __atomic_thread_fence(__ATOMIC_RELEASE);
        return TCA_SUCCESS;
    }
    return (tcaSendPIOCommit)();
}

/* One slot of this rank's handle table, as the library publishes it. */
typedef struct tcaHandleSlot {
    uint32_t id, mem; /* the live handle's id (0: none) and memory type */
    uint64_t addr, size, reserved;
} tcaHandleSlot;
/* This rank's memory, valid while epoch == tca_pio_epoch (set by tcaInit on the shm fabric
 * when waits spin). A handle at global addr lies at base + (addr - origin). */
typedef struct tcaPIOWaitView {
    uint64_t epoch;
    uint8_t *base;
    uint64_t origin, heap, len; /* handles lie in [origin + heap, origin + len) */
    const tcaHandleSlot *slots; /* slot of a handle: slots[id & slot_mask] */
    uint32_t slot_mask;
    uint16_t node, nodes;
} tcaPIOWaitView;
extern tcaPIOWaitView tca_pio_wait_view;
#define TCA_PIO_WAIT_POLLS 256

/* The fields of handle h's wire form ("TCAh", node u16, mem u8, 0, addr u64, size u64, id u32,
 * 0), if it is one the library accepts. */
static __inline__ int tca_handle_fields(const tcaHandle *h, uint16_t *node, uint64_t *addr, uint64_t *size,
                                        uint32_t *id)
{
    uint32_t zero;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return 0; /* the wire form is little-endian */
#endif
    if (h == NULL || memcmp(h->bytes, "TCAh", 4) != 0 || h->bytes[6] > 1 || h->bytes[7] != 0)
        return 0;
    memcpy(node, h->bytes + 4, 2);
    memcpy(addr, h->bytes + 8, 8);
    memcpy(size, h->bytes + 16, 8);
    memcpy(id, h->bytes + 24, 4);
    memcpy(&zero, h->bytes + 28, 4);
    return zero == 0 && *id != 0 && *size != 0 && *addr + *size >= *addr;
}

/* Where the 32-bit word at offset of handle h lies in this process, if h is a live handle of
 * this rank. */
static __inline__ const uint32_t *tca_wait_word(const tcaPIOWaitView *v, const tcaHandle *h, size_t offset)
{
    uint16_t node;
    uint32_t id;
    uint64_t addr, size;
    const tcaHandleSlot *s;
    if (!tca_handle_fields(h, &node, &addr, &size, &id) || node != v->node || size < 4 || offset > size - 4 ||
        (addr + offset) % 4 != 0 || addr < v->origin + v->heap || addr - v->origin > v->len ||
        size > v->len - (addr - v->origin))
        return NULL;
    s = &v->slots[id & v->slot_mask];
    if (__atomic_load_n(&s->id, __ATOMIC_ACQUIRE) != id || __atomic_load_n(&s->addr, __ATOMIC_RELAXED) != addr ||
        __atomic_load_n(&s->size, __ATOMIC_RELAXED) != size || __atomic_load_n(&s->mem, __ATOMIC_RELAXED) != h->bytes[6])
        return NULL;
    return (const uint32_t *)(v->base + (addr - v->origin) + offset);
}

static __inline__ tcaresult tca_wait_pio_inline(const tcaHandle *handle, size_t offset, uint32_t value, int peer)
{
    const tcaPIOWaitView *v = &tca_pio_wait_view;
    uint64_t epoch = __atomic_load_n(&tca_pio_epoch, __ATOMIC_ACQUIRE);
    if (epoch != 0 && v->epoch == epoch && peer >= 0 && peer < (int)v->nodes) {
        const uint32_t *word = tca_wait_word(v, handle, offset);
        int i;
        for (i = 0; word != NULL && i < TCA_PIO_WAIT_POLLS; i++) {
            if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == value)
                return TCA_SUCCESS;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    return (tcaWaitPIO)(handle, offset, value, peer);
}

/* This rank's notification rings, valid while epoch == tca_pio_epoch (set by tcaInit on the shm
 * fabric when waits spin). The ring from node n starts at rings + n * ring_bytes: its position
 * (uint32_t: entries taken so far) first, then ring_slots entries from `entries` bytes in. The
 * entry at position p is (p / ring_slots % 0xffff + 1) << 48 | slot << 32 | tag once written. */
typedef struct tcaDMAWaitView {
    uint64_t epoch;
    uint8_t *rings;
    uint64_t ring_bytes;
    uint32_t ring_slots, entries;
    const uint32_t *held;  /* non-zero while the library holds notifications that arrived */
    uint32_t *helper;      /* node + 1 while a waiter spins for node */
    const uint8_t *shares; /* uint32_t at shares + n * share_bytes: 1 while node n offers a share */
    uint64_t share_bytes;
    uint16_t node, nodes;
} tcaDMAWaitView;
extern tcaDMAWaitView tca_dma_wait_view;

/* The ring of the notifications to this rank from h's node (stored at *node), if h is a handle
 * the library accepts of another rank of the job (only its node matters: its owner may have
 * destroyed it). */
static __inline__ uint8_t *tca_notify_ring(const tcaDMAWaitView *v, const tcaHandle *h, uint16_t *node)
{
    uint32_t id;
    uint64_t addr, size;
    if (!tca_handle_fields(h, node, &addr, &size, &id) || *node >= v->nodes || *node == v->node)
        return NULL;
    return v->rings + *node * v->ring_bytes;
}

static __inline__ tcaresult tca_wait_dma_recv_inline(const tcaHandle *handle, int wait_slot, int wait_tag)
{
    const tcaDMAWaitView *v = &tca_dma_wait_view;
    uint64_t epoch = __atomic_load_n(&tca_pio_epoch, __ATOMIC_ACQUIRE);
    uint8_t *ring;
    uint16_t node;
    if (epoch != 0 && v->epoch == epoch && wait_slot >= 0 && wait_slot < TCA_NOTIFY_SLOTS &&
        (ring = tca_notify_ring(v, handle, &node)) != NULL && __atomic_load_n(v->held, __ATOMIC_ACQUIRE) == 0) {
        uint32_t *position = (uint32_t *)ring;
        const uint64_t *entries = (const uint64_t *)(ring + v->entries);
        const uint32_t *offer = (const uint32_t *)(v->shares + node * v->share_bytes);
        uint64_t want = (uint64_t)(uint32_t)wait_slot << 32 | (uint32_t)wait_tag;
        int i;
        __atomic_store_n(v->helper, node + 1u, __ATOMIC_RELAXED);
        for (i = 0; i < TCA_PIO_WAIT_POLLS; i++) {
            uint32_t p = __atomic_load_n(position, __ATOMIC_ACQUIRE);
            uint64_t e = __atomic_load_n(&entries[p & (v->ring_slots - 1)], __ATOMIC_ACQUIRE);
            if (e >> 48 == p / v->ring_slots % 0xffff + 1) {
                if ((e & 0xffffffffffffull) != want)
                    break; /* another notification first: the library counts it */
                if (__atomic_compare_exchange_n(position, &p, p + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                    __atomic_store_n(v->helper, 0, __ATOMIC_RELAXED);
                    return TCA_SUCCESS;
                }
                continue; /* another thread took it */
            }
            if (__atomic_load_n(offer, __ATOMIC_RELAXED) == 1)
                break; /* a share of a large write to copy: the library does */
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
    }
    return (tcaWaitDMARecvDesc)(handle, wait_slot, wait_tag);
}

/* A chain of one write kicked again unchanged, as the library keeps it for repeats (read only
 * by the holder of the channel's claim): where the bytes go in this process, the handle-table
 * words that hold the handles' ids while they live, and the destination's ring. */
typedef struct tcaDMARepeat {
    uint32_t inline_ok, dst_node; /* inline_ok: the header may repeat it */
    uint8_t *dst;
    const uint8_t *src;
    uint64_t len;
    const uint32_t *live[2]; /* destination's, source's */
    uint32_t id[2];
    uint8_t *ring;           /* NULL: no notification */
    uint64_t notify;         /* its entry, below the lap */
    const uint32_t *waiters; /* the destination's sleeping waiters */
} tcaDMARepeat;
/* The producer side of a ring to one node: a lock taken by compare-and-swap, given back by a
 * store; the next entry to write; the consumer's position as last read. */
typedef struct tcaRingProducer {
    uint8_t held;
    uint32_t head, tail;
} tcaRingProducer;
/* This process's channels, valid while epoch == tca_pio_epoch (set by tcaInit on the shm
 * fabric when the ranks do not outnumber the CPUs). */
typedef struct tcaDMAStartView {
    uint64_t epoch;
    tcaDMARepeat *repeats;      /* one per channel */
    uint8_t *claims;            /* one byte per channel: held by whoever starts or runs it */
    uint32_t *kicks, *finished; /* per channel: kicks, and the kick last finished by a caller */
    const uint32_t *executing;  /* threads of this process carrying out the engine's actions */
    const uint32_t *dead;       /* nodes marked dead, a bit each */
    uint32_t *unfenced;         /* 1 + the node last notified without a fenced look */
    uint8_t *producers;         /* the producer of the ring to node n: + n * producer_bytes */
    uint64_t producer_bytes;
    uint32_t ring_slots, entries;
    const uint32_t *waiters[TCA_MAX_NODES]; /* each node's sleeping waiters */
} tcaDMAStartView;
extern tcaDMAStartView tca_dma_start_view;
void tca_dma_wake(int node); /* wakes node's sleeping waiters (the library's doorbell) */

/* The fenced look at the sleeping waiters of the rank last notified without one: every DMA
 * call makes it, so that a waiter that fell asleep as the notification came is woken. */
static __inline__ void tca_settle_notify(const tcaDMAStartView *v)
{
    uint32_t node = __atomic_load_n(v->unfenced, __ATOMIC_RELAXED);
    if (node != 0) {
        __atomic_store_n(v->unfenced, 0, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if (node <= TCA_MAX_NODES && __atomic_load_n(v->waiters[node - 1], __ATOMIC_RELAXED) != 0)
            tca_dma_wake((int)node - 1);
    }
}

/* Repeats the run kept for channel ch, holding its claim; 0 when it must not (the library
 * does what it can). */
static __inline__ int tca_repeat_run(const tcaDMAStartView *v, int ch)
{
    const tcaDMARepeat *r = &v->repeats[ch];
    tcaRingProducer *p = NULL;
    uint32_t kick, sleeping = 0;
    if (!r->inline_ok || __atomic_load_n(v->executing, __ATOMIC_RELAXED) != 0 ||
        (__atomic_load_n(v->dead, __ATOMIC_ACQUIRE) >> (r->dst_node & 31) & 1) != 0 ||
        __atomic_load_n(r->live[0], __ATOMIC_ACQUIRE) != r->id[0] ||
        __atomic_load_n(r->live[1], __ATOMIC_ACQUIRE) != r->id[1])
        return 0;
    if (r->ring != NULL) {
        uint8_t no = 0;
        p = (tcaRingProducer *)(v->producers + r->dst_node * v->producer_bytes);
        if (!__atomic_compare_exchange_n(&p->held, &no, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return 0;
        if (p->head - p->tail >= v->ring_slots) {
            p->tail = __atomic_load_n((const uint32_t *)r->ring, __ATOMIC_ACQUIRE);
            if (p->head - p->tail >= v->ring_slots) {
                __atomic_store_n(&p->held, 0, __ATOMIC_RELEASE);
                return 0; /* full: the library waits for room */
            }
        }
    }
    kick = __atomic_load_n(&v->kicks[ch], __ATOMIC_RELAXED) + 1;
    __atomic_store_n(&v->kicks[ch], kick, __ATOMIC_RELEASE);
    memmove(r->dst, r->src, r->len);
    if (p != NULL) {
        uint64_t *entries = (uint64_t *)(r->ring + v->entries);
        uint64_t lap = p->head / v->ring_slots % 0xffff + 1;
        __atomic_store_n(&entries[p->head & (v->ring_slots - 1)], lap << 48 | r->notify, __ATOMIC_RELEASE);
        p->head++;
        sleeping = __atomic_load_n(r->waiters, __ATOMIC_RELAXED);
        if (sleeping == 0)
            __atomic_store_n(v->unfenced, r->dst_node + 1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&v->finished[ch], kick, __ATOMIC_RELEASE);
    __atomic_store_n(&v->claims[ch], 0, __ATOMIC_RELEASE);
    if (p != NULL)
        __atomic_store_n(&p->held, 0, __ATOMIC_RELEASE);
    if (sleeping != 0)
        tca_dma_wake((int)r->dst_node);
    return 1;
}

static __inline__ tcaresult tca_start_dma_inline(int ch)
{
    const tcaDMAStartView *v = &tca_dma_start_view;
    uint64_t epoch = __atomic_load_n(&tca_pio_epoch, __ATOMIC_ACQUIRE);
    uint8_t no = 0;
    if (epoch != 0 && v->epoch == epoch && ch >= 0 && ch < TCA_DMA_CHANNELS) {
        tca_settle_notify(v);
        if (__atomic_compare_exchange_n(&v->claims[ch], &no, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            if (tca_repeat_run(v, ch))
                return TCA_SUCCESS;
            __atomic_store_n(&v->claims[ch], 0, __ATOMIC_RELEASE);
        }
    }
    return (tcaStartDMADesc)(ch);
}

static __inline__ tcaresult tca_wait_dmac_inline(int ch)
{
    const tcaDMAStartView *v = &tca_dma_start_view;
    uint64_t epoch = __atomic_load_n(&tca_pio_epoch, __ATOMIC_ACQUIRE);
    if (epoch != 0 && v->epoch == epoch && ch >= 0 && ch < TCA_DMA_CHANNELS) {
        uint32_t kick = __atomic_load_n(&v->kicks[ch], __ATOMIC_ACQUIRE);
        if (kick != 0 && __atomic_load_n(&v->finished[ch], __ATOMIC_ACQUIRE) == kick &&
            __atomic_load_n(&v->claims[ch], __ATOMIC_ACQUIRE) == 0) {
            tca_settle_notify(v);
            return TCA_SUCCESS;
        }
    }
    return (tcaWaitDMAC)(ch);
}

#define tcaSendPIO(pio, offset, src, size) tca_send_pio_inline(pio, offset, src, size)
#define tcaSendPIOCommit() tca_send_pio_commit_inline()
#define tcaWaitPIO(handle, offset, value, peer) tca_wait_pio_inline(handle, offset, value, peer)
#define tcaWaitDMARecvDesc(handle, wait_slot, wait_tag) tca_wait_dma_recv_inline(handle, wait_slot, wait_tag)
#define tcaStartDMADesc(ch) tca_start_dma_inline(ch)
#define tcaWaitDMAC(ch) tca_wait_dmac_inline(ch)
#endif

/* ---- bootstrap without MPI (extensions) ---- */

/* The job's bootstrap, for exchanging handles: carried out by the fabric's own channel (costs
 * no simulated time on the simulator), not by TCA communication. For collectives of the
 * program's data use the tcaColl* functions below.
 * Gathers size bytes from every rank into recv (size * nodes bytes, rank order). When ranks
 * pass different sizes, every rank gets TCA_ERROR_OUT_OF_BOUNDS (TCA_ERROR_TOO_LARGE where
 * size is above 64 KiB) and the job stays usable. After a collective that timed out or lost a
 * peer, every later tcaAllgather and tcaBarrier returns that error again. */
tcaresult tcaAllgather(const void *send, void *recv, size_t size);
tcaresult tcaBarrier(void);

/* ---- the collective library on the basic API (seed 001) ---- */

/* Collectives carried out with TCA communication only (PIO stores and waits for small
 * payloads, DMA chains with notifications for large ones), so the simulator times them through
 * the PEACH2 model. Every rank of the job calls each one with the same arguments (size, count,
 * type, operator, root); where they differ every rank gets TCA_ERROR_COLL_MISMATCH (or, where
 * ranks even choose different algorithms, the fabric's deadlock or timeout error). The first
 * call sets the library up (collective too); tcaFinalize releases it.
 * Buffers are host or device memory, tcaMalloc'd or not; send == recv means in place.
 * Reductions fold the ranks' contributions in rank order, ((x0 op x1) op x2) ..., so every rank
 * gets the same bits. TCA_OP_BAND/BOR/BXOR on TCA_FLOAT/DOUBLE/LONG_DOUBLE and TCA_OP_NOOP are
 * TCA_ERROR_INVALID_OP; logical operators give 1 or 0 in the data type; integers wrap.
 * Large payloads register chains on the DMA channels TCA_COLL_CHANNELS names (environment,
 * "0,1,2,3" by default; every rank the same): a chain of the program registered on one of them
 * must be registered again after such a call (tcaStartDMADesc answers TCA_ERROR_CHANNEL_TAKEN
 * until then). Notification slots 60 to 63 are the library's (62 and 63 for DMA collectives, 61
 * for blocks of device buffers, 60 for node-local copies into device buffers): a notification of
 * the program on one of them that is still pending when a collective runs may be taken for the
 * library's, and the collective then reads its data too early.
 * Algorithms, thresholds and measured times: docs/collectives.md. */

/* Returns when every rank has called it (dissemination barrier over PIO). */
tcaresult tcaCollBarrier(void);
/* Every rank's size bytes at send into recv (size * nodes bytes, in rank order). In place
 * (send == recv): this rank's block is already at recv + rank * size. */
tcaresult tcaCollAllgather(const void *send, void *recv, size_t size);
/* The element-wise reduction of every rank's count elements at send into recv on every rank. */
tcaresult tcaCollAllreduce(const void *send, void *recv, size_t count, tcaDataType type, tcaOp op);
/* As tcaCollAllreduce, the result only at rank root (recv is not used elsewhere; may be NULL).
 * A root outside the job is TCA_ERROR_INVALID_NODE. */
tcaresult tcaCollReduce(const void *send, void *recv, size_t count, tcaDataType type, tcaOp op,
                        int root);
/* Rank root's size bytes at buf into buf on every rank. */
tcaresult tcaCollBcast(void *buf, size_t size, int root);

#ifdef __cplusplus
}
#endif

#endif /* TCA_API_H */
