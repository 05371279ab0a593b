/* Declared compute time: smpi_execute and SMPI_SAMPLE_DELAY between two MPI_Wtime calls.
 * Prints the simulated microseconds between them. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  double start = MPI_Wtime();
  smpi_execute(2e-6);
  SMPI_SAMPLE_DELAY(3e-6) {}
  double elapsed = (MPI_Wtime() - start) * 1e6;
  if (rank == 0)
    printf("compute_us %.4f\n", elapsed);
  MPI_Finalize();
  return 0;
}
