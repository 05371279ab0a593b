"""The cost model of simulation mode: how long each simulated operation takes (seed 002 §6.2,
Table 6.1)."""

from __future__ import annotations

from dataclasses import dataclass

PS = 10**12  # picoseconds per second

# seed 002 Table 6.1 (measured on the 4 x K20 evaluation host of §6.1)
TABLE_6_1 = {"bus_bandwidth": 6377e6, "file_read": 2482e6, "file_write": 1680e6}


@dataclass
class CostModel:
    """Durations of the simulated operations.

    ``bus_bandwidth`` [B/s] and ``bus_latency`` [s] of each direction of a device's bus (one
    value for all devices, or one per device: e.g. GPUs behind a slower network bus);
    ``bus_bandwidth_out`` the swap-out direction where it differs (GPUs behind ExpEther);
    ``file_read`` / ``file_write`` [B/s] of the host's input/output files (seed 002 Table 6.1);
    ``compute_speed``: a device's speed relative to the reference on which ``Subtask.cost_s``
    is given (one value for all devices, or one per device).
    """

    bus_bandwidth: float | list[float] = TABLE_6_1["bus_bandwidth"]
    bus_latency: float | list[float] = 10e-6
    file_read: float = TABLE_6_1["file_read"]
    file_write: float = TABLE_6_1["file_write"]
    compute_speed: float | list[float] = 1.0
    bus_bandwidth_out: float | list[float] | None = None  # swap-outs, when not ``bus_bandwidth``

    def bus(self, device: int, out: bool = False) -> tuple[float, float]:
        """(bandwidth [B/s], latency [s]) of ``device``'s bus, into the device or ``out``."""
        bw = self.bus_bandwidth if not out or self.bus_bandwidth_out is None else self.bus_bandwidth_out
        return _of(bw, device), _of(self.bus_latency, device)

    def transfer_ps(self, nbytes: int, device: int = 0, out: bool = False) -> int:
        bw, lat = self.bus(device, out)
        return round((lat + nbytes / bw) * PS)

    def file_ps(self, nbytes: int, write: bool) -> int:
        return round(nbytes / (self.file_write if write else self.file_read) * PS)

    def compute_ps(self, cost_s: float, device: int) -> int:
        return round(cost_s / _of(self.compute_speed, device) * PS)


def _of(value, device: int):
    return value[device] if isinstance(value, list) else value
