"""Simulated time and rank lifetimes: misuse ends in an error in the calling rank, never a panic,
a hang or a silently saturated clock (issue: hardening of the simulator)."""

import pytest
import tca.peach.sim
from tca.peach.api import TcaApiError

PLATFORM = "peach2-testbed-2013"


def test_simulated_time_overflow_is_an_error_in_the_calling_rank():
    # 2e7 s of computation is past the end of simulated time (u64 picoseconds: 213 days).
    with pytest.raises(TcaApiError, match="past the end of simulated time") as e:
        tca.peach.sim.run(PLATFORM, 2, lambda c: (c.compute(1e7), c.compute(1e7)))
    assert e.value.name == "TooLarge"


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -1.0])
def test_bad_computation_times_are_rejected(seconds):
    with pytest.raises(TcaApiError) as e:
        tca.peach.sim.run(PLATFORM, 1, lambda c: c.compute(seconds))
    assert e.value.name == "TooLarge"


def test_a_rank_used_after_the_run_answers_nothing():
    kept = tca.peach.sim.run(PLATFORM, 1, lambda c: c)[0]
    with pytest.raises(TcaApiError) as e:
        kept.malloc(64)
    assert e.value.name == "NotInitialized"
