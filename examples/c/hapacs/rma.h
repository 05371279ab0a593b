/*
 * A one-sided (RMA) communication layer with interchangeable back ends, in the manner of QUDA's
 * RMA interface for TCA (seed 001, slides "QUDA QCD Library のTCA向け実装" and "QUDA Library":
 * QUDA -> RMA interface -> { MPI-3 RMA | TCA }).
 *
 * A window exposes one buffer of device memory (cudaMalloc) of every rank.
 * The program declares its puts once (persistent: source offset in its own window, target rank,
 * target offset, size); rma_commit fixes them; each rma_epoch then carries out every declared
 * put and returns when this rank's puts are done and every put aimed at this rank has landed.
 *
 *   RMA_TCA        handles over the windows, one DMA chain of all puts registered once (a
 *                  request per put with tcaDMANotify); an epoch kicks the chain, waits for one
 *                  notification per incoming put and for its own channel.
 *   RMA_MPI_FENCE  MPI_Win_create; an epoch is the puts and one MPI_Win_fence.
 *   RMA_MPI_PSCW   MPI_Win_create; an epoch is MPI_Win_post (the ranks that put here),
 *                  MPI_Win_start (the ranks this one puts to), the puts, MPI_Win_complete and
 *                  MPI_Win_wait: only neighbours synchronize.
 *
 * What an epoch does not do: keep a put of the next epoch from landing while this rank still
 * reads the data of the last one. As with MPI-3 RMA, the program orders that itself (by a
 * reduction between epochs, say; seed 001 notes that TCA needs a barrier after the DMA).
 *
 * Every call is collective where MPI_Win_create is (create, commit, free); errors stop the job
 * with a message (MPI_Abort), as the examples' *_SAFE_CALL macros do.
 */
#ifndef HAPACS_RMA_H
#define HAPACS_RMA_H

#include <stddef.h>

typedef enum rma_backend { RMA_TCA, RMA_MPI_FENCE, RMA_MPI_PSCW } rma_backend;
#define RMA_BACKENDS 3

typedef struct rma_win rma_win;

/* "tca", "mpi-fence", "mpi-pscw": 0 and *out set, or -1 for another name. */
int rma_backend_parse(const char *name, rma_backend *out);
const char *rma_backend_name(rma_backend b);

/* Collective over MPI_COMM_WORLD: every rank exposes size bytes at base. channel: the TCA DMA
 * channel the window's chain takes (0..3; ignored by the MPI back ends). */
rma_win *rma_win_create(rma_backend b, void *base, size_t size, int channel);
/* Declares a put of size bytes from local_off of this rank's window to target_off of target's
 * (before rma_commit). Offsets and size are multiples of 16 bytes, as PEACH2 DMA needs
 * source and destination to share their low 4 address bits. */
void rma_put(rma_win *w, int target, size_t target_off, size_t local_off, size_t size);
/* Collective: fixes the declared puts (ranks learn how many puts they receive from whom). */
void rma_commit(rma_win *w);
/* One epoch: every declared put, done on return, and every incoming put landed. */
void rma_epoch(rma_win *w);
/* Collective. */
void rma_win_free(rma_win *w);

#endif
