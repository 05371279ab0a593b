"""``tca hxb bench ... --platform P``: PM/Ethernet-HXB on a simulated platform of
``platforms/hxb/`` (seed 004), through the Rust model ``hxb-sim`` (``tca._native.hxb_*``).

Benchmarks and the seed's tables they reproduce:

- ``bandwidth``: 1-D one-way bandwidth against message size for k links, PM/Ethernet-HXB ("HXB")
  and, at 4 links, PM/Ethernet Network Trunking ("NT"); the processing latency (4 B over the
  bandwidth at 4 B); with ``--mpi`` the MPI level over a rendezvous layer of tca's own
  ("MPI", not SMPI). Table 4, Fig. 3, Table 7.
- ``latency``: half round-trip time, bandwidth and the 4 B penalty through 0, 1, 2 relays
  (Table 6, Fig. 5).
- ``neighbour``: send, receive, bidirectional to the neighbours in 1-3 dimensions (Table 5).
- ``budget``: the per-packet time budget of k links, formula and framing-aware (Table 2).

Rows (DESIGN.md): bandwidth in GB/s (1e9 B/s; the seed's MB/s are 1e6 B/s), efficiency in %
of k x 125 MB/s (hxb.md "Conventions"), times in us; ``paper``, ``source`` and ``kind`` from the
seed's cells, ``kind`` "calibrated" where a platform parameter was fitted to the cell.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from tca import TcaError, _native
from tca.cli import options
from tca.common.report import Row
from tca.peach import platforms
from tca.units import parse_counts

SEED = "seed 004"
LINK_MB = 125.0  # theoretical MB/s of one GbE link per direction (hxb.md "Conventions")
# Peak-bandwidth cells are compared at a message of at least this size (the seed's "about 1 MB").
PEAK_SIZE = 512 * 1024

# Table 4: links -> (bandwidth MB/s, %, processing latency us). Calibrated: Gigx9 bandwidth
# (bus.read_burst_overhead) and Gigx2 latency (cpu.send_packet).
TABLE4 = {2: (248, 99, 2.38), 4: (494, 99, 2.58), 6: (741, 99, 2.71), 8: (981, 98, 2.81), 9: (1065, 94, 2.90)}
TABLE4_NT = (393, 78, 15.7)  # PME NT Gigx4; latency calibrated (nt.recv_packet)
# Table 5 (2 links per dimension): dims -> (send, receive, bidirectional) MB/s.
TABLE5 = {1: (247.6, 247.5, 481.1), 2: (493.6, 494.9, 951.3), 3: (741.3, 742.3, 1401.3)}
# Table 6: links -> bandwidth MB/s by relays; half RTT (2 links) by relays; §5.3 4 B penalty %.
TABLE6_BW = {2: (248, 248, 248), 4: (494, 489, None)}
TABLE6_HRTT = (14.9, 27.5, 39.3)  # 1-D and 2-D calibrated (cpu.wakeup, nic.interrupt_latency)
TABLE6_PENALTY = (None, 26, 39)  # 1 relay calibrated (cpu.relay)
# Table 7: links -> (one-way MB/s, %, bidirectional MB/s, %).
TABLE7 = {
    2: (244, 98, 490, 98),
    4: (494, 99, 896, 90),
    6: (739, 98, 937, 62),
    8: (915, 92, 932, 47),
    9: (890, 79, 921, 40),
}
# Table 2: links -> us for 1500, 4096, 8192 B.
TABLE2 = {
    1: (12.0, 32.8, 65.5),
    2: (6.0, 16.4, 32.8),
    4: (3.0, 8.2, 16.4),
    6: (2.0, 5.5, 10.9),
    8: (1.5, 4.1, 8.2),
    10: (1.2, 3.3, 6.6),
}
TABLE2_SIZES = (1500, 4096, 8192)

Update = Callable[[int, int], None] | None


def _call(fn, *args, **kwargs):
    """A model call; its ValueError becomes a one-line TcaError."""
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        raise TcaError(str(e)) from None


class _Trace:
    """Hands the ``--trace`` path to the first simulated point only."""

    def __init__(self, path: str | None):
        self.path = path

    def take(self) -> str | None:
        path, self.path = self.path, None
        return path


def _row(bench, platform, series, x, x_unit, value, unit, paper=None, source=None, kind="predicted") -> Row:
    return Row(
        bench,
        platform,
        series,
        x,
        x_unit,
        value,
        unit,
        paper,
        source,
        kind if paper is not None else "predicted",
    )


def _bandwidth_rows(name, series, size, r, paper, src, kind) -> list[Row]:
    """The bandwidth (GB/s) and efficiency (%) rows of one run; `paper` is the seed's
    (MB/s, %) pair where the run is compared with it, else None."""
    return [
        _row(
            "hxb-bandwidth",
            name,
            series,
            size,
            "B",
            r["bytes_per_second"] / 1e9,
            "GB/s",
            round(paper[0] / 1e3, 6) if paper else None,
            src,
            kind,
        ),
        _row(
            "hxb-bandwidth",
            name,
            f"{series} efficiency",
            size,
            "B",
            r["efficiency"] * 100,
            "%",
            paper[1] if paper else None,
            src,
            kind,
        ),
    ]


def _progress(update: Update, done: int, total: int) -> None:
    if update is not None:
        update(done, total)


def run(args: argparse.Namespace, update: Update) -> tuple[list[Row], str]:
    path = str(platforms.resolve(args.platform, "hxb"))
    info = _call(_native.hxb_platform, path)
    name = info["name"]
    trace = _Trace(getattr(args, "trace", None))
    bench = args.benchmark
    if bench == "bandwidth":
        return _bandwidth(args, path, name, trace, update)
    if bench == "latency":
        return _latency(args, path, name, info["ports_per_node"], trace, update)
    if bench == "neighbour":
        return _neighbour(args, path, name, trace, update)
    if bench == "budget":
        if getattr(args, "trace", None):
            raise TcaError(
                "--trace applies to bandwidth, latency and neighbour: budget is a sum of costs, with no spans"
            )
        return _budget(args, path, name, update)
    raise TcaError(f"unknown benchmark '{bench}'")


def _links(args, default: str, high: int = 64) -> list[int]:
    return options.distinct(parse_counts(args.links or default, "--links", (1, high)), "--links")


# The largest message the simulator takes: it holds each message's frames and bytes, about six
# times the message (4 GiB outgrew this machine's 24 GiB).
MAX_SIM_SIZE = 256 << 20


def _sizes(args, default: str, one: str | None = None) -> list[int]:
    """The message sizes of ``--sizes`` (``default`` when not given), at most
    ``MAX_SIM_SIZE``; exactly one where ``one`` names why."""
    sizes = options.sizes(args.sizes or default)
    if max(sizes) > MAX_SIM_SIZE:
        raise TcaError(f"--sizes: at most {MAX_SIM_SIZE >> 20} MiB on the simulator")
    if one is not None and len(sizes) != 1:
        raise TcaError(f"--sizes: give one size ({one})")
    return sizes


def _bandwidth(args, path, name, trace, update) -> tuple[list[Row], str]:
    links = _links(args, "2,4,6,8,9")
    sizes = _sizes(args, "4:1M")
    peak = max(sizes)
    rows: list[Row] = []
    jobs = [(k, s) for k in links for s in sizes]
    total = len(jobs) * (3 if args.mpi else 1) + (len(sizes) if 4 in links else 0)
    done = 0
    for k, size in jobs:
        r = _call(_native.hxb_bandwidth, path, k, size, "hxb", trace=trace.take())
        series = f"HXB x{k}"
        seed = TABLE4.get(k)
        at_peak = seed is not None and size == peak and size >= PEAK_SIZE
        kind = "calibrated" if k == 9 else "predicted"
        src = f"{SEED} Table 4 PME-HXB (Gigx{k})"
        rows += _bandwidth_rows(name, series, size, r, seed[0:2] if at_peak else None, src, kind)
        if size == 4:
            rows.append(
                _row(
                    "hxb-bandwidth",
                    name,
                    f"{series} processing latency",
                    size,
                    "B",
                    r["per_message_us"],
                    "us",
                    seed[2] if seed else None,
                    src,
                    "calibrated" if k == 2 else "predicted",
                )
            )
        done += 1
        _progress(update, done, total)
    if 4 in links:
        for size in sizes:
            r = _call(_native.hxb_bandwidth, path, 4, size, "nt")
            at_peak = size == peak and size >= PEAK_SIZE
            src = f"{SEED} Table 4 PME NT (Gigx4), §5.1"
            rows.append(
                _row(
                    "hxb-bandwidth",
                    name,
                    "NT x4",
                    size,
                    "B",
                    r["bytes_per_second"] / 1e9,
                    "GB/s",
                    round(TABLE4_NT[0] / 1e3, 6) if at_peak else None,
                    src,
                )
            )
            if size == 4:
                rows.append(
                    _row(
                        "hxb-bandwidth",
                        name,
                        "NT x4 processing latency",
                        size,
                        "B",
                        r["per_message_us"],
                        "us",
                        TABLE4_NT[2],
                        src,
                        "calibrated",
                    )
                )
            done += 1
            _progress(update, done, total)
    if args.mpi:
        for k, size in jobs:
            seed = TABLE7.get(k)
            at_peak = seed is not None and size == peak and size >= PEAK_SIZE
            src = f"{SEED} Table 7 YAMPII2 (Gigx{k}), rendezvous layer of tca's own"
            for bidir, label, cell in ((False, "one-way", 0), (True, "bidirectional", 2)):
                r = _call(_native.hxb_bandwidth, path, k, size, "mpi", bidirectional=bidir)
                series = f"MPI/HXB x{k} {label}"
                paper = seed[cell : cell + 2] if at_peak else None
                rows += _bandwidth_rows(name, series, size, r, paper, src, "predicted")
                done += 1
                _progress(update, done, total)
    title = f"PM/Ethernet-HXB 1-D one-way bandwidth on {name} (seed 004 Table 4, Fig. 3" + (
        ", Table 7)" if args.mpi else ")"
    )
    return rows, title


def _latency(args, path, name, ports, trace, update) -> tuple[list[Row], str]:
    """Through r relays the route spans r + 1 dimensions of k ports each; a point whose ports
    the platform lacks is left out and named in the title (Table 6's "-" cell: 4 links in 3-D
    need 12 ports, the testbed has 9)."""
    links = _links(args, "2")
    relays = options.distinct(parse_counts(args.relays, "--relays", (0, 2)), "--relays")
    size = _sizes(args, "4", "the latency is measured at one size, for each link count and relay count")[0]
    rows: list[Row] = []
    skipped: list[str] = []
    total, done = len(links) * len(relays), 0
    for k in links:
        # The 4 B penalty is against no relay, whichever relays are asked for and in any order.
        base4 = _call(_native.hxb_routed, path, 0, k, 4)["bytes_per_second"] if k <= ports else None
        for r in relays:
            if k * (r + 1) > ports:
                skipped.append(f"{k} links x {r} relays needs {k * (r + 1)} ports, {name} has {ports}")
                done += 1
                continue
            src = f"{SEED} Table 6, §5.3"
            hrtt = _call(_native.hxb_half_rtt, path, r, k, size, trace=trace.take())
            paper = TABLE6_HRTT[r] if k == 2 and size == 4 else None
            rows.append(
                _row(
                    "hxb-latency",
                    name,
                    f"HXB x{k} half RTT",
                    r,
                    "relays",
                    hrtt,
                    "us",
                    paper,
                    src,
                    "calibrated" if r < 2 else "predicted",
                )
            )
            bw = _call(_native.hxb_routed, path, r, k, 1 << 20)
            cell = TABLE6_BW.get(k, (None, None, None))[r]
            rows.append(
                _row(
                    "hxb-latency",
                    name,
                    f"HXB x{k} bandwidth",
                    r,
                    "relays",
                    bw["bytes_per_second"] / 1e9,
                    "GB/s",
                    round(cell / 1e3, 6) if cell else None,
                    f"{SEED} Table 6 (1 MiB messages)",
                )
            )
            small = _call(_native.hxb_routed, path, r, k, 4)["bytes_per_second"]
            if base4 is not None:
                penalty = TABLE6_PENALTY[r] if k == 2 else None
                rows.append(
                    _row(
                        "hxb-latency",
                        name,
                        f"HXB x{k} 4 B penalty",
                        r,
                        "relays",
                        (1 - small / base4) * 100,
                        "%",
                        penalty,
                        f"{SEED} §5.3, Fig. 5",
                        "calibrated" if r == 1 else "predicted",
                    )
                )
            done += 1
            _progress(update, done, total)
    title = f"PM/Ethernet-HXB through relays on {name}: half RTT of {size} B, bandwidth (seed 004 Table 6)"
    if skipped:
        title += "; not run: " + "; ".join(skipped)
    if not rows:
        raise TcaError(f"no point fits platform {name}: " + "; ".join(skipped))
    return rows, title


def _neighbour(args, path, name, trace, update) -> tuple[list[Row], str]:
    links = _links(args, "2")
    dims = options.distinct(parse_counts(args.dims, "--dims", (1, 3)), "--dims")
    size = _sizes(args, "1M", "the neighbour exchange is measured at one size")[0]
    rows: list[Row] = []
    total, done = len(links) * len(dims) * 3, 0
    for k in links:
        for d in dims:
            for col, pattern in enumerate(("send", "receive", "bidirectional")):
                r = _call(_native.hxb_neighbour, path, d, pattern, k, size, trace=trace.take())
                cell = TABLE5[d][col] if k == 2 and size >= PEAK_SIZE else None
                ways = 2 if pattern == "bidirectional" else 1
                src = f"{SEED} Table 5 ({d}-D {pattern})"
                series = f"HXB x{k} {pattern}"
                rows.append(
                    _row(
                        "hxb-neighbour",
                        name,
                        series,
                        d,
                        "dims",
                        r["bytes_per_second"] / 1e9,
                        "GB/s",
                        round(cell / 1e3, 6) if cell else None,
                        src,
                    )
                )
                rows.append(
                    _row(
                        "hxb-neighbour",
                        name,
                        f"{series} efficiency",
                        d,
                        "dims",
                        r["efficiency"] * 100,
                        "%",
                        round(cell / (ways * d * k * LINK_MB) * 100, 1) if cell else None,
                        src,
                    )
                )
                done += 1
                _progress(update, done, total)
    return rows, f"PM/Ethernet-HXB neighbour bandwidth, {size} B messages, on {name} (seed 004 Table 5)"


def _budget(args, path, name, update) -> tuple[list[Row], str]:
    links = _links(args, "1,2,4,6,8,10")
    sizes = _sizes(args, "1500,4096,8192")
    rows: list[Row] = []
    total, done = len(links) * len(sizes), 0
    for k in links:
        for size in sizes:
            b = _call(_native.hxb_budget, path, k, size)
            cell = TABLE2[k][TABLE2_SIZES.index(size)] if k in TABLE2 and size in TABLE2_SIZES else None
            src = f"{SEED} Table 2"
            rows.append(
                _row(
                    "hxb-budget", name, f"HXB {size} B formula", k, "links", b["formula_us"], "us", cell, src
                )
            )
            rows.append(
                _row(
                    "hxb-budget",
                    name,
                    f"HXB {size} B with framing",
                    k,
                    "links",
                    b["simulated_us"],
                    "us",
                    cell,
                    src,
                )
            )
            done += 1
            _progress(update, done, total)
    return rows, f"Per-packet time budget of k GbE links on {name} (seed 004 Table 2)"
