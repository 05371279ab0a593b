"""``tca cc``: compiles a C program that uses MPI, the CUDA runtime and the TCA API for the
simulator, in the manner of SimGrid's ``smpicc`` (which it calls).

The program is built as SMPI builds MPI programs (its ranks become SimGrid actors of one
process, their global variables privatized) and linked with

* ``libtca.so``: the TCA API; ``tca run --fabric sim`` selects its ``smpi`` fabric, on which the
  ranks' TCA calls drive the simulated PEACH2 fabric on SimGrid's clock;
* ``libtcacudart.so`` and ``cuda_runtime.h``: the simulated CUDA runtime (docs/cuda.md);
* ``libtcasmpi.so``: the MVAPICH2 costs of MPI calls on GPU buffers (docs/smpi.md; its header
  ``tca-smpi-mpi.h`` is force-included) and the report of a deadlock across MPI and TCA.

The same source builds with ``mpicc`` (and a CUDA runtime) for a real fabric.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tca import TcaError

ROOT = Path(__file__).resolve().parents[3]
LIB = ROOT / "target" / "release"
INCLUDES = (ROOT / "crates/tca/capi/include", ROOT / "crates/tca/cuda/include")
MPI_HEADER = ROOT / "crates/tca/smpi/include/tca-smpi-mpi.h"
LIBRARIES = ("tcasmpi", "tcacudart", "tca")
# Options after which the compiler does not link.
NO_LINK = {"-c", "-E", "-S", "-M", "-MM", "-fsyntax-only"}


def smpicc() -> str:
    found = shutil.which("smpicc")
    if found is None:
        raise TcaError("tca cc needs SimGrid's smpicc: run `make smpi` (or apt-get install libsimgrid-dev)")
    return found


def command(args: list[str]) -> list[str]:
    """The smpicc command line that compiles (and unless told not to, links) ``args``."""
    if not args:
        raise TcaError("no input (usage: tca cc [compiler options] FILE.c ... -o PROGRAM)")
    cmd = [smpicc()]
    for inc in INCLUDES:
        cmd += ["-I", str(inc)]
    cmd += ["-include", str(MPI_HEADER), *args]
    if NO_LINK.isdisjoint(args):
        missing = [f"lib{name}.so" for name in LIBRARIES if not (LIB / f"lib{name}.so").exists()]
        if missing:
            raise TcaError(f"{', '.join(missing)} not built in {LIB}: run `make capi-smpi` first")
        # Every library stays needed even if the program calls none of its functions: the
        # deadlock report of libtcasmpi is a constructor, and SimGrid's MPI functions are weak
        # symbols (a program calling only MPI_Init and MPI_Wtime would drop libsimgrid).
        cmd += [f"-L{LIB}", f"-Wl,-rpath,{LIB}", "-Wl,--no-as-needed"]
        cmd += [f"-l{name}" for name in LIBRARIES]
        # smpicc drives gcc, which compiles C++ sources as C++ but links no C++ runtime: the
        # C++ runtime comes last, kept only where the program needs it (C++ sources or objects).
        cmd += ["-lsimgrid", "-Wl,--as-needed", "-lstdc++"]
    return cmd
