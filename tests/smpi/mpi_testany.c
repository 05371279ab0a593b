/* Polling persistent requests with MPI_Testany until all are done, as a progress loop does:
 * rank 1 starts a persistent receive and a persistent send to rank 0, which sends first and
 * receives after. Prints how many completions rank 1 saw and in how many polls (at most
 * 100000: SMPI 3.32's own Testany never reports the send). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  int rank, in = 0, out = 7;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    MPI_Send(&out, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    MPI_Recv(&in, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Request r[2];
    MPI_Recv_init(&in, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r[0]);
    MPI_Send_init(&out, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Startall(2, r);
    int done = 0, index, flag;
    long polls = 0;
    while (done < 2 && polls < 100000) {
      polls++;
      MPI_Testany(2, r, &index, &flag, MPI_STATUS_IGNORE);
      done += flag && index != MPI_UNDEFINED;
    }
    /* Both inactive now: Testany answers at once with MPI_UNDEFINED. */
    MPI_Testany(2, r, &index, &flag, MPI_STATUS_IGNORE);
    printf("completions %d polls %ld after %s\n", done, polls, flag && index == MPI_UNDEFINED ? "undefined" : "other");
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
  }
  MPI_Finalize();
  return 0;
}
