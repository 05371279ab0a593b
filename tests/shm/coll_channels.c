/* A chain registered once and kicked every iteration (the HA-PACS style) next to the
 * collective library's DMA chains: after a tcaCollAllgather that set its chain on the
 * program's channel, tcaStartDMADesc answers TCA_ERROR_CHANNEL_TAKEN and copies nothing, until
 * the program registers its chain again (tcaDescSet or tcaSetDMAChain). That holds for the
 * header's inline start too, after a collective whose steps are small enough to be repeated
 * without the library (8 KiB) as after a large one (64 KiB).
 *   coll_channels library   the chain on channel 0, one of the library's (the default 0,1,2,3)
 *   coll_channels outside   the chain on channel 0, run with TCA_COLL_CHANNELS=2,3: unaffected
 * Run under `tca run -n N` (tests/shm/run-c.sh). Prints "coll_channels: ok" on rank 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tca-api.h"

enum { BYTES = 4096, SMALL_GATHER = 8 << 10, GATHER = 64 << 10 };

static int me, n, failures;
static unsigned char *src, *dst;

#include "coll_check.h"

/* Clears dst, kicks channel 0 and waits; checks the code and whether dst then holds src. */
static void kick(const char *when, tcaresult want)
{
  memset(dst, 0, BYTES);
  tcaresult r = tcaStartDMADesc(0);
  if (r == TCA_SUCCESS) CHECK(tcaWaitDMAC(0));
  int copied = memcmp(src, dst, BYTES) == 0;
  EXPECT(r == want, "%s: tcaStartDMADesc gave %s, want %s", when, tcaGetErrorString(r),
         tcaGetErrorString(want));
  EXPECT(copied == (want == TCA_SUCCESS), "%s: the chain %s", when, copied ? "ran" : "did not run");
}

/* A DMA-sized allgather of `size` bytes a rank, its result checked. */
static void allgather_of(size_t size)
{
  unsigned char *mine = malloc(size), *all = malloc(size * (size_t)n);
  memset(mine, me + 1, size);
  CHECK(tcaCollAllgather(mine, all, size));
  for (size_t i = 0; i < size * (size_t)n; i++) {
    if (all[i] != (unsigned char)(i / size + 1)) {
      EXPECT(0, "allgather: byte %zu is %d", i, all[i]);
      break;
    }
  }
  free(mine);
  free(all);
}

static void allgather(void) { allgather_of(GATHER); }

int main(int argc, char **argv)
{
  if (argc != 2 || (strcmp(argv[1], "library") != 0 && strcmp(argv[1], "outside") != 0)) {
    fprintf(stderr, "usage: %s library|outside\n", argv[0]);
    return 2;
  }
  int outside = strcmp(argv[1], "outside") == 0;
  CHECK(tcaInit());
  CHECK(tcaGetNodeId(&me));
  CHECK(tcaGetNodeCount(&n));
  CHECK(tcaMalloc((void **)&src, BYTES, tcaMemoryCPU));
  CHECK(tcaMalloc((void **)&dst, BYTES, tcaMemoryCPU));
  for (int i = 0; i < BYTES; i++) src[i] = (unsigned char)(i * 7 + me) | 1;
  tcaHandle hs, hd;
  CHECK(tcaCreateHandle(&hs, src, BYTES, tcaMemoryCPU));
  CHECK(tcaCreateHandle(&hd, dst, BYTES, tcaMemoryCPU));
  tcaDesc *desc = tcaDescNew();
  CHECK(tcaDescSetMemcpy(desc, &hd, 0, &hs, 0, BYTES, 0, 0, 0));
  int tag = 0;
  CHECK(tcaCreateDMADesc(&tag, 1));
  CHECK(tcaSetDMADesc_Memcpy(tag, 0, NULL, &hd, 0, &hs, 0, BYTES, 0, 0, 0));

  CHECK(tcaDescSet(desc, 0));
  kick("first kick", TCA_SUCCESS);
  if (outside) {
    for (int i = 0; i < 3; i++) {
      allgather();
      kick("after an allgather on channels 2,3", TCA_SUCCESS);
    }
    tcaresult r = tcaStartDMADesc(2);
    EXPECT(r == TCA_ERROR_CHANNEL_TAKEN, "channel 2: %s", tcaGetErrorString(r));
  } else {
    /* A small collective on host memory is PIO only: the chain stays. */
    int one = 1, sum = 0;
    CHECK(tcaCollAllreduce(&one, &sum, 1, TCA_INT, TCA_OP_SUM));
    EXPECT(sum == n, "allreduce: %d", sum);
    kick("after a 4-byte allreduce", TCA_SUCCESS);
    allgather_of(SMALL_GATHER);
    kick("after a small allgather", TCA_ERROR_CHANNEL_TAKEN);
    kick("kicked again after it", TCA_ERROR_CHANNEL_TAKEN);
    CHECK(tcaDescSet(desc, 0));
    kick("after tcaDescSet once more", TCA_SUCCESS);
    allgather();
    kick("after a large allgather", TCA_ERROR_CHANNEL_TAKEN);
    kick("kicked again", TCA_ERROR_CHANNEL_TAKEN);
    CHECK(tcaWaitDMAC(0));
    CHECK(tcaDescSet(desc, 0));
    kick("after tcaDescSet again", TCA_SUCCESS);
    kick("next iteration", TCA_SUCCESS);
    allgather();
    kick("after another allgather", TCA_ERROR_CHANNEL_TAKEN);
    CHECK(tcaSetDMAChain(0, tag));
    kick("after tcaSetDMAChain", TCA_SUCCESS);
  }
  CHECK(tcaDestroyDMADesc(tag));
  CHECK(tcaDescFree(desc));
  int bad = failures > 0, any = 0;
  int *all = malloc(sizeof(int) * (size_t)n);
  CHECK(tcaAllgather(&bad, all, sizeof(int)));
  for (int r = 0; r < n; r++) any |= all[r];
  free(all);
  CHECK(tcaFinalize());
  if (me == 0 && !any) printf("coll_channels: ok\n");
  return any;
}
