"""What the worker threads report to the driver (:mod:`tca.victream.runtime.threaded`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tca.victream.core.actions import Run, SwapIn, SwapOut
from tca.victream.core.dag import Block


@dataclass(frozen=True)
class SwappedIn:
    device: int
    pid: int


@dataclass(frozen=True)
class SwappedOut:
    device: int
    pid: int
    block: Block  # the host copy


@dataclass(frozen=True)
class Ran:
    device: int
    sid: int
    sizes: dict[int, int]  # real size [B] of each output
    meta: Any  # the kernel's host-side result (the key histogram of a sort step)


@dataclass(frozen=True)
class Failed:
    """A worker stopped on an error; the driver shuts every worker down and raises it."""

    action: SwapIn | SwapOut | Run
    error: BaseException


WorkerEvent = SwappedIn | SwappedOut | Ran | Failed
