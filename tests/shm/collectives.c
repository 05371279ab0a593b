/* The collective library of libtca (tcaColl*) on a running job, every rank checking its
 * results against a serial reference it computes itself: tcaCollAllreduce and tcaCollReduce for
 * every operator on every data type (PIO and DMA sizes), tcaCollAllgather and tcaCollBcast
 * (PIO and DMA sizes, in place, tcaMalloc'd buffers), tcaCollBarrier, and the errors. Runs
 * under `tca run -n N` and mpirun (tests/shm/run-c.sh) and, built with `tca cc`, on the
 * simulator with -DTCA_COLL_MPI (tests/smpi/test_coll_on_smpi.py), where it also times the
 * 8-byte allreduce of TCA and of MPI in the same run (mean of 50 calls, `#row` lines).
 * Prints "collectives: ok" on rank 0. */
#ifdef TCA_COLL_MPI
#include <mpi.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tca-api.h"

static int me, n, failures;

#include "coll_check.h"

/* Rank r's element i for operator op: small values, so that sums and products of 16 ranks
 * stay inside every type (no overflow to differ on). */
static long long value(int op, int r, size_t i)
{
  long long k = (long long)((i * 7 + (size_t)r * 3) % 11);
  switch (op) {
  case TCA_OP_PROD: return k == 0 ? 2 : (k == 5 ? -1 : 1);
  case TCA_OP_LAND: case TCA_OP_LOR: case TCA_OP_LXOR: return k % 3 == 0 ? 0 : k;
  case TCA_OP_BAND: case TCA_OP_BOR: case TCA_OP_BXOR: return (long long)((i * 37 + (size_t)r * 91) % 128);
  default: return k - 5;
  }
}

/* A fraction for floating-point sums, so that the order of the additions shows. */
static double frac(size_t i, int r) { return 1.0 / (double)(3 + (i + (size_t)r) % 7); }

#define INT_OP(T, op, a, b)                                                                \
  ((op) == TCA_OP_SUM    ? (T)((a) + (b))                                                  \
   : (op) == TCA_OP_PROD ? (T)((a) * (b))                                                  \
   : (op) == TCA_OP_MAX  ? ((b) > (a) ? (b) : (a))                                         \
   : (op) == TCA_OP_MIN  ? ((b) < (a) ? (b) : (a))                                         \
   : (op) == TCA_OP_BAND ? (T)((a) & (b))                                                  \
   : (op) == TCA_OP_BOR  ? (T)((a) | (b))                                                  \
   : (op) == TCA_OP_BXOR ? (T)((a) ^ (b))                                                  \
   : (op) == TCA_OP_LAND ? (T)((a) && (b))                                                 \
   : (op) == TCA_OP_LOR  ? (T)((a) || (b))                                                 \
                         : (T)(((a) != 0) != ((b) != 0)))

#define FLOAT_OP(T, op, a, b)                                                              \
  ((op) == TCA_OP_SUM    ? (T)((a) + (b))                                                  \
   : (op) == TCA_OP_PROD ? (T)((a) * (b))                                                  \
   : (op) == TCA_OP_MAX  ? ((b) > (a) ? (b) : (a))                                         \
   : (op) == TCA_OP_MIN  ? ((b) < (a) ? (b) : (a))                                         \
   : (op) == TCA_OP_LAND ? (T)((a) != 0 && (b) != 0)                                       \
   : (op) == TCA_OP_LOR  ? (T)((a) != 0 || (b) != 0)                                       \
                         : (T)(((a) != 0) != ((b) != 0)))

/* Fills rank r's input and folds every rank's into the reference, in rank order. */
#define REFERENCE(T, OPM, FLOATING)                                                        \
  {                                                                                        \
    T *in = (T *)mine, *ref = (T *)want;                                                   \
    for (size_t i = 0; i < count; i++) {                                                   \
      for (int r = 0; r < n; r++) {                                                        \
        T v = (T)value(op, r, i);                                                          \
        if (FLOATING && op == TCA_OP_SUM) v = (T)(v + frac(i, r));                         \
        if (r == me) in[i] = v;                                                            \
        ref[i] = r == 0 ? v : OPM(T, op, ref[i], v);                                       \
      }                                                                                    \
    }                                                                                      \
  }

static void fill(tcaDataType type, int op, size_t count, void *mine, void *want)
{
  switch (type) {
  case TCA_CHAR: REFERENCE(char, INT_OP, 0); break;
  case TCA_SIGNED_CHAR: REFERENCE(signed char, INT_OP, 0); break;
  case TCA_UNSIGNED_CHAR: REFERENCE(unsigned char, INT_OP, 0); break;
  case TCA_BYTE: REFERENCE(uint8_t, INT_OP, 0); break;
  case TCA_SHORT: REFERENCE(short, INT_OP, 0); break;
  case TCA_UNSIGNED_SHORT: REFERENCE(unsigned short, INT_OP, 0); break;
  case TCA_INT: REFERENCE(int, INT_OP, 0); break;
  case TCA_UNSIGNED: REFERENCE(unsigned, INT_OP, 0); break;
  case TCA_LONG: REFERENCE(long, INT_OP, 0); break;
  case TCA_UNSIGNED_LONG: REFERENCE(unsigned long, INT_OP, 0); break;
  case TCA_LONG_LONG: REFERENCE(long long, INT_OP, 0); break;
  case TCA_UNSIGNED_LONG_LONG: REFERENCE(unsigned long long, INT_OP, 0); break;
  case TCA_FLOAT: REFERENCE(float, FLOAT_OP, 1); break;
  case TCA_DOUBLE: REFERENCE(double, FLOAT_OP, 1); break;
  case TCA_LONG_DOUBLE: REFERENCE(long double, FLOAT_OP, 1); break;
  }
}

/* Equal values (long double: its value, not its padding). */
static int same(tcaDataType type, const void *a, const void *b, size_t count)
{
  if (type != TCA_LONG_DOUBLE) return memcmp(a, b, count * (size_t)(type >> 8)) == 0;
  for (size_t i = 0; i < count; i++)
    if (((const long double *)a)[i] != ((const long double *)b)[i]) return 0;
  return 1;
}

static const tcaDataType types[] = {TCA_CHAR, TCA_SIGNED_CHAR, TCA_UNSIGNED_CHAR, TCA_BYTE,
                                    TCA_SHORT, TCA_UNSIGNED_SHORT, TCA_INT, TCA_UNSIGNED, TCA_LONG,
                                    TCA_UNSIGNED_LONG, TCA_LONG_LONG, TCA_UNSIGNED_LONG_LONG,
                                    TCA_FLOAT, TCA_DOUBLE, TCA_LONG_DOUBLE};

static void reductions(size_t count)
{
  size_t bytes = count * 16;
  char *mine = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
    tcaDataType type = types[t];
    int floating = type == TCA_FLOAT || type == TCA_DOUBLE || type == TCA_LONG_DOUBLE;
    for (int op = TCA_OP_SUM; op < TCA_OP_NOOP; op++) {
      int bitwise = op == TCA_OP_BAND || op == TCA_OP_BOR || op == TCA_OP_BXOR;
      if (floating && bitwise) {
        EXPECT(tcaCollAllreduce(mine, got, count, type, (tcaOp)op) == TCA_ERROR_INVALID_OP,
               "bitwise op %d on type %#x accepted", op, type);
        continue;
      }
      memset(got, 0, bytes);
      fill(type, op, count, mine, want);
      CHECK(tcaCollAllreduce(mine, got, count, type, (tcaOp)op));
      EXPECT(same(type, got, want, count), "allreduce of %zu of type %#x op %d", count, type, op);
      /* In place, reduced to the last rank. */
      int root = n - 1;
      memcpy(got, mine, bytes);
      CHECK(tcaCollReduce(got, got, count, type, (tcaOp)op, root));
      EXPECT(me != root || same(type, got, want, count), "reduce of %zu of type %#x op %d", count,
             type, op);
    }
  }
  EXPECT(tcaCollAllreduce(mine, got, 1, TCA_INT, TCA_OP_NOOP) == TCA_ERROR_INVALID_OP,
         "TCA_OP_NOOP accepted");
  free(mine), free(want), free(got);
}

/* An argument only the last rank gets wrong (a root outside the job, an operator the type does
 * not have, a NULL buffer, a value that is no type), on `count` ints: that rank gets its own error, the others
 * TCA_ERROR_COLL_MISMATCH in the same call, and the next call is right on every rank. */
static void refused(size_t count)
{
  int *x = malloc(count * sizeof(int)), *y = malloc(count * sizeof(int));
  int odd = me == n - 1;
  for (size_t i = 0; i < count; i++) x[i] = me + 1;
  for (int which = 0; which < 6 && n > 1; which++) {
    tcaresult r, want = TCA_ERROR_COLL_MISMATCH;
    if (which == 0) {
      r = tcaCollReduce(x, y, count, TCA_INT, TCA_OP_SUM, odd ? n : 0);
      if (odd) want = TCA_ERROR_INVALID_NODE;
    } else if (which == 1) {
      r = tcaCollBcast(y, count * sizeof(int), odd ? -1 : 0);
      if (odd) want = TCA_ERROR_INVALID_NODE;
    } else if (which == 2) {
      r = tcaCollAllreduce(x, y, count, TCA_INT, odd ? TCA_OP_NOOP : TCA_OP_SUM);
      if (odd) want = TCA_ERROR_INVALID_OP;
    } else if (which == 3) {
      r = tcaCollAllreduce(odd ? NULL : x, y, count, TCA_INT, TCA_OP_SUM);
      if (odd) want = TCA_ERROR_INVALID_ARGUMENT;
    } else if (which == 4) {
      /* The same size in bytes: a bitwise operator on float. */
      r = tcaCollAllreduce(x, y, count, odd ? TCA_FLOAT : TCA_INT, odd ? TCA_OP_BAND : TCA_OP_SUM);
      if (odd) want = TCA_ERROR_INVALID_OP;
    } else {
      r = tcaCollAllreduce(x, y, count, odd ? (tcaDataType)7 : TCA_INT, TCA_OP_SUM);
      if (odd) want = TCA_ERROR_INVALID_ARGUMENT;
    }
    EXPECT(r == want, "refused call %d on %zu ints gave %d, want %d", which, count, r, want);
    CHECK(tcaCollAllreduce(x, y, count, TCA_INT, TCA_OP_SUM));
    EXPECT(y[0] == n * (n + 1) / 2 && y[count - 1] == y[0], "the call after refused call %d: %d", which, y[0]);
  }
  free(x);
  free(y);
}

static void gathers(size_t size)
{
  char *block = malloc(size), *all;
  CHECK(tcaMalloc((void **)&all, size * (size_t)n, tcaMemoryCPU));
  for (size_t i = 0; i < size; i++) block[i] = (char)(i * 13 + (size_t)me * 5);
  CHECK(tcaCollAllgather(block, all, size));
  for (int r = 0; r < n; r++)
    for (size_t i = 0; i < size; i++)
      if (all[(size_t)r * size + i] != (char)(i * 13 + (size_t)r * 5)) {
        EXPECT(0, "allgather of %zu: rank %d's byte %zu", size, r, i);
        r = n;
        break;
      }
  /* In place: this rank's block at its place, the others overwritten. */
  memset(all, 0x55, size * (size_t)n);
  memcpy(all + (size_t)me * size, block, size);
  CHECK(tcaCollAllgather(all, all, size));
  for (size_t i = 0; i < size * (size_t)n; i++)
    if (all[i] != (char)(i % size * 13 + i / size * 5)) {
      EXPECT(0, "in-place allgather of %zu: byte %zu", size, i);
      break;
    }
  int root = n / 2;
  memset(all, me == root ? 0x3c : 0, size);
  CHECK(tcaCollBcast(all, size, root));
  for (size_t i = 0; i < size; i++)
    if (all[i] != 0x3c) {
      EXPECT(0, "bcast of %zu from %d: byte %zu", size, root, i);
      break;
    }
  CHECK(tcaFree(all, tcaMemoryCPU));
  free(block);
}

#ifdef TCA_COLL_MPI
/* 8-byte allreduce, TCA and MPI, mean of 50 after one warm-up, the slowest rank's time. */
static void timing(void)
{
  double x = 1.0, y, t[2];
  for (int which = 0; which < 2; which++) {
    for (int i = 0; i <= 50; i++) {
      if (i == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        t[which] = MPI_Wtime();
      }
      if (which == 0) CHECK(tcaCollAllreduce(&x, &y, 1, TCA_DOUBLE, TCA_OP_SUM));
      else MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    t[which] = (MPI_Wtime() - t[which]) / 50 * 1e6;
  }
  double worst[2];
  MPI_Reduce(t, worst, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (me == 0) {
    printf("#row {\"series\": \"TCA allreduce\", \"x\": 8, \"x_unit\": \"B\", \"value\": %.3f, "
           "\"unit\": \"us\", \"nodes\": %d}\n", worst[0], n);
    printf("#row {\"series\": \"MPI allreduce\", \"x\": 8, \"x_unit\": \"B\", \"value\": %.3f, "
           "\"unit\": \"us\", \"nodes\": %d}\n", worst[1], n);
  }
}
#endif

int main(void)
{
#ifdef TCA_COLL_MPI
  MPI_Init(NULL, NULL);
#endif
  CHECK(tcaInit());
  CHECK(tcaGetNodeId(&me));
  CHECK(tcaGetNodeCount(&n));
  CHECK(tcaCollBarrier());
  reductions(5);    /* PIO */
  reductions(1500); /* DMA */
  gathers(1);
  gathers(100);
  gathers(70000);
  /* Mismatched counts: every rank gets the error, the library goes on. */
  int x[2] = {1, 1}, y[2];
  tcaresult r = tcaCollAllreduce(x, y, me == 0 ? 1 : 2, TCA_INT, TCA_OP_SUM);
  EXPECT(n == 1 || r == TCA_ERROR_COLL_MISMATCH, "mismatched counts gave %d", r);
  CHECK(tcaCollAllreduce(x, y, 1, TCA_INT, TCA_OP_SUM));
  EXPECT(y[0] == n, "allreduce after a mismatch: %d", y[0]);
  /* Two argument lists whose 32-bit signatures are equal (found by search): the payloads'
   * lengths still tell them apart. */
  if (n == 2) {
    static unsigned char in[3518], out[3518];
    memset(in, 1, sizeof in);
    r = me == 0 ? tcaCollAllreduce(in, out, 3518, TCA_BYTE, TCA_OP_LAND)
                : tcaCollReduce(in, out, 161, TCA_INT, TCA_OP_PROD, 1);
    EXPECT(r == TCA_ERROR_COLL_MISMATCH, "colliding signatures gave %d", r);
  }
  EXPECT(tcaCollBcast(y, 4, n) == TCA_ERROR_INVALID_NODE, "root outside the job accepted");
  refused(1);     /* PIO */
  refused(40000); /* DMA */
  CHECK(tcaCollBarrier());
#ifdef TCA_COLL_MPI
  timing();
#endif
  CHECK(tcaFinalize());
#ifdef TCA_COLL_MPI
  MPI_Finalize();
#endif
  if (failures) return 1;
  if (me == 0) printf("collectives: ok (%d ranks)\n", n);
  return 0;
}
