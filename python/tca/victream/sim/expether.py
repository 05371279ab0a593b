"""GPUs behind ExpEther in sim mode (seed 002 §6.3, Fig. 6.13): the attachment of the devices.

``local``: each GPU in an I/O slot of the host, on its own PCIe link (Table 6.1: 6377 MB/s
measured); the cost model as it is.

``expether``: the host and the GPUs are joined by ExpEther over ``ethernet.paths`` lines of
``ethernet.rate`` with link aggregation (§6.3: 2 x 40GbE, 80 Gb/s). Every GPU <-> host byte
crosses that aggregated connection, so the swap-ins of all GPUs share one direction of it and
the swap-outs the other (:class:`tca.victream.sim.link.SharedLink`). Each GPU is also limited
by its own path: the PCIe link between its ExpEther bridge and the GPU (the platform's
``pcie``), and no faster than in an I/O slot. Each transfer pays, on top of the local latency,
two bridge traversals, the switch and the cables.

The link's payload bandwidth is computed from the frame format: ``bridge.max_tlps`` TLPs of
:data:`PARAMS` ``tlp_payload`` bytes per frame, each TLP with its PCIe header and tca's 2-byte
length prefix, tca's 34-byte Ethernet + ExpEther header plus the platform's
``bridge.extra_header``, the FCS, preamble and inter-frame gap. Swap-ins travel as read
completions (12-byte header), swap-outs as memory writes (16-byte header).
"""

from __future__ import annotations

from dataclasses import dataclass

from tca import TcaError
from tca.units import parse_bandwidth, parse_bytes, parse_time
from tca.victream.sim.cost import TABLE_6_1
from tca.victream.sim.link import SharedLink

ATTACHMENTS = ("local", "expether")


@dataclass(frozen=True)
class Param:
    value: float
    unit: str
    source: str


# Victream-side parameters of the ExpEther attachment; the ExpEther ones come from the platform.
PARAMS = {
    "local_bandwidth": Param(
        TABLE_6_1["bus_bandwidth"],
        "B/s",
        "seed 002 Table 6.1: GPU I/O bandwidth 6377 MB/s measured in an I/O slot",
    ),
    "local_latency": Param(10e-6, "s", "assumption: CUDA copy set-up per transfer (as `tca victream bench`)"),
    "tlp_payload": Param(
        128,
        "B",
        "assumption: the max payload of ExpEther's link-aggregation experiment (seed 002 §4.2.2: 128 B, "
        "up to 10 TLPs per frame); §6.3 does not give it",
    ),
    "completion_header": Param(
        12, "B", "PCIe Base Spec: 3-DW completion header (swap-ins: DMA reads of host memory)"
    ),
    "write_header": Param(16, "B", "PCIe Base Spec: 4-DW memory write header, 64-bit address (swap-outs)"),
    "tlp_link_overhead": Param(
        8, "B", "PCIe Base Spec: sequence number 2 B + LCRC 4 B + STP/END 2 B per TLP"
    ),
    "tlp_prefix": Param(
        2, "B", "tca's ExpEther frame: a 2-byte length before each TLP (crates/expether/proto)"
    ),
    "frame_header": Param(
        34, "B", "tca's ExpEther frame: 18-byte tagged Ethernet header + 16-byte ExpEther header"
    ),
    "frame_wire_extra": Param(24, "B", "IEEE 802.3: preamble + SFD 8 B, FCS 4 B, inter-frame gap 12 B"),
    "switches": Param(
        1, "", "assumption: one Ethernet switch between the host and the 4 GPUs (Fig. 6.13 is not described)"
    ),
}

_ENCODING = {"gen2": 8 / 10, "gen3": 128 / 130}  # PCIe Base Spec: line codes of Gen2 and Gen3


@dataclass(frozen=True)
class ExpEtherAttachment:
    """What the GPUs behind ExpEther see (bandwidths [B/s], latency [s])."""

    platform: str
    link_in: float  # aggregated payload bandwidth, host -> GPUs (read completions)
    link_out: float  # aggregated payload bandwidth, GPUs -> host (memory writes)
    gpu_in: float  # one GPU's own path, host -> GPU
    gpu_out: float  # one GPU's own path, GPU -> host
    latency: float  # per transfer, local latency included
    tlps_per_frame: int
    derivation: tuple[tuple[str, str, str], ...]  # (name, value, source) for the docs and --verbose

    def apply(self, ctx) -> None:
        """Puts the devices of the sim-mode context ``ctx`` behind this attachment."""
        if ctx.sim is None:
            raise TcaError("the ExpEther attachment is a sim-mode model (mode='sim')")
        n = len(ctx.devices)
        ctx.cost.bus_bandwidth, ctx.cost.bus_bandwidth_out = [self.gpu_in] * n, [self.gpu_out] * n
        ctx.cost.bus_latency = [self.latency] * n
        ctx.sim.links = {"in": SharedLink(self.link_in), "out": SharedLink(self.link_out)}


def load(platform: str = "expether-40gbe") -> ExpEtherAttachment:
    """The attachment of GPUs behind the ExpEther ``platform`` (a name or a .toml path)."""
    from tca import _native
    from tca.peach import platforms

    try:
        p = _native.expether_platform(str(platforms.resolve(platform, "expether")))
    except ValueError as e:
        raise TcaError(str(e)) from None
    params = {k: (v, src) for k, v, src, _cal in p["parameters"]}
    return derive(p["name"], params)


def derive(name: str, params: dict[str, tuple[str, str]]) -> ExpEtherAttachment:
    """Computes the attachment from the platform's ``key -> (value, source)``."""

    def get(key):
        if key not in params:
            raise TcaError(f"ExpEther platform {name}: {key} is missing")
        return params[key][0]

    gen = get("pcie.generation")
    if gen not in _ENCODING:
        raise TcaError(f"ExpEther platform {name}: pcie.generation {gen!r} is not gen2 or gen3")
    gts = float(get("pcie.rate").split()[0])  # "5 GT/s"
    lanes = int(get("pcie.lanes"))
    pcie_raw = gts * 1e9 * lanes * _ENCODING[gen] / 8  # B/s of TLP bytes
    eth_rate = parse_bandwidth(get("ethernet.rate"), "ethernet.rate")
    paths = int(get("ethernet.paths"))
    max_tlps = int(get("bridge.max_tlps"))
    extra = parse_bytes(get("bridge.extra_header"), "bridge.extra_header", allow_zero=True)
    bridge = parse_time(get("bridge.latency"), "bridge.latency")
    prop = parse_time(get("ethernet.propagation"), "ethernet.propagation")
    switch = parse_time(get("ethernet.switch_latency"), "ethernet.switch_latency")

    v = {k: q.value for k, q in PARAMS.items()}
    payload = int(v["tlp_payload"])
    max_frame = 1518 - extra  # tca's bridges fill a tagged 1518-byte frame less the extra header

    def frame(header: int) -> tuple[int, float]:
        tlp = v["tlp_prefix"] + header + payload
        n = max(1, min(max_tlps, (max_frame - v["frame_header"]) // tlp))
        wire = v["frame_header"] + extra + n * tlp + v["frame_wire_extra"]
        return n, n * payload / wire

    n_in, eff_in = frame(v["completion_header"])
    n_out, eff_out = frame(v["write_header"])
    link_in = paths * eth_rate * eff_in
    link_out = paths * eth_rate * eff_out
    pcie_in = pcie_raw * payload / (payload + v["completion_header"] + v["tlp_link_overhead"])
    pcie_out = pcie_raw * payload / (payload + v["write_header"] + v["tlp_link_overhead"])
    local = v["local_bandwidth"]
    gpu_in, gpu_out = min(pcie_in, local, link_in), min(pcie_out, local, link_out)
    frame_time = (max_frame + v["frame_wire_extra"]) / eth_rate  # store and forward of one frame
    hops = 1 + int(v["switches"])
    latency = v["local_latency"] + 2 * bridge + hops * prop + int(v["switches"]) * (switch + frame_time)
    src = {k: s for k, (_v, s) in params.items()}
    derivation = (
        (
            "ExpEther payload per frame",
            f"{n_in} completions / {n_out} writes of {payload} B",
            PARAMS["tlp_payload"].source,
        ),
        ("Ethernet efficiency", f"{eff_in:.4f} in / {eff_out:.4f} out", "computed: frame format (above)"),
        (
            "aggregated link",
            f"{link_in / 1e9:.3f} / {link_out / 1e9:.3f} GB/s",
            f"{paths} x {get('ethernet.rate')}: " + src["ethernet.rate"],
        ),
        (
            "GPU's PCIe behind its bridge",
            f"{pcie_in / 1e9:.3f} / {pcie_out / 1e9:.3f} GB/s",
            f"{gen} x{lanes}: " + src["pcie.lanes"],
        ),
        ("GPU in an I/O slot", f"{local / 1e9:.3f} GB/s", PARAMS["local_bandwidth"].source),
        (
            "latency per transfer",
            f"{latency * 1e6:.2f} us",
            "local latency + 2 bridge traversals + switch + cables",
        ),
    )
    return ExpEtherAttachment(name, link_in, link_out, gpu_in, gpu_out, latency, n_in, derivation)
