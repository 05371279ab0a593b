"""``tca bench collective``: the TCA collective library (tcaColl*) against MPI's collectives, in
the same run of one C program (examples/c/hapacs/coll_bench.c) on the same buffers.

- ``--fabric sim``: the program built with ``tca cc`` runs on the simulated platform; MPI is
  SimGrid SMPI with MVAPICH2's collective algorithms on the same virtual clock as the PEACH2
  model (docs/sim-c.md, docs/smpi.md); one run per node count. With the simulator's statistics
  the run also reports the TLPs that found a PEACH2 link busy (stalled), per link.
- ``--fabric shm``: the program built with each installed MPI (Open MPI, MPICH) runs under its
  mpirun on this host's shm fabric; each run times TCA and that MPI (measured time).

Rows (DESIGN.md schema): per node count N, "TCA OP (N nodes)", "MPI (IMPL) OP (N nodes)" and
their "max" (over ranks) series [us] against the size, and the ratio "TCA/MPI (IMPL) OP (N
nodes)" [x]; with several node counts, the ratios against the node count at a few sizes
(seed 001's two claims, :mod:`tca.peach.bench.collective_report`).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tca import TcaError
from tca.common.report import Row
from tca.peach import cprog

BENCHMARK = "collective"
OPS = ("allreduce", "allgather", "bcast", "reduce", "barrier")
MEMORIES = ("host", "gpu")
SOURCE = cprog.ROOT / "examples/c/hapacs/coll_bench.c"
HEADERS = [
    cprog.ROOT / "examples/c/hapacs/hapacs.h",
    cprog.ROOT / "crates/tca/capi/include/tca-api.h",
    cprog.ROOT / "crates/tca/cuda/include/cuda_runtime.h",
]
PROGRAM = "coll_bench"
DEFAULT_NODES = [2, 4, 8, 16]
DEFAULT_SIZES = [2**k for k in range(3, 17)]  # 8 B .. 64 KiB
ITERATIONS = 50  # seed 001, slide "Allreduceの性能": the mean of 50 runs
WARMUP = 5
MAX_NODES = 16  # one PEACH2 sub-cluster (seed 000 §2.2)
SHM_FABRICS = {"shm-openmpi": "Open MPI", "shm-mpich": "MPICH"}
TIMEOUT_S = 3600


@dataclass
class Config:
    """One ``tca bench collective`` invocation."""

    op: str
    nodes: list[int]
    sizes: list[int]
    fabric: str = "sim"  # sim | shm
    platform: str | None = None
    memory: str = "host"
    iterations: int = ITERATIONS
    warmup: int = WARMUP
    trace: str | None = None
    mpi_only: bool = False  # time the MPI collective alone


@dataclass
class Stalls:
    """The simulator's per-link counters of one run (one node count): every TCA transfer of
    the run, all sizes, warm-up and verification calls included (MPI does not use PEACH2)."""

    nodes: int
    tlps: int
    stalled_tlps: int
    links: list[dict]  # {"link", "stalled_tlps", "busy_us", "tlps"}, as the simulator writes them


@dataclass
class Result:
    rows: list[Row]
    stalls: list[Stalls] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def check(cfg: Config, platform_nodes: int | None) -> None:
    """One-line errors for every bad combination, before anything is built or run."""
    if cfg.op not in OPS:
        raise TcaError(f"unknown --op '{cfg.op}' (expected one of: {', '.join(OPS)})")
    if cfg.memory not in MEMORIES:
        raise TcaError(f"unknown --memory '{cfg.memory}' (expected host or gpu)")
    if cfg.fabric not in ("sim", "shm"):
        raise TcaError(f"unknown --fabric '{cfg.fabric}' (expected sim or shm)")
    for n in cfg.nodes:
        if n < 2:
            raise TcaError(f"--nodes {n}: a collective needs 2 or more nodes")
        if n > (platform_nodes or MAX_NODES):
            where = f"platform {cfg.platform} has {platform_nodes} nodes" if platform_nodes else "at most 16"
            raise TcaError(f"--nodes {n}: too many ({where})")
    if len(set(cfg.nodes)) != len(cfg.nodes):
        raise TcaError("--nodes: a node count is given twice")
    if cfg.op in ("allreduce", "reduce"):
        for s in cfg.sizes:
            if s % 8:
                raise TcaError(f"--sizes {s}: {cfg.op} sizes must be multiples of 8 B (doubles)")
    if not 1 <= cfg.iterations <= 1_000_000:
        raise TcaError(f"--iterations {cfg.iterations}: expected 1 to 1000000")
    if not 0 <= cfg.warmup <= 1_000_000:
        raise TcaError(f"--warmup {cfg.warmup}: expected 0 to 1000000")
    if len(cfg.sizes) > 64:
        raise TcaError(f"--sizes: {len(cfg.sizes)} sizes, at most 64")
    if cfg.trace and cfg.fabric != "sim":
        raise TcaError("--trace records the simulated PEACH2 hardware: it needs --fabric sim")
    if cfg.trace and len(cfg.nodes) != 1:
        raise TcaError("--trace records one run: give one node count with --nodes")


def fabrics(fabric: str) -> list[str]:
    """The cprog fabrics of ``--fabric``: the simulator, or each MPI installed on this host."""
    if fabric == "sim":
        return ["sim"]
    found = [f for f in SHM_FABRICS if shutil.which(f"mpicc.{cprog.mpi_of(f)}")]
    if not found:
        raise TcaError("--fabric shm needs mpicc.openmpi or mpicc.mpich: run `make mpi`")
    return found


def build(fabric: str) -> Path:
    return cprog.build(PROGRAM, [SOURCE], fabric, headers=HEADERS)


def program_args(cfg: Config) -> list[str]:
    args = ["--op", cfg.op, "--iterations", str(cfg.iterations), "--warmup", str(cfg.warmup)]
    if cfg.op != "barrier":
        args += ["--sizes", ",".join(str(s) for s in cfg.sizes)]
    args += ["--gpu"] if cfg.memory == "gpu" else []
    return args + (["--mpi-only"] if cfg.mpi_only else [])


def read_stats(path: Path, nodes: int) -> Stalls:
    try:
        data = json.loads(path.read_text())
        return Stalls(nodes, int(data["tlps"]), int(data["stalled_tlps"]), list(data["links"]))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise TcaError(f"the simulator's statistics {path} could not be read: {e}") from None


def run(cfg: Config, progress: Callable[[int, int], None] | None = None) -> Result:
    """Builds the program, runs it on every node count (and with every MPI on shm), and returns
    the rows, the per-link stall counters (simulator) and notes for the report."""
    platform_name = "this host (shm)"
    platform_nodes = None
    if cfg.fabric == "sim":
        from tca.peach import platforms

        if cfg.platform is None:
            raise TcaError("--platform is required with --fabric sim")
        p = platforms.load(cfg.platform)
        platform_name, platform_nodes = p.name, p.nodes
    elif cfg.platform is not None:
        raise TcaError("--platform applies to --fabric sim only (shm runs on this host)")
    check(cfg, platform_nodes)
    targets = fabrics(cfg.fabric)
    exes = {f: build(f) for f in targets}
    kind = "predicted" if cfg.fabric == "sim" else "measured"
    collect = cfg.fabric == "sim" and not cfg.mpi_only
    result = Result([])
    if cfg.fabric == "shm":
        first = SHM_FABRICS[targets[0]]
        result.notes.append(
            f"TCA rows: from the run built with {first}, the other run's as 'TCA OP, IMPL run'; each "
            "TCA/MPI ratio uses the TCA time of the same run as its MPI time"
        )
    total, done = len(cfg.nodes) * len(targets), 0
    with tempfile.TemporaryDirectory(prefix="tca-coll-") as work:
        for n in cfg.nodes:
            for i, fabric in enumerate(targets):
                sim_args: list[str] = []
                stats_path = Path(work) / f"stats-{n}.json"
                if collect:
                    sim_args += ["--stats-json", str(stats_path)]
                if cfg.trace:
                    sim_args += ["--trace", str(Path(cfg.trace).resolve())]
                out = cprog.run(exes[fabric], n, fabric, program_args(cfg), cfg.platform, sim_args, TIMEOUT_S)
                if cfg.trace:
                    # What the simulation says of the trace (spans it dropped past its cap).
                    for line in out.stderr.splitlines():
                        if line.startswith("tca: the trace "):
                            print(line, file=sys.stderr)
                result.rows += rows_of(out.rows, n, platform_name, kind, keep_tca=i == 0)
                if collect:
                    result.stalls.append(read_stats(stats_path, n))
                done += 1
                if progress:
                    progress(done, total)
    return result


def rows_of(found: list[dict], nodes: int, platform: str, kind: str, keep_tca: bool) -> list[Row]:
    """The rows of one run: means and maxima over ranks, and TCA/MPI at each size."""
    if not found:
        raise TcaError(f"the {PROGRAM} run on {nodes} nodes printed no rows")
    tca = {r["x"]: r for r in found if r["series"].startswith("TCA")}
    mpi = [r for r in found if r["series"].startswith("MPI")]
    out: list[Row] = []
    # The barrier's x is already the node count.
    suffix = "" if found[0]["x_unit"] == "nodes" else f" ({nodes} nodes)"
    impl = mpi[0]["series"].split("(", 1)[1].split(")", 1)[0] if mpi and "(" in mpi[0]["series"] else "MPI"
    for r in found:
        if r["series"].startswith("TCA") and not keep_tca:
            # A second build's run (shm): its TCA times beside the first run's, means only.
            out.append(
                Row(
                    BENCHMARK,
                    platform,
                    f"{r['series']}, {impl} run{suffix}",
                    r["x"],
                    r["x_unit"],
                    r["value"],
                    "us",
                    kind=kind,
                )
            )
            continue
        for series, value in ((r["series"], r["value"]), (f"{r['series']} max", r["max"])):
            out.append(Row(BENCHMARK, platform, series + suffix, r["x"], r["x_unit"], value, "us", kind=kind))
    for r in mpi:
        t = tca.get(r["x"])
        if t is not None and r["value"] > 0:
            impl_op = r["series"].removeprefix("MPI ")
            out.append(
                Row(
                    BENCHMARK,
                    platform,
                    f"TCA/MPI {impl_op}{suffix}",
                    r["x"],
                    r["x_unit"],
                    t["value"] / r["value"],
                    "x",
                    kind=kind,
                )
            )
    return out
