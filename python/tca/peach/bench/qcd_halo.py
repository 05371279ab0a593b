"""``tca bench qcd-halo``: the Wilson-Dirac halo exchange of examples/c/hapacs/qcd_halo.c on an
8^4 lattice over (x, y) process grids, through the RMA layer (rma.c: TCA, MPI-3 RMA with
fences or with PSCW) and with MPI point-to-point, in one run per grid (seed 001, slides "QUDA
Library" and "QUDA Small Model (8^4)": message length per dimension 2 x (24 KB / nodes in that
dimension); "MPI-P2Pに対して 1.96倍の向上", the grid not stated).

The program checks every ghost against its neighbour's face and that all methods agree; the
rows are the slowest rank's mean time per exchange and the ratio MPI P2P / TCA RMA.
"""

from __future__ import annotations

from collections.abc import Callable

from tca import TcaError
from tca.common.report import Row
from tca.peach import cprog, platforms

BENCHMARK = "qcd-halo"
SOURCE_DIR = cprog.ROOT / "examples" / "c" / "hapacs"
SOURCES = [SOURCE_DIR / "qcd_halo.c", SOURCE_DIR / "rma.c"]
HEADERS = [SOURCE_DIR / "rma.h", SOURCE_DIR / "hapacs.h"]
DEFAULT_GRIDS = [(1, 2), (2, 2), (2, 4), (4, 4)]
ITERATIONS = 100
SEED_RATIO = 1.96  # seed 001, slide "QUDA Small Model (8^4)": over MPI P2P
SEED_NOTE = "seed 001 QUDA Small Model (8^4): 1.96x over MPI-P2P (grid not stated; whole solver)"


# Node counts of a dimension whose face (24 KB / P, seed 001) is a whole number of the RMA
# layer's 16-byte units.
DIVISORS = (1, 2, 3, 4, 6, 8)


def parse_grids(text: str) -> list[tuple[int, int]]:
    """``1x2,2x2``: (PX, PY) pairs with 2 <= PX * PY <= 16, each of PX, PY in :data:`DIVISORS`."""
    grids = []
    for word in text.split(","):
        try:
            px, py = (int(v) for v in word.lower().split("x"))
        except ValueError:
            raise TcaError(f"bad grid {word!r} (expected PXxPY such as 2x4)") from None
        if px not in DIVISORS or py not in DIVISORS or not 2 <= px * py <= 16:
            raise TcaError(
                f"grid {word} needs 2..16 nodes with PX and PY each one of 1, 2, 3, 4, 6, 8 "
                "(a face of 24 KB / P in 16-byte units)"
            )
        grids.append((px, py))
    return grids


def run(
    platform: str | None,
    grids: list[tuple[int, int]],
    fabric: str = "sim",
    iterations: int = ITERATIONS,
    methods: str = "tca,mpi-fence,mpi-pscw,p2p",
    progress: Callable[[int, int], None] | None = None,
) -> list[Row]:
    """Rows per grid: time per exchange [us] of each method, and MPI P2P / TCA RMA [x]."""
    if iterations < 1:
        raise TcaError("--iterations must be at least 1")
    if fabric == "sim" and platform is not None:
        for px, py in grids:
            platforms.check_nodes(platform, [px * py], label=f"grid {px}x{py} of {{n}} nodes")
    exe = cprog.build("qcd_halo", SOURCES, fabric, HEADERS)
    kind = "predicted" if fabric == "sim" else "measured"
    name = platform if fabric == "sim" else f"this host ({fabric})"
    rows: list[Row] = []
    for i, (px, py) in enumerate(grids):
        done = cprog.run(exe, px * py, fabric, [str(px), str(py), str(iterations), methods], platform)
        if "every ghost verified" not in done.stdout:
            raise TcaError(f"qcd_halo on {px}x{py} printed no verification line")
        for r in done.rows:
            # The seed's ratio is HA-PACS/TCA's: compared with the simulated platform only.
            ratio = r["unit"] == "x" and fabric == "sim"
            rows.append(
                Row(
                    BENCHMARK,
                    name,
                    r["series"],
                    r["x"],
                    "nodes",
                    r["value"],
                    r["unit"],
                    paper=SEED_RATIO if ratio else None,
                    source=SEED_NOTE if ratio else None,
                    kind=kind,
                )
            )
        if progress:
            progress(i + 1, len(grids))
    return rows
