"""The ``software`` backend: the pool manager drives a software ExpEther system on this host.

The system is the program ``expether-system`` (crates/expether/net, docs/expether-net.md
"System mode"): N host namespaces with a host-side bridge each and one device namespace with
M pooled devices, each behind its own device-side bridge with a file-backed NVMe-like block
device, all on one Linux bridge; it is driven over a Unix socket, one JSON object per line.

:class:`SoftwareBackend` takes the socket path. If a system listens there, the backend
attaches to it and leaves it running when the manager stops; otherwise it starts
``expether-system --socket PATH --hosts N --devices M --watch-stdin`` and stops it when the
manager stops (or dies: the system ends when its standard input closes). Starting one needs
root.

The manager's hosts and devices are the system's bridges, named by MAC: a host or device the
manager adds must be one of the system's bridges (``list`` gives them; 02:ee:01:00:00:0i for
hosts, 02:ee:02:00:00:0j for devices), anything else is refused. Slots and hot-plug events are
computed by the protocol core's virtual switch exactly as in the ``sim`` backend; the system
enacts each change (``join_host`` sets the host bridge's VLAN, ``assign`` and ``release`` set
the device bridge's VLAN: the system manager's act of seed 002 §3.3.1) and reports the events
its hosts saw, which must agree with the switch's. A refused change leaves the switch as it
was and puts the system back in the manager's state.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
from pathlib import Path

from tca.expether.pool.backend import BackendError, Event, SimBackend

ROOT = Path(__file__).resolve().parents[4]
PROGRAM = "expether-system"
START_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 20.0  # the longest request, a host's I/O, is bounded by the system (a few s)


def program() -> Path | None:
    """``expether-system`` from $TCA_EXPETHER_SYSTEM or the cargo target directory, if built."""
    env = os.environ.get("TCA_EXPETHER_SYSTEM")
    if env:
        return Path(env) if Path(env).is_file() else None
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / PROGRAM
    return exe if exe.is_file() else None


class SystemClient:
    """One connection to a running system's control socket."""

    def __init__(self, path: str | Path, timeout: float = CALL_TIMEOUT_S):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(self.path)
        except OSError as e:
            self.sock.close()
            raise BackendError(f"software system at {self.path}: {e.strerror or e}") from None
        self.file = self.sock.makefile("rw", encoding="utf-8")

    def call(self, op: str, **fields) -> dict:
        """Sends one request; returns the answer, or raises BackendError with its error."""
        try:
            self.file.write(json.dumps({"op": op} | fields) + "\n")
            self.file.flush()
            line = self.file.readline()
        except OSError as e:
            raise BackendError(f"software system at {self.path}: {op}: {e}") from None
        if not line:
            raise BackendError(f"software system at {self.path}: it closed the connection")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise BackendError(f"software system: {answer.get('error', 'refused')}")
        return answer

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def _listening(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class SoftwareBackend(SimBackend):
    """The software ExpEther system: slots and events from the protocol core's virtual switch
    (inherited from :class:`SimBackend`), enacted by ``expether-system``."""

    name = "software"

    def __init__(self, path: str | Path, hosts: int | None = None, devices: int | None = None):
        """Starts a system of ``hosts`` hosts and ``devices`` devices (2 each when None) unless
        one listens at ``path``; one attached to must have the counts given."""
        super().__init__()
        self.path = str(path)
        self.proc: subprocess.Popen | None = None
        if not _listening(self.path):
            self.proc = self._start(2 if hosts is None else hosts, 2 if devices is None else devices)
        self.system = SystemClient(self.path)
        listing = self.system.call("list")
        if self.proc is None:
            for option, want, have in (
                ("--system-hosts", hosts, len(listing["hosts"])),
                ("--system-devices", devices, len(listing["devices"])),
            ):
                if want is not None and want != have:
                    self.system.close()
                    raise BackendError(
                        f"{option} {want}: the system attached to at {self.path} has {have} "
                        f"(the counts apply to a system serve starts)"
                    )
        self.host_bridges = {h["mac"]: h for h in listing["hosts"]}
        self.device_bridges = {d["mac"]: d for d in listing["devices"]}
        # The state the system should hold: host MAC -> VLAN, device MAC -> (VLAN, slot).
        self.hosts: dict[str, int] = {}
        self.devices: dict[str, tuple[int, int] | None] = {}

    def _start(self, hosts: int, devices: int) -> subprocess.Popen:
        exe = program()
        if exe is None:
            raise BackendError(
                f"{PROGRAM} is not built (cargo build --release -p expether-net, or set $TCA_EXPETHER_SYSTEM)"
            )
        args = [
            str(exe),
            "--socket",
            self.path,
            "--hosts",
            str(hosts),
            "--devices",
            str(devices),
            "--watch-stdin",
        ]
        proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("ready "):
            proc.kill()
            proc.wait()
            err = (proc.stderr.read().strip().splitlines() or [f"no answer within {START_TIMEOUT_S:.0f} s"])[
                -1
            ]
            raise BackendError(f"{PROGRAM} did not start: {err.removeprefix(PROGRAM + ': error: ')}")
        return proc

    def close(self) -> None:
        """Disconnects; stops the system if this backend started it (its namespaces go)."""
        self.system.close()
        if self.proc is not None:
            self.proc.stdin.close()  # --watch-stdin: the system stops and cleans up
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc.stderr.close()
            self.proc = None

    # ---- helpers ----

    def _known(self, mac: str, bridges: dict, what: str) -> str:
        m = mac.lower()
        if m not in bridges:
            raise BackendError(
                f"no {what} bridge {mac} in the software system (its {what} bridges: {', '.join(bridges)})"
            )
        return m

    def _enact(self, mac: str, to: tuple[int, int] | None, expected: list[Event]) -> list[Event]:
        """Sets the device bridge's VLAN in the system; its events must be the switch's."""
        fields = {"mac": mac, "vlan": None} if to is None else {"mac": mac, "vlan": to[0], "slot": to[1]}
        try:
            answer = self.system.call("device", **fields)
        except BackendError:
            self._rollback()
            raise
        seen = [Event(e["kind"], e["vlan"], e["slot"], e["device"]) for e in answer["events"]]
        want = [Event(e.kind, e.vlan, e.slot, e.device.lower()) for e in expected]
        if seen != want:
            self._rollback()
            raise BackendError(f"software system: its hosts saw {seen}, the virtual switch says {want}")
        self.devices[mac] = to
        return expected

    def _rollback(self) -> None:
        """The switch and the system back to the recorded state."""
        hosts = [{"mac": m, "vlan": v} for m, v in self.hosts.items()]
        devices = [
            {"mac": m, "vlan": at[0] if at else None, "slot": at[1] if at else None}
            for m, at in self.devices.items()
        ]
        SimBackend.restore(self, hosts, devices)
        try:
            self._sync()
        except BackendError:
            pass  # the next restore tries again; the error at hand is what the caller sees

    def _sync(self) -> None:
        """Makes the system hold ``self.hosts`` and ``self.devices``, changing only what differs."""
        listing = self.system.call("list")
        now_hosts = {h["mac"]: h["vlan"] for h in listing["hosts"]}
        now_devs = {
            d["mac"]: (d["vlan"], d["slot"]) if d["vlan"] is not None else None for d in listing["devices"]
        }
        want_devs = {m: self.devices.get(m) for m in now_devs}
        for m, at in now_devs.items():
            if at is not None and at != want_devs[m]:
                self.system.call("device", mac=m, vlan=None)
        for m, vlan in now_hosts.items():
            if vlan != self.hosts.get(m):
                self.system.call("host", mac=m, vlan=self.hosts.get(m))
        for m, at in want_devs.items():
            if at is not None and at != now_devs[m]:
                self.system.call("device", mac=m, vlan=at[0], slot=at[1])

    # ---- Backend ----

    def join_host(self, mac: str, vlan: int) -> None:
        m = self._known(mac, self.host_bridges, "host")
        super().join_host(m, vlan)
        try:
            self.system.call("host", mac=m, vlan=vlan)
        except BackendError:
            self._call("leave_host", vlan)
            raise
        self.hosts[m] = vlan

    def leave_host(self, vlan: int) -> None:
        m = next((h for h, v in self.hosts.items() if v == vlan), None)
        super().leave_host(vlan)
        if m is not None:
            try:
                self.system.call("host", mac=m, vlan=None)
            except BackendError:
                self._call("join_host", m, vlan)
                self._events()
                raise
            del self.hosts[m]

    def join_device(self, mac: str) -> None:
        m = self._known(mac, self.device_bridges, "device")
        super().join_device(m)
        self.devices[m] = None
        try:
            self._sync()  # a device the system still had on a VLAN goes to the pool
        except BackendError:
            self._call("leave_device", m)
            del self.devices[m]
            raise

    def leave_device(self, mac: str) -> None:
        m = mac.lower()
        super().leave_device(m)  # the manager only removes devices in the pool: no event
        self.devices.pop(m, None)

    def assign(self, mac: str, vlan: int) -> tuple[int, list[Event]]:
        m = mac.lower()
        slot, events = super().assign(m, vlan)
        return slot, self._enact(m, (vlan, slot), events)

    def release(self, mac: str) -> list[Event]:
        m = mac.lower()
        return self._enact(m, None, super().release(m))

    def restore(self, hosts: list[dict], devices: list[dict]) -> None:
        """The switch rebuilt as in ``sim``; the system changed only where it differs from the
        database (an attached system that kept its state is not touched)."""
        for h in hosts:
            self._known(h["mac"], self.host_bridges, "host")
        for d in devices:
            self._known(d["mac"], self.device_bridges, "device")
        lower = [h | {"mac": h["mac"].lower()} for h in hosts]
        dlower = [d | {"mac": d["mac"].lower()} for d in devices]
        super().restore(lower, dlower)
        self.hosts = {h["mac"]: h["vlan"] for h in lower}
        self.devices = {d["mac"]: (d["vlan"], d["slot"]) if d["vlan"] is not None else None for d in dlower}
        self._sync()

    def io(self, host: str, slot: int | None = None, device: str | None = None, blocks: int = 8) -> dict:
        """Has host bridge ``host`` write ``blocks`` blocks to the device at ``slot`` of its view
        (or to device bridge ``device``, whatever its view says), read them back and compare."""
        target = {"slot": slot} if device is None else {"device": device.lower()}
        return self.system.call("io", host=host.lower(), blocks=blocks, **target)
