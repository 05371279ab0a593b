/* Receives as programs write them, on two ranks: prints one line "NAME MICROSECONDS" per case,
 * the simulated time from a barrier to the end of rank 1's receive of one message from rank 0.
 *   poll-test, poll-iprobe, wait   8 B into host memory: MPI_Test or MPI_Iprobe in a loop,
 *                                  against MPI_Wait
 *   gpu-*                          8 B into a GPU buffer posted for 4 MiB, by MPI_Recv,
 *                                  Irecv + Wait, Irecv + Waitall (statuses ignored), Irecv +
 *                                  Test loop, Sendrecv, Recv_init + Start + Wait */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int cudaMalloc(void** ptr, size_t size);

enum { POSTED = 4 << 20, SENT = 8 };
static int rank;

static void receive(const char* how, char* buf, int count)
{
  MPI_Request r;
  MPI_Status st;
  int flag = 0;
  if (strcmp(how, "recv") == 0) {
    MPI_Recv(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &st);
  } else if (strcmp(how, "wait") == 0) {
    MPI_Irecv(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else if (strcmp(how, "waitall") == 0) {
    MPI_Irecv(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    MPI_Waitall(1, &r, MPI_STATUSES_IGNORE);
  } else if (strcmp(how, "test") == 0) {
    MPI_Irecv(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    while (!flag)
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
  } else if (strcmp(how, "iprobe") == 0) {
    while (!flag)
      MPI_Iprobe(0, 0, MPI_COMM_WORLD, &flag, &st);
    MPI_Recv(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &st);
  } else if (strcmp(how, "sendrecv") == 0) {
    static char nothing[1]; /* sent from host memory: no GPU cost on the send side */
    MPI_Sendrecv(nothing, 0, MPI_BYTE, 0, 1, buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (strcmp(how, "persistent") == 0) {
    MPI_Recv_init(buf, count, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    MPI_Start(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Request_free(&r);
  }
}

static void one_case(const char* name, const char* how, char* buf, int count, char* host)
{
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  if (rank == 0) {
    if (strcmp(how, "sendrecv") == 0)
      MPI_Sendrecv(host, SENT, MPI_BYTE, 1, 0, host, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
      MPI_Send(host, SENT, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
  } else {
    receive(how, buf, count);
    printf("%s %.3f\n", name, (MPI_Wtime() - start) * 1e6);
    fflush(stdout);
  }
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static char host[POSTED];
  char* gpu = NULL;
  cudaMalloc((void**)&gpu, POSTED);
  one_case("wait", "wait", host, SENT, host);
  one_case("poll-test", "test", host, SENT, host);
  one_case("poll-iprobe", "iprobe", host, SENT, host);
  const char* gpu_cases[] = {"recv", "wait", "waitall", "test", "sendrecv", "persistent"};
  for (int i = 0; i < 6; i++) {
    char name[32];
    snprintf(name, sizeof name, "gpu-%s", gpu_cases[i]);
    one_case(name, gpu_cases[i], gpu, POSTED, host);
  }
  MPI_Finalize();
  return 0;
}
