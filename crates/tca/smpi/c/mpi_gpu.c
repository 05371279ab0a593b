/* MVAPICH2-GDR costs of MPI calls on GPU buffers, added to SimGrid SMPI (docs/smpi.md).
 *
 * SMPI charges every message as host memory to host memory: its network model and the host
 * overheads that tca.peach.smpi_platform derives from the platform TOML. It cannot know which
 * buffers are GPU memory; the wrappers here ask libtca (or a real CUDA runtime) and,
 * for a device buffer, sleep for the difference MVAPICH2-GDR makes on that side of the message,
 * following the MVAPICH2 model (python/tca/peach/baselines/mvapich2.py):
 *
 *   every call on a GPU buffer: cuda_buffer_check (pointer query + registration cache);
 *   up to gdr_limit with GDR on, the cheaper of
 *     GPUDirect RDMA: the adapter reads the GPU buffer (slower first byte, at most
 *       gdr_read_bandwidth) instead of a host buffer; eager messages skip the copy into the
 *       send buffer and land in a host buffer that the local adapter copies into the GPU
 *       (loopback), or, if cheaper, go by rendezvous straight into GPU memory;
 *     staging (below);
 *   otherwise staging through host memory: eager messages take one cudaMemcpy each side in place
 *     of the host copies; rendezvous messages are pipelined in pipeline_chunk pieces
 *     (D2H, RDMA write, H2D overlapping).
 *
 * The sender charges its part before SMPI sends; the receiver charges its part once the data
 * has arrived (in the call that completes the receive). Each side knows only its own buffer:
 * a pipelined receive assumes the sender staged too (the GPU-GPU case). Every number comes from
 * the file named by TCA_SMPI_MPI_CONFIG, which tca.peach.smpi_platform.prepare() writes. */
#include <mpi.h>
#include <simgrid/actor.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/tca-smpi-mpi.h"

/* ---- which buffers are device memory ---------------------------------------------------- */

#if defined(__CUDA_RUNTIME_H__)
static int is_device(const void* p)
{
  struct cudaPointerAttributes a;
  memset(&a, 0, sizeof a);
  return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice;
}
#else
/* With libtca (the simulator), libtca answers for its CUDA runtime without going through it:
 * the program's last CUDA error stays its own, and a rank that has not joined the TCA job (an
 * MPI-only program), or has left it, is not joined by the question
 * (crates/tca/capi/src/smpi.rs). Otherwise the CUDA runtime API (CUDA 10 and later layout).
 * Both weak, so that MPI-only programs link without either and see only host buffers. Room is
 * left for older, longer layouts. */
extern int tca_smpi_on_gpu(const void* ptr) __attribute__((weak));
struct tca_smpi_pointer_attributes {
  int type; /* cudaMemoryTypeUnregistered 0, Host 1, Device 2, Managed 3 */
  int device;
  void* device_pointer;
  void* host_pointer;
  char reserved[64];
};
extern int cudaPointerGetAttributes(struct tca_smpi_pointer_attributes* attributes, const void* ptr)
    __attribute__((weak));
enum { CUDA_SUCCESS = 0, CUDA_MEMORY_TYPE_DEVICE = 2 };

static int is_device(const void* p)
{
  if (tca_smpi_on_gpu != NULL)
    return tca_smpi_on_gpu(p);
  if (cudaPointerGetAttributes == NULL)
    return 0;
  struct tca_smpi_pointer_attributes a;
  memset(&a, 0, sizeof a);
  return cudaPointerGetAttributes(&a, p) == CUDA_SUCCESS && a.type == CUDA_MEMORY_TYPE_DEVICE;
}
#endif

static int on_gpu(const void* p)
{
  return p != NULL && p != MPI_IN_PLACE && p != MPI_BOTTOM && is_device(p);
}

/* ---- parameters ------------------------------------------------------------------------- */

static struct {
  double gdr, cuda_buffer_check, gdr_limit, eager_threshold, max_inline, striping_threshold, rails;
  double control_message, pipeline_chunk, route_latency, hca_latency, mmio_latency;
  double host_read_latency, host_write_latency, gpu_read_latency, gpu_write_latency;
  double rate_one_rail, rate_striped, gdr_read_bandwidth, loopback_bandwidth, memcpy_bandwidth;
  double d2h_latency, d2h_bandwidth, h2d_latency, h2d_bandwidth;
} P;

#define KEY(name) {#name, &P.name}
static const struct {
  const char* name;
  double* value;
} KEYS[] = {
    KEY(gdr),               KEY(cuda_buffer_check),  KEY(gdr_limit),          KEY(eager_threshold),
    KEY(max_inline),        KEY(striping_threshold), KEY(rails),              KEY(control_message),
    KEY(pipeline_chunk),    KEY(route_latency),      KEY(hca_latency),        KEY(mmio_latency),
    KEY(host_read_latency), KEY(host_write_latency), KEY(gpu_read_latency),   KEY(gpu_write_latency),
    KEY(rate_one_rail),     KEY(rate_striped),       KEY(gdr_read_bandwidth), KEY(loopback_bandwidth),
    KEY(memcpy_bandwidth),  KEY(d2h_latency),        KEY(d2h_bandwidth),      KEY(h2d_latency),
    KEY(h2d_bandwidth),
};
#define NKEYS (sizeof KEYS / sizeof KEYS[0])

static void fail(const char* what, const char* detail)
{
  fprintf(stderr, "tca-smpi: %s%s\n", what, detail);
  PMPI_Abort(MPI_COMM_WORLD, 1);
}

/* Reads the configuration once. SMPI privatizes the program's globals, not this library's: the
 * configuration and the request table below are shared by every rank of the process. Ranks
 * are actors that never run at the same time, but any call that charges time (sg_actor_sleep_for)
 * or enters MPI lets the others run: no pointer into the table is kept across one. */
static void load_config(void)
{
  static int loaded = 0;
  if (loaded)
    return;
  const char* path = getenv("TCA_SMPI_MPI_CONFIG");
  if (path == NULL || *path == '\0')
    fail("TCA_SMPI_MPI_CONFIG is not set: run the program through tca run or smpi_platform.prepare()", "");
  FILE* f = fopen(path, "r");
  if (f == NULL)
    fail("cannot read TCA_SMPI_MPI_CONFIG file ", path);
  int seen[NKEYS] = {0};
  char line[512];
  while (fgets(line, sizeof line, f) != NULL) {
    char* hash = strchr(line, '#');
    if (hash != NULL)
      *hash = '\0';
    char key[64];
    double value;
    char extra;
    if (sscanf(line, " %63[a-z0-9_] = %lf %c", key, &value, &extra) == 2) {
      size_t i = 0;
      while (i < NKEYS && strcmp(KEYS[i].name, key) != 0)
        i++;
      if (i == NKEYS)
        fail("unknown key in TCA_SMPI_MPI_CONFIG: ", key);
      *KEYS[i].value = value;
      seen[i]         = 1;
    } else if (strspn(line, " \t\r\n") != strlen(line)) {
      fail("malformed line in TCA_SMPI_MPI_CONFIG: ", line);
    }
  }
  fclose(f);
  for (size_t i = 0; i < NKEYS; i++)
    if (!seen[i])
      fail("missing key in TCA_SMPI_MPI_CONFIG: ", KEYS[i].name);
  loaded = 1;
}

/* ---- the MVAPICH2 paths, relative to the host-memory message SMPI already charges -------- */

static double rate(double size, int gpu_source)
{
  double r = size > P.striping_threshold ? P.rate_striped : P.rate_one_rail;
  return gpu_source && P.gdr_read_bandwidth < r ? P.gdr_read_bandwidth : r;
}

static double max0(double x) { return x > 0 ? x : 0; }

/* One RDMA write between host buffers, doorbell(s) to landing. */
static double rdma_host(double size)
{
  double rails = size > P.striping_threshold ? P.rails : 1;
  double read  = size <= P.max_inline ? 0 : P.host_read_latency;
  return rails * P.mmio_latency + read + P.route_latency + size / rate(size, 0) + P.host_write_latency;
}

static double handshake(void) { return 2 * rdma_host(P.control_message) + P.host_write_latency; }

/* The receiving adapter copies an eager buffer into GPU memory and completes into host memory. */
static double loopback(double size)
{
  return P.mmio_latency + P.host_read_latency + P.hca_latency + size / P.loopback_bandwidth +
         P.gpu_write_latency + P.host_write_latency;
}

static double d2h(double size) { return P.d2h_latency + size / P.d2h_bandwidth; }
static double h2d(double size) { return P.h2d_latency + size / P.h2d_bandwidth; }

/* GPUDirect RDMA: extra time on the sending and the receiving side. */
static void gdr_path(double size, double* send, double* recv)
{
  int eager   = size <= P.eager_threshold;
  double copy = size / P.memcpy_bandwidth; /* the host copy SMPI charged on each eager side */
  double read = size <= P.max_inline ? 0 : P.host_read_latency;
  *send = P.gpu_read_latency - read + max0(size / rate(size, 1) - size / rate(size, 0)) - (eager ? copy : 0);
  double direct = P.gpu_write_latency - P.host_write_latency;
  *recv         = eager ? (loopback(size) < handshake() + direct ? loopback(size) : handshake() + direct) - copy
                        : direct;
}

/* Staging through host memory: one copy each side (eager) or a three-stage pipeline. */
static void staged_path(double size, double* send, double* recv)
{
  if (size <= P.eager_threshold) {
    double copy = size / P.memcpy_bandwidth;
    *send       = d2h(size) - copy;
    *recv       = h2d(size) - copy;
    return;
  }
  /* Finish times of the three stages (D2H, wire, H2D), each serving one chunk at a time. */
  double copied = 0, sent = 0, landed = 0;
  for (double left = size; left > 0;) {
    double chunk = left < P.pipeline_chunk ? left : P.pipeline_chunk;
    left -= chunk;
    copied += d2h(chunk);
    sent   = (copied > sent ? copied : sent) + rdma_host(chunk);
    landed = (sent > landed ? sent : landed) + h2d(chunk);
  }
  *send = sent - rdma_host(size); /* SMPI charges the wire as one message */
  *recv = landed - sent;
}

/* This side's extra time for a message of `size` bytes whose buffer here is on the GPU. */
static double gpu_share(size_t bytes, int sending)
{
  load_config();
  double size = (double)bytes, send = 0, recv = 0;
  if (bytes > 0) {
    staged_path(size, &send, &recv);
    if (P.gdr != 0 && size <= P.gdr_limit) {
      double gs, gr;
      gdr_path(size, &gs, &gr);
      if (gs + gr < send + recv) {
        send = gs;
        recv = gr;
      }
    }
  }
  return P.cuda_buffer_check + max0(sending ? send : recv);
}

static void charge(double seconds)
{
  if (seconds > 0)
    sg_actor_sleep_for(seconds);
}

static size_t bytes_of(int count, MPI_Datatype type)
{
  int size = 0;
  PMPI_Type_size(type, &size);
  return count > 0 && size > 0 ? (size_t)count * (size_t)size : 0;
}

static void charge_send(const void* buf, size_t bytes)
{
  if (on_gpu(buf))
    charge(gpu_share(bytes, 1));
}

static void charge_recv(const void* buf, size_t bytes)
{
  if (on_gpu(buf))
    charge(gpu_share(bytes, 0));
}

/* ---- requests whose GPU costs come later ------------------------------------------------- */

/* Receives into GPU memory are charged when they complete; persistent sends when started. */
struct pending {
  MPI_Request request;
  const void* buf;
  size_t bytes;
  int is_send;    /* persistent send: charged at each start */
  int persistent; /* kept until MPI_Request_free */
  int armed;      /* a receive that is in flight */
};
static struct pending* table;
static size_t table_len, table_cap, armed_count;

static struct pending* find(MPI_Request r)
{
  for (size_t i = 0; i < table_len; i++)
    if (table[i].request == r)
      return &table[i];
  return NULL;
}

static void forget(struct pending* p)
{
  if (p->armed)
    armed_count--;
  *p = table[--table_len];
}

static void remember(MPI_Request r, const void* buf, size_t bytes, int is_send, int persistent)
{
  if (table_len == table_cap) {
    table_cap = table_cap ? 2 * table_cap : 16;
    table     = realloc(table, table_cap * sizeof *table);
    if (table == NULL)
      fail("out of memory for request bookkeeping", "");
  }
  struct pending p = {r, buf, bytes, is_send, persistent, !is_send && !persistent};
  table[table_len++] = p;
  armed_count += p.armed;
}

/* Bytes a receive of at most `posted` bytes got, by its status (all of them when unknown). */
static size_t received_bytes(const MPI_Status* st, size_t posted)
{
  int n = MPI_UNDEFINED;
  if (st != NULL)
    PMPI_Get_count(st, MPI_BYTE, &n);
  return n == MPI_UNDEFINED || n < 0 || (size_t)n > posted ? posted : (size_t)n;
}

/* A request finished with status `st`: charge its GPU receive, if it was one, for the bytes
 * that arrived (a receive may be posted larger than its message). The table is left before
 * the charge: charging sleeps, other ranks run and may grow (move) the table meanwhile. */
static void completed(MPI_Request r, const MPI_Status* st)
{
  struct pending* p = find(r);
  if (p == NULL || !p->armed)
    return;
  p->armed = 0;
  armed_count--;
  size_t bytes = received_bytes(st, p->bytes);
  if (!p->persistent)
    forget(p);
  charge(gpu_share(bytes, 0));
}

/* `statuses`, or room for `count` of them when the caller ignores them but a GPU receive
 * needs its size (free with release_statuses). */
static MPI_Status* statuses_for(int count, MPI_Status* statuses, const MPI_Request* copy)
{
  if (copy == NULL || statuses != MPI_STATUSES_IGNORE)
    return statuses;
  MPI_Status* own = malloc((size_t)count * sizeof *own);
  if (own == NULL)
    fail("out of memory for request bookkeeping", "");
  return own;
}

static void release_statuses(MPI_Status* used, MPI_Status* given)
{
  if (used != given)
    free(used);
}

static void started(MPI_Request r)
{
  struct pending* p = find(r);
  if (p == NULL)
    return;
  if (p->is_send) {
    charge(gpu_share(p->bytes, 1));
  } else if (!p->armed) {
    p->armed = 1;
    armed_count++;
  }
}

/* Copies of request handles, taken before a call that may set them to MPI_REQUEST_NULL. */
static MPI_Request* snapshot(int count, const MPI_Request* requests)
{
  if (armed_count == 0 || count <= 0)
    return NULL;
  MPI_Request* copy = malloc((size_t)count * sizeof *copy);
  if (copy == NULL)
    fail("out of memory for request bookkeeping", "");
  memcpy(copy, requests, (size_t)count * sizeof *copy);
  return copy;
}

/* ---- point to point ----------------------------------------------------------------------- */

int tca_smpi_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  charge_send(buf, bytes_of(count, type));
  return PMPI_Send(buf, count, type, dest, tag, comm);
}

int tca_smpi_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  charge_send(buf, bytes_of(count, type));
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int tca_smpi_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Status* status)
{
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc         = PMPI_Recv(buf, count, type, source, tag, comm, st);
  if (rc == MPI_SUCCESS)
    charge_recv(buf, received_bytes(st, bytes_of(count, type)));
  return rc;
}

int tca_smpi_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request)
{
  charge_send(buf, bytes_of(count, type));
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

int tca_smpi_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Request* request)
{
  int rc = PMPI_Irecv(buf, count, type, source, tag, comm, request);
  if (rc == MPI_SUCCESS && on_gpu(buf))
    remember(*request, buf, bytes_of(count, type), 0, 0);
  return rc;
}

int tca_smpi_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                      void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                      MPI_Comm comm, MPI_Status* status)
{
  charge_send(sendbuf, bytes_of(sendcount, sendtype));
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                         recvtag, comm, st);
  if (rc == MPI_SUCCESS)
    charge_recv(recvbuf, received_bytes(st, bytes_of(recvcount, recvtype)));
  return rc;
}

int tca_smpi_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                       MPI_Request* request)
{
  int rc = PMPI_Send_init(buf, count, type, dest, tag, comm, request);
  if (rc == MPI_SUCCESS && on_gpu(buf))
    remember(*request, buf, bytes_of(count, type), 1, 1);
  return rc;
}

int tca_smpi_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                       MPI_Request* request)
{
  int rc = PMPI_Recv_init(buf, count, type, source, tag, comm, request);
  if (rc == MPI_SUCCESS && on_gpu(buf))
    remember(*request, buf, bytes_of(count, type), 0, 1);
  return rc;
}

int tca_smpi_Start(MPI_Request* request)
{
  started(*request);
  return PMPI_Start(request);
}

int tca_smpi_Startall(int count, MPI_Request* requests)
{
  for (int i = 0; i < count; i++)
    started(requests[i]);
  return PMPI_Startall(count, requests);
}

int tca_smpi_Request_free(MPI_Request* request)
{
  struct pending* p = find(*request);
  if (p != NULL)
    forget(p);
  return PMPI_Request_free(request);
}

/* ---- completion --------------------------------------------------------------------------- */

int tca_smpi_Wait(MPI_Request* request, MPI_Status* status)
{
  MPI_Request r = *request;
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc         = PMPI_Wait(request, st);
  if (armed_count > 0)
    completed(r, st);
  return rc;
}

int tca_smpi_Waitall(int count, MPI_Request* requests, MPI_Status* statuses)
{
  MPI_Request* copy = snapshot(count, requests);
  MPI_Status* sts   = statuses_for(count, statuses, copy);
  int rc            = PMPI_Waitall(count, requests, sts);
  for (int i = 0; copy != NULL && i < count; i++)
    completed(copy[i], rc == MPI_SUCCESS ? &sts[i] : NULL);
  release_statuses(sts, statuses);
  free(copy);
  return rc;
}

int tca_smpi_Waitany(int count, MPI_Request* requests, int* index, MPI_Status* status)
{
  MPI_Request* copy = snapshot(count, requests);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc         = PMPI_Waitany(count, requests, index, st);
  if (copy != NULL && *index != MPI_UNDEFINED)
    completed(copy[*index], st);
  free(copy);
  return rc;
}

int tca_smpi_Waitsome(int incount, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses)
{
  MPI_Request* copy = snapshot(incount, requests);
  MPI_Status* sts   = statuses_for(incount, statuses, copy);
  int rc            = PMPI_Waitsome(incount, requests, outcount, indices, sts);
  for (int i = 0; copy != NULL && *outcount != MPI_UNDEFINED && i < *outcount; i++)
    completed(copy[indices[i]], &sts[i]);
  release_statuses(sts, statuses);
  free(copy);
  return rc;
}

int tca_smpi_Test(MPI_Request* request, int* flag, MPI_Status* status)
{
  MPI_Request r = *request;
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc         = PMPI_Test(request, flag, st);
  if (*flag && armed_count > 0)
    completed(r, st);
  return rc;
}

int tca_smpi_Testall(int count, MPI_Request* requests, int* flag, MPI_Status* statuses)
{
  MPI_Request* copy = snapshot(count, requests);
  MPI_Status* sts   = statuses_for(count, statuses, copy);
  int rc            = PMPI_Testall(count, requests, flag, sts);
  for (int i = 0; copy != NULL && *flag && i < count; i++)
    completed(copy[i], rc == MPI_SUCCESS ? &sts[i] : NULL);
  release_statuses(sts, statuses);
  free(copy);
  return rc;
}

int tca_smpi_Testany(int count, MPI_Request* requests, int* index, int* flag, MPI_Status* status)
{
  MPI_Request* copy = snapshot(count, requests);
  MPI_Status local;
  MPI_Status* st = status == MPI_STATUS_IGNORE ? &local : status;
  int rc         = PMPI_Testany(count, requests, index, flag, st);
  if (rc == MPI_SUCCESS && *flag && *index == MPI_UNDEFINED) {
    /* SMPI 3.32's Testany can answer "no active request" while a started persistent request
     * has completed but was never reported (a polling loop then never ends): ask each. */
    int active = 0;
    for (int i = 0; i < count && *index == MPI_UNDEFINED; i++) {
      int done = MPI_UNDEFINED, which;
      rc = PMPI_Testsome(1, &requests[i], &done, &which, st);
      if (rc != MPI_SUCCESS)
        break;
      if (done == 1)
        *index = i;
      active |= done == 0;
    }
    if (*index == MPI_UNDEFINED && active)
      *flag = 0;
  }
  if (copy != NULL && *flag && *index != MPI_UNDEFINED)
    completed(copy[*index], st);
  free(copy);
  return rc;
}

int tca_smpi_Testsome(int incount, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses)
{
  MPI_Request* copy = snapshot(incount, requests);
  MPI_Status* sts   = statuses_for(incount, statuses, copy);
  int rc            = PMPI_Testsome(incount, requests, outcount, indices, sts);
  for (int i = 0; copy != NULL && *outcount != MPI_UNDEFINED && i < *outcount; i++)
    completed(copy[indices[i]], &sts[i]);
  release_statuses(sts, statuses);
  free(copy);
  return rc;
}

/* ---- collectives -------------------------------------------------------------------------- */

/* A collective on GPU buffers: a buffer check per GPU buffer; unless GDR serves the size, the
 * input is staged to host before and the result back to the GPU after (one copy each). The
 * GPU costs of the algorithm's inner steps are left out (docs/smpi.md). */
static void collective_in(const void* buf, size_t bytes)
{
  if (!on_gpu(buf))
    return;
  load_config();
  int staged = !(P.gdr != 0 && (double)bytes <= P.gdr_limit);
  charge(P.cuda_buffer_check + (staged && bytes > 0 ? d2h((double)bytes) : 0));
}

static void collective_out(const void* buf, size_t bytes)
{
  if (!on_gpu(buf))
    return;
  load_config();
  int staged = !(P.gdr != 0 && (double)bytes <= P.gdr_limit);
  charge(P.cuda_buffer_check + (staged && bytes > 0 ? h2d((double)bytes) : 0));
}

static int comm_size(MPI_Comm comm)
{
  int n = 1;
  PMPI_Comm_size(comm, &n);
  return n;
}

static int comm_rank(MPI_Comm comm)
{
  int r = 0;
  PMPI_Comm_rank(comm, &r);
  return r;
}

int tca_smpi_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm)
{
  size_t bytes = bytes_of(count, type);
  collective_in(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, bytes);
  int rc = PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm);
  collective_out(recvbuf, bytes);
  return rc;
}

int tca_smpi_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                    MPI_Comm comm)
{
  size_t bytes = bytes_of(count, type);
  int is_root  = comm_rank(comm) == root;
  collective_in(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, bytes);
  int rc = PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
  if (is_root)
    collective_out(recvbuf, bytes);
  return rc;
}

int tca_smpi_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
  size_t bytes = bytes_of(count, type);
  int is_root  = comm_rank(comm) == root;
  if (is_root)
    collective_in(buf, bytes);
  int rc = PMPI_Bcast(buf, count, type, root, comm);
  if (!is_root)
    collective_out(buf, bytes);
  return rc;
}

int tca_smpi_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
  size_t all = bytes_of(recvcount, recvtype) * (size_t)comm_size(comm);
  if (sendbuf == MPI_IN_PLACE)
    collective_in(recvbuf, bytes_of(recvcount, recvtype));
  else
    collective_in(sendbuf, bytes_of(sendcount, sendtype));
  int rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  collective_out(recvbuf, all);
  return rc;
}

int tca_smpi_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
  size_t n = (size_t)comm_size(comm);
  if (sendbuf == MPI_IN_PLACE)
    collective_in(recvbuf, bytes_of(recvcount, recvtype) * n);
  else
    collective_in(sendbuf, bytes_of(sendcount, sendtype) * n);
  int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  collective_out(recvbuf, bytes_of(recvcount, recvtype) * n);
  return rc;
}
