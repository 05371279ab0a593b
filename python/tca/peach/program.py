"""One rank program, any fabric.

    import tca.peach.program

    def program(ctx):              # the TCA API of one rank: tca.peach.sim.Rank's methods
        ...

    if __name__ == "__main__":
        tca.peach.program.main(program)

The same file runs:

- ``python prog.py``: on a simulated platform (``$TCA_PLATFORM``, default
  ``peach2-testbed-2013``) with ``$TCA_SIZE`` ranks (default 2), all in this process;
- ``tca run -n N prog.py`` or ``mpirun -n N python prog.py``: this process is one rank of a
  job on this host's shared-memory fabric (real memory, real time);
- ``tca run -n N --fabric sim --platform P prog.py``: the launcher runs the file once, and
  ``main`` runs the N ranks on the simulated platform.

``ctx.wtime()`` is simulated time on the simulator and real time on the shm fabric, so the
same measurement code reports what the program does here and what it would do on the platform.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tca import TcaError, _native
from tca.peach import sim
from tca.units import parse_size_arg

DEFAULT_PLATFORM = "peach2-testbed-2013"
# Variables of launchers whose processes are ranks of a real job.
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")


def fabric() -> str:
    """``shm`` when this process is a rank started by a launcher, else ``sim``."""
    chosen = os.environ.get("TCA_FABRIC")
    if chosen:
        if chosen not in ("shm", "sim"):
            raise TcaError(f"TCA_FABRIC={chosen}: expected shm or sim")
        return chosen
    return "shm" if any(v in os.environ for v in _LAUNCHER_VARS) else "sim"


def platform_label() -> str:
    """Where this run happens, for result rows: ``this host (shm)`` or the simulated platform."""
    if fabric() == "shm":
        return "this host (shm)"
    return os.environ.get("TCA_PLATFORM", DEFAULT_PLATFORM)


def fail(message: str) -> NoReturn:
    """Ends the program with one line on stderr and status 2, as the ``tca`` command does."""
    print(f"{Path(sys.argv[0]).name}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def size_argument(text: str | None, default: int) -> int:
    """A message size given on the command line (``8``, ``4K``, ``1MiB``); a bad one ends the
    program with a one-line error."""
    if text is None:
        return default
    try:
        return parse_size_arg(text, "SIZE")
    except TcaError as e:
        fail(str(e))


def main(
    program: Callable[[sim.Rank], Any], *, nranks: int = 2, platform: str = DEFAULT_PLATFORM
) -> list[Any]:
    """Runs ``program`` on the fabric this process was started for; returns the results of the
    ranks it ran (all of them on the simulator, its own on the shm fabric). A TcaError (a bad
    platform, a rank count) ends the program with a one-line error."""
    try:
        return _main(program, nranks, platform)
    except TcaError as e:
        fail(str(e))


def _main(program: Callable[[sim.Rank], Any], nranks: int, platform: str) -> list[Any]:
    if fabric() == "shm":
        ctx = sim.Rank(_native.shm_rank())
        try:
            return [program(ctx)]
        finally:
            ctx.finalize()
    try:
        size = int(os.environ.get("TCA_SIZE", nranks))
    except ValueError:
        raise TcaError(f"TCA_SIZE={os.environ['TCA_SIZE']}: expected a number of ranks") from None
    return sim.run(os.environ.get("TCA_PLATFORM", platform), size, program)
