"""Models of the conventional methods the seeds compare TCA with, on the same platforms.

Each baseline gives the one-way latency of a ping-pong (round trip / 2, the seeds' method) from
physical parameters in the platform's ``[baselines.*]`` tables (``docs/baselines.md``)::

    params = tca.peach.baselines.load_params("ha-pacs-tca")
    BASELINES["mvapich2-gdr"].pingpong_latency_us(params, "gpu-gpu", 4)      # us
    pingpong_bandwidth_gbs(BASELINES["mvapich2-gdr"], params, "gpu-gpu", 1 << 20)  # GB/s

``pair`` is source memory - destination memory: ``cpu-cpu``, ``cpu-gpu``, ``gpu-cpu``,
``gpu-gpu``. Unsupported pairs and non-positive sizes raise :class:`tca.TcaError`.
"""

from __future__ import annotations

from typing import Protocol

from tca.peach.baselines.cuda import CudaPeer, CudaPeerUva
from tca.peach.baselines.mvapich2 import Mvapich2
from tca.peach.baselines.pairs import PAIRS
from tca.peach.baselines.params import load as load_params


class Baseline(Protocol):
    name: str
    description: str
    pairs: tuple[str, ...]
    tables: tuple[str, ...]

    def pingpong_latency_us(self, params: dict, pair: str, size: int) -> float: ...


BASELINES: dict[str, Baseline] = {
    "cuda-peer": CudaPeer(),
    "cuda-peer-uva": CudaPeerUva(),
    "mvapich2": Mvapich2(gdr=False),
    "mvapich2-gdr": Mvapich2(gdr=True),
}


def pingpong_bandwidth_gbs(baseline: Baseline, params: dict, pair: str, size: int) -> float:
    """Ping-pong bandwidth, size / one-way latency, in GB/s (1e9 B/s), as the seeds plot it."""
    return size / baseline.pingpong_latency_us(params, pair, size) / 1e3


__all__ = ["BASELINES", "PAIRS", "Baseline", "load_params", "pingpong_bandwidth_gbs"]
