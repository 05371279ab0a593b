"""Which memories a ping-pong connects, and the checks every baseline applies to its input."""

from __future__ import annotations

from numbers import Integral

from tca import TcaError

# Source memory - destination memory, as the seeds label their ping-pong curves.
PAIRS = ("cpu-cpu", "cpu-gpu", "gpu-cpu", "gpu-gpu")


def check(name: str, pair: str, size: int, pairs: tuple[str, ...]) -> None:
    """One-line errors for a pair or size a baseline does not support."""
    if pair not in PAIRS:
        raise TcaError(f"{name}: unknown pair '{pair}' (use {', '.join(PAIRS)})")
    if pair not in pairs:
        raise TcaError(f"{name}: pair {pair} is not supported (supported: {', '.join(pairs)})")
    if isinstance(size, bool) or not isinstance(size, Integral) or size <= 0:
        raise TcaError(f"{name}: size must be a positive number of bytes, got {size!r}")
