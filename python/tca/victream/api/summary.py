"""What an action (or a series of them) cost: time, swap bytes and utilisation per device."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class DeviceSummary:
    name: str
    swap_in: int  # [B]
    swap_out: int  # [B]
    result: int  # [B] action results copied to the host
    compute_s: float  # time the subtask executor was busy [s]
    utilisation: float  # compute_s / elapsed
    subtasks: int
    peak: int  # peak reserved memory [B]
    capacity: int  # [B]


@dataclass
class Summary:
    scheduler: str
    mode: str
    elapsed_s: float
    devices: list[DeviceSummary]
    spans: list = field(default_factory=list, repr=False)  # timeline (tca.victream.core.spans.Span)

    @property
    def swap_in(self) -> int:
        return sum(d.swap_in for d in self.devices)

    @property
    def swap_out(self) -> int:
        return sum(d.swap_out for d in self.devices)

    def text(self) -> str:
        lines = [
            f"# {self.scheduler} ({self.mode}): {self.elapsed_s:.3f} s, swap-in {_mib(self.swap_in)}, "
            f"swap-out {_mib(self.swap_out)}",
            f"# {'device':<10}{'swap-in':>12}{'swap-out':>12}{'subtasks':>10}{'util':>8}{'peak mem':>12}",
        ]
        for d in self.devices:
            lines.append(
                f"  {d.name:<10}{_mib(d.swap_in):>12}{_mib(d.swap_out):>12}{d.subtasks:>10}"
                f"{d.utilisation * 100:>7.1f}%{_mib(d.peak):>12}"
            )
        return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
