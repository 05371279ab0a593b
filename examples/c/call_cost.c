/*
 * What one call of the PIO path costs the caller on the shm fabric, without a peer: an 8-byte
 * tcaSendPIO (into this rank's own buffer), tcaSendPIOCommit, and a tcaWaitPIO whose word is
 * already there. A PIO ping-pong pays three of these between seeing the peer's flag and
 * storing its own (wait returns, payload, commit, flag), so they are most of its distance from
 * the plain-store floor (docs/shm-fabric.md). All three are inline functions of the header
 * on this fabric (tcaWaitPIO decodes the handle and looks at its slot before it polls). Then
 * the sender's side of a small DMA: one tcaStartDMADesc of an 8-byte write within this
 * rank's buffer (register mode, no notification) and the tcaWaitDMAC that finds it done; from
 * the second kick on, both are inline too (the header repeats the run the library kept).
 *
 * usage: tca run -n 1 call_cost [CALLS]     (prints ns per call, best of three rounds)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example.h"

int main(int argc, char **argv)
{
    ex_start(&argc, &argv);
    long calls = argc > 1 ? atol(argv[1]) : 2000000;
    if (calls < 1) {
        fprintf(stderr, "call_cost: CALLS must be >= 1\n");
        return 2;
    }
    int me;
    CHECK(tcaGetNodeId(&me));
    uint8_t *buf;
    CHECK(tcaMalloc((void **)&buf, 4096, tcaMemoryCPU));
    memset(buf, 0, 4096);
    tcaHandle h;
    CHECK(tcaCreateHandle(&h, buf, 4096, tcaMemoryCPU));
    tcaPIOHandle pio;
    CHECK(tcaSetPIORegion(&pio, &h, 0, 4096));

    uint64_t payload = 42;
    double best[3] = {1e30, 1e30, 1e30};
    for (int round = 0; round < 3; round++) {
        double t0 = ex_now_us();
        for (long i = 0; i < calls; i++) CHECK(tcaSendPIO(&pio, 64, &payload, sizeof payload));
        double t1 = ex_now_us();
        for (long i = 0; i < calls; i++) CHECK(tcaSendPIOCommit());
        double t2 = ex_now_us();
        for (long i = 0; i < calls; i++) CHECK(tcaWaitPIO(&h, 0, 0, me));
        double t3 = ex_now_us();
        double ns[3] = {(t1 - t0) * 1e3 / calls, (t2 - t1) * 1e3 / calls, (t3 - t2) * 1e3 / calls};
        for (int k = 0; k < 3; k++)
            if (ns[k] < best[k]) best[k] = ns[k];
    }
    tcaDesc *desc = tcaDescNew();
    CHECK(tcaDescSetMemcpy(desc, &h, 256, &h, 64, sizeof payload, 0, 0, 0));
    CHECK(tcaDescSetMode(desc, tcaDMAModeRegister));
    CHECK(tcaDescSet(desc, 0));
    double dma_best = 1e30;
    for (int round = 0; round < 3; round++) {
        double t0 = ex_now_us();
        for (long i = 0; i < calls; i++) {
            CHECK(tcaStartDMADesc(0));
            CHECK(tcaWaitDMAC(0));
        }
        double ns = (ex_now_us() - t0) * 1e3 / calls;
        if (ns < dma_best) dma_best = ns;
    }
    CHECK(tcaDescFree(desc));
    if (memcmp(buf + 64, &payload, sizeof payload) != 0 || memcmp(buf + 256, &payload, sizeof payload) != 0) {
        fprintf(stderr, "call_cost: the PIO or DMA payload did not land\n");
        return 1;
    }
    if (me == 0) {
        printf("# ns per call, best of 3 rounds of %ld calls\n", calls);
        printf("tcaSendPIO 8 B            %8.2f\n", best[0]);
        printf("tcaSendPIOCommit          %8.2f\n", best[1]);
        printf("tcaWaitPIO (already set)  %8.2f\n", best[2]);
        printf("tcaStartDMADesc 8 B + tcaWaitDMAC  %8.2f\n", dma_best);
    }
    CHECK(tcaDestroyHandle(&h));
    CHECK(tcaFree(buf, tcaMemoryCPU));
    ex_end();
    return 0;
}
