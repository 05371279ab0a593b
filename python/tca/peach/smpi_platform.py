"""What SimGrid SMPI is given so that MPI on a simulated platform costs what MVAPICH2(-GDR) costs
on the real one (``docs/smpi.md``)::

    setup = prepare("ha-pacs-tca", ranks=4, workdir=Path("run"))
    subprocess.run(smpimain_command(setup, ["./prog", "arg"]), env=os.environ | setup.env)

The platform TOML is the one source of the numbers: ``[baselines.node]``, ``[baselines.cuda]``
and ``[baselines.mvapich2]`` (the MVAPICH2 paths, calibrated to seed 001) and ``[baselines.smpi]``
(the CPU core a rank runs on). From them this module writes

* the SimGrid platform: one host per node (``node0`` ...), each with its own InfiniBand link to a
  non-blocking switch (a SimGrid cluster without backbone); the link carries the node's rails and
  the latency of one host adapter plus half the wire;
* a hostfile, one rank per node;
* the ``--cfg`` options: SMPI's network model with piecewise latency and bandwidth factors and
  piecewise host overheads (``smpi/os``, ``smpi/ois``, ``smpi/or``) that make a host-memory
  message cost what the MVAPICH2 path costs: eager (copy into the receiver's buffer, one RDMA
  write, copy out) up to ``eager_threshold``, rendezvous (RTS/CTS, one zero-copy RDMA write)
  above; the MVAPICH2 collectives; no compute time unless asked for;
* ``tca-smpi-mpi.conf``, the parameters of the GPU-buffer costs that ``crates/tca/smpi/c/mpi_gpu.c``
  adds to calls on device memory (``TCA_SMPI_MPI_CONFIG`` names it).

Host-memory costs are SMPI's; GPU-buffer costs are the wrapper's, charged on top.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from tca import TcaError, _native
from tca.peach import platforms
from tca.peach.baselines import links
from tca.peach.baselines.mvapich2 import CONTROL_MESSAGE, MpiIb
from tca.peach.baselines.params import table

# SMPI sends every message with a 16-byte envelope (tag, source, communicator): the network
# model sees size + 16 bytes, so its size-dependent factors switch 16 bytes early.
ENVELOPE = 16

COMPUTE_MODES = ("none", "declared", "measured")
NEVER = 1e9  # seconds: a declared compute time below this is dropped in compute="none"
CONFIG_NAME = "tca-smpi-mpi.conf"
CONFIG_ENV = "TCA_SMPI_MPI_CONFIG"
# The host of the TCA model's actor (crates/tca/smpi): one the platform has besides the nodes.
MODEL_HOST_ENV = "TCA_SMPI_MODEL_HOST"


@dataclass(frozen=True)
class SmpiSetup:
    """Files, options and environment of one simulation (:func:`smpimain_command`)."""

    platform_xml: Path
    hostfile: Path
    cfg: list[str]
    env: dict[str, str]


def host_name(node: int) -> str:
    """The SimGrid host of a node (what ``MPI_Get_processor_name`` returns)."""
    return f"node{node}"


@dataclass(frozen=True)
class Segment:
    """Host-memory message costs for sizes above ``start`` (up to the next segment)."""

    start: int  # bytes of MPI payload
    latency: float  # wire latency of the route plus the adapter's fixed costs, s
    rate: float  # B/s
    send_overhead: float  # CPU time of the sender before the message leaves (eager only), s
    recv_overhead: float  # CPU time of the receiver after it arrived (eager only), s
    copy_time: float  # s per byte copied on each side (eager only)


class HostPath:
    """MVAPICH2 between host buffers, cut into segments where the protocol changes."""

    def __init__(self, m: MpiIb):
        self.m = m
        self.route_latency = 2 * m.hca_latency + m.wire_latency  # adapter, wire+switch, adapter
        if self.route_latency <= 0:
            raise TcaError(
                "baselines.mvapich2: hca_latency and wire_latency are both zero; SMPI needs a latency"
            )
        self.link_rate = max(m.rate(m.striping_threshold, "host"), m.rate(m.striping_threshold + 1, "host"))

    def rdma(self, size: int) -> float:
        """One RDMA write between host buffers, doorbell to landing (as the MVAPICH2 model)."""
        m, n = self.m, self.m.node
        read = 0.0 if size <= m.max_inline else n.host_read_round_trip()
        return (
            m.rails_used(size) * n.mmio_latency
            + read
            + self.route_latency
            + size / m.rate(size, "host")
            + n.host_write_latency()
        )

    def handshake(self) -> float:
        """RTS and CTS before a rendezvous write, and the FIN seen one host write after the data."""
        return 2 * self.rdma(CONTROL_MESSAGE) + self.m.node.host_write_latency()

    def segment(self, start: int) -> Segment:
        m, n = self.m, self.m.node
        size = start + 1  # every size of the segment behaves alike
        doorbells = m.rails_used(size) * n.mmio_latency
        read = 0.0 if size <= m.max_inline else n.host_read_round_trip()
        fixed = self.route_latency + read + n.host_write_latency()
        rate = m.rate(size, "host")
        if size <= m.eager_threshold:
            half = m.mpi_overhead / 2
            return Segment(start, fixed, rate, half + doorbells, half, 1 / m.memcpy_bandwidth)
        # Rendezvous: SMPI charges no host overhead to a blocking send it does not buffer, so
        # the whole software path rides on the latency.
        return Segment(start, fixed + m.mpi_overhead + doorbells + self.handshake(), rate, 0.0, 0.0, 0.0)

    def segments(self) -> list[Segment]:
        m = self.m
        starts = sorted({0, m.max_inline, m.striping_threshold, m.eager_threshold})
        return [self.segment(s) for s in starts]


def _num(x: float) -> str:
    return repr(float(x))


def smpi_cfg(path: HostPath, compute: str, core_speed: float) -> list[str]:
    """The ``--cfg`` options (without the leading ``--cfg=``)."""
    segs = path.segments()
    # Factor sets: an entry "B:v" holds for sizes above B; latency and bandwidth see the envelope.
    lat = ";".join(
        f"{s.start + ENVELOPE if s.start else 0}:{_num(s.latency / path.route_latency)}" for s in segs
    )
    bw = ";".join(f"{s.start + ENVELOPE if s.start else 0}:{_num(s.rate / path.link_rate)}" for s in segs)
    send = ";".join(f"{s.start}:{_num(s.send_overhead)}:{_num(s.copy_time)}" for s in segs)
    recv = ";".join(f"{s.start}:{_num(s.recv_overhead)}:{_num(s.copy_time)}" for s in segs)
    speed = f"{_num(core_speed)}f"
    cfg = [
        "network/model:SMPI",
        f"smpi/lat-factor:{lat}",
        f"smpi/bw-factor:{bw}",
        # InfiniBand's RDMA writes send no TCP-style acknowledgements back.
        "network/crosstraffic:0",
        f"smpi/os:{send}",
        f"smpi/ois:{send}",
        f"smpi/or:{recv}",
        # Sends up to eager_threshold return at once (SMPI buffers them), larger ones wait for
        # the receiver: SMPI detaches sizes strictly below this value.
        f"smpi/send-is-detached-thresh:{path.m.eager_threshold + 1}",
        "smpi/coll-selector:mvapich2",
        # A poll that finds nothing (MPI_Test, MPI_Iprobe) costs MVAPICH2's receive path, half
        # of mpi_overhead, not SMPI's default 100 us, which also grows with every such call.
        f"smpi/test:{_num(path.m.mpi_overhead / 2)}",
        f"smpi/iprobe:{_num(path.m.mpi_overhead / 2)}",
        "smpi/grow-injected-times:no",
        "smpi/privatization:1",
        f"smpi/host-speed:{speed}",
    ]
    if compute == "none":
        # Computation between MPI calls is free, and so are smpi_execute/SMPI_SAMPLE_DELAY: SMPI
        # drops durations below the threshold (-1, documented as infinity, counts them all).
        cfg += ["smpi/simulate-computation:no", f"smpi/cpu-threshold:{NEVER:g}"]
    elif compute == "declared":
        cfg += ["smpi/simulate-computation:no", "smpi/cpu-threshold:0"]
    else:
        cfg += ["smpi/simulate-computation:yes"]
    return cfg


def platform_xml(name: str, nodes: int, path: HostPath, core_speed: float) -> str:
    link_latency = path.route_latency / 2
    m = path.m
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- {name}: written by tca.peach.smpi_platform from the platform TOML; do not edit.
     One host per node, and one more (node{nodes}) that runs no rank: the TCA model's actor
     lives there (MVAPICH2's collectives group ranks by the actors of a host).
     Each node's InfiniBand ({m.rails} rail(s)) goes to a non-blocking switch.
     Link bandwidth: min(rails x port rate, host adapter PCIe rate) = {m.rails} x {m.port_rate:.6g} B/s
     capped at {path.link_rate:.6g} B/s; link latency: hca_latency + wire_latency / 2.
     Message-size effects (one rail below striping_threshold, inline sends, rendezvous) are in
     the smpi/lat-factor and smpi/bw-factor options. -->
<platform version="4.1">
  <cluster id="{name}" prefix="node" suffix="" radical="0-{nodes}" speed="{_num(core_speed)}f"
           bw="{_num(path.link_rate)}Bps" lat="{_num(link_latency)}s" sharing_policy="SPLITDUPLEX"/>
</platform>
"""


def gpu_config(path: HostPath, gdr: bool) -> str:
    """Parameters of the GPU-buffer costs (``mpi_gpu.c``), SI units, one ``key = value`` a line."""
    m, n, c = path.m, path.m.node, path.m.copies
    loopback = m.hca_link_rate * min(
        links.completion_efficiency(n.completion_size), links.write_efficiency(n.max_payload)
    )
    d2h_fixed = c.call(c.d2h_engine(0))
    h2d_fixed = c.call(c.h2d_engine(0))
    rows = [
        ("gdr", 1 if gdr else 0, "GPUDirect RDMA on (1) or off (0)"),
        ("cuda_buffer_check", m.cuda_buffer_check, "baselines.mvapich2.cuda_buffer_check (calibrated)"),
        ("gdr_limit", m.gdr_limit, "baselines.mvapich2.gdr_limit"),
        ("eager_threshold", m.eager_threshold, "baselines.mvapich2.eager_threshold"),
        ("max_inline", m.max_inline, "baselines.mvapich2.max_inline"),
        ("striping_threshold", m.striping_threshold, "baselines.mvapich2.striping_threshold"),
        ("rails", m.rails, "baselines.mvapich2.rails"),
        ("control_message", CONTROL_MESSAGE, "bytes of an RTS or CTS"),
        ("pipeline_chunk", m.pipeline_chunk, "baselines.mvapich2.pipeline_chunk"),
        ("route_latency", path.route_latency, "2 x hca_latency + wire_latency"),
        ("hca_latency", m.hca_latency, "baselines.mvapich2.hca_latency"),
        ("mmio_latency", n.mmio_latency, "baselines.node.mmio_latency"),
        ("host_read_latency", n.host_read_round_trip(), "a device reads host memory (round trip)"),
        ("host_write_latency", n.host_write_latency(), "a device's write lands in host memory"),
        ("gpu_read_latency", n.gpu_read_round_trip(), "the adapter reads GPU memory (round trip)"),
        ("gpu_write_latency", n.gpu_write_latency(), "the adapter's write lands in GPU memory"),
        ("rate_one_rail", m.rate(m.striping_threshold, "host"), "B/s up to striping_threshold"),
        ("rate_striped", m.rate(m.striping_threshold + 1, "host"), "B/s above striping_threshold"),
        ("gdr_read_bandwidth", m.gdr_read_bandwidth, "baselines.mvapich2.gdr_read_bandwidth"),
        ("loopback_bandwidth", loopback, "the adapter copying a host buffer into the GPU"),
        ("memcpy_bandwidth", m.memcpy_bandwidth, "baselines.mvapich2.memcpy_bandwidth"),
        ("d2h_latency", d2h_fixed, "one staging cudaMemcpyAsync to host, fixed part (calibrated)"),
        ("d2h_bandwidth", c.d2h_bandwidth, "B/s of that copy"),
        ("h2d_latency", h2d_fixed, "one staging copy to the GPU, fixed part (calibrated)"),
        ("h2d_bandwidth", c.h2d_bandwidth, "B/s of that copy"),
    ]
    lines = ["# MVAPICH2 GPU-buffer costs for crates/tca/smpi/c/mpi_gpu.c (seconds, bytes, B/s)."]
    lines += [
        f"{key} = {_num(value) if isinstance(value, float) else value}  # {what}" for key, value, what in rows
    ]
    return "\n".join(lines) + "\n"


def core_speed(baselines: dict) -> float:
    """Flop/s of the core one rank runs on: core_clock x flops_per_cycle."""
    p = table(baselines, "smpi")
    try:  # checked by the platform loader already; parsed with the one unit parser
        clock = _native.parse_quantity(p.entry("core_clock").value, "frequency", "platform")
    except ValueError as e:
        raise TcaError(f"baselines.smpi.core_clock: {e}") from None
    return clock * p.count("flops_per_cycle")


def prepare(
    platform: str | Path, ranks: int, workdir: Path, *, compute: str = "none", gdr: bool = True
) -> SmpiSetup:
    """Writes the SimGrid platform, hostfile and GPU-cost configuration into ``workdir``."""
    if compute not in COMPUTE_MODES:
        raise TcaError(f"compute must be one of {', '.join(COMPUTE_MODES)}, not '{compute}'")
    loaded = platforms.load(str(platform))
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise TcaError(f"ranks must be a positive whole number, not {ranks!r}")
    if ranks > loaded.nodes:
        nodes = "1 node" if loaded.nodes == 1 else f"{loaded.nodes} nodes"
        raise TcaError(f"platform {platform} has {nodes}; {ranks} ranks need one node each")
    baselines = loaded.baselines()
    for needed in ("node", "cuda", "mvapich2", "smpi"):
        if needed not in baselines:
            raise TcaError(
                f"{loaded.name}: no [baselines.{needed}] table, needed to run MPI on SMPI (docs/smpi.md)"
            )
    path = HostPath(MpiIb.from_params(baselines, gdr))
    speed = core_speed(baselines)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    xml = workdir / f"{loaded.name}.xml"
    xml.write_text(platform_xml(loaded.name, loaded.nodes, path, speed))
    hostfile = workdir / "hostfile"
    hostfile.write_text("".join(f"{host_name(i)}\n" for i in range(ranks)))
    conf = workdir / CONFIG_NAME
    conf.write_text(gpu_config(path, gdr))
    env = {
        CONFIG_ENV: str(conf.resolve()),
        MODEL_HOST_ENV: host_name(loaded.nodes),
        # As smpirun sets them: SMPI's copies of the program for privatization are in its
        # tmpdir (the work directory, smpimain_command), and programs may read the job's size
        # before MPI_Init.
        "SMPI_GLOBAL_SIZE": str(ranks),
        "LD_LIBRARY_PATH": ":".join(
            filter(None, [str(workdir.resolve()), os.environ.get("LD_LIBRARY_PATH")])
        ),
    }
    return SmpiSetup(xml, hostfile, smpi_cfg(path, compute, speed), env)


def smpimain() -> str:
    """SimGrid's SMPI launcher, the binary that the ``smpirun`` script runs."""
    script = shutil.which("smpirun")
    if script is None:
        raise TcaError("--fabric sim for C programs needs SimGrid's smpirun: run `make smpi`")
    found = re.search(r'"(/[^"\s]*/smpimain)"', Path(script).read_text(errors="replace"))
    if found is None or not os.access(found.group(1), os.X_OK):
        raise TcaError(f"{script} names no smpimain that can be run (SimGrid's SMPI is not installed whole)")
    return found.group(1)


def smpimain_command(setup: SmpiSetup, program: list[str], quiet: bool = True) -> list[str]:
    """The command line of one simulation: SimGrid's ``smpimain`` with what ``smpirun`` would
    give it; run it with ``setup.env`` added to the environment. ``quiet`` drops SimGrid's
    line per collective and communicator on which algorithm it picked (22 lines on stderr in
    every run of an MPI program).

    Not through ``smpirun``: that script hands the program's arguments on through an unquoted
    shell expansion (split at spaces, empty ones dropped, patterns expanded) and keeps those
    that look like ``--cfg=`` or ``--log=`` for SimGrid. Here they follow ``--``, after which
    SimGrid takes none as its own; it drops every ``--`` though, so a program's own ``--``
    cannot reach it (:func:`tca.peach.launch.run_smpi` refuses it).
    """
    if not program:
        raise TcaError("no program to run")
    ranks = len(setup.hostfile.read_text().split())
    return [
        smpimain(),
        program[0],
        f"--cfg=smpi/np:{ranks}",
        f"--cfg=smpi/hostfile:{setup.hostfile}",
        "--cfg=surf/precision:1e-9",
        # SMPI copies the program there, one copy per rank, and puts it first on the rank's
        # library path: the run's own directory, not a shared one.
        f"--cfg=smpi/tmpdir:{setup.hostfile.parent}",
        *(f"--cfg={c}" for c in setup.cfg),
        "--log=xbt_cfg.thresh:warning",
        *(["--log=smpi_coll.thresh:warning"] if quiet else []),
        str(setup.platform_xml),
        "--",
        *program[1:],
    ]
