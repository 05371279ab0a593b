"""The goal ratios of `make bench-shm` (tca.peach.shm_bench): taken within each round, then the
median over the rounds, so that a round in which the machine ran slower moves both sides of a
ratio alike."""

import pytest
from tca.peach.shm_bench import json_rows, meets, paired, ratios, series_commands, summary


def test_a_ratio_is_taken_within_each_round():
    # Round 1 ran in a slow spell for both series; a ratio of medians would pair PIO's slow
    # median (0.20) with the floor's fast one (0.05).
    samples = {
        "shm PIO": {8: {0: 0.08, 1: 0.20, 2: 0.21}},
        "plain stores": {8: {0: 0.05, 1: 0.19, 2: 0.05, 3: 0.06}},
    }
    med = summary(samples)
    assert med["shm PIO"][8] / med["plain stores"][8] == pytest.approx(0.20 / 0.055)
    # Rounds 0, 1, 2: 1.6, 1.0526, 4.2; round 3 has no PIO.
    assert paired(samples, 8, ("shm PIO",), ("plain stores",)) == pytest.approx(1.6)


def test_the_best_of_several_series_is_taken_per_round():
    samples = {
        "shm DMA register": {65536: {0: 2.0, 1: 3.0}},
        "plain stores": {65536: {0: 2.5, 1: 2.0}},
        "memcpy": {65536: {0: 1.6, 1: 2.5}},
    }
    # Round 0: 2.0 / 1.6; round 1: 3.0 / 2.0.
    assert paired(samples, 65536, ("shm DMA register",), ("plain stores", "memcpy")) == pytest.approx(1.375)
    assert paired(samples, 8, ("shm DMA register",), ("memcpy",)) is None


def test_goal_rows_name_the_pairs_and_bandwidth_is_inverted():
    samples = {
        "shm PIO": {8: {0: 0.1, 1: 0.1}},
        "shm DMA register": {8: {0: 0.3, 1: 0.2}, 4096: {0: 1.0}},
        "plain stores": {8: {0: 0.05, 1: 0.1}},
        "memcpy": {4096: {0: 0.5}},
        "UCX UCP put": {8: {0: 0.2, 1: 0.1}},
    }
    rows = {desc: value for desc, _, value, _ in ratios(samples, 4096)}
    assert rows["8 B latency, shm PIO / plain stores (floor)"] == pytest.approx(1.5)
    assert rows["8 B latency, shm PIO / UCX UCP put"] == pytest.approx(0.75)
    assert rows["8 B latency, shm DMA register / shm PIO"] == pytest.approx(2.5)
    assert rows["4096 B bandwidth, shm DMA register / memcpy"] == pytest.approx(0.5)
    assert rows["8 B latency, best shm / best peer (by median: UCX UCP put)"] == pytest.approx(0.75)
    assert not any("Python" in desc for desc in rows)


def test_compared_series_run_next_to_each_other():
    names = list(series_commands(8, 1.0))
    for a, b in [("plain stores", "shm PIO"), ("shm PIO", "shm DMA register")]:
        assert abs(names.index(a) - names.index(b)) == 1


def test_goals_are_judged_by_their_operator():
    assert meets(1.3, "<= 1.3") and not meets(1.31, "<= 1.3")
    assert meets(0.99, "< 1") and not meets(1.0, "< 1")
    assert meets(0.95, ">= 0.95") and not meets(0.94, ">= 0.95")


def test_json_rows_carry_the_goal_ratios():
    samples = {"shm PIO": {8: {0: 0.06, 1: 0.07}}, "plain stores": {8: {0: 0.05, 1: 0.05}}}
    rows = [r for r in json_rows(samples, 8) if r.unit == "x"]
    assert [(r.series, r.x, r.x_unit, r.kind) for r in rows] == [
        ("ratio: 8 B latency, shm PIO / plain stores (floor) (goal <= 1.3)", 8, "B", "measured")
    ]
    assert rows[0].value == pytest.approx(1.3)
