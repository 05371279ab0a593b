"""A pool manager in a subprocess (``tca expether pool serve``) for the pool tests, and
helpers to fill it."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

from tca.expether.pool.client import Client

ROOT = Path(__file__).resolve().parents[2]
ADMIN = "admin-token-0123456789abcdef"


class PoolServer:
    def __init__(self, db: Path, token: str | None = ADMIN, extra: tuple[str, ...] = ()):
        self.db, self.token, self.extra = db, token, list(extra)
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout: float = 30.0) -> PoolServer:
        args = [sys.executable, "-m", "tca", "expether", "pool", "serve", "--db", str(self.db), "--port", "0"]
        if self.token:
            args += ["--admin-token", self.token]
        args += self.extra
        env = dict(os.environ)
        env.pop("TCA_POOL_ADMIN_TOKEN", None)
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if "http://" not in line:
            self.proc.kill()
            raise AssertionError(f"pool manager did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.split()[3].rstrip("/")
        return self

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=15)
        finally:
            self.proc.stdout.close()
            self.proc.stderr.close()

    def client(self, token: str | None = ADMIN) -> Client:
        return Client(self.url, token)


def serving(tmp_path: Path):
    """The body of a ``pool`` fixture: a started server on a new database, stopped afterwards."""
    server = PoolServer(tmp_path / "pool.db").start()
    yield server
    if server.proc.poll() is None:
        server.stop()


def mac(kind: int, n: int) -> str:
    """A unicast MAC: kind 1 for hosts, 2 for devices."""
    return f"02:00:00:{kind:02x}:{n >> 8:02x}:{n & 0xFF:02x}"


def populate(c: Client, hosts: list[int], devices: int, kind: str = "ssd") -> None:
    """Hosts h<VLAN> on the given VLANs and devices d0.. in the pool."""
    for v in hosts:
        c.call("POST", "/api/hosts", {"name": f"h{v}", "vlan": v, "mac": mac(1, v)})
    for i in range(devices):
        c.call("POST", "/api/devices", {"name": f"d{i}", "kind": kind, "mac": mac(2, i)})


def check_consistent(devices: list[dict], audit: list[dict], events: list[dict]) -> dict[str, tuple]:
    """Checks that the final device table, the audit log and the hot-plug events tell one story;
    returns {device name: (vlan, slot)}."""
    final = {d["name"]: (d["vlan"], d["slot"]) for d in devices}
    # One group per device by construction; each host's slots distinct and at most 32.
    per_host: dict[int, list[int]] = {}
    for vlan, slot in final.values():
        if vlan is not None:
            per_host.setdefault(vlan, []).append(slot)
    for vlan, slots in per_host.items():
        assert len(slots) == len(set(slots)) <= 32, (vlan, slots)
    # Replaying the successful changes of the audit log, in order, gives the final state.
    replay = {name: (None, None) for name in final}
    for entry in audit:
        if entry["result"] == "ok" and entry["action"] in ("assign", "unassign"):
            d = entry["detail"]
            replay[d["device"]] = (d["to"], d["slot"])
    assert replay == final
    # Replaying the events: every device alternates plug and remove, and ends where it is.
    by_mac = {d["mac"]: d["name"] for d in devices}
    seen: dict[str, tuple] = {name: (None, None) for name in final}
    for e in events:
        name = by_mac[e["device"]]
        if e["kind"] == "hot-plug":
            assert seen[name] == (None, None), f"{name} plugged twice: {e}"
            seen[name] = (e["vlan"], e["slot"])
        else:
            assert seen[name] == (e["vlan"], e["slot"]), f"{name} removed from where it was not: {e}"
            seen[name] = (None, None)
    assert seen == final
    return final
