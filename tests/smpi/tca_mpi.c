/* MPI + CUDA + TCA on one simulated clock (tests/smpi/test_tca_on_smpi.py), by the first
 * argument: a GPU-GPU DMA ping-pong timed with MPI_Wtime beside an MPI ping-pong, each rank on
 * its own GPU; a PIO ping-pong; the ways such a program can hang:
 *   pingpong SIZE [spread]   the ping-pong; prints the one-way latencies and the device each
 *                   rank used (GPU 0, or with `spread` rank r on GPU r % 2)
 *   pio SIZE        a PIO ping-pong between host buffers (tcaSendPIO payload + commit + flag
 *                   + commit, tcaWaitPIO): the header's inline PIO calls the library here
 *   mixed           rank 0 waits for a TCA notification that never comes, rank 1 probes MPI for
 *                   1 ms of simulated time, then blocks in MPI_Recv
 *   tca             both ranks wait for a TCA notification that never comes
 *   coll            rank 0 calls tcaCollBarrier, rank 1 waits for a TCA notification that
 *                   never comes
 *   exit            rank 1 calls MPI_Finalize and exit(5); rank 0 waits for a TCA notification
 *                   from it
 *   returned        rank 0 waits for a TCA notification that never comes, rank 1 returns from
 *                   main without tcaFinalize
 *   abort           rank 0 waits for a TCA notification that never comes, rank 1 probes MPI for
 *                   1 ms of simulated time, then calls MPI_Abort with code 5
 *   abort-in-cuda   the same, rank 0 copying SIZE bytes to its GPU again and again (cudaMemcpy)
 *   abort-in-coll   the same, rank 0 in tcaCollAllgather
 *   unfinalized     both ranks return from main without tcaFinalize
 *   mpi-unfinalized rank 1 returns from main without MPI_Finalize
 *   mpi-gone        the same, while rank 0 waits for it in MPI_Barrier
 *   exit-unfinalized rank 1 sends rank 0 an int and calls exit(5) without MPI_Finalize; rank 0
 *                   receives it, then waits for rank 1 in MPI_Barrier
 *   segv            rank 1 dereferences NULL while rank 0 waits for a TCA notification
 *   long-chain SIZE rank 0 runs one chain of 128 copies of SIZE bytes to rank 1, notifying
 *                   the last, which rank 1 waits for: one long run of hardware events
 *   late            both ranks sleep 1e9 s of simulated time (SMPI's sleep), then call
 *                   tcaBarrier and print its code
 *   gpus            prints the GPU count cudaGetDeviceCount gave before MPI_Init
 *   reinit          tcaInit after tcaFinalize: the rank stays out of the job (as on shm)
 *   gone SIZE       rank 1 stores 1 into rank 0's flag word by PIO, starts a DMA of SIZE bytes
 *                   with notification tag 7 to rank 0 and finalizes at once; rank 0 waits for
 *                   1 and for tag 7 (both still on the way: they arrive), then for 2 and tag 8,
 *                   then reads from rank 1's buffer
 *   rules SIZE      what both fabrics answer alike: tcaWaitPIO at a misaligned word and at an
 *                   aligned word of a handle at an odd address; tcaDescSet of a chain into a
 *                   handle its owner destroyed; tcaStartDMADesc twice without tcaWaitDMAC
 *   lasterror       after tcaFinalize, an MPI_Sendrecv of host ints leaves the last CUDA error
 *                   as it was (the wrappers' question about the buffers is not a CUDA call) */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tca-api.h"

#define CHECK(call)                                                                        \
  do {                                                                                     \
    tcaresult r_ = (call);                                                                 \
    if (r_ != TCA_SUCCESS) {                                                               \
      printf("rank %d: %s: %s\n", me, #call, tcaGetErrorString(r_));                       \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                        \
    }                                                                                      \
  } while (0)

int main(int argc, char** argv)
{
  /* As MVAPICH2-GDR programs do: count the GPUs before MPI_Init (to pick one). */
  int gpus = -1;
  cudaError_t counted = cudaGetDeviceCount(&gpus);
  cudaError_t beyond = cudaSetDevice(gpus);
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char* what = argc > 1 ? argv[1] : "pingpong";
  size_t size = argc > 2 ? strtoull(argv[2], NULL, 0) : 8;
  int peer = 1 - me, iters = 20;

  cudaSetDevice(argc > 3 && strcmp(argv[3], "spread") == 0 ? me % 2 : 0);
  CHECK(tcaInit());
  char *buf, *host = malloc(size);
  cudaMalloc((void**)&buf, size);
  for (size_t i = 0; i < size; i++) host[i] = (char)(i * 7 + me);
  cudaMemcpy(buf, host, size, cudaMemcpyHostToDevice);
  tcaHandle h, all[2];
  CHECK(tcaCreateHandle(&h, buf, size, tcaMemoryGPU));
  MPI_Allgather(&h, sizeof h, MPI_BYTE, all, sizeof h, MPI_BYTE, MPI_COMM_WORLD);

  if (strcmp(what, "mixed") == 0) {
    if (me == 0) CHECK(tcaWaitDMARecvDesc(&all[peer], 0, 7));
    else {
      double t0 = MPI_Wtime();
      int flag;
      while (MPI_Wtime() - t0 < 1e-3) MPI_Iprobe(0, 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      printf("rank 1: blocks at %.3f us\n", MPI_Wtime() * 1e6);
      fflush(stdout);
      MPI_Recv(&iters, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  if (strcmp(what, "endless") == 0 || strcmp(what, "spin") == 0 || strcmp(what, "stdin") == 0) {
    /* A run that only a signal ends: a ping-pong without end, or rank 0 computing forever
     * (no call at all) while rank 1 waits in TCA. The line is left in stdio's buffer. */
    tcaDesc* d = tcaDescNew();
    CHECK(tcaDescSetMemcpy(d, &all[peer], 0, &h, 0, size, tcaDMANotify, 0, me));
    CHECK(tcaDescSet(d, 0));
    printf("rank %d: running until stopped\n", me);
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(what, "stdin") == 0 && me == 0) {
      char line[64];
      fflush(stdout);
      printf("rank 0: in stdio until stopped\n"); /* left in the buffer, under the lock */
      if (fgets(line, sizeof line, stdin) == NULL) return 1;
    }
    if (strcmp(what, "spin") == 0) {
      if (me == 0)
        for (volatile unsigned long i = 0;; i++) continue;
      CHECK(tcaWaitDMARecvDesc(&all[peer], 0, peer));
    }
    for (;;) {
      if (me == 0) CHECK(tcaStartDMADesc(0));
      CHECK(tcaWaitDMARecvDesc(&all[peer], 0, peer));
      if (me == 1) CHECK(tcaStartDMADesc(0));
      CHECK(tcaWaitDMAC(0));
    }
  }
  if (strcmp(what, "exit") == 0) {
    if (me == 1) {
      MPI_Finalize();
      exit(5);
    }
    CHECK(tcaWaitDMARecvDesc(&all[peer], 0, 7));
  }
  if (strcmp(what, "mpi-unfinalized") == 0) {
    /* Rank 1 leaves main without MPI_Finalize: mpirun fails such a run. */
    CHECK(tcaFinalize());
    if (me == 0) MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "long-chain") == 0) {
    if (me == 0) {
      tcaDesc* d = tcaDescNew();
      for (int i = 0; i < 128; i++)
        CHECK(tcaDescSetMemcpy(d, &all[peer], 0, &h, 0, size, i == 127 ? tcaDMANotify : tcaDMAContinue, 0, 5));
      CHECK(tcaDescSet(d, 0));
      CHECK(tcaStartDMADesc(0));
      CHECK(tcaWaitDMAC(0));
    } else {
      CHECK(tcaWaitDMARecvDesc(&all[peer], 0, 5));
    }
  }
  if (strcmp(what, "late") == 0) {
    sleep(1000000000u); /* SMPI's sleep: simulated time (this mode is for the simulator) */
    printf("rank %d: tcaBarrier at %.0f s: %d\n", me, MPI_Wtime(), tcaBarrier());
    CHECK(tcaFinalize());
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "mpi-gone") == 0) {
    if (me == 1) return 0;
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (strcmp(what, "exit-unfinalized") == 0) {
    int x = 1;
    if (me == 1) {
      MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
      exit(5);
    }
    MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (strcmp(what, "segv") == 0) {
    /* Rank 1 crashes (all ranks are actors of one process) while rank 0 waits for it. */
    if (me == 1) {
      volatile int *nowhere = NULL;
      *nowhere = 1;
    }
    CHECK(tcaWaitDMARecvDesc(&all[peer], 0, 7));
  }
  if (strcmp(what, "returned") == 0) {
    if (me == 0) CHECK(tcaWaitDMARecvDesc(&all[peer], 0, 7));
    MPI_Finalize();
    return 0;
  }
  if (strncmp(what, "abort", 5) == 0) {
    if (strcmp(what, "abort-after-split") == 0) {
      MPI_Comm half;
      MPI_Comm_split(MPI_COMM_WORLD, me, 0, &half);
      if (me == 0) MPI_Barrier(MPI_COMM_WORLD);
    }
    if (me == 0) {
      if (strcmp(what, "abort-in-cuda") == 0)
        for (;;) cudaMemcpy(buf, host, size, cudaMemcpyHostToDevice);
      if (strcmp(what, "abort-in-coll") == 0) CHECK(tcaCollAllgather(buf, buf + size / 2, 8));
      CHECK(tcaWaitDMARecvDesc(&all[peer], 0, 7));
    } else {
      double t0 = MPI_Wtime();
      int flag;
      while (MPI_Wtime() - t0 < 1e-3) MPI_Iprobe(0, 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
      printf("rank 1: aborts at %.3f us\n", MPI_Wtime() * 1e6);
      fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 5);
    }
    printf("rank %d: after MPI_Abort\n", me);
    return 0;
  }
  if (strcmp(what, "unfinalized") == 0) {
    CHECK(tcaBarrier());
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "gpus") == 0) {
    printf("rank %d: %d GPUs before MPI_Init (%s), device %d: %s\n", me, gpus, cudaGetErrorName(counted), gpus,
           cudaGetErrorName(beyond));
    CHECK(tcaFinalize());
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "reinit") == 0) {
    CHECK(tcaFinalize());
    tcaresult again = tcaInit();
    void *p, *g;
    tcaresult malloced = tcaMalloc(&p, 64, tcaMemoryCPU);
    cudaError_t cuda = cudaMalloc(&g, 64);
    printf("rank %d: tcaInit again %d, tcaMalloc %d, cudaMalloc %s\n", me, again, malloced, cudaGetErrorName(cuda));
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "lasterror") == 0) {
    CHECK(tcaFinalize());
    cudaGetLastError();
    int mine = me, theirs = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, peer, 0, &theirs, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("rank %d: got %d, last CUDA error %s\n", me, theirs, cudaGetErrorName(cudaGetLastError()));
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "coll") == 0) {
    /* Rank 0 sets the collective library up (its first call) while rank 1 waits for a
     * notification that never comes. */
    tcaresult r = me == 0 ? tcaCollBarrier() : tcaWaitDMARecvDesc(&all[peer], 0, 7);
    printf("rank %d: %s\n", me, tcaGetErrorString(r));
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "tca") == 0) {
    tcaresult r = tcaWaitDMARecvDesc(&all[peer], 0, 7);
    printf("rank %d: %s\n", me, tcaGetErrorString(r));
    MPI_Finalize();
    return 0;
  }

  if (strcmp(what, "rules") == 0) {
    char* pb;
    CHECK(tcaMalloc((void**)&pb, 128, tcaMemoryCPU));
    memset(pb, 0, 128);
    tcaHandle whole, odd, doomed, doomed_all[2];
    CHECK(tcaCreateHandle(&whole, pb, 128, tcaMemoryCPU));
    CHECK(tcaCreateHandle(&odd, pb + 3, 64, tcaMemoryCPU));
    tcaresult misaligned = tcaWaitPIO(&whole, 2, 0, peer), aligned = tcaWaitPIO(&odd, 1, 0, peer);
    printf("rank %d: word at offset 2: %d; word at offset 1 of a handle at an odd address: %d\n", me, misaligned,
           aligned);
    CHECK(tcaCreateHandle(&doomed, pb, 64, tcaMemoryCPU));
    MPI_Allgather(&doomed, sizeof doomed, MPI_BYTE, doomed_all, sizeof doomed, MPI_BYTE, MPI_COMM_WORLD);
    CHECK(tcaDestroyHandle(&doomed));
    MPI_Barrier(MPI_COMM_WORLD);
    tcaDesc* d = tcaDescNew();
    CHECK(tcaDescSetMemcpy(d, &doomed_all[peer], 0, &whole, 0, 64, 0, 0, 0));
    printf("rank %d: tcaDescSet into a destroyed handle: %d\n", me, tcaDescSet(d, 1));
    CHECK(tcaDescFree(d));
    d = tcaDescNew();
    CHECK(tcaDescSetMemcpy(d, &all[peer], 0, &h, 0, size, tcaDMANotify, 0, 3));
    CHECK(tcaDescSet(d, 0));
    tcaresult first = tcaStartDMADesc(0), again = tcaStartDMADesc(0), waited = tcaWaitDMAC(0);
    tcaresult n1 = tcaWaitDMARecvDesc(&all[peer], 0, 3), n2 = tcaWaitDMARecvDesc(&all[peer], 0, 3);
    printf("rank %d: start %d, start again %d, wait %d, notifications %d %d\n", me, first, again, waited, n1, n2);
    CHECK(tcaFinalize());
    MPI_Finalize();
    return 0;
  }
  if (strcmp(what, "pio") == 0 || strcmp(what, "gone") == 0) {
    /* The flag word at 0, the payload from 64. */
    char* pbuf;
    CHECK(tcaMalloc((void**)&pbuf, 64 + size, tcaMemoryCPU));
    memset(pbuf, 0, 64 + size);
    tcaHandle ph, pall[2];
    CHECK(tcaCreateHandle(&ph, pbuf, 64 + size, tcaMemoryCPU));
    MPI_Allgather(&ph, sizeof ph, MPI_BYTE, pall, sizeof ph, MPI_BYTE, MPI_COMM_WORLD);
    tcaPIOHandle pio;
    CHECK(tcaSetPIORegion(&pio, &pall[peer], 0, 64 + size));
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(what, "gone") == 0) {
      if (me == 1) {
        uint32_t one = 1;
        CHECK(tcaSendPIO(&pio, 0, &one, 4));
        CHECK(tcaSendPIOCommit());
        tcaDesc* d = tcaDescNew();
        CHECK(tcaDescSetMemcpy(d, &all[peer], 0, &h, 0, size, tcaDMANotify, 0, 7));
        CHECK(tcaDescSet(d, 0));
        CHECK(tcaStartDMADesc(0));
        CHECK(tcaFinalize());
      } else {
        tcaresult value = tcaWaitPIO(&ph, 0, 1, peer);
        tcaresult notified = tcaWaitDMARecvDesc(&all[peer], 0, 7);
        tcaresult value2 = tcaWaitPIO(&ph, 0, 2, peer);
        tcaresult notified2 = tcaWaitDMARecvDesc(&all[peer], 0, 8);
        printf("rank 0: wait for 1: %s; notification 7: %s\n", tcaGetErrorString(value), tcaGetErrorString(notified));
        printf("rank 0: wait for 2: %s; notification 8: %s\n", tcaGetErrorString(value2), tcaGetErrorString(notified2));
        /* A remote read is served by the holder's driver, which left with tcaFinalize. */
        tcaDesc* d = tcaDescNew();
        CHECK(tcaDescSetMemcpy(d, &h, 0, &all[peer], 0, 64, tcaDMANotifySelf, 1, 1));
        CHECK(tcaDescSet(d, 1));
        /* The start (shm, where the caller carries out the run) or the wait says so. */
        tcaresult read = tcaStartDMADesc(1);
        if (read == TCA_SUCCESS) read = tcaWaitDMAC(1);
        printf("rank 0: remote read: %s\n", tcaGetErrorString(read));
        CHECK(tcaFinalize());
      }
      MPI_Finalize();
      return 0;
    }
    double t0 = MPI_Wtime();
    for (uint32_t seq = 1; seq <= (uint32_t)iters; seq++) {
      for (int turn = 0; turn < 2; turn++) {
        if ((turn == 0) == (me == 0)) {
          CHECK(tcaSendPIO(&pio, 64, host, size));
          CHECK(tcaSendPIOCommit());
          CHECK(tcaSendPIO(&pio, 0, &seq, 4));
          CHECK(tcaSendPIOCommit());
        } else {
          CHECK(tcaWaitPIO(&ph, 0, seq, peer));
        }
      }
    }
    double pio_us = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    int bad = 0;
    for (size_t i = 0; i < size; i++) bad += pbuf[64 + i] != (char)(i * 7 + peer);
    printf("rank %d: PIO payload %s\n", me, bad ? "corrupt" : "verified");
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) printf("size %zu: PIO %.3f us one-way\n", size, pio_us);
    CHECK(tcaFinalize());
    MPI_Finalize();
    return 0;
  }

  /* Rank 0's buffer goes to rank 1's and back; the notification tag is the sender's rank. */
  tcaDesc* d = tcaDescNew();
  CHECK(tcaDescSetMemcpy(d, &all[peer], 0, &h, 0, size, tcaDMANotify, 0, me));
  CHECK(tcaDescSet(d, 0));
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    if (me == 0) {
      CHECK(tcaStartDMADesc(0));
      CHECK(tcaWaitDMARecvDesc(&all[peer], 0, peer));
    } else {
      CHECK(tcaWaitDMARecvDesc(&all[peer], 0, peer));
      CHECK(tcaStartDMADesc(0));
    }
    CHECK(tcaWaitDMAC(0));
  }
  double tca_us = (MPI_Wtime() - t0) / iters / 2 * 1e6;
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) {
    if (me == 0) {
      MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  double mpi_us = (MPI_Wtime() - t0) / iters / 2 * 1e6;

  /* Rank 1 holds rank 0's payload (the last DMA into it came from rank 0). */
  cudaMemcpy(host, buf, size, cudaMemcpyDeviceToHost);
  int bad = 0;
  for (size_t i = 0; i < size; i++) bad += host[i] != (char)(i * 7 + 0);
  int device;
  cudaGetDevice(&device);
  printf("rank %d: device %d, payload %s\n", me, device, bad ? "corrupt" : "verified");
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) printf("size %zu: TCA %.3f us, MPI %.3f us one-way, at %.3f us\n", size, tca_us, mpi_us, MPI_Wtime() * 1e6);
  tcaDescFree(d);
  CHECK(tcaFinalize());
  MPI_Finalize();
  return 0;
}
