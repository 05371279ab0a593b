"""MVAPICH2 over InfiniBand between two nodes, with CUDA support and with GPUDirect RDMA (GDR).

Seed 000 §4.3 compares PEACH2 with MVAPICH2 1.9b (enable-cuda) over IB FDR10 and quotes
MVAPICH2 with GPUDirect RDMA at 6.54 us; seed 001 gives MVAPICH2-GDR 2.0b on HA-PACS/TCA
(IB QDR x2): 6.5 us with GDR, 17 us without; seed 003 §3.2 notes that its MPI/IB run switches
GDR off above 512 KB. The model follows one ``MPI_Send`` -> ``MPI_Recv`` message::

    T = mpi_overhead + cuda_buffer_check x (GPU buffers) + min(protocols allowed at this size)

    Eager is allowed up to eager_threshold (the size of the eager buffers), GDR up to gdr_limit
    (the switch seed 003 §3.2 describes); below its limit the library, whose thresholds are
    tuned per platform, uses whichever protocol is the faster.

    eager (size <= eager_threshold): the payload goes into the receiver's pre-registered host
      buffer (vbuf) with one RDMA write, and is copied out there:
        sender:   host buffer: memcpy into a vbuf | GPU, GDR: the HCA reads the GPU buffer
                  directly | GPU, no GDR: cudaMemcpy D2H into a vbuf
        receiver: host buffer: memcpy out | GPU, GDR: the local HCA writes the vbuf into GPU
                  memory (loopback RDMA) | GPU, no GDR: cudaMemcpy H2D
    rendezvous (size > eager_threshold): RTS and CTS control messages (one extra round trip),
      then either one zero-copy RDMA write between the user buffers (host memory, or GPU memory
      with GDR while size <= gdr_limit), or a pipeline over chunks of pipeline_chunk: cudaMemcpy
      D2H -> RDMA write -> cudaMemcpy H2D, the stages of successive chunks overlapping.

    RDMA write = mmio x rails used (a doorbell per rail)
                 + source read round trip (none for host data <= max_inline: the work request
                 carries it) + hca + wire + hca
                 + size / min(rails x IB rate, HCA PCIe rates, GDR read limit for GPU sources)
                 + destination write (the eager buffer's tail flag lands with the data; a
                 rendezvous adds the FIN message's host write)

GPU copies inside MVAPICH2 use the CUDA copy model of the node (``tca.peach.baselines.cuda``) with
MVAPICH2's own per-copy software cost (asynchronous copy + event polling) in place of a
blocking call's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tca.peach.baselines import links
from tca.peach.baselines.cuda import CudaCopies
from tca.peach.baselines.node import Node
from tca.peach.baselines.pairs import PAIRS, check
from tca.peach.baselines.params import table

CONTROL_MESSAGE = 64  # bytes of an RTS or CTS packet's payload (MPI header + RDMA key/address)


def pipeline(stages: list[list[float]]) -> float:
    """Finish time of chunks flowing through stages in order; each stage serves one chunk at a time."""
    done = [0.0] * len(stages[0]) if stages else []
    for chunk in stages:
        ready = 0.0
        for i, duration in enumerate(chunk):
            done[i] = max(ready, done[i]) + duration
            ready = done[i]
    return done[-1] if done else 0.0


@dataclass(frozen=True)
class MpiIb:
    """MVAPICH2 on one node pair, every parameter resolved (seconds, bytes, B/s)."""

    node: Node
    copies: CudaCopies  # the node's CUDA copies with MVAPICH2's per-copy software cost
    gdr: bool
    mpi_overhead: float
    cuda_buffer_check: float
    hca_latency: float
    max_inline: int
    wire_latency: float
    port_rate: float
    rails: int
    striping_threshold: int
    hca_link_rate: float
    eager_threshold: int
    memcpy_bandwidth: float
    gdr_read_bandwidth: float
    gdr_limit: int
    pipeline_chunk: int

    @classmethod
    def from_params(cls, baselines: dict, gdr: bool) -> MpiIb:
        p = table(baselines, "mvapich2")
        copies = CudaCopies.from_params(baselines)
        copies = dataclasses.replace(copies, call_overhead=p.time("staging_copy_overhead"))
        speed = p.word("ib_speed", tuple(links.IB_SPEEDS))
        hca_gen = p.word("hca_link_generation", tuple(links.PCIE_GENERATIONS))
        return cls(
            node=copies.node,
            copies=copies,
            gdr=gdr,
            mpi_overhead=p.time("mpi_overhead"),
            cuda_buffer_check=p.time("cuda_buffer_check"),
            hca_latency=p.time("hca_latency"),
            max_inline=p.size("max_inline"),
            wire_latency=p.time("wire_latency"),
            port_rate=links.ib_rate(speed, p.count("ib_width"), p.size("mtu")),
            rails=p.count("rails"),
            striping_threshold=p.size("striping_threshold"),
            hca_link_rate=links.pcie_rate(hca_gen, p.count("hca_link_lanes")),
            eager_threshold=p.size("eager_threshold"),
            memcpy_bandwidth=p.bandwidth("memcpy_bandwidth"),
            gdr_read_bandwidth=p.bandwidth("gdr_read_bandwidth"),
            gdr_limit=p.size("gdr_limit"),
            pipeline_chunk=p.size("pipeline_chunk"),
        )

    # --- one RDMA write between two memories ("host" or "gpu") ---------------------------------
    def rails_used(self, size: int) -> int:
        return self.rails if size > self.striping_threshold else 1

    def rate(self, size: int, source: str) -> float:
        n = self.node
        rails = self.rails_used(size)
        rate = min(
            rails * self.port_rate,
            self.hca_link_rate * links.write_efficiency(n.max_payload),  # receiving HCA writes
            self.hca_link_rate * links.completion_efficiency(n.completion_size),  # sending HCA reads
        )
        if source == "gpu":
            rate = min(rate, self.gdr_read_bandwidth)
        return rate

    def rdma(self, size: int, source: str, destination: str) -> float:
        """One RDMA write until its last byte has landed in the destination memory."""
        n = self.node
        if source == "host" and size <= self.max_inline:
            read = 0.0  # the payload rides in the work request the doorbell write carries
        elif source == "gpu":
            read = n.gpu_read_round_trip()
        else:
            read = n.host_read_round_trip()
        write = n.gpu_write_latency() if destination == "gpu" else n.host_write_latency()
        wire = self.hca_latency + self.wire_latency + self.hca_latency
        doorbells = self.rails_used(size) * n.mmio_latency  # a striped message posts one request per rail
        return doorbells + read + wire + size / self.rate(size, source) + write

    def loopback(self, size: int) -> float:
        """The local HCA copies a host buffer into GPU memory (RDMA write to itself)."""
        n = self.node
        rate = min(
            self.hca_link_rate * links.completion_efficiency(n.completion_size),
            self.hca_link_rate * links.write_efficiency(n.max_payload),
        )
        return (
            n.mmio_latency
            + n.host_read_round_trip()
            + self.hca_latency
            + size / rate
            + n.gpu_write_latency()
            + n.host_write_latency()  # completion entry the receiving process polls
        )

    # --- protocols -------------------------------------------------------------------------------
    def eager(self, size: int, src: str, dst: str, gdr: bool) -> float:
        if src == "cpu":
            send, source = size / self.memcpy_bandwidth, "host"
        elif gdr:
            send, source = 0.0, "gpu"
        else:
            send, source = self.copies.call(self.copies.d2h_engine(size)), "host"
        if dst == "cpu":
            receive = size / self.memcpy_bandwidth
        elif gdr:
            receive = self.loopback(size)
        else:
            receive = self.copies.call(self.copies.h2d_engine(size))
        return send + self.rdma(size, source, "host") + receive

    def rendezvous(self, size: int, src: str, dst: str, gdr: bool) -> float:
        handshake = 2 * self.rdma(CONTROL_MESSAGE, "host", "host")
        # FIN follows the data on the same connection; the receiver sees it one host write later.
        handshake += self.node.host_write_latency()
        if "gpu" not in (src, dst) or gdr:
            source = "gpu" if src == "gpu" else "host"
            destination = "gpu" if dst == "gpu" else "host"
            return handshake + self.rdma(size, source, destination)
        stages = []
        left = size
        while left > 0:
            chunk = min(left, self.pipeline_chunk)
            left -= chunk
            row = []
            if src == "gpu":
                row.append(self.copies.call(self.copies.d2h_engine(chunk)))
            row.append(self.rdma(chunk, "host", "host"))
            if dst == "gpu":
                row.append(self.copies.call(self.copies.h2d_engine(chunk)))
            stages.append(row)
        return handshake + pipeline(stages)

    def one_way(self, pair: str, size: int) -> float:
        """One message. The thresholds are hard limits (the eager buffers' size, the GDR switch);
        below them the library, tuned per platform, uses whichever protocol is faster."""
        src, dst = pair.split("-")
        checks = self.cuda_buffer_check * (src, dst).count("gpu")
        gdr_choices = (False, True) if self.gdr and size <= self.gdr_limit else (False,)
        options = [self.rendezvous(size, src, dst, gdr) for gdr in gdr_choices]
        if size <= self.eager_threshold:
            options += [self.eager(size, src, dst, gdr) for gdr in gdr_choices]
        return self.mpi_overhead + checks + min(options)


class Mvapich2:
    """MVAPICH2 with CUDA support between two nodes over InfiniBand, with or without GDR."""

    tables = ("node", "cuda", "mvapich2")
    pairs = PAIRS

    def __init__(self, gdr: bool):
        self.gdr = gdr
        self.name = "mvapich2-gdr" if gdr else "mvapich2"
        self.description = (
            "MVAPICH2-GDR over InfiniBand: GPUDirect RDMA up to gdr_limit, staged through host above"
            if gdr
            else "MVAPICH2 with CUDA support over InfiniBand: GPU data staged through host memory"
        )

    def pingpong_latency_us(self, params: dict, pair: str, size: int) -> float:
        check(self.name, pair, size, self.pairs)
        return MpiIb.from_params(params, self.gdr).one_way(pair, size) * 1e6
