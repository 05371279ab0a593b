"""Timelines: busy intervals of a device's lanes, recorded by the runtime and the simulator and
drawn by ``--plot``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Lane(Enum):
    IN = "in"  # swap-ins over the device's bus
    OUT = "out"  # swap-outs over the device's bus
    RUN = "run"  # the subtask executor
    FILE_READ = "file-read"  # the host's input files (shared: device -1)
    FILE_WRITE = "file-write"  # the host's output files (shared: device -1)


@dataclass
class Span:
    """One busy interval [ps] on a timeline lane."""

    device: int
    lane: Lane
    start_ps: int
    end_ps: int
    label: str
