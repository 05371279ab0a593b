"""What the scheduler core asks its driver to do (its outputs, :meth:`Core.poll_actions`).

The driver (threaded runtime, simulator) carries out each action and reports the completion of
every counted one (``SwapIn``, ``SwapOut``, ``Run``) through the core's ``handle_*`` inputs;
``Drop`` completes at once and is not reported.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SwapIn:
    device: int
    pid: int
    nbytes: int
    from_file: bool  # the host copy is still in its file (first read)


@dataclass(frozen=True)
class SwapOut:
    device: int
    pid: int
    nbytes: int
    keep: bool  # True: write back and keep the device copy; False: free it afterwards
    result: bool  # the data an action returns (not counted as swap I/O)


@dataclass(frozen=True)
class Drop:
    """Free a device copy at once (the host has the data, or nobody needs it any more)."""

    device: int
    pid: int


@dataclass(frozen=True)
class Run:
    device: int
    sid: int


Action = SwapIn | SwapOut | Drop | Run
