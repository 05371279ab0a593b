"""The pool manager driving software ExpEther (``serve --backend software``): the service
starts ``expether-system`` (2 host namespaces, 1 pooled device on a Linux bridge), hosts and
the device are added through the REST API, and each assignment is checked by block I/O from
the hosts: the host the device is assigned to writes, reads back and verifies; a host it was
taken from fails with a clear error, both by its view (nothing at the slot) and on the wire
(the device bridge refuses its VLAN). Needs root; skipped otherwise or when the program
cannot be built. Every namespace is removed, also on failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

import pytest
from pool_helpers import PoolServer
from tca.expether.pool.backend import BackendError
from tca.expether.pool.client import ClientError
from tca.expether.pool.software import SystemClient, program

A, B, SSD = "02:ee:01:00:00:01", "02:ee:01:00:00:02", "02:ee:02:00:00:01"


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _fails(system: SystemClient, text: str, **io) -> str:
    with pytest.raises(BackendError) as e:
        system.call("io", blocks=8, **io)
    assert text in str(e.value), str(e.value)
    return str(e.value)


def test_assign_move_release_with_block_io(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, AF_PACKET sockets)")
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2's ip")
    if program() is None:
        pytest.skip("expether-system is not built (cargo build --release -p expether-net)")
    sock_dir = tempfile.mkdtemp(prefix="tca-pool-")  # a short path: Unix sockets take 107 bytes
    sock = f"{sock_dir}/system.sock"
    extra = ("--backend", "software", "--system", sock, "--system-hosts", "2", "--system-devices", "1")
    t0 = time.monotonic()
    server = PoolServer(tmp_path / "pool.db", extra=extra).start(timeout=60)
    ours: set[str] = set()
    system = None
    try:
        system = SystemClient(sock, timeout=15)
        listing = system.call("list")
        ours = set(listing["namespaces"])
        assert len(ours) == 4 and ours <= _namespaces()  # switch, 2 hosts, devices
        c = server.client()
        assert c.call("GET", "/api/health")["backend"] == "software"
        c.call("POST", "/api/hosts", {"name": "hA", "vlan": 10, "mac": A})
        c.call("POST", "/api/hosts", {"name": "hB", "vlan": 20, "mac": B})
        c.call("POST", "/api/devices", {"name": "ssd0", "kind": "ssd", "mac": SSD})
        # A bridge the system does not have is refused, and nothing changes.
        with pytest.raises(ClientError) as e:
            c.call("POST", "/api/devices", {"name": "ghost", "kind": "ssd", "mac": "02:ee:02:00:00:09"})
        assert "409" in str(e.value) and "no device bridge 02:ee:02:00:00:09" in str(e.value)
        hosts = {h["mac"]: h["vlan"] for h in system.call("list")["hosts"]}
        assert hosts == {A: 10, B: 20}

        # Assigned to A: A's I/O verifies, B sees nothing.
        r = c.call("POST", "/api/devices/ssd0/assign", {"vlan": 10})
        assert (r["vlan"], r["slot"]) == (10, 0)
        assert [(e["kind"], e["vlan"], e["slot"]) for e in r["events"]] == [("hot-plug", 10, 0)]
        io = system.call("io", host=A, slot=0, blocks=8)
        assert (io["device"], io["blocks"]) == (SSD, 8) and io["write_us"] > 0 and io["read_us"] > 0
        _fails(system, "has no device at slot 0", host=B, slot=0)

        # Moved to B: A fails by its view and on the wire (VLAN check), B verifies.
        r = c.call("POST", "/api/devices/ssd0/assign", {"vlan": 20})
        assert [(e["kind"], e["vlan"], e["slot"]) for e in r["events"]] == [
            ("hot-remove", 10, 0),
            ("hot-plug", 20, 0),
        ]
        _fails(system, "host 02:ee:01:00:00:01 (VLAN 10) has no device at slot 0", host=A, slot=0)
        before = system.call("list")["devices"][0]["other_vlan"]
        _fails(system, "its bridge is on VLAN 20 and refused", host=A, device=SSD)
        assert system.call("list")["devices"][0]["other_vlan"] > before
        assert system.call("io", host=B, slot=0, blocks=8)["device"] == SSD

        # Released: both fail.
        r = c.call("POST", "/api/devices/ssd0/unassign")
        assert (r["vlan"], [(e["kind"], e["vlan"], e["slot"]) for e in r["events"]]) == (
            None,
            [("hot-remove", 20, 0)],
        )
        for host in (A, B):
            _fails(system, "has no device at slot 0", host=host, slot=0)
            _fails(system, "it is in the pool", host=host, device=SSD)
        dev = system.call("list")["devices"][0]
        assert (dev["vlan"], dev["slot"], dev["resets"]) == (None, None, 0)

        # Every change and every event in the audit log, in order.
        audit = c.call("GET", "/api/audit?limit=1000")
        rows = [(a["action"], a["target"], a["result"]) for a in audit]
        assert rows == [
            ("set-admin-token", "admin", "ok"),
            ("create-host", "hA", "ok"),
            ("create-host", "hB", "ok"),
            ("create-device", "ssd0", "ok"),
            ("create-device", "ghost", "refused"),
            ("assign", "ssd0", "ok"),
            ("assign", "ssd0", "ok"),
            ("unassign", "ssd0", "ok"),
        ]
        ids = [a["id"] for a in audit if a["action"] in ("assign", "unassign")]
        events = [
            (e["audit"], e["kind"], e["vlan"], e["slot"], e["device"]) for e in c.call("GET", "/api/events")
        ]
        assert events == [
            (ids[0], "hot-plug", 10, 0, SSD),
            (ids[1], "hot-remove", 10, 0, SSD),
            (ids[1], "hot-plug", 20, 0, SSD),
            (ids[2], "hot-remove", 20, 0, SSD),
        ]
    finally:
        if system is not None:
            system.close()
        if server.proc.poll() is None:
            server.stop()
        deadline = time.monotonic() + 10
        while ours & _namespaces() and time.monotonic() < deadline:
            time.sleep(0.05)
        left = ours & _namespaces()
        for ns in left:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        shutil.rmtree(sock_dir, ignore_errors=True)
    assert not left, f"namespaces left behind: {sorted(left)}"
    assert not os.path.exists(sock)
    assert time.monotonic() - t0 < 20


def _fake_system(path: str, hosts: int, devices: int):
    """A control socket that answers ``list`` as a system of ``hosts`` hosts and ``devices``
    devices would (no root needed); returns the listening socket and its thread."""
    import json
    import socket
    import threading

    listing = {
        "ok": True,
        "hosts": [{"mac": f"02:ee:01:00:00:0{i + 1}", "vlan": None} for i in range(hosts)],
        "devices": [{"mac": f"02:ee:02:00:00:0{j + 1}", "vlan": None} for j in range(devices)],
        "namespaces": [],
    }
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()

    def answer():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn, conn.makefile("rw", encoding="utf-8") as f:
                for _line in f:
                    f.write(json.dumps(listing) + "\n")
                    f.flush()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    return server, thread


@pytest.mark.parametrize(
    "counts,text",
    [
        (dict(hosts=3), "--system-hosts 3: the system attached to at .* has 2 "),
        (dict(devices=2), "--system-devices 2: the system attached to at .* has 1 "),
    ],
)
def test_attaching_to_a_system_checks_the_counts_given(counts, text):
    # --system-hosts and --system-devices were silently ignored when a system listened already
    from tca.expether.pool.software import SoftwareBackend

    sock_dir = tempfile.mkdtemp(prefix="tca-pool-")
    server, _ = _fake_system(f"{sock_dir}/system.sock", hosts=2, devices=1)
    try:
        with pytest.raises(BackendError, match=text):
            SoftwareBackend(f"{sock_dir}/system.sock", **counts)
        SoftwareBackend(f"{sock_dir}/system.sock", hosts=2, devices=1).close()  # the counts it has
        SoftwareBackend(f"{sock_dir}/system.sock").close()  # none given: attached as it is
    finally:
        server.close()
        shutil.rmtree(sock_dir, ignore_errors=True)
