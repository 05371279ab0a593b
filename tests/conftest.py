import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTBED = ROOT / "platforms" / "peach2-testbed-2013.toml"


def run_tca(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the ``tca`` CLI in a subprocess, as a user would."""
    proc = subprocess.run(
        [sys.executable, "-m", "tca", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tca {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture
def tca():
    return run_tca
