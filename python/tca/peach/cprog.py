"""C benchmark and application programs driven from Python (``tca bench collective``, the
applications): build a program for a fabric, run it on N ranks, read the rows it prints.

A program prints a human-readable table and, for each result, one line

    #row {"series": "TCA allreduce", "x": 8, "x_unit": "B", "value": 1.23, "unit": "us", ...}

(a JSON object after the ``#row `` prefix; series names contain "TCA" or "MPI"; extra keys are
kept). The fabrics:

* ``sim``: built with ``tca cc``, run with ``tca run --fabric sim --platform P`` (SimGrid SMPI
  and the PEACH2 model on one virtual clock, docs/sim-c.md);
* ``shm-openmpi``, ``shm-mpich``: built with that MPI's ``mpicc`` against ``libtca.so`` and
  ``libtcacudart.so``, run with its ``mpirun`` on the shm fabric of this host (measured time).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tca import TcaError
from tca.peach import cc

ROOT = cc.ROOT
OUT = ROOT / "target" / "c"
FABRICS = ("sim", "shm-openmpi", "shm-mpich")
ROW_PREFIX = "#row "
CFLAGS = ("-O2", "-Wall", "-Wextra")


@dataclass
class Run:
    """What one run of a program printed."""

    rows: list[dict]
    stdout: str
    stderr: str
    stats: dict | None = field(default=None)


def check_fabric(fabric: str) -> None:
    if fabric not in FABRICS:
        raise TcaError(f"unknown fabric {fabric!r} (one of {', '.join(FABRICS)})")


def mpi_of(fabric: str) -> str:
    """``openmpi`` or ``mpich`` for a ``shm-*`` fabric."""
    return fabric.removeprefix("shm-")


def binary(name: str, fabric: str) -> Path:
    """Where ``build`` puts program ``name`` for ``fabric``."""
    check_fabric(fabric)
    return OUT / "sim" / name if fabric == "sim" else OUT / "shm" / f"{name}.{mpi_of(fabric)}"


def compile_command(
    sources: list[Path], out: Path, fabric: str, cflags: tuple[str, ...] = CFLAGS
) -> list[str]:
    """The compiler command line that builds ``sources`` into ``out`` for ``fabric``."""
    src = [str(s) for s in sources]
    if fabric == "sim":
        return cc.command([*cflags, "-o", str(out), *src])
    mpicc = f"mpicc.{mpi_of(fabric)}"
    if shutil.which(mpicc) is None:
        raise TcaError(f"{mpicc} not found: run `make mpi` (Debian packages of Open MPI and MPICH)")
    missing = [n for n in ("libtca.so", "libtcacudart.so") if not (cc.LIB / n).exists()]
    if missing:
        raise TcaError(f"{', '.join(missing)} not built in {cc.LIB}: run `make capi` first")
    includes = [f"-I{inc}" for inc in cc.INCLUDES]
    libs = [f"-L{cc.LIB}", f"-Wl,-rpath,{cc.LIB}", "-ltcacudart", "-ltca", "-lm"]
    return [mpicc, *cflags, *includes, "-o", str(out), *src, *libs]


def build(name: str, sources: list[Path], fabric: str, headers: list[Path] = ()) -> Path:
    """Builds program ``name`` from ``sources`` for ``fabric`` unless it is newer than every
    source, header and library it depends on; returns the binary."""
    out = binary(name, fabric)
    deps = [
        *sources,
        *headers,
        *(cc.LIB / f"lib{n}.so" for n in cc.LIBRARIES if fabric == "sim" or n != "tcasmpi"),
    ]
    if out.exists() and all(d.exists() and d.stat().st_mtime <= out.stat().st_mtime for d in deps):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(compile_command(list(sources), out, fabric), capture_output=True, text=True)
    if done.returncode != 0:
        raise TcaError(f"building {name} for {fabric} failed:\n{done.stderr.strip()}")
    return out


def parse_rows(stdout: str) -> list[dict]:
    """The ``#row`` objects of a program's output, in order."""
    rows = []
    for number, line in enumerate(stdout.splitlines(), 1):
        if line.startswith(ROW_PREFIX):
            try:
                row = json.loads(line[len(ROW_PREFIX) :])
            except json.JSONDecodeError as e:
                raise TcaError(f"line {number} of the program's output is not a row: {e}") from e
            if not isinstance(row, dict) or not {"series", "x", "value"} <= row.keys():
                raise TcaError(f"line {number}: a row needs at least series, x and value")
            rows.append(row)
    return rows


def run_command(
    exe: Path, nodes: int, fabric: str, args: list[str], platform: str | None, sim_args: list[str]
) -> list[str]:
    """The command line that runs ``exe`` on ``nodes`` ranks of ``fabric``."""
    if fabric == "sim":
        if platform is None:
            raise TcaError("the sim fabric needs a platform")
        tca = [
            sys.executable,
            "-m",
            "tca",
            "run",
            "-n",
            str(nodes),
            "--fabric",
            "sim",
            "--platform",
            platform,
        ]
        return [*tca, *sim_args, str(exe), *args]
    mpi = mpi_of(fabric)
    mpirun = f"mpirun.{mpi}"
    if shutil.which(mpirun) is None:
        raise TcaError(f"{mpirun} not found: run `make mpi`")
    return [mpirun, *(["--oversubscribe"] if mpi == "openmpi" else []), "-n", str(nodes), str(exe), *args]


def run(
    exe: Path,
    nodes: int,
    fabric: str,
    args: list[str] = (),
    platform: str | None = None,
    sim_args: list[str] = (),
    timeout_s: float = 600,
) -> Run:
    """Runs ``exe`` on ``nodes`` ranks and returns its rows; a failed run raises with the
    program's last lines of stderr."""
    check_fabric(fabric)
    cmd = run_command(exe, nodes, fabric, list(args), platform, list(sim_args))
    # The run's own settings only; how the simulator moves TLPs is the caller's choice.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCA_") or k == "TCA_SIM_TLPS"}
    env |= {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    if fabric != "sim":
        # More ranks than cores: waits must sleep, not spin; give slow peers time.
        env |= {"TCA_TIMEOUT_MS": "60000"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))
    try:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise TcaError(f"{exe.name} on {nodes} ranks ({fabric}) did not finish in {timeout_s:.0f} s") from e
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise TcaError(f"{exe.name} on {nodes} ranks ({fabric}) failed (status {done.returncode}):\n{tail}")
    return Run(parse_rows(done.stdout), done.stdout, done.stderr)
