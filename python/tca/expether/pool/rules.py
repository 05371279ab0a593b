"""Limits of an ExpEther system, the validation of names and addresses, and the error every
refusal raises.

Limits (seed 002 Table 3.1, §3.3.2): at most 4096 hosts, because a host is named by the VLAN
id of its bridge (12 bits, 0..4095, all usable as the thesis says); at most 32 devices per
host, because the upstream bridge's downstream ports are numbered by the 5-bit PCIe device
number.
"""

from __future__ import annotations

import math
import re

MAX_VLAN = 4095
MAX_HOSTS = MAX_VLAN + 1
MAX_DEVICES_PER_HOST = 32

# Names are shown in the page and typed in the CLI: a letter first, so that a name can never be
# read as a numeric id or a MAC address.
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")
MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
COUNTER = re.compile(r"[a-z][a-z0-9_.-]{0,47}")
MAX_COUNTERS = 64


class PoolError(Exception):
    """A refused request: an HTTP status (4xx) and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def bad(message: str) -> PoolError:
    return PoolError(400, message)


def shown(value: object) -> str:
    """``value`` as a message quotes it: its repr, cut at 64 characters (a refused value is
    also kept in the audit log)."""
    text = repr(value)
    return text if len(text) <= 64 else text[:61] + "..."


def name(value: object, what: str = "name") -> str:
    if not isinstance(value, str) or not NAME.fullmatch(value):
        raise bad(f"{what} {shown(value)}: expected a letter then up to 63 letters, digits, '_', '.' or '-'")
    return value


def kind(value: object) -> str:
    if not isinstance(value, str) or not KIND.fullmatch(value):
        raise bad(f"kind {shown(value)}: expected lower-case letters, digits and '-' (e.g. ssd, gpu, nic)")
    return value


def mac(value: object) -> str:
    """A bridge's MAC address, lower case; a bridge has a unicast address (first byte even)."""
    text = value.lower() if isinstance(value, str) else None
    if text is None or not MAC.fullmatch(text):
        raise bad(f"MAC address {shown(value)}: expected six hex bytes like 02:00:00:00:00:01")
    if int(text[:2], 16) & 1:
        raise bad(f"MAC address {text}: a bridge has a unicast address (the first byte must be even)")
    return text


def vlan(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(f"VLAN id {shown(value)}: expected an integer 0..{MAX_VLAN}")
    if not 0 <= value <= MAX_VLAN:
        raise bad(f"VLAN id {value} is outside 0..{MAX_VLAN} (12-bit 802.1Q id, seed 002 §3.3.2)")
    return value


def counters(value: object) -> dict[str, int | float]:
    """A bridge report's counters: names to non-negative numbers."""
    if not isinstance(value, dict) or not value:
        raise bad("counters: expected a non-empty object of name: number")
    if len(value) > MAX_COUNTERS:
        raise bad(f"counters: {len(value)} entries, at most {MAX_COUNTERS}")
    out: dict[str, int | float] = {}
    for key, number in value.items():
        if not COUNTER.fullmatch(key):
            raise bad(f"counter name {shown(key)}: expected lower-case letters, digits, '_', '.' or '-'")
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise bad(f"counter {key}: {shown(number)} is not a number")
        if not math.isfinite(number) or number < 0:
            raise bad(f"counter {key}: {shown(number)} is not a finite non-negative number")
        out[key] = number
    return out
