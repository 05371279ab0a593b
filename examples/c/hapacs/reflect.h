/*
 * reflect: the halo exchange of a distributed array in the manner of XcalableMP's
 * `#pragma xmp reflect (array) acc` on the TCA back end (seed 001 "XcalableACCのプログラミング例",
 * "XcalableACCの性能評価一例"; seed 000 §3.7).
 *
 * reflect_align() declares an array of GPU memory and its distribution (what XcalableMP's
 * nodes/template/distribute/align/shadow directives declare). The first reflect() of the array
 * registers it with TCA, exchanges handles and builds ONE DMA chain in a descriptor table
 * (chaining mode) for all its halo transfers: the faces across i as plain descriptors (a j-k
 * plane is contiguous), the faces across j as block-stride descriptors (an i-k plane is one
 * row of k per i), the four i-j corners as plain descriptors (one row of k each), every entry
 * notifying its receiver. Every call then only kicks the chain, waits for one notification
 * per neighbour and for its own channel, and ends with the barrier after the DMA that seed 001
 * names as TCA's extra cost (tcaCollBarrier, the collective library's PIO barrier).
 *
 * The barrier does not keep a neighbour from writing the next halo while this rank still reads
 * the last one: the caller's loop needs a synchronization between its sweep and the next
 * reflect() (Himeno's residual reduction is one).
 *
 * Collective: every rank calls reflect() for the same arrays in the same order.
 */
#ifndef REFLECT_H
#define REFLECT_H

#include "himeno.h"
#include "tca-api.h"

/* Declares `array` (bytes long, from cudaMalloc) with layout `l`; its chain runs on DMA
 * channel `channel` and notifies on slot `channel`. At most REFLECT_ARRAYS arrays. */
tcaresult reflect_align(float *array, size_t bytes, const hm_layout *l, int channel);

/* Exchanges the halos of `array` (declared with reflect_align). */
tcaresult reflect(float *array);

/* Seconds the barrier of the last reflect() took (MPI_Wtime). */
double reflect_last_barrier(void);

/* Bytes this rank sends per reflect of `array` (0 if not declared). */
size_t reflect_sent_bytes(const float *array);

/* Destroys the array's table and handle (collective). */
tcaresult reflect_free(float *array);

#define REFLECT_ARRAYS 4

#endif
