"""Python rank programs written with tca.peach.program: the same file on the shm fabric (processes,
real time) and on a simulated platform (`tca run --fabric sim`)."""

import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "python" / "pingpong.py"


def tca_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tca", "run", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_the_example_runs_for_real_and_simulated():
    real = tca_run("-n", "2", str(EXAMPLE), "4096")
    assert real.returncode == 0, real.stderr
    assert "GPU-GPU DMA ping-pong, 4096 B:" in real.stdout
    sim = tca_run("-n", "2", "--fabric", "sim", "--platform", "ha-pacs-tca", str(EXAMPLE), "8")
    assert sim.returncode == 0, sim.stderr
    assert "GPU-GPU DMA ping-pong, 8 B: 2.04 us one way" in sim.stdout  # deterministic
    assert not list(Path("/dev/shm").glob("tca-*"))


def test_api_errors_reach_python_on_the_shm_fabric(tmp_path):
    program = tmp_path / "errors.py"
    program.write_text(
        textwrap.dedent(
            """
            import sys

            import tca.peach.program
            from tca.peach.api import Desc, TcaApiError

            def errors(ctx):
                mine = ctx.malloc(256)
                peers = ctx.exchange(mine)
                found = []
                for call in (
                    lambda: ctx.read(mine, 200, 100),                  # offset + size outside
                    lambda: ctx.write(peers[1 - ctx.rank], 0, b"xx"),  # not this rank's buffer
                    lambda: Desc().set_memcpy(peers[0], 0, mine, 0, 6),  # not a multiple of 4
                    lambda: ctx.start_dma(7),                          # no such channel
                ):
                    try:
                        call()
                    except TcaApiError as e:
                        found.append(e.name)
                ctx.barrier()
                sys.stdout.write(f"{ctx.rank} {','.join(found)}\\n")  # one write: ranks share stdout

            tca.peach.program.main(errors)
            """
        )
    )
    out = tca_run("-n", "2", str(program))
    assert out.returncode == 0, out.stderr
    for rank in (0, 1):
        assert f"{rank} OutOfBounds,InvalidHandle,SizeNotMultipleOf4,InvalidChannel" in out.stdout
