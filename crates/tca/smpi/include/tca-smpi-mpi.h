/* MPI calls on GPU buffers under SimGrid SMPI cost what MVAPICH2-GDR charges for them.
 *
 * Force-included into every file of a program (smpicc -include tca-smpi-mpi.h, as smpicc does
 * with smpi_helpers.h), this header sends the MPI calls that take buffers to the wrappers of
 * crates/tca/smpi/c/mpi_gpu.c. A wrapper asks the CUDA runtime whether each buffer is device
 * memory; for device buffers it adds the MVAPICH2-GDR costs (buffer check, GPUDirect RDMA or
 * staging through host memory) in simulated time, then calls SMPI's PMPI_ function, which
 * charges the network and the host. Host buffers go straight to SMPI. See docs/smpi.md. */
#ifndef TCA_SMPI_MPI_H
#define TCA_SMPI_MPI_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

int tca_smpi_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int tca_smpi_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int tca_smpi_Recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                  MPI_Status* status);
int tca_smpi_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                   MPI_Request* request);
int tca_smpi_Irecv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                   MPI_Request* request);
int tca_smpi_Sendrecv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                      void* recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                      MPI_Comm comm, MPI_Status* status);
int tca_smpi_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                       MPI_Request* request);
int tca_smpi_Recv_init(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                       MPI_Request* request);
int tca_smpi_Start(MPI_Request* request);
int tca_smpi_Startall(int count, MPI_Request* requests);
int tca_smpi_Request_free(MPI_Request* request);
int tca_smpi_Wait(MPI_Request* request, MPI_Status* status);
int tca_smpi_Waitall(int count, MPI_Request* requests, MPI_Status* statuses);
int tca_smpi_Waitany(int count, MPI_Request* requests, int* index, MPI_Status* status);
int tca_smpi_Waitsome(int incount, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses);
int tca_smpi_Test(MPI_Request* request, int* flag, MPI_Status* status);
int tca_smpi_Testall(int count, MPI_Request* requests, int* flag, MPI_Status* statuses);
int tca_smpi_Testany(int count, MPI_Request* requests, int* index, int* flag, MPI_Status* status);
int tca_smpi_Testsome(int incount, MPI_Request* requests, int* outcount, int* indices, MPI_Status* statuses);
int tca_smpi_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm);
int tca_smpi_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root,
                    MPI_Comm comm);
int tca_smpi_Bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int tca_smpi_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int tca_smpi_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

#ifdef __cplusplus
}
#endif

/* smpicc -trace-call-location defines some of these names as macros already. */
#undef MPI_Send
#undef MPI_Ssend
#undef MPI_Recv
#undef MPI_Isend
#undef MPI_Irecv
#undef MPI_Sendrecv
#undef MPI_Send_init
#undef MPI_Recv_init
#undef MPI_Start
#undef MPI_Startall
#undef MPI_Request_free
#undef MPI_Wait
#undef MPI_Waitall
#undef MPI_Waitany
#undef MPI_Waitsome
#undef MPI_Test
#undef MPI_Testall
#undef MPI_Testany
#undef MPI_Testsome
#undef MPI_Allreduce
#undef MPI_Reduce
#undef MPI_Bcast
#undef MPI_Allgather
#undef MPI_Alltoall

#define MPI_Send tca_smpi_Send
#define MPI_Ssend tca_smpi_Ssend
#define MPI_Recv tca_smpi_Recv
#define MPI_Isend tca_smpi_Isend
#define MPI_Irecv tca_smpi_Irecv
#define MPI_Sendrecv tca_smpi_Sendrecv
#define MPI_Send_init tca_smpi_Send_init
#define MPI_Recv_init tca_smpi_Recv_init
#define MPI_Start tca_smpi_Start
#define MPI_Startall tca_smpi_Startall
#define MPI_Request_free tca_smpi_Request_free
#define MPI_Wait tca_smpi_Wait
#define MPI_Waitall tca_smpi_Waitall
#define MPI_Waitany tca_smpi_Waitany
#define MPI_Waitsome tca_smpi_Waitsome
#define MPI_Test tca_smpi_Test
#define MPI_Testall tca_smpi_Testall
#define MPI_Testany tca_smpi_Testany
#define MPI_Testsome tca_smpi_Testsome
#define MPI_Allreduce tca_smpi_Allreduce
#define MPI_Reduce tca_smpi_Reduce
#define MPI_Bcast tca_smpi_Bcast
#define MPI_Allgather tca_smpi_Allgather
#define MPI_Alltoall tca_smpi_Alltoall

#endif
