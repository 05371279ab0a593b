"""The pool manager's state survives a restart of the server process, a crash (SIGKILL)
included: inventory, assignments and their slots, tokens, events, reports, the audit log; and
the simulated system behind it is restored exactly."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys

import pytest
from pool_helpers import ADMIN, ROOT, PoolServer, check_consistent, mac, populate
from tca.expether.pool.client import Client


def snapshot(c) -> dict:
    return {
        "hosts": c.call("GET", "/api/hosts"),
        "devices": c.call("GET", "/api/devices"),
        "events": c.call("GET", "/api/events?limit=1000"),
        "audit": c.call("GET", "/api/audit?limit=1000"),
        "reports": c.call("GET", "/api/reports"),
        "tokens": c.call("GET", "/api/tokens"),
    }


def test_state_survives_restart_and_crash(tmp_path):
    db = tmp_path / "pool.db"
    server = PoolServer(db).start()
    c = server.client()
    populate(c, [10, 20], 5)
    for i in range(4):
        c.call("POST", f"/api/devices/d{i}/assign", {"vlan": 10})
    c.call("POST", "/api/devices/d1/unassign")  # VLAN 10 now has slots 0, 2, 3: a gap at 1
    c.call("POST", "/api/devices/d4/assign", {"vlan": 20})
    host_token = c.call("POST", "/api/tokens", {"name": "h20", "role": "host", "vlan": 20})["token"]
    c.call("POST", "/api/reports", {"bridge": mac(2, 4), "counters": {"tlps": 42}})
    before = snapshot(c)

    # Graceful stop, then a crash: nothing committed is lost either way.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        server.stop(sig)
        server = PoolServer(db, token=None).start()  # the admin token is in the database
        c = server.client()
        assert snapshot(c) == before, sig
        assert [d["name"] for d in server.client(host_token).call("GET", "/api/devices")] == ["d4"]

    # The restored switch has the same slots: the next device on VLAN 10 fills the gap at 1.
    assert c.call("POST", "/api/devices/d1/assign", {"vlan": 10})["slot"] == 1
    assert c.call("POST", "/api/devices/d4/assign", {"vlan": 10})["slot"] == 4
    check_consistent(
        c.call("GET", "/api/devices"),
        c.call("GET", "/api/audit?limit=1000"),
        c.call("GET", "/api/events?limit=1000"),
    )
    server.stop()


def test_one_manager_per_database_and_clear_start_errors(tmp_path):
    db = tmp_path / "pool.db"
    server = PoolServer(db).start()
    try:
        second = run("--db", str(db), "--port", "0", "--admin-token", ADMIN)
        assert second.returncode == 2
        assert second.stderr.strip().splitlines() == [
            f"tca: error: --db {db}: another pool manager is serving this database"
        ]
    finally:
        server.stop()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    for args, text in [
        (["--db", str(garbage), "--port", "0"], "not a pool database"),
        (["--db", str(tmp_path / "no" / "x.db"), "--port", "0"], "does not exist"),
        (["--db", str(db), "--port", "0", "--admin-token", "short"], "at least 16 characters"),
        (["--db", str(db), "--port", "70000"], "expected 0..65535"),
        (["--db", str(db), "--backend", "software"], "needs --system SOCKET"),
        (["--db", str(db), "--backend", "fpga"], "unknown backend 'fpga'"),
    ]:
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0], (args, proc.stderr)
    assert not (tmp_path / "garbage.db.lock").exists(), "a refused start leaves no lock file"
    # A busy port: the new database is not left behind either.
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    fresh = tmp_path / "fresh.db"
    try:
        proc = run(
            "--db", str(fresh), "--port", str(busy.getsockname()[1]), "--admin-token", "0123456789abcdef"
        )
    finally:
        busy.close()
    assert proc.returncode == 2 and "cannot listen" in proc.stderr, proc.stderr
    assert not list(tmp_path.glob("fresh.db*")), list(tmp_path.glob("fresh.db*"))


def test_a_new_database_prints_a_fresh_admin_token_once(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tca",
            "expether",
            "pool",
            "serve",
            "--db",
            str(tmp_path / "new.db"),
            "--port",
            "0",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    assert line.startswith("tca expether pool: new admin token (shown once): ")
    token = line.split()[-1]
    url = proc.stdout.readline().split()[3].rstrip("/")
    assert Client(url, token).call("GET", "/api/whoami")["role"] == "admin"
    assert Client(url, token + "x").request("GET", "/api/whoami")[0] == 401
    proc.terminate()
    proc.wait(timeout=15)
    assert proc.stderr.read() == ""  # printed once only


@pytest.mark.parametrize(
    "args,text",
    [
        (["--system", "/tmp/none.sock"], "--system applies to --backend software only"),
        (["--system-hosts", "3", "--system-devices", "1"], "--system-hosts, --system-devices apply to"),
    ],
)
def test_serve_refuses_system_options_with_the_sim_backend(tmp_path, args, text):
    # the sim backend drives no system: these options were silently ignored
    proc = run("--db", str(tmp_path / "pool.db"), "--port", "0", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tca: error: ") and text in lines[0], proc.stderr
    assert proc.stdout == "" and not list(tmp_path.iterdir())


@pytest.mark.parametrize("option", ["--db", "--host", "--admin-token", "--backend", "--system"])
def test_serve_names_an_empty_option_value(tmp_path, option):
    # --admin-token "" gave a random token and --host "" listened on every address ("http://:PORT/")
    args = {"--db": str(tmp_path / "pool.db"), "--port": "0", "--backend": "software", option: ""}
    proc = run(*[x for kv in args.items() for x in kv])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"tca: error: {option}: empty value (give one, or leave the option out)\n"
    assert proc.stdout == "" and not list(tmp_path.iterdir())


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tca", "expether", "pool", "serve", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_failed_transaction_restores_the_switch(tmp_path, monkeypatch):
    # The database fails after the switch took the change: the switch is rebuilt from the
    # database, so the two never disagree.
    import sqlite3

    from tca.expether.pool import store
    from tca.expether.pool.backend import SimBackend
    from tca.expether.pool.manager import Caller, Manager

    admin = Caller("admin", "admin")
    m = Manager(store.Store(tmp_path / "pool.db"), SimBackend())
    m.create_host(admin, "h10", 10, mac(1, 10))
    m.create_device(admin, "d0", "ssd", mac(2, 0))
    m.create_device(admin, "d1", "ssd", mac(2, 1))
    m.assign(admin, "d0", 10)

    def broken(*_args, **_kw):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store, "add_event", broken)
    with pytest.raises(sqlite3.OperationalError):
        m.assign(admin, "d1", 10)
    assert m.backend.switch.host_of(mac(2, 1)) is None
    assert m.backend.switch.devices_of(10) == [(0, mac(2, 0))]
    monkeypatch.undo()
    assert [(d["name"], d["vlan"]) for d in m.devices(admin)] == [("d0", 10), ("d1", None)]
    assert m.assign(admin, "d1", 10)["slot"] == 1
