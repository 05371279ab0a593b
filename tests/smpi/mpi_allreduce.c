/* MPI_Allreduce of one double (8 B) over all ranks, host buffer, in place as HA-PACS/TCA
 * programs write it: prints the mean simulated time per call and checks the sum. */
#include <mpi.h>
#include <stdio.h>

enum { CALLS = 10 };

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  double value = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < CALLS; i++) {
    value = rank + 1;
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  double elapsed = (MPI_Wtime() - start) / CALLS * 1e6;
  double expected = ranks * (ranks + 1) / 2.0;
  if (rank == 0)
    printf("ranks %d allreduce_8B_us %.4f sum %.0f\n", ranks, elapsed, value);
  MPI_Finalize();
  return value == expected ? 0 : 1;
}
