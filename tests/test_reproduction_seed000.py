"""Reproduction of seed 000 §4.1 (PEACH2 intra-node DMA, Fig. 4-6) on peach2-testbed-2013.

Tolerances (DESIGN.md): values a parameter was calibrated on +-10%, predicted values +-15%.
The calibration set is declared in the platform file: host.inbound_bandwidth (Fig. 4 CPU-CPU
3.3 GB/s), host.p2p_read_bandwidth (Fig. 4 GPU reads ~870 MB/s), host.memory_read_latency
(Fig. 5 register vs chaining at 1 KB).
"""

import pytest
from tca.peach import platforms
from tca.peach.bench import dma_bw

CALIBRATED, PREDICTED = 0.10, 0.15


@pytest.fixture(scope="module")
def testbed():
    return platforms.load("peach2-testbed-2013")


@pytest.fixture(scope="module")
def fig4(testbed):
    rows = dma_bw.run(testbed, "fig4", [512, 4096, 65536, 1 << 20])
    return {(r.series, r.x): r.value for r in rows}


@pytest.fixture(scope="module")
def fig5(testbed):
    rows = dma_bw.run(testbed, "fig5", [64, 256, 512, 1024, 2048, 8192, 16384, 32768, 1 << 19])
    return {(r.series, r.x): r.value for r in rows}


@pytest.fixture(scope="module")
def fig6(testbed):
    return {(r.series, r.x): r.value for r in dma_bw.run(testbed, "fig6")}


def within(value, paper, tolerance):
    return abs(value / paper - 1) <= tolerance


def test_ideal_gen2_x8_256_b_is_3_66(fig4):
    # Seed 000 §4.1.1: 4 GB/s x 256/(256+16+2+4+1+1) = 3.66 GB/s; an exact formula, so 1%.
    assert within(fig4[("Ideal", 4096)], 3.66, 0.01)


def test_fig4_cpu_cpu_4k_x_128_is_3_3_gb_s(fig4):
    # Seed 000 §4.1.1 Fig. 4: ~3.3 GB/s at 4 KB x 128, 90% of ideal. Calibrated, +-10%.
    assert within(fig4[("CPU-CPU", 4096)], 3.3, CALIBRATED)
    assert within(fig4[("CPU-CPU", 4096)] / fig4[("Ideal", 4096)], 0.90, CALIBRATED)


def test_fig4_cpu_gpu_about_equal_to_cpu_cpu(fig4):
    # Seed 000 §4.1.2 Fig. 4: CPU to GPU about the same as CPU-CPU. Predicted, +-15%.
    for size in (4096, 65536, 1 << 20):
        assert within(fig4[("CPU-GPU", size)], fig4[("CPU-CPU", size)], PREDICTED)


def test_fig4_reads_of_gpu_memory_saturate_at_870_mb_s(fig4, fig6):
    # Seed 000 §4.1.2 Fig. 4: ~870 MB/s. Calibrated at 1 MiB (+-10%); predicted elsewhere (+-15%).
    assert within(fig4[("GPU-GPU", 1 << 20)], 0.87, CALIBRATED)
    assert within(fig4[("GPU-GPU", 65536)], 0.87, PREDICTED)
    assert within(fig6[("GPU-GPU", 128)], 0.87, PREDICTED)


def test_fig4_small_transfers_are_latency_bound(fig4):
    # The shape of Fig. 4: bandwidth grows with size up to the plateau.
    assert fig4[("CPU-CPU", 512)] < 0.5 * fig4[("CPU-CPU", 4096)]


def test_fig5_register_mode_30_to_40_percent_faster_up_to_2k(fig5):
    # Seed 000 §4.1.1 Fig. 5: register mode 30-40% faster at <= 2 KB (midpoint 1.35).
    # Calibrated at 1 KB (+-10%), predicted at the other sizes (+-15%).
    ratio = {x: v for (s, x), v in fig5.items() if s == "Register/Chaining"}
    assert within(ratio[1024], 1.35, CALIBRATED)
    for size in (64, 256, 512, 2048):
        assert within(ratio[size], 1.35, PREDICTED), (size, ratio[size])
    # and the advantage fades for large transfers, where the descriptor fetch is amortised.
    assert ratio[1 << 19] < 1.05


def test_fig6_four_descriptors_reach_70_percent_of_max(fig6):
    # Seed 000 §4.1.1 Fig. 6: 4 transfers of 4 KB already give 70% of the maximum. Predicted.
    assert within(fig6[("CPU-CPU % of max", 4)], 70, PREDICTED)


def test_fig6_matches_fig5_at_the_same_total_size(fig5, fig6):
    # Seed 000 §4.1.1: from 2 descriptors on, Fig. 6 matches Fig. 5 (chaining) at the same total
    # size: the descriptor count matters little. Predicted, +-15%.
    for n in (2, 4, 8):
        assert within(fig6[("CPU-CPU", n)], fig5[("Chaining", 4096 * n)], PREDICTED), n
