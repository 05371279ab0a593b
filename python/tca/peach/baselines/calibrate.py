"""The declared calibration set of the baseline models, and the solver that fits it.

Three parameters are fitted, each to one published number; everything else the baselines
report is predicted. Each fitted latency is affine in its parameter (the parameter is a
software cost added once or twice on the path), so two evaluations solve it exactly.

    python -m tca.peach.baselines.calibrate PLATFORM_OR_TOML...

prints, for every target whose platform is given, the value the parameter must take.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass
from pathlib import Path

from tca import TcaError
from tca.peach.baselines import BASELINES
from tca.peach.baselines.params import load


@dataclass(frozen=True)
class Target:
    platform: str  # platform name ([platform].name or the file's stem)
    table: str  # [baselines.<table>]
    key: str  # the fitted parameter
    baseline: str
    pair: str
    size: int
    value_us: float  # the published one-way latency
    source: str


# Order matters: the GDR target fixes cuda_buffer_check, which the non-GDR path also pays.
CALIBRATION = (
    Target(
        "peach3-testbed",
        "cuda",
        "call_overhead",
        "cuda-peer-uva",
        "cpu-gpu",
        4,
        3 * 2.8,
        "seed 003 §3.1 Fig. 2: TCA minimum 2.8 us, about 3x faster than cudaMemcpy (pinned host to GPU)",
    ),
    Target(
        "ha-pacs-tca",
        "mvapich2",
        "cuda_buffer_check",
        "mvapich2-gdr",
        "gpu-gpu",
        4,
        6.5,
        "seed 001: MVAPICH2-GDR 2.0b GPU-GPU ping-pong minimum 6.5 us with GDR",
    ),
    Target(
        "ha-pacs-tca",
        "mvapich2",
        "staging_copy_overhead",
        "mvapich2",
        "gpu-gpu",
        4,
        17.0,
        "seed 001: MVAPICH2-GDR 2.0b GPU-GPU ping-pong minimum 17 us without GDR",
    ),
)


def solve(params: dict, target: Target) -> float:
    """The value (us) of ``target.key`` that makes the model give ``target.value_us``."""

    def latency(value_us: float) -> float:
        trial = copy.deepcopy(params)
        trial[target.table][target.key]["value"] = f"{value_us} us"
        return BASELINES[target.baseline].pingpong_latency_us(trial, target.pair, target.size)

    at0, at1 = latency(0.0), latency(1.0)
    value = (target.value_us - at0) / (at1 - at0)
    if value < 0:
        raise TcaError(
            f"{target.table}.{target.key}: the rest of the path alone exceeds {target.value_us} us"
        )
    return value


def main(argv: list[str]) -> int:
    if not argv or any(a.startswith("-") for a in argv):
        print(
            "usage: python -m tca.peach.baselines.calibrate PLATFORM.toml ...  (prints the fitted "
            "baselines values of the platforms that have calibration targets)",
            file=sys.stderr,
        )
        return 2
    for arg in argv:
        params = load(arg)
        name = Path(arg).stem
        for target in CALIBRATION:
            if target.platform == name:
                value = solve(params, target)
                params[target.table][target.key]["value"] = f"{value} us"
                print(f"{name}: baselines.{target.table}.{target.key} = {value:.3f} us  ({target.source})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except TcaError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
