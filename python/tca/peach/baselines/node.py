"""PCIe timing inside one node, shared by the CUDA and MPI baselines (``[baselines.node]``).

A node is a CPU root complex with host memory, GPUs and an InfiniBand HCA on its root ports,
and an integrated PCIe switch that forwards peer-to-peer traffic between those ports.
"""

from __future__ import annotations

from dataclasses import dataclass

from tca.peach.baselines import links
from tca.peach.baselines.params import table


@dataclass(frozen=True)
class Node:
    pcie_latency: float  # one PCIe hop, one way (both ends' PHY and data link layer), s
    mmio_latency: float  # a CPU store reaching a device register (doorbell), s
    host_memory_read_latency: float  # root complex + DRAM for a device's read of host memory, s
    p2p_latency: float  # forwarding through the CPU's integrated switch between two root ports, s
    gpu_memory_latency: float  # the GPU's copy engine reading its own memory, s
    gpu_bar_read_latency: float  # a peer device reading GPU memory through the GPU's BAR, s
    gpu_link_rate: float  # data rate of the GPU's link after line coding, B/s
    max_payload: int  # largest write TLP payload, B
    completion_size: int  # payload of the root complex's read completions, B

    @classmethod
    def from_params(cls, baselines: dict) -> Node:
        p = table(baselines, "node")
        gen = p.word("gpu_link_generation", tuple(links.PCIE_GENERATIONS))
        return cls(
            pcie_latency=p.time("pcie_latency"),
            mmio_latency=p.time("mmio_latency"),
            host_memory_read_latency=p.time("host_memory_read_latency"),
            p2p_latency=p.time("p2p_latency"),
            gpu_memory_latency=p.time("gpu_memory_latency"),
            gpu_bar_read_latency=p.time("gpu_bar_read_latency"),
            gpu_link_rate=links.pcie_rate(gen, p.count("gpu_link_lanes")),
            max_payload=p.size("max_payload"),
            completion_size=p.size("read_completion_size"),
        )

    def host_read_round_trip(self) -> float:
        """A device reads host memory: request up its link, DRAM, completion back down."""
        return 2 * self.pcie_latency + self.host_memory_read_latency

    def host_write_latency(self) -> float:
        """A device's posted write reaching host memory."""
        return self.pcie_latency

    def gpu_read_round_trip(self) -> float:
        """A device on another root port reads GPU memory through the CPU's switch (GPUDirect)."""
        return 2 * (2 * self.pcie_latency + self.p2p_latency) + self.gpu_bar_read_latency

    def gpu_write_latency(self) -> float:
        """A device's posted write reaching a GPU on another root port."""
        return 2 * self.pcie_latency + self.p2p_latency
