"""Reproduction of the seeds' comparisons with conventional methods (CUDA copies, MVAPICH2).

Tolerances (DESIGN.md): values a parameter was calibrated on +-10%, predicted values +-15%.
The calibration set is declared in tca.peach.baselines.calibrate.CALIBRATION:
  peach3-testbed  cuda.call_overhead            seed 003 §3.1 Fig. 2: cudaMemcpy ~3 x 2.8 us
  ha-pacs-tca     mvapich2.cuda_buffer_check    seed 001: MVAPICH2-GDR 2.0b 6.5 us with GDR
  ha-pacs-tca     mvapich2.staging_copy_overhead seed 001: 17 us without GDR
Everything else below is predicted.

Where a claim compares a baseline with PEACH2 or PEACH3, the TCA side is a stand-in made only of
the seed's own stated numbers (minimum latency + size / stated peak bandwidth), written out in
each test, so that these tests check the baselines and not the TCA simulator.
"""

import copy

import pytest
from fixture_platforms import fixture_params
from tca.peach.baselines import BASELINES, pingpong_bandwidth_gbs
from tca.peach.baselines.calibrate import CALIBRATION, solve
from tca.peach.baselines.mvapich2 import MpiIb

CALIBRATED, PREDICTED = 0.10, 0.15
KiB, MiB = 1 << 10, 1 << 20
MIN = 4  # the smallest message of a sweep (TCA transfers are multiples of 4 bytes)


@pytest.fixture(scope="module")
def testbed():
    return fixture_params("peach2-testbed-2013")


@pytest.fixture(scope="module")
def hapacs():
    return fixture_params("ha-pacs-tca")


@pytest.fixture(scope="module")
def peach3():
    return fixture_params("peach3-testbed")


def lat(name, params, pair, size):
    return BASELINES[name].pingpong_latency_us(params, pair, size)


def within(value, paper, tolerance):
    return abs(value / paper - 1) <= tolerance


def tca_standin_us(min_us, peak_gbs, size):
    """A TCA ping-pong from the seed's stated minimum latency and peak bandwidth only."""
    return min_us + size / (peak_gbs * 1e3)


# --- calibrated values ---------------------------------------------------------------------


def test_seed001_mvapich2_gdr_minimum_6_5_us(hapacs):
    # Seed 001 (HA-PACS/TCA ping-pong slide): MV2-GDR 2.0b 6.5 us w/ GDR. Calibrated, +-10%.
    assert within(lat("mvapich2-gdr", hapacs, "gpu-gpu", MIN), 6.5, CALIBRATED)


def test_seed001_mvapich2_without_gdr_17_us(hapacs):
    # Seed 001: 17 us w/o GDR. Calibrated (staging_copy_overhead), +-10%.
    assert within(lat("mvapich2", hapacs, "gpu-gpu", MIN), 17.0, CALIBRATED)


def test_seed003_cudamemcpy_about_3x_tca_minimum(peach3):
    # Seed 003 §3.1 Fig. 2: TCA minimum 2.8 us, about 3 times faster than cudaMemcpy
    # (HostToDevice, pinned). Calibrated (call_overhead), +-10%.
    assert within(lat("cuda-peer-uva", peach3, "cpu-gpu", MIN), 3 * 2.8, CALIBRATED)


@pytest.mark.parametrize("target", CALIBRATION, ids=lambda t: f"{t.platform}:{t.key}")
def test_fixture_values_are_the_solved_calibration(target):
    # The calibrated values written in the platform tables are what the solver gives (1%).
    params = fixture_params(target.platform)
    written = float(params[target.table][target.key]["value"].split()[0])
    assert within(written, solve(copy.deepcopy(params), target), 0.01)


# --- predicted values ----------------------------------------------------------------------


def test_seed000_mvapich2_gdr_minimum_6_54_us_on_fdr(testbed):
    # Seed 000 §4.3: MVAPICH2 with GPUDirect RDMA reported at 6.54 us minimum (its ref. [16]),
    # predicted on the 2013 testbed's FDR10 direct link from the HA-PACS calibration. +-15%.
    assert within(lat("mvapich2-gdr", testbed, "gpu-gpu", MIN), 6.54, PREDICTED)


def test_seed000_ib_fdr_host_latency_comparable_to_pio_0_9_us(testbed):
    # Seed 000 §4.2.3: PEACH2 PIO CPU-CPU 0.9 us "comparable to the inter-node latency of
    # InfiniBand FDR". MVAPICH2 host-to-host over FDR10, predicted, +-15%.
    assert within(lat("mvapich2", testbed, "cpu-cpu", MIN), 0.9, PREDICTED)


def test_seed001_gdr_saves_the_two_staging_copies(hapacs):
    # Seed 001: 17 us without GDR vs 6.5 us with: the difference is the D2H and H2D copies
    # through host memory, which GDR replaces by direct HCA access (predicted shape).
    without, with_gdr = lat("mvapich2", hapacs, "gpu-gpu", MIN), lat("mvapich2-gdr", hapacs, "gpu-gpu", MIN)
    assert without > 2 * with_gdr


# --- shape claims --------------------------------------------------------------------------


SWEEP = [1 << k for k in range(2, 25)]  # 4 B .. 16 MiB


def test_seed003_cudamemcpy_device_to_host_slower_than_host_to_device(peach3):
    # Seed 003 §3.1 Fig. 2/3: DeviceToHost performs worse than HostToDevice (GPU reads are
    # slower than writes), at every size on the PEACH3 testbed.
    for size in SWEEP:
        assert lat("cuda-peer-uva", peach3, "gpu-cpu", size) > lat("cuda-peer-uva", peach3, "cpu-gpu", size)


def test_seed003_mpi_ib_beats_a_3_5_gb_s_gpu_read_limited_path_from_1_mb(peach3):
    # Seed 003 §3.2 Fig. 5: PEACH3 GPU-GPU (about 2 us, GPU reads capped at ~3.5 GB/s, Fig. 6)
    # stays ahead of MPI/IB up to 512 KB, where MPI/IB still uses GDR, and falls below it from
    # 1 MB, where MPI/IB stages through host memory instead.
    for size in SWEEP:
        mpi = lat("mvapich2-gdr", peach3, "gpu-gpu", size)
        peach3_us = tca_standin_us(2.0, 3.5, size)
        if size <= 512 * KiB:
            assert mpi > peach3_us, size
        else:
            assert mpi < peach3_us, size


def test_seed003_gdr_is_what_would_lose_above_512_kb(peach3):
    # Seed 003 §3.2: the reason MPI/IB wins from 1 MB is that it stops using GPUDirect RDMA,
    # whose reads of GPU memory degrade on large transfers. Kept on, GDR would lose to PEACH3
    # too; and the model indeed does not use it there (its latency is the staged path's).
    mpi = MpiIb.from_params(peach3, gdr=True)
    for size in (1 * MiB, 4 * MiB):
        gdr_only = (
            mpi.mpi_overhead + 2 * mpi.cuda_buffer_check + mpi.rendezvous(size, "gpu", "gpu", True)
        ) * 1e6
        assert gdr_only > tca_standin_us(2.0, 3.5, size)
        assert lat("mvapich2-gdr", peach3, "gpu-gpu", size) == lat("mvapich2", peach3, "gpu-gpu", size)


def test_seed003_peach3_several_times_mpi_ib_at_1_to_4_kb(peach3):
    # Seed 003 §3.2 Fig. 5: about 4x the MPI/IB bandwidth at 1-4 KB. The model gives 2.6-3.0x
    # against the stand-in: a known departure (docs/baselines.md), held here to >= 2.5x.
    for size in (1 * KiB, 2 * KiB, 4 * KiB):
        ratio = lat("mvapich2-gdr", peach3, "gpu-gpu", size) / tca_standin_us(2.0, 3.5, size)
        assert ratio >= 2.5, (size, ratio)


def test_seed001_peach2_faster_than_mvapich2_gdr_up_to_512_kb(hapacs):
    # Seed 001 (bandwidth slide): PEACH2 GPU-GPU DMA (2.3 us minimum, max 2.6 GB/s) is faster
    # than MVAPICH2-GDR 2.0b up to 512 KB; beyond it MVAPICH2's pipelined staging wins. At
    # 512 KB itself, the crossover, the two are held within 15% of each other.
    for size in SWEEP:
        mpi = lat("mvapich2-gdr", hapacs, "gpu-gpu", size)
        peach2 = tca_standin_us(2.3, 2.6, size)
        if size < 512 * KiB:
            assert mpi > peach2, size
        elif size == 512 * KiB:
            assert within(mpi, peach2, PREDICTED)
        else:
            assert mpi < peach2, size


def test_seed000_fig9_peach2_latency_below_every_baseline(testbed):
    # Seed 000 §4.3 Fig. 9 (small sizes, as Fig. 7): PEACH2 GPU-GPU (2.3-2.5 us, reads of GPU
    # memory saturating at 880 MB/s) has lower latency than CUDA (noUVA), CUDA (UVA) and
    # MVAPICH2, and than the reported MVAPICH2-GDR 6.54 us.
    for size in (4, 64, 512, 1 * KiB, 4 * KiB):
        peach2 = tca_standin_us(2.5, 0.88, size)
        assert lat("cuda-peer", testbed, "gpu-gpu", size) > peach2
        assert lat("cuda-peer-uva", testbed, "gpu-gpu", size) > peach2
        assert lat("mvapich2", testbed, "gpu-gpu", size) > peach2
        assert lat("mvapich2-gdr", testbed, "gpu-gpu", size) > peach2


def test_seed000_fig9_uva_peer_copy_faster_than_staged(testbed):
    # Seed 000 §4.3: CUDA (UVA) is the faster of the two intra-node methods ("faster even than
    # CUDA (UVA)"): with peer access the copy goes GPU to GPU; without, it is staged via host.
    # Held over Fig. 9's small sizes; for large copies the seed states nothing.
    for size in (4, 64, 512, 1 * KiB, 4 * KiB):
        assert lat("cuda-peer-uva", testbed, "gpu-gpu", size) < lat("cuda-peer", testbed, "gpu-gpu", size)


def test_seed000_fig10_gpu_to_cpu_then_dma_beats_mvapich2_at_32_to_128_kb(testbed):
    # Seed 000 §4.3 Fig. 10: PEACH2 (GPU>CPU-GPU), a cudaMemcpy to host memory followed by a
    # PEACH2 DMA from CPU memory (2.4 us minimum, 3.5 GB/s, §4.2.3), shows higher bandwidth than
    # MVAPICH2 between 32 and 128 KB.
    for size in (32 * KiB, 64 * KiB, 128 * KiB):
        staged = lat("cuda-peer-uva", testbed, "gpu-cpu", size) + tca_standin_us(2.4, 3.5, size)
        assert staged < lat("mvapich2", testbed, "gpu-gpu", size), size


def test_seed000_fig10_mvapich2_overtakes_the_880_mb_s_gpu_read_limit(testbed):
    # Seed 000 §4.3: PEACH2 GPU-GPU is held at 880 MB/s, which is why GPU>CPU-GPU was written;
    # MVAPICH2's pipelined staging exceeds that rate for large messages.
    assert pingpong_bandwidth_gbs(BASELINES["mvapich2"], testbed, "gpu-gpu", 4 * MiB) > 0.88
    assert pingpong_bandwidth_gbs(BASELINES["mvapich2"], testbed, "gpu-gpu", 4 * KiB) < 0.88


@pytest.mark.parametrize("platform", ["peach2-testbed-2013", "ha-pacs-tca", "peach3-testbed"])
@pytest.mark.parametrize("name", sorted(BASELINES))
def test_latency_grows_with_size_and_bandwidth_stays_physical(platform, name):
    params = fixture_params(platform)
    baseline = BASELINES[name]
    for pair in baseline.pairs:
        sizes = [1, 2, 3] + SWEEP + [12345, 3 * MiB + 7]
        sizes.sort()
        latencies = [baseline.pingpong_latency_us(params, pair, s) for s in sizes]
        assert all(b >= a for a, b in zip(latencies, latencies[1:], strict=False)), (pair, latencies)
        for size, us in zip(sizes, latencies, strict=True):
            gbs = pingpong_bandwidth_gbs(baseline, params, pair, size)
            assert gbs == pytest.approx(size / us / 1e3)
            assert 0 < gbs < 16  # below the fastest link any of these platforms has
