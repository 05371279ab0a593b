/* MPI-only ping-pong between two ranks, host buffers and GPU buffers, 8 B .. 4 MiB: prints the
 * one-way latency (round trip / 2) in simulated microseconds, and checks the data. With
 * --nonblocking, every message goes by MPI_Isend/MPI_Irecv and MPI_Wait. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cudaMalloc(void** ptr, size_t size);
int cudaFree(void* ptr);
int cudaMemcpy(void* dst, const void* src, size_t count, int kind);

enum { MIN_SIZE = 8, MAX_SIZE = 4 << 20, ROUND_TRIPS = 4 };
static int nonblocking;

static void send(char* buf, int size, int peer, int tag)
{
  MPI_Request r;
  if (!nonblocking)
    MPI_Send(buf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
  else {
    MPI_Isend(buf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

static void recv(char* buf, int size, int peer, int tag)
{
  MPI_Request r;
  if (!nonblocking)
    MPI_Recv(buf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  else {
    MPI_Irecv(buf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

static double timed(char* buf, int size, int rank)
{
  int peer = 1 - rank;
  double start = 0; /* the first round trip lines the ranks up; the rest are timed */
  for (int i = 0; i <= ROUND_TRIPS; i++) {
    if (i == 1)
      start = MPI_Wtime();
    if (rank == 0) {
      send(buf, size, peer, i);
      recv(buf, size, peer, i);
    } else {
      recv(buf, size, peer, i);
      send(buf, size, peer, i);
    }
  }
  return (MPI_Wtime() - start) / ROUND_TRIPS / 2 * 1e6;
}

int main(int argc, char** argv)
{
  MPI_Init(&argc, &argv);
  nonblocking = argc > 1 && strcmp(argv[1], "--nonblocking") == 0;
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (ranks != 2) {
    if (rank == 0)
      fprintf(stderr, "mpi_gpu_pingpong: needs 2 ranks, got %d\n", ranks);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char* host    = malloc(MAX_SIZE);
  char* pattern = malloc(MAX_SIZE);
  char* check   = malloc(MAX_SIZE);
  char* gpu     = NULL;
  if (host == NULL || pattern == NULL || check == NULL || cudaMalloc((void**)&gpu, MAX_SIZE) != 0) {
    fprintf(stderr, "mpi_gpu_pingpong: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 0; i < MAX_SIZE; i++)
    pattern[i] = (char)(i * 7 + 3);
  if (rank == 0)
    printf("# MPI ping-pong, one-way latency (round trip / 2), simulated us\n# size host gpu\n");
  int bad = 0;
  for (int size = MIN_SIZE; size <= MAX_SIZE; size *= 2) {
    memcpy(host, pattern, size);
    cudaMemcpy(gpu, pattern, size, 1);
    double t_host = timed(host, size, rank);
    double t_gpu  = timed(gpu, size, rank);
    cudaMemcpy(check, gpu, size, 2);
    bad += memcmp(host, pattern, size) != 0 || memcmp(check, pattern, size) != 0;
    if (rank == 0)
      printf("%d %.4f %.4f\n", size, t_host, t_gpu);
  }
  if (bad)
    fprintf(stderr, "mpi_gpu_pingpong: rank %d received wrong data\n", rank);
  cudaFree(gpu);
  free(host);
  free(pattern);
  free(check);
  MPI_Finalize();
  return bad ? 1 : 0;
}
