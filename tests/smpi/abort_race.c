/* MPI_Abort at once after an MPI call (tests/smpi/test_tca_on_smpi.py): rank 1 aborts right
 * after an MPI_Sendrecv with rank 0, which is then still in the MPI wrapper's question to
 * libtca about its buffers (a SimGrid call inside libtca), or entering tcaWaitDMARecvDesc.
 * SimGrid kills rank 0 there; the run must end with rank 1's code, rank 0 printing nothing. */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>

#include "tca-api.h"

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  int peer = 1 - me;
  if (tcaInit() != TCA_SUCCESS) return 1;
  char* buf;
  cudaMalloc((void**)&buf, 64);
  tcaHandle h, all[2];
  tcaCreateHandle(&h, buf, 64, tcaMemoryGPU);
  MPI_Allgather(&h, sizeof h, MPI_BYTE, all, sizeof h, MPI_BYTE, MPI_COMM_WORLD);
  int x = me, y;
  MPI_Sendrecv(&x, 1, MPI_INT, peer, 3, &y, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (me == 1) MPI_Abort(MPI_COMM_WORLD, 5);
  tcaresult r = tcaWaitDMARecvDesc(&all[peer], 0, 7);
  printf("rank %d: after MPI_Abort (%s)\n", me, tcaGetErrorString(r));
  return 0;
}
