"""``tca hxb bench bandwidth|latency --fabric net``: PM/Ethernet-HXB over real links between
network namespaces on this host, beside TCP and MPTCP over the same links, and for bandwidth
Open MPI's TCP BTL striping over them (``--baselines openmpi``: examples/c/mpi_bw.c, two ranks
launched into the two namespaces; needs Open MPI, ``make mpi examples``).

The measurement is the Rust program ``hxb-net-bench`` (crates/hxb/net/src/bin/hxb-net-bench),
which builds the namespaces, veth pairs (MTU 9,000) and tbf rate limits, runs each point and
prints one JSON line per point; this module turns those lines into rows (kind "measured").
Bandwidth rows are GB/s (1e9 B/s) and, as efficiency rows with unit "%", the share of k x the
link rate; the baselines that stripe (MPTCP, Open MPI) add a "links used" row from the sending
interfaces' byte counters; latency rows are half round trips in us. The seed's values (Tables 4 and 6) are
attached where the set-up matches: 1 Gb/s links, and 2 links per dimension for latency.
Needs root; the namespaces are deleted when the run ends, also after an error or a kill.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

from tca import TcaError
from tca.cli import options
from tca.common.report import Row
from tca.units import parse_counts

ROOT = Path(__file__).resolve().parents[3]
PROGRAM = "hxb-net-bench"
BASELINES = ("tcp", "mptcp", "openmpi")
DEFAULT_BASELINES = "tcp,mptcp"
# Seed 004 Table 4: low-level bandwidth, PME-HXB, % of k x 125 MB/s.
TABLE4 = {2: 99.0, 4: 99.0, 6: 99.0, 8: 98.0, 9: 94.0}
# Seed 004 Table 6: half RTT with 2 links, 5.1 us per switch stage included, by relays.
TABLE6 = {0: 14.9, 1: 27.5, 2: 39.3}
TIMEOUT_S = 600


def program() -> Path:
    """The benchmark program, built by ``cargo build --release -p hxb-net`` (``make test`` does)."""
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = target / "release" / PROGRAM
    if not path.is_file():
        raise TcaError(f"{path} not found: build it with `cargo build --release -p hxb-net`")
    return path


def mpi_program() -> Path:
    """The Open MPI bandwidth program (examples/c/mpi_bw.c), built by ``make examples``."""
    if shutil.which("mpirun.openmpi") is None:
        raise TcaError("--baselines openmpi: mpirun.openmpi is not installed (make mpi)")
    path = ROOT / "target" / "c" / "mpi_bw.openmpi"
    if not path.is_file():
        raise TcaError(f"--baselines openmpi: {path} not found: build it with `make examples`")
    return path


def sizes(text: str) -> list[int]:
    """``LOW:HIGH`` (powers of two) or a comma list, with units (``64K``), up to 64 MiB."""
    values = options.sizes(text)
    if any(v > 1 << 26 for v in values):
        raise TcaError("--sizes: at most 64 MiB")
    return values


def rate(text: str) -> int:
    """A rate in bit/s: ``1G``, ``200M``, ``500k`` or a number."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgG]?)\s*(?:bit|b/s)?\s*", text)
    if not m:
        raise TcaError(f"--rate: {text!r} is not a rate such as 1G or 200M")
    value = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2).lower()]
    if not 1e6 <= value <= 1e11:
        raise TcaError("--rate: 1M to 100G")
    return int(value)


def losses(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise TcaError(f"--loss: {text!r} is not a comma list of fractions") from None
    if any(not 0.0 < v < 0.5 for v in values):
        raise TcaError("--loss: fractions above 0 and below 0.5 (0.01 is 1 %)")
    return options.distinct(values, "--loss")


def baselines(text: str | None) -> list[str]:
    names = [b.strip().lower() for b in (text or DEFAULT_BASELINES).split(",") if b.strip()]
    for b in names:
        if b not in BASELINES:
            raise TcaError(f"--baselines: unknown {b!r} (tcp, mptcp, openmpi)")
    return options.distinct(names, "--baselines")


def command(args) -> tuple[list[str], int]:
    """The program's command line for ``args`` and the number of points it will print."""
    if args.benchmark == "neighbour":
        raise TcaError("tca hxb bench neighbour runs on --fabric sim only")
    if getattr(args, "mpi", False):
        raise TcaError("--mpi applies to --fabric sim only")
    names = baselines(args.baselines)
    bit_s = rate(args.rate or "1G")
    if args.benchmark == "bandwidth":
        links = options.distinct(parse_counts(args.links or "1,2,4,6", "--links", (1, 9)), "--links")
        sz = sizes(args.sizes or "4096,65536,1048576")
        loss = losses(args.loss) if args.loss else []
        cmd = ["bandwidth", "--links", ",".join(map(str, links)), "--loss", ",".join(map(str, loss))]
        points = len(links) * len(sz) * (1 + len(loss) + len(names))
        if "openmpi" in names:
            cmd += ["--mpi-program", str(mpi_program())]
    else:
        if args.loss:
            raise TcaError("--loss applies to bandwidth only")
        if "openmpi" in names:
            raise TcaError("--baselines openmpi: bandwidth only (tcp, mptcp for latency)")
        links = options.distinct(parse_counts(args.links or "2", "--links", (1, 9)), "--links")
        sz = sizes(args.sizes or "8,1024,8192")
        relays = options.distinct(parse_counts(args.relays, "--relays", (0, 2)), "--relays")
        cmd = ["latency", "--links", ",".join(map(str, links)), "--relays", ",".join(map(str, relays))]
        points = len(links) * len(sz) * (len(relays) + (len(names) if 0 in relays else 0))
    cmd += ["--sizes", ",".join(map(str, sz)), "--rate", str(bit_s), "--baselines", ",".join(names) or ","]
    return cmd, points


def _series(p: dict) -> str:
    k = p["links"]
    s = p["series"]
    if s == "HXB":
        s = f"HXB {k} links"
        if p.get("loss"):
            s += f" loss {p['loss'] * 100:g} %"
    elif s.startswith("TCP"):
        s = f"TCP {k} links (uses 1)"
    elif s.startswith("Open MPI"):
        s = f"Open MPI TCP {k} links"
    else:
        s = f"MPTCP {k} links"
    if "relays" in p:
        s += f" {p['relays']} relays"
    return s


def rows_of(points: list[dict], bit_s: int) -> list[Row]:
    rows = []
    largest = max((p["size"] for p in points), default=0)
    smallest = min((p["size"] for p in points), default=0)
    for p in points:
        series = _series(p)
        if "half_rtt_us" in p:
            row = Row("latency", "net", series, p["size"], "B", p["half_rtt_us"], "us", kind="measured")
            if p["series"] == "HXB" and p["links"] == 2 and p["size"] == smallest and bit_s == 10**9:
                row.paper, row.source = TABLE6[p["relays"]], "seed 004 Table 6 (Giga x 2, 1/2 RTT)"
            rows.append(row)
            continue
        size = p["size"]
        gb_s = p["bytes_per_s"] / 1e9
        rows.append(Row("bandwidth", "net", series, size, "B", gb_s, "GB/s", kind="measured"))
        eff = Row("bandwidth", "net", f"{series} efficiency", size, "B", p["percent"], "%", kind="measured")
        k = p["links"]
        if p["series"] == "HXB" and not p["loss"] and k in TABLE4 and p["size"] == largest and bit_s == 10**9:
            eff.paper, eff.source = TABLE4[k], f"seed 004 Table 4 (PME-HXB Gigx{k})"
        rows.append(eff)
        if "links_used" in p:
            # How many of the k links carried at least a tenth of an even share (byte counters).
            rows.append(
                Row(
                    "bandwidth",
                    "net",
                    f"{series} links used",
                    size,
                    "B",
                    p["links_used"],
                    "links",
                    kind="measured",
                )
            )
    return rows


def _cleanup(pid: int) -> None:
    """Deletes the namespaces of process ``pid`` (tca-<pid>-...), left if it was killed, after
    killing what still runs in them (mpirun, orted and ranks of the Open MPI baseline)."""
    try:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(f"tca-{pid}-"):
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, check=False)
            for p in pids.stdout.split():
                try:
                    os.kill(int(p), signal.SIGKILL)
                except (ValueError, OSError):
                    pass
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def run(args, update) -> tuple[list[Row], str]:
    cmd, total = command(args)
    if os.geteuid() != 0:
        raise TcaError("--fabric net needs root (network namespaces, veth links, AF_PACKET sockets)")
    exe = program()
    points: list[dict] = []
    proc = subprocess.Popen([str(exe), *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip():
                points.append(json.loads(line))
                if update:
                    update(len(points), total)
        err = proc.stderr.read() if proc.stderr else ""
        code = proc.wait(timeout=TIMEOUT_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.kill()
        proc.wait()
        raise
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _cleanup(proc.pid)
    if code != 0:
        last = err.strip().splitlines()[-1] if err.strip() else f"exit status {code}"
        raise TcaError(last.removeprefix(f"{PROGRAM}: "))
    bit_s = rate(args.rate or "1G")
    what = "bandwidth" if args.benchmark == "bandwidth" else "half round-trip time"
    title = f"PM/Ethernet-HXB {what} over real links ({bit_s / 1e9:g} Gb/s tbf per link, veth, this host)"
    return rows_of(points, bit_s), title
