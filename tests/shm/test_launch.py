"""`tca run`: environment of the ranks, exit status, stopping the others on a failure, and
removal of segments a rank left in /dev/shm. The rank programs are small Python scripts, so
these tests need no compiled example (the C examples run in `make test-c`)."""

import subprocess
import sys
import time
from pathlib import Path

from tca.peach import launch

ROOT = Path(__file__).resolve().parents[2]


def tca_run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tca", "run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def script(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_ranks_get_rank_size_and_one_job_id():
    # One write(2) per rank, so that the lines of concurrent ranks do not interleave.
    code = (
        "import os; e = os.environ; os.write(1, ' '.join("
        "[e['TCA_RANK'], e['TCA_SIZE'], e['TCA_JOB_ID'], e['TCA_FABRIC']]).encode() + b'\\n')"
    )
    p = tca_run("-n", "4", *script(code))
    assert p.returncode == 0, p.stderr
    rows = sorted(line.split() for line in p.stdout.splitlines())
    assert [r[:2] for r in rows] == [[str(i), "4"] for i in range(4)]
    assert len({r[2] for r in rows}) == 1 and rows[0][3] == "shm"


def test_a_failing_rank_stops_the_others_and_sets_the_status():
    code = "import os, time, sys\nif os.environ['TCA_RANK'] == '1': sys.exit(3)\ntime.sleep(60)"
    t = time.monotonic()
    p = tca_run("-n", "3", *script(code))
    assert p.returncode == 3
    assert "rank 1 exited with status 3" in p.stderr
    assert time.monotonic() - t < 30, "the sleeping ranks were not stopped"


def test_a_killed_rank_gives_128_plus_the_signal():
    code = (
        "import os, signal, time\n"
        "if os.environ['TCA_RANK'] == '0': os.kill(os.getpid(), signal.SIGKILL)\n"
        "time.sleep(60)"
    )
    p = tca_run("-n", "2", *script(code))
    assert p.returncode == 128 + 9


def test_leftover_segments_are_removed():
    # A rank that dies inside tcaInit leaves its segment name behind: simulate it.
    code = (
        "import os; e = os.environ\n"
        "open('/dev/shm/tca-' + e['TCA_JOB_ID'] + '-' + e['TCA_RANK'], 'w').write('x')\n"
        "os.write(1, e['TCA_JOB_ID'].encode() + b'\\n')"
    )
    p = tca_run("-n", "2", *script(code))
    assert p.returncode == 0, p.stderr
    job = p.stdout.split()[0]
    assert not list(Path("/dev/shm").glob(f"tca-{job}-*"))


def test_bad_arguments_are_one_line_errors():
    for args in (
        ["-n", "0", "true"],
        ["-n", "17", "true"],
        ["-n", "2"],
        ["-n", "2", "/nonexistent/prog"],
        ["-n", "2", "--fabric", "sim", "true"],
    ):
        p = tca_run(*args)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.startswith("tca: error:") and p.stderr.count("\n") == 1, p.stderr


def test_status_of_signals():
    assert launch.status_of(-9) == 137 and launch.status_of(5) == 5
