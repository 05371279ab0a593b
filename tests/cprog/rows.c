#include <mpi.h>
#include <stdio.h>
#include <tca-api.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t0 = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) * 1e6;
    if (rank == 0) printf("#row {\"series\": \"MPI barrier\", \"x\": %d, \"x_unit\": \"nodes\", \"value\": %.3f, \"unit\": \"us\"}\n", size, t);
    MPI_Finalize();
    return 0;
}
