"""`tca run` under failure and signals: it names the rank that failed first and how, forwards
SIGTERM, SIGINT and SIGHUP to the ranks, kills what remains after the grace period, leaves
nothing in /dev/shm, and refuses a timeout that is not a finite positive number."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from tca.peach import launch


def tca_run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "tca", "run", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout, check=False)


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_the_rank_killed_first_is_named_not_the_peer_that_saw_it_die(tmp_path):
    # Rank 1 is killed; rank 0 notices (as the shm fabric's dead-peer check does) and exits 5.
    code = f"""
import os, signal, sys, time
from pathlib import Path
pidfile = Path({str(tmp_path)!r}) / "rank1.pid"
if os.environ["TCA_RANK"] == "1":
    pidfile.write_text(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGKILL)
while not pidfile.exists() or not pidfile.read_text():
    time.sleep(0.001)
pid = int(pidfile.read_text())
def alive():
    try:
        return Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
while alive():
    time.sleep(0.0002)
sys.exit(5)
"""
    p = tca_run("-n", "2", sys.executable, "-c", code)
    assert p.returncode == 128 + signal.SIGKILL, p.stderr
    assert "tca run: rank 1 was killed by SIGKILL (status 137); stopping the others" in p.stderr
    assert "rank 0" not in p.stderr


def test_a_rank_exit_status_is_named():
    p = tca_run(
        "-n",
        "3",
        sys.executable,
        "-c",
        "import os, sys, time\nif os.environ['TCA_RANK'] == '2': sys.exit(7)\ntime.sleep(60)",
    )
    assert p.returncode == 7
    assert "tca run: rank 2 exited with status 7; stopping the others" in p.stderr


RANK = """
import os, signal, sys, time
from pathlib import Path
e = os.environ
if {ignore_term} and e["TCA_RANK"] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
Path("/dev/shm/tca-" + e["TCA_JOB_ID"] + "-" + e["TCA_RANK"]).write_text("segment")
Path({pids!r}, e["TCA_RANK"]).write_text(str(os.getpid()) + " " + e["TCA_JOB_ID"])
time.sleep(120)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("ignore_term", [False, True], ids=["ranks-obey", "rank-ignores"])
def test_signals_to_the_launcher_reach_the_ranks(tmp_path, sig, ignore_term):
    code = RANK.format(pids=str(tmp_path), ignore_term=ignore_term)
    launcher = subprocess.Popen(
        [sys.executable, "-m", "tca", "run", "-n", "3", sys.executable, "-c", code],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        # A signal ignored on the way in stays ignored (nohup): the test's own start may be
        # such a way in, so the launcher gets the default dispositions.
        preexec_fn=launch.default_signals,
    )
    try:
        deadline = time.monotonic() + 30
        while len(list(tmp_path.iterdir())) < 3 or any(not f.read_text() for f in tmp_path.iterdir()):
            assert time.monotonic() < deadline, "the ranks did not start"
            time.sleep(0.02)
        ranks = [f.read_text().split() for f in sorted(tmp_path.iterdir())]
        pids, job = [int(r[0]) for r in ranks], ranks[0][1]
        assert all(alive(pid) for pid in pids)
        sent = time.monotonic()
        launcher.send_signal(sig)
        _, err = launcher.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if launcher.poll() is None:  # a launcher that failed the test leaves nothing behind either
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.communicate()
            for job in {w for f in tmp_path.iterdir() for w in f.read_text().split()[1:]}:
                for seg in Path("/dev/shm").glob(f"tca-{job}-*"):
                    seg.unlink(missing_ok=True)
    assert launcher.returncode == 128 + sig, err
    assert f"tca run: got {sig.name}; stopping the ranks" in err
    # Obeying ranks end at once; one that ignores the signal is killed after the grace period.
    if ignore_term:
        assert launch.GRACE_S - 0.1 < took < launch.GRACE_S + 5
    else:
        assert took < launch.GRACE_S
    assert not [pid for pid in pids if alive(pid)], "ranks outlived the launcher"
    assert not list(Path("/dev/shm").glob(f"tca-{job}-*"))


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "-inf"])
def test_timeout_must_be_finite_and_positive(value):
    p = tca_run("-n", "1", f"--timeout={value}", "true")
    assert p.returncode == 2
    assert p.stderr.startswith(f"tca: error: --timeout {float(value)}: expected a finite number of seconds")
    assert p.stderr.count("\n") == 1


def test_timeout_stops_the_job():
    t = time.monotonic()
    p = tca_run("-n", "2", "--timeout", "0.5", sys.executable, "-c", "import time; time.sleep(60)")
    assert p.returncode == 124
    assert "tca run: job exceeded 0.5 s; stopping it" in p.stderr
    assert time.monotonic() - t < 15


def test_how_a_process_ended_in_words():
    assert launch.how(-9) == "was killed by SIGKILL (status 137)"
    assert launch.how(3) == "exited with status 3"
    assert launch.how(-64).startswith("was killed by")


def running_with(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (zombies excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The arguments are separated by NUL bytes there.
            if marker in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            pass
    return [pid for pid in found if alive(pid)]


@contextlib.contextmanager
def sleeping_ranks(marker: str, *command: str):
    """`tca run -n 2 COMMAND`, whose ranks end up in `sleep MARKER`: yields the launcher once
    both sleep, and kills whatever of it is left at the end."""
    launcher = subprocess.Popen([sys.executable, "-m", "tca", "run", "-n", "2", *command], cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while len(running_with(f"sleep {marker}")) < 2:
            assert time.monotonic() < deadline, "the ranks did not start"
            time.sleep(0.02)
        yield launcher
    finally:
        launcher.kill()
        launcher.wait()
        for pid in running_with(f"sleep {marker}"):
            os.kill(pid, signal.SIGKILL)


def gone_soon(marker: str) -> bool:
    """Whether every `sleep MARKER` ends within 5 s."""
    deadline = time.monotonic() + 5
    while running_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.02)
    return not running_with(f"sleep {marker}")


def test_stopping_a_job_stops_what_its_ranks_started(tmp_path):
    # Each rank is a shell that waits for a child of its own; the timeout must end both.
    marker = f"{time.time_ns() % 10**6 + 40}.{os.getpid()}"
    script = tmp_path / "wrap.sh"
    script.write_text(f"#!/bin/sh\nsleep {marker}\n")
    script.chmod(0o755)
    with sleeping_ranks(marker, "--timeout", "2", str(script)) as launcher:
        assert launcher.wait(30) == 124
        assert gone_soon(marker), "the ranks' children outlived the job"


def test_ranks_end_when_the_launcher_is_killed():
    # SIGKILL cannot be forwarded: the ranks get SIGTERM from the kernel (PR_SET_PDEATHSIG).
    marker = f"{time.time_ns() % 10**6 + 40}.{os.getpid() + 1}"
    with sleeping_ranks(marker, "sleep", marker) as launcher:
        launcher.kill()
        launcher.wait()
        assert gone_soon(marker), "the ranks outlived their launcher"
