"""Data rates of PCIe and InfiniBand links, from their specifications.

These are properties of the standards, not of a machine: a platform names the generation or
speed and the lane count, and the rate follows. Rates are bytes per second in one direction.
"""

from __future__ import annotations

from tca import TcaError

# PCIe Base Specification: transfer rate per lane and line-code efficiency.
PCIE_GENERATIONS = {
    "gen1": (2.5e9, 8 / 10),  # 2.5 GT/s, 8b/10b
    "gen2": (5.0e9, 8 / 10),  # 5 GT/s, 8b/10b (seed 000 §3.1.1: 4 Gbit/s effective per lane)
    "gen3": (8.0e9, 128 / 130),  # 8 GT/s, 128b/130b (seed 000 §3.1.1: 7.88 Gbit/s)
}
# Bytes a TLP adds on the wire besides its header: sequence number 2 B, LCRC 4 B, start and end
# framing 1 B + 1 B (seed 000 §4.1.1); Gen3's 4-byte STP token plus LCRC is the same 8 B.
TLP_FRAMING = 8
WRITE_HEADER = 16  # memory write with a 64-bit address: 4 DW
COMPLETION_HEADER = 12  # completion with data: 3 DW

# InfiniBand Architecture Specification vol. 2: signalling rate per lane and line code.
IB_SPEEDS = {
    "SDR": (2.5e9, 8 / 10),
    "DDR": (5.0e9, 8 / 10),
    "QDR": (10.0e9, 8 / 10),
    "FDR10": (10.3125e9, 64 / 66),
    "FDR": (14.0625e9, 64 / 66),
    "EDR": (25.78125e9, 64 / 66),
}
# Bytes an InfiniBand packet adds to its payload: LRH 8, BTH 12, ICRC 4, VCRC 2 (vol. 1 ch. 5-7).
IB_PACKET_OVERHEAD = 26


def pcie_rate(generation: str, lanes: int) -> float:
    """Data rate of a PCIe link after line coding, bytes/s per direction."""
    if generation not in PCIE_GENERATIONS:
        raise TcaError(f"unknown PCIe generation '{generation}' (use {', '.join(PCIE_GENERATIONS)})")
    rate, code = PCIE_GENERATIONS[generation]
    return rate * code * lanes / 8


def write_efficiency(max_payload: int) -> float:
    """Fraction of a link's rate that carries data in a stream of posted writes."""
    return max_payload / (max_payload + WRITE_HEADER + TLP_FRAMING)


def completion_efficiency(completion_size: int) -> float:
    """Fraction of a link's rate that carries data in a stream of read completions."""
    return completion_size / (completion_size + COMPLETION_HEADER + TLP_FRAMING)


def ib_rate(speed: str, width: int, mtu: int) -> float:
    """Payload rate of one InfiniBand port with packets of ``mtu`` bytes, bytes/s per direction."""
    if speed not in IB_SPEEDS:
        raise TcaError(f"unknown InfiniBand speed '{speed}' (use {', '.join(IB_SPEEDS)})")
    rate, code = IB_SPEEDS[speed]
    return rate * code * width / 8 * mtu / (mtu + IB_PACKET_OVERHEAD)
