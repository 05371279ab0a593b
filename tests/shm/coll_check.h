/* The checks of the collective-library tests (collectives.c, coll_channels.c): a failed TCA
 * call ends the rank; a failed expectation is counted (the first 10 printed) and the test goes
 * on. The including file defines `me` (its rank) and `failures`. */
#ifndef TCA_TESTS_COLL_CHECK_H
#define TCA_TESTS_COLL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    tcaresult r_ = (call);                                                                 \
    if (r_ != TCA_SUCCESS) {                                                               \
      printf("rank %d: %s: %s\n", me, #call, tcaGetErrorString(r_));                       \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#define EXPECT(cond, ...)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      if (failures++ < 10) {                                                               \
        printf("rank %d: ", me);                                                           \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
      }                                                                                    \
    }                                                                                      \
  } while (0)

#endif
