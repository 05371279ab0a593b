/*
 * The MPI halo exchange of the Himeno program, as with MVAPICH2-GDR on HA-PACS/TCA: MPI_Isend /
 * MPI_Irecv straight from and into GPU memory. Faces across i (contiguous j-k planes) and the
 * corner rows go as they lie; the faces across j (block-stride i-k planes) are packed by a GPU
 * kernel into a contiguous GPU buffer before sending and unpacked after receiving.
 */
#ifndef HIMENO_MPI_H
#define HIMENO_MPI_H

#include "himeno.h"

typedef struct {
    hm_layout l;
    float *p;
    float *send[HM_DIRS], *recv[HM_DIRS]; /* GPU buffers of the packed faces (across j only) */
} hm_mpi;

/* Allocates the packing buffers (cudaMalloc); 0 on success. */
int hm_mpi_init(hm_mpi *h, float *p, const hm_layout *l);

/* Exchanges the halos of p; 0 on success. */
int hm_mpi_exchange(hm_mpi *h);

/* Bytes this rank sends per exchange. */
size_t hm_mpi_sent_bytes(const hm_mpi *h);

void hm_mpi_free(hm_mpi *h);

/* Charges one GPU kernel that moves `bytes` of device memory (himeno.c). */
void hm_kernel(double bytes);

#endif
