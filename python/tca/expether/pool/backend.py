"""What the pool manager drives on every change: an ExpEther system.

The manager keeps the inventory and decides; a backend carries each decision to the bridges
and reports what the hosts saw. In the thesis the system manager changes an assignment by
sending a management frame to the device-side bridge, which sets the bridge's VLAN; the host
then sees a native PCIe hot-plug or hot-remove (seed 002 §3.3.1, Table 3.1).

The manager calls a backend inside its write transaction, under its lock, so calls never
overlap. A refused call raises :class:`BackendError` and must leave the system unchanged; the
manager then rolls its transaction back. If the manager's transaction fails after a backend
call succeeded, the manager calls :meth:`Backend.restore` with the state in the database.

Backends:

- ``sim`` (:class:`SimBackend`): the distributed virtual PCIe switch of the protocol core
  (crates/expether/proto ``vswitch``, through ``tca._native.VirtualSwitch``): the same code
  that the simulated ExpEther systems use decides slots, events and limits.
- ``software`` (:class:`tca.expether.pool.software.SoftwareBackend`): the software ExpEther
  on Linux links, the program ``expether-system`` (crates/expether/net): host-side and
  device-side bridges in network namespaces, each device with a file-backed block device. The
  same virtual switch computes slots and events; the system enacts them (sets the device
  bridge's VLAN, updates the hosts' views) and reports the events its hosts saw.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from tca.expether.pool.rules import MAX_DEVICES_PER_HOST


class BackendError(Exception):
    """The system refused a change (one line); nothing changed."""


@dataclass(frozen=True)
class Event:
    """A native PCIe event as a host sees it: a device at a downstream port (slot) of the
    host's virtual switch appeared (``hot-plug``) or went away (``hot-remove``)."""

    kind: str
    vlan: int
    slot: int
    device: str


class Backend(abc.ABC):
    """An ExpEther system as the manager drives it. Hosts are named by the VLAN id of their
    bridge, devices by the MAC address of theirs."""

    name: str

    @abc.abstractmethod
    def join_host(self, mac: str, vlan: int) -> None:
        """A host bridge enters the system on ``vlan``."""

    @abc.abstractmethod
    def leave_host(self, vlan: int) -> None:
        """The host bridge on ``vlan`` leaves (the manager only asks when it has no device)."""

    @abc.abstractmethod
    def join_device(self, mac: str) -> None:
        """A device bridge enters the pool, assigned to no host."""

    @abc.abstractmethod
    def leave_device(self, mac: str) -> None:
        """A device bridge in the pool leaves."""

    @abc.abstractmethod
    def assign(self, mac: str, vlan: int) -> tuple[int, list[Event]]:
        """Sets the device bridge's VLAN to the host's: returns the device's slot on that host
        and the events the hosts saw (a hot-remove on the old host first, on a move)."""

    @abc.abstractmethod
    def release(self, mac: str) -> list[Event]:
        """Returns the device to the pool: the events its host saw."""

    @abc.abstractmethod
    def restore(self, hosts: list[dict], devices: list[dict]) -> None:
        """Makes the system hold exactly this state: hosts (``mac``, ``vlan``) and devices
        (``mac``, ``vlan``, ``slot``), without recording events."""

    def close(self) -> None:
        """The manager stops: lets go of the system (nothing to do for most backends)."""
        return None


class SimBackend(Backend):
    """The simulated system: the protocol core's distributed virtual PCIe switch."""

    name = "sim"

    def __init__(self, ports: int = MAX_DEVICES_PER_HOST):
        from tca._native import VirtualSwitch

        self._new = lambda: VirtualSwitch(ports)
        self.switch = self._new()

    def _call(self, method, *args):
        try:
            return getattr(self.switch, method)(*args)
        except ValueError as e:
            raise BackendError(str(e)) from None

    def _events(self) -> list[Event]:
        return [Event(*e) for e in self.switch.poll_events()]

    def join_host(self, mac: str, vlan: int) -> None:
        self._call("join_host", mac, vlan)
        self._events()  # a new host has no device (the manager refuses a VLAN still in use)

    def leave_host(self, vlan: int) -> None:
        self._call("leave_host", vlan)

    def join_device(self, mac: str) -> None:
        self._call("join_device", mac)

    def leave_device(self, mac: str) -> None:
        self._call("leave_device", mac)
        self._events()

    def assign(self, mac: str, vlan: int) -> tuple[int, list[Event]]:
        slot = self._call("assign", mac, vlan)
        return slot, self._events()

    def release(self, mac: str) -> list[Event]:
        self._call("release", mac)
        return self._events()

    def restore(self, hosts: list[dict], devices: list[dict]) -> None:
        """A fresh switch with the same hosts, devices and slots. The switch gives a plugged
        device the lowest free slot, so each host's devices are plugged in slot order with a
        filler in every gap, and the fillers leave afterwards. Fillers have multicast MACs,
        which no bridge of the inventory can have (rules.mac)."""
        self.switch = self._new()
        for h in hosts:
            self._call("join_host", h["mac"], h["vlan"])
        by_host: dict[int, dict[int, str]] = {}
        for d in devices:
            self._call("join_device", d["mac"])
            if d["vlan"] is not None:
                by_host.setdefault(d["vlan"], {})[d["slot"]] = d["mac"]
        fillers = []
        for vlan, slots in by_host.items():
            for slot in range(max(slots) + 1):
                mac = slots.get(slot)
                if mac is None:
                    n = len(fillers)
                    mac = f"03:00:00:{n >> 16 & 0xFF:02x}:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}"
                    self._call("join_device", mac)
                    fillers.append(mac)
                if self._call("assign", mac, vlan) != slot:
                    raise BackendError(f"restore: device {mac} did not get slot {slot} on VLAN {vlan}")
        for mac in fillers:
            self._call("leave_device", mac)
        self._events()


BACKENDS = ("sim", "software")


def make_backend(
    name: str, system: str | None = None, hosts: int | None = None, devices: int | None = None
) -> Backend:
    """The backend called ``name``. ``software`` needs ``system``, the path of the software
    system's control socket (attached to if a system listens there, else one with ``hosts``
    hosts and ``devices`` devices, 2 each when None, is started)."""
    if name == "sim":
        return SimBackend()
    if name == "software":
        if not system:
            raise BackendError(
                "backend 'software' needs --system SOCKET (the software system's control socket)"
            )
        from tca.expether.pool.software import SoftwareBackend

        return SoftwareBackend(system, hosts, devices)
    raise BackendError(f"unknown backend {name!r}: expected one of {', '.join(BACKENDS)}")
