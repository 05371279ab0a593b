"""``tca expether pool ...`` as a user runs it against a running manager: tables, --json, and
one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from pool_helpers import ADMIN, ROOT, serving


@pytest.fixture
def pool(tmp_path):
    yield from serving(tmp_path)


def tca(*args: str, token: str | None = ADMIN, url: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCA_POOL_")}
    if url:
        env["TCA_POOL_URL"] = url
    if token:
        env["TCA_POOL_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "tca", "expether", "pool", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def ok(*args: str, **kw) -> str:
    proc = tca(*args, **kw)
    assert proc.returncode == 0 and proc.stderr == "", (args, proc.stderr)
    return proc.stdout


def test_cli_client(pool):
    u = ["--url", pool.url]
    ok("add-host", "h10", "10", "02:00:00:01:00:0a", *u)
    ok("add-host", "h20", "20", "02:00:00:01:00:14", *u)
    ok("add-device", "ssd0", "ssd", "02:00:00:02:00:00", *u)
    ok("add-device", "gpu0", "gpu", "02:00:00:02:00:01", *u)
    assert ok("assign", "ssd0", "10", *u).strip() == "ssd0: VLAN 10 slot 0; hot-plug VLAN 10 slot 0"
    moved = json.loads(ok("assign", "ssd0", "20", "--json", *u))
    assert [e["kind"] for e in moved["events"]] == ["hot-remove", "hot-plug"]
    assert ok("assign", "gpu0", "20", url=pool.url).strip() == "gpu0: VLAN 20 slot 1; hot-plug VLAN 20 slot 1"
    assert ok("unassign", "gpu0", *u).strip() == "gpu0: the pool; hot-remove VLAN 20 slot 1"
    assert ok("status", *u).splitlines() == [
        "backend sim: 2 host(s), 2 device(s), 1 assigned, 1 in the pool"
        " (limits: 4096 hosts, 32 devices per host)",
        "VLAN   10 h10: none",
        "VLAN   20 h20: ssd0@0",
    ]
    assert ok("devices", *u).splitlines() == [
        "id  name  kind  mac                vlan  slot",
        "1   ssd0  ssd   02:00:00:02:00:00  20    0",
        "2   gpu0  gpu   02:00:00:02:00:01  -     -",
    ]
    hosts = json.loads(ok("hosts", "--json", *u))
    assert [(h["name"], h["devices"]) for h in hosts] == [("h10", 0), ("h20", 1)]
    ok("report", "02:00:00:02:00:00", "tlps=12", "rate_gbps=9.5", *u)
    secret = ok("token", "t20", "--role", "host", "--vlan", "20", *u).split()[-1]
    assert [d["name"] for d in json.loads(ok("devices", "--json", *u, token=secret))] == ["ssd0"]
    assert len(json.loads(ok("events", "--json", "--vlan", "20", *u))) == 3
    audit = ok("audit", *u).splitlines()
    assert audit[0].split() == ["id", "at", "who", "action", "target", "result", "message"]
    assert audit[-1].split()[2:] == ["admin:admin", "create-token", "t20", "ok"]
    assert secret not in ok("audit", "--json", *u)

    # Errors: one line, status 2.
    for args, kw, text in [
        (
            ("assign", "ssd0", "20"),
            {"token": secret},
            "tca: error: 403: host token t20 may not assign: admin only",
        ),
        (("assign", "nope", "20"), {}, "tca: error: 404: no device nope"),
        (("assign", "ssd0", "4096"), {}, "tca: error: 400: VLAN id 4096 is outside 0..4095"),
        (("status",), {"token": "wrong"}, "tca: error: 401: unknown or revoked token"),
        (("status",), {"token": None}, "tca: error: no token: pass --token TOKEN or set TCA_POOL_TOKEN"),
        (("report", "02:00:00:02:00:00", "tlps"), {}, "tca: error: report: 'tlps': expected NAME=NUMBER"),
    ]:
        proc = tca(*args, *u, **kw)
        assert proc.returncode == 2 and proc.stdout == "", (args, proc.stderr)
        assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(text), (args, proc.stderr)


def test_cli_unreachable_manager():
    proc = tca("status", "--url", "http://127.0.0.1:9")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert proc.stderr.startswith("tca: error: cannot reach the pool manager at http://127.0.0.1:9")
    proc = tca("status", "--url", "ftp://x")
    assert proc.stderr.strip() == "tca: error: --url ftp://x: expected http://HOST:PORT"


def test_a_server_that_is_not_a_pool_manager_is_named_on_one_line(tmp_path):
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    def handler(*args, **kwargs):
        return Quiet(*args, directory=str(tmp_path), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = tca("status", url=f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "404: not a pool manager's answer: <!DOCTYPE" in lines[0], proc.stderr
