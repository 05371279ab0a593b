/*
 * The UCX counterpart of pingpong.c, for comparison on the same machine: two processes (fork,
 * pinned to CPUs 0 and 1), each with a UCP context (RMA), a worker and a receive buffer that
 * UCP allocates and maps (so that its shared-memory transport can export it); worker
 * addresses and packed rkeys are exchanged through pipes. Each message is a ucp_put_nbx of the
 * payload, ucp_worker_fence, a ucp_put_nbx of a flag word, each completed locally; the
 * receiver polls the flag in its own buffer (ucp_worker_progress every 64 polls). Transports:
 * UCX_TLS, default posix,self (shared memory through /dev/shm). One-way latency = half the
 * round trip, mean over the iterations after a warm-up, with the osu_put_latency iteration
 * counts.
 *
 * usage: ucx_pingpong [MAX_BYTES] [ITER_SCALE]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "floor.h"

#define FLAG_BYTES 64

static int me;

static void die(const char *what, ucs_status_t s)
{
    fprintf(stderr, "ucx_pingpong: rank %d: %s: %s\n", me, what, ucs_status_string(s));
    exit(1);
}

static void xfer(int fd, void *buf, size_t len, int out)
{
    for (size_t done = 0; done < len;) {
        ssize_t k = out ? write(fd, (char *)buf + done, len - done) : read(fd, (char *)buf + done, len - done);
        if (k <= 0) {
            fprintf(stderr, "ucx_pingpong: rank %d: the peer went away\n", me);
            exit(1);
        }
        done += (size_t)k;
    }
}

/* Sends a length-prefixed blob to the peer and receives the peer's. */
static void *swap_blob(int wfd, int rfd, const void *mine, size_t len, size_t *got)
{
    uint64_t l = len, pl;
    xfer(wfd, &l, sizeof l, 1);
    xfer(wfd, (void *)mine, len, 1);
    xfer(rfd, &pl, sizeof pl, 0);
    void *b = malloc(pl ? pl : 1);
    xfer(rfd, b, pl, 0);
    if (got) *got = pl;
    return b;
}

static void barrier(int wfd, int rfd)
{
    char c = 0;
    xfer(wfd, &c, 1, 1);
    xfer(rfd, &c, 1, 0);
}

static void complete(ucp_worker_h w, ucs_status_ptr_t s, const char *what)
{
    if (UCS_PTR_IS_ERR(s)) die(what, UCS_PTR_STATUS(s));
    if (s == NULL) return;
    ucs_status_t st;
    while ((st = ucp_request_check_status(s)) == UCS_INPROGRESS) ucp_worker_progress(w);
    ucp_request_free(s);
    if (st != UCS_OK) die(what, st);
}

int main(int argc, char **argv)
{
    size_t max = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    double scale = argc > 2 ? atof(argv[2]) : 1.0;
    setenv("UCX_TLS", "posix,self", 0);
    int up[2], down[2]; /* parent -> child, child -> parent */
    if (pipe(up) || pipe(down)) return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return 1;
    me = child == 0 ? 1 : 0;
    int peer = 1 - me, wfd = me == 0 ? up[1] : down[1], rfd = me == 0 ? down[0] : up[0];
    pin(me);

    ucp_config_t *cfg;
    ucs_status_t s = ucp_config_read(NULL, NULL, &cfg);
    if (s != UCS_OK) die("ucp_config_read", s);
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_RMA};
    ucp_context_h ctx;
    if ((s = ucp_init(&params, cfg, &ctx)) != UCS_OK) die("ucp_init", s);
    ucp_config_release(cfg);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    ucp_worker_h w;
    if ((s = ucp_worker_create(ctx, &wp, &w)) != UCS_OK) die("ucp_worker_create", s);

    ucp_mem_map_params_t mp = {.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                                             UCP_MEM_MAP_PARAM_FIELD_FLAGS,
                               .address = NULL,
                               .length = FLAG_BYTES + max,
                               .flags = UCP_MEM_MAP_ALLOCATE};
    ucp_mem_h mh;
    if ((s = ucp_mem_map(ctx, &mp, &mh)) != UCS_OK) die("ucp_mem_map", s);
    ucp_mem_attr_t ma = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    if ((s = ucp_mem_query(mh, &ma)) != UCS_OK) die("ucp_mem_query", s);
    uint8_t *rbuf = ma.address, *sbuf = malloc(max);
    memset(rbuf, 0, FLAG_BYTES + max);
    for (size_t i = 0; i < max; i++) sbuf[i] = (uint8_t)(i * 7 + me);

    ucp_address_t *addr;
    size_t alen, rklen;
    void *rkbuf;
    if ((s = ucp_worker_get_address(w, &addr, &alen)) != UCS_OK) die("ucp_worker_get_address", s);
    if ((s = ucp_rkey_pack(ctx, mh, &rkbuf, &rklen)) != UCS_OK) die("ucp_rkey_pack", s);
    void *peer_addr = swap_blob(wfd, rfd, addr, alen, NULL);
    void *peer_rk = swap_blob(wfd, rfd, rkbuf, rklen, NULL);
    uint64_t base = (uintptr_t)rbuf, peer_base;
    xfer(wfd, &base, sizeof base, 1);
    xfer(rfd, &peer_base, sizeof peer_base, 0);
    ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS, .address = peer_addr};
    ucp_ep_h ep;
    if ((s = ucp_ep_create(w, &ep_params, &ep)) != UCS_OK) die("ucp_ep_create", s);
    ucp_rkey_h rk;
    if ((s = ucp_ep_rkey_unpack(ep, peer_rk, &rk)) != UCS_OK) die("ucp_ep_rkey_unpack", s);
    barrier(wfd, rfd);

    if (me == 0) {
        printf("# UCX ping-pong (UCP %s, UCX_TLS=%s): ucp_put_nbx + fence + flag put, peer polls the flag\n",
               ucp_get_version_string(), getenv("UCX_TLS"));
        printf("# %-10s %14s %16s\n", "Size", "Latency (us)", "Bandwidth (GB/s)");
        fflush(stdout);
    }
    ucp_request_param_t rp = {.op_attr_mask = 0};
    volatile uint32_t *flag = (volatile uint32_t *)rbuf;
    uint32_t seq = 0;
    for (size_t size = 8; size <= max; size *= 2) {
        /* Warm-up: a tenth of the iterations; ten times them before the first size. */
        int iters = (int)((size <= 8192 ? 10000 : 1000) * scale), warm;
        if (iters < 2) iters = 2;
        warm = size == 8 ? 10 * iters : iters / 10 + 1;
        barrier(wfd, rfd);
        double t0 = 0;
        for (int i = 0; i < warm + iters; i++) {
            if (i == warm) t0 = now_us();
            seq++;
            for (int turn = 0; turn < 2; turn++) {
                if ((turn == 0) == (me == 0)) {
                    complete(w, ucp_put_nbx(ep, sbuf, size, peer_base + FLAG_BYTES, rk, &rp), "put");
                    if ((s = ucp_worker_fence(w)) != UCS_OK) die("ucp_worker_fence", s);
                    complete(w, ucp_put_nbx(ep, &seq, 4, peer_base, rk, &rp), "flag put");
                } else {
                    for (unsigned k = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) != seq; k++)
                        if (k % 64 == 0) ucp_worker_progress(w);
                }
            }
        }
        double us = (now_us() - t0) / (2.0 * iters);
        for (size_t i = 0; i < size; i++)
            if (rbuf[FLAG_BYTES + i] != (uint8_t)(i * 7 + peer)) {
                fprintf(stderr, "ucx_pingpong: rank %d: payload of %zu B corrupted\n", me, size);
                return 1;
            }
        if (me == 0) {
            printf("%-12zu %14.3f %16.3f\n", size, us, size / us / 1e3);
            fflush(stdout);
        }
    }
    complete(w, ucp_ep_flush_nbx(ep, &rp), "flush");
    barrier(wfd, rfd);
    ucp_rkey_destroy(rk);
    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS, .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t c = ucp_ep_close_nbx(ep, &cp);
    if (c != NULL && !UCS_PTR_IS_ERR(c)) complete(w, c, "close");
    ucp_rkey_buffer_release(rkbuf);
    ucp_worker_release_address(w, addr);
    ucp_mem_unmap(ctx, mh);
    ucp_worker_destroy(w);
    ucp_cleanup(ctx);
    free(sbuf);
    free(peer_addr);
    free(peer_rk);
    if (me == 0) {
        int status;
        if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status)) return 1;
        return WEXITSTATUS(status);
    }
    return 0;
}
