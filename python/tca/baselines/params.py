"""Parameters of the baseline models, read from a platform's ``[baselines.*]`` tables.

Every parameter is written like the rest of the platform files, and its unit is read by the
project's one unit parser (:mod:`tca.units`, platform spelling)::

    call_overhead = { value = "6.7 us", source = "...", calibrated = "..." }

``value`` is a quantity with a unit (a string), a plain number, or a word (``"QDR"``);
``source`` says where it comes from; ``calibrated`` is present only when the value was fitted to
a published number, and names that number. Values are returned in SI base units (seconds,
bytes per second, bytes) so that the models never see a unit.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from tca import TcaError, units

_FIELDS = {"value", "source", "calibrated"}


@dataclass(frozen=True)
class Entry:
    """One parameter as written in the platform file."""

    key: str
    value: object  # the raw TOML value ("6.5 us", 8, "QDR")
    source: str
    calibrated: str | None


class Params:
    """The parameters of one ``[baselines.<table>]`` table, with unit-checked accessors."""

    def __init__(self, table: object, where: str):
        if not isinstance(table, dict):
            raise TcaError(f"[{where}] must be a table of parameters")
        self.where = where
        self._table = table

    def entry(self, key: str) -> Entry:
        """The parameter ``key``; a clear error when it is missing or malformed."""
        name = f"{self.where}.{key}"
        if key not in self._table:
            raise TcaError(f"{name}: missing parameter")
        item = self._table[key]
        if not isinstance(item, dict):
            raise TcaError(f'{name}: expected {{ value = ..., source = "..." }}, got {item!r}')
        for field in ("value", "source"):
            if field not in item:
                raise TcaError(f"{name}: missing field '{field}'")
        extra = sorted(set(item) - _FIELDS)
        if extra:
            raise TcaError(f"{name}: unknown field '{extra[0]}' (expected value, source, calibrated)")
        source, calibrated = item["source"], item.get("calibrated")
        if not isinstance(source, str) or not source.strip():
            raise TcaError(f"{name}: 'source' must be a non-empty string")
        if calibrated is not None and (not isinstance(calibrated, str) or not calibrated.strip()):
            raise TcaError(f"{name}: 'calibrated' must be a non-empty string naming the fitted number")
        return Entry(key, item["value"], source, calibrated)

    def time(self, key: str) -> float:
        """A duration in seconds."""
        return units.parse_time(self.entry(key).value, f"{self.where}.{key}", strict=True)

    def bandwidth(self, key: str) -> float:
        """A rate in bytes per second; must be positive."""
        return units.parse_bandwidth(self.entry(key).value, f"{self.where}.{key}", strict=True)

    def size(self, key: str) -> int:
        """A size in bytes; must be positive."""
        return units.parse_bytes(self.entry(key).value, f"{self.where}.{key}", strict=True)

    def count(self, key: str) -> int:
        """A positive whole number (lanes, rails)."""
        e = self.entry(key)
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            raise TcaError(f"{self.where}.{key}: expected a whole number, got {e.value!r}")
        if e.value < 1:
            raise TcaError(f"{self.where}.{key}: must be at least 1, got {e.value}")
        return e.value

    def word(self, key: str, choices: tuple[str, ...]) -> str:
        """One of a fixed set of names (a PCIe generation, an InfiniBand speed)."""
        e = self.entry(key)
        if not isinstance(e.value, str) or e.value not in choices:
            raise TcaError(f"{self.where}.{key}: expected one of {', '.join(choices)}, got {e.value!r}")
        return e.value

    def entries(self) -> list[Entry]:
        """All parameters in file order (for reports)."""
        return [self.entry(key) for key in self._table]


def table(baselines: dict, name: str) -> Params:
    """The ``[baselines.<name>]`` table of a platform's ``[baselines]`` table."""
    if not isinstance(baselines, dict):
        raise TcaError("baseline parameters must be the platform's [baselines] table")
    if name not in baselines:
        raise TcaError(f"platform has no [baselines.{name}] table")
    return Params(baselines[name], f"baselines.{name}")


def load(platform: str | Path) -> dict:
    """The ``[baselines]`` table of a platform (a name such as ``ha-pacs-tca`` or a ``.toml`` path)."""
    from tca import platforms

    path = platforms.resolve(str(platform))
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise TcaError(f"{path}: {e}") from None
    if "baselines" not in data:
        raise TcaError(f"{path.name}: no [baselines] table (see docs/baselines.md)")
    return data["baselines"]
