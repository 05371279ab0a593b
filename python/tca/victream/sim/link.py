"""A link shared by the transfers of several devices, as a fluid (seed 002 §6.3: four GPUs
behind one aggregated ExpEther connection).

Every transfer in progress is a flow with its remaining bytes and a cap, the bandwidth its own
path allows (the device's PCIe link). The link's capacity is divided max-min fairly: flows
whose cap is below an equal share get their cap, the others share the rest equally. Each time
a flow joins or leaves, the rates are recomputed, so a transfer's end depends on what the
other devices move meanwhile. Time is integer picoseconds (as the simulator's); the remaining
bytes are floats, so runs are bit-reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

from tca.victream.sim.cost import PS


@dataclass
class Flow:
    remaining: float  # bytes
    cap: float  # B/s
    rate: float = 0.0  # B/s, set by SharedLink._share


class SharedLink:
    """One direction of a shared link of ``capacity`` B/s."""

    def __init__(self, capacity: float):
        if not capacity > 0:
            raise ValueError(f"shared link capacity must be positive, got {capacity}")
        self.capacity = float(capacity)
        self.flows: dict[object, Flow] = {}
        self.updated = 0  # ps: when the remaining bytes were last brought up to date
        self.moved = 0.0  # bytes carried so far (for utilisation)

    def copy(self) -> SharedLink:
        c = SharedLink(self.capacity)
        c.flows = {k: Flow(f.remaining, f.cap, f.rate) for k, f in self.flows.items()}
        c.updated, c.moved = self.updated, self.moved
        return c

    def advance(self, now: int) -> None:
        """Moves every flow's bytes up to ``now``."""
        dt = (now - self.updated) / PS
        if dt > 0:
            for f in self.flows.values():
                done = min(f.remaining, f.rate * dt)
                f.remaining -= done
                self.moved += done
        self.updated = max(self.updated, now)

    def add(self, now: int, key, nbytes: int, cap: float) -> None:
        """Starts a flow of ``nbytes`` limited to ``cap`` B/s at ``now``."""
        if key in self.flows:
            raise ValueError(f"flow {key!r} is already on the link")
        self.advance(now)
        self.flows[key] = Flow(float(nbytes), float(cap))
        self._share()

    def remove(self, now: int, key) -> None:
        """Ends a flow (its bytes have arrived) at ``now``."""
        self.advance(now)
        del self.flows[key]
        self._share()

    def next_end(self) -> tuple[int, object] | None:
        """(time [ps], key) of the flow that ends first at the current rates; ties go to the
        flow that joined first."""
        best = None
        for k, f in self.flows.items():
            t = self.updated + (0 if f.remaining <= 0 else -(-f.remaining * PS // f.rate))
            if best is None or t < best[0]:
                best = (int(t), k)
        return best

    def rates(self) -> dict[object, float]:
        return {k: f.rate for k, f in self.flows.items()}

    def _share(self) -> None:
        """Max-min fair shares: fill the flows in order of their caps."""
        left, n = self.capacity, len(self.flows)
        for f in sorted(self.flows.values(), key=lambda f: f.cap):
            f.rate = min(f.cap, left / n)
            left -= f.rate
            n -= 1
