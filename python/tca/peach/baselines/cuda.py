"""CUDA copies inside one node: ``cudaMemcpyPeer`` without peer access and ``cudaMemcpy`` with UVA.

Seed 000 §4.3 (Fig. 9/10) compares PEACH2 with GPU-to-GPU copies inside one node by
``cudaMemcpyPeer()`` without UVA [CUDA (noUVA)] and with UVA [CUDA (UVA)]; seed 003 §3.1
(Fig. 2/3) compares the TCA API with ``cudaMemcpy()`` between pinned host memory and the GPU.

One synchronous copy call costs (``docs/baselines.md`` has the derivation)::

    T = call_overhead                      runtime + driver: checks, copy methods into the push
                                           buffer, and the spin on the completion semaphore
      + mmio + host_read_rtt               doorbell reaches the GPU; it fetches the methods
      + engine(size)                       the copy engine moves the data (below)
      + pcie_latency                       semaphore release written to host memory

    H2D:    host_read_rtt + size / min(link x completion efficiency, copy engine)
    D2H:    gpu_memory + pcie + size / min(link x write efficiency, copy engine)
            + host_read_rtt                flush read: the posted data must be in host memory
                                           before the semaphore says so
    P2P:    gpu_memory + gpu_write + size / min(link x write efficiency, copy engine, p2p writes)
            + gpu_read_rtt                 flush read through the CPU's switch to the peer
    staged: D2H of each chunk into a pinned host buffer, semaphore hand-off to the second
            GPU's engine (pcie + host_read_rtt), H2D of the chunk; chunks pipelined.

With UVA and peer access the source GPU writes straight into the peer (P2P); without it the
driver stages through host memory (staged). Ping-pong one-way latency is one such call.
"""

from __future__ import annotations

from dataclasses import dataclass

from tca import TcaError
from tca.peach.baselines import links
from tca.peach.baselines.node import Node
from tca.peach.baselines.pairs import check
from tca.peach.baselines.params import table


@dataclass(frozen=True)
class CudaCopies:
    """The copy paths of one node, with every rate and latency resolved (seconds, B/s)."""

    node: Node
    call_overhead: float
    h2d_bandwidth: float
    d2h_bandwidth: float
    p2p_bandwidth: float
    staging_chunk: int

    @classmethod
    def from_params(cls, baselines: dict) -> CudaCopies:
        node = Node.from_params(baselines)
        p = table(baselines, "cuda")
        engine = p.bandwidth("copy_engine_bandwidth")
        link = node.gpu_link_rate
        d2h = min(link * links.write_efficiency(node.max_payload), engine)
        return cls(
            node=node,
            call_overhead=p.time("call_overhead"),
            h2d_bandwidth=min(link * links.completion_efficiency(node.completion_size), engine),
            d2h_bandwidth=d2h,
            p2p_bandwidth=min(d2h, p.bandwidth("p2p_write_bandwidth")),
            staging_chunk=p.size("staging_chunk"),
        )

    # Time the copy engine is busy with one transfer, from its start to its last byte landing.
    def h2d_engine(self, size: int) -> float:
        return self.node.host_read_round_trip() + size / self.h2d_bandwidth

    def d2h_engine(self, size: int) -> float:
        n = self.node
        return (
            n.gpu_memory_latency
            + n.host_write_latency()
            + size / self.d2h_bandwidth
            + n.host_read_round_trip()
        )

    def p2p_engine(self, size: int) -> float:
        n = self.node
        return (
            n.gpu_memory_latency + n.gpu_write_latency() + size / self.p2p_bandwidth + n.gpu_read_round_trip()
        )

    def staged_engines(self, size: int) -> float:
        """D2H into a host buffer and H2D out of it, chunk by chunk, the two engines overlapping."""
        handoff = self.node.host_write_latency() + self.node.host_read_round_trip()
        first_done = second_done = 0.0
        left = size
        while left > 0:
            chunk = min(left, self.staging_chunk)
            left -= chunk
            first_done += self.d2h_engine(chunk)
            second_done = max(first_done + handoff, second_done) + self.h2d_engine(chunk)
        return second_done

    def call(self, engine_time: float) -> float:
        """One synchronous copy call around ``engine_time`` of copy-engine work."""
        n = self.node
        start = n.mmio_latency + n.host_read_round_trip()
        return self.call_overhead + start + engine_time + n.host_write_latency()

    def memcpy(self, pair: str, size: int) -> float:
        """``cudaMemcpy`` with UVA (the runtime infers the direction); seconds."""
        if pair == "cpu-gpu":
            return self.call(self.h2d_engine(size))
        if pair == "gpu-cpu":
            return self.call(self.d2h_engine(size))
        if pair == "gpu-gpu":
            return self.call(self.p2p_engine(size))
        raise TcaError(f"cudaMemcpy models device copies only, not {pair}")


class CudaPeer:
    """``cudaMemcpyPeer`` between two GPUs of one node without peer access: staged through host."""

    name = "cuda-peer"
    tables = ("node", "cuda")
    pairs = ("gpu-gpu",)
    description = "cudaMemcpyPeer between two GPUs of one node, no UVA/peer access: staged via host memory"

    def pingpong_latency_us(self, params: dict, pair: str, size: int) -> float:
        check(self.name, pair, size, self.pairs)
        copies = CudaCopies.from_params(params)
        return copies.call(copies.staged_engines(size)) * 1e6


class CudaPeerUva:
    """``cudaMemcpy`` with UVA: GPU-GPU by peer-to-peer writes, host<->GPU by the copy engine."""

    name = "cuda-peer-uva"
    tables = ("node", "cuda")
    pairs = ("gpu-gpu", "cpu-gpu", "gpu-cpu")
    description = "cudaMemcpy with UVA inside one node: GPU-GPU peer-to-peer, or pinned host <-> GPU"

    def pingpong_latency_us(self, params: dict, pair: str, size: int) -> float:
        check(self.name, pair, size, self.pairs)
        return CudaCopies.from_params(params).memcpy(pair, size) * 1e6
