"""``tca bench himeno``: the Himeno benchmark with its arrays in GPU memory, halo exchange by TCA
(``reflect``: one DMA chain, block-stride faces, barrier after the DMA) and by MPI on GPU buffers,
in one run per size and node count (seed 001 "XcalableACCの性能評価一例", "3次元ステンシル計算の例";
seed 000 §3.7). The program is examples/c/hapacs/himeno.c; docs/apps.md describes it.

On the simulator the sweep's GPU kernels are charged as declared compute time: a kernel costs
one CUDA call (``baselines.cuda.call_overhead``) plus its device-memory bytes at
``baselines.node.gpu_memory_bandwidth``. On the shm fabric every time is measured on this host.
"""

from __future__ import annotations

from collections.abc import Callable

from tca import TcaError
from tca.common.report import Row
from tca.peach import cprog, platforms
from tca.peach.baselines.params import table

BENCHMARK = "himeno"
HAPACS = cprog.ROOT / "examples" / "c" / "hapacs"
SOURCES = [HAPACS / n for n in ("himeno.c", "himeno_kernel.c", "himeno_mpi.c", "reflect.c")]
HEADERS = [HAPACS / n for n in ("himeno.h", "himeno_mpi.h", "reflect.h", "hapacs.h")]
# Points along i, j, k (boundary included), as the benchmark's C source defines the sizes.
SIZES = {
    "XS": (33, 33, 65),
    "S": (65, 65, 129),
    "M": (129, 129, 257),
    "L": (257, 257, 513),
    "XL": (513, 513, 1025),
}
# Iterations when none are given: the halo exchange is what is compared, and L takes ~5 s of
# host compute per iteration on the simulator (4 ranks in one process).
DEFAULT_ITERATIONS = {"XS": 10, "S": 10, "M": 5, "L": 3, "XL": 2}
FABRICS = ("sim", "shm", "shm-openmpi", "shm-mpich")
SEED = "seed 001 XcalableACCの性能評価一例"
SEED_HALO_L = 520e3  # "袖領域の大きさは約520KByte"


def points(size: str) -> int:
    """Interior points of a size: the x of its rows."""
    i, j, k = SIZES[size]
    return (i - 2) * (j - 2) * (k - 2)


def parse_sizes(text: str) -> list[str]:
    sizes = [s.strip().upper() for s in text.split(",") if s.strip()]
    bad = [s for s in sizes if s not in SIZES]
    if not sizes or bad:
        raise TcaError(f"bad --sizes '{text}' (a list of {', '.join(SIZES)})")
    return sizes


def kernel_args(platform: str) -> list[str]:
    """``-b GB/s -l us``: the declared cost of a GPU kernel on the platform."""
    baselines = platforms.load(platform).baselines()
    for t, key in (("node", "gpu_memory_bandwidth"), ("cuda", "call_overhead")):
        if t not in baselines or key not in baselines[t]:
            raise TcaError(f"platform {platform}: baselines.{t}.{key} is needed to charge the GPU kernels")
    bandwidth = table(baselines, "node").bandwidth("gpu_memory_bandwidth")
    launch = table(baselines, "cuda").time("call_overhead")
    return ["-b", f"{bandwidth / 1e9:.6g}", "-l", f"{launch * 1e6:.6g}"]


def resolve_fabric(fabric: str) -> str:
    """``shm`` is the shm fabric under Open MPI (MPICH where Open MPI is missing)."""
    if fabric not in FABRICS:
        raise TcaError(f"unknown fabric {fabric!r} (one of {', '.join(FABRICS)})")
    if fabric != "shm":
        return fabric
    import shutil

    return "shm-openmpi" if shutil.which("mpicc.openmpi") or not shutil.which("mpicc.mpich") else "shm-mpich"


def run(
    platform: str,
    sizes: list[str],
    nodes: list[int],
    fabric: str = "sim",
    iterations: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    """Rows per size and node count: TCA halo, MPI halo, compute, ... [us]; halo per rank [B];
    TCA/MPI halo [x]."""
    fabric = resolve_fabric(fabric)
    loaded = platforms.check_nodes(platform, nodes)
    if iterations is not None and iterations < 1:
        raise TcaError("--iterations must be at least 1")
    exe = cprog.build(BENCHMARK, SOURCES, fabric, HEADERS)
    extra = kernel_args(platform) if fabric == "sim" else []
    kind = "predicted" if fabric == "sim" else "measured"
    rows: list[Row] = []
    done, total = 0, len(sizes) * len(nodes)
    for n in nodes:
        suffix = f" ({n} nodes)" if len(nodes) > 1 else ""
        for size in sizes:
            iters = iterations or DEFAULT_ITERATIONS[size]
            args = ["-s", size, "-n", str(iters), *extra]
            out = cprog.run(
                exe, n, fabric, args, platform=platform, sim_args=["--compute", "declared"], timeout_s=1800
            )
            rows += to_rows(out.rows, size, loaded.name, suffix, kind)
            done += 1
            if progress:
                progress(done, total)
    return rows


def to_rows(program_rows: list[dict], size: str, platform: str, suffix: str, kind: str) -> list[Row]:
    """The program's #row lines as benchmark rows, plus the halo size and the TCA/MPI ratio with
    the seed's values at size L."""
    x = points(size)
    by_series = {r["series"]: r for r in program_rows}
    for needed in ("TCA halo", "MPI halo", "compute"):
        if needed not in by_series:
            raise TcaError(f"himeno {size}: the program printed no '{needed}' row")
    rows = [
        Row(BENCHMARK, platform, r["series"] + suffix, x, "points", r["value"], "us", kind=kind)
        for r in program_rows
    ]
    halo = Row(
        BENCHMARK,
        platform,
        "halo per rank" + suffix,
        x,
        "points",
        by_series["TCA halo"]["halo_bytes"],
        "B",
        kind=kind,
    )
    ratio = Row(
        BENCHMARK,
        platform,
        "TCA/MPI halo" + suffix,
        x,
        "points",
        by_series["TCA halo"]["value"] / by_series["MPI halo"]["value"],
        "x",
        kind=kind,
    )
    if size == "L" and by_series["TCA halo"].get("nodes") == 4:
        halo.paper, halo.source = SEED_HALO_L, f"{SEED}: size L, halo about 520 KB"
        ratio.paper = 1.0
        ratio.source = f"{SEED}: size L, TCA about equal to MVAPICH2-GDR, slightly slower (barrier after DMA)"
    return [*rows, halo, ratio]
