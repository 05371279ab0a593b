"""Parameters of the baseline models: a platform's ``[baselines.*]`` tables.

They are written like the rest of the platform files and loaded by the one platform loader
(:func:`tca.peach.platforms.load`), which checks each entry's fields, unit and allowed range::

    call_overhead = { value = "6.6 us", source = "...", calibrated = "..." }

``value`` is a quantity with a unit (a string), a whole number, or a word (``"QDR"``);
``source`` says where it comes from; ``calibrated`` is present only when the value was fitted to
a published number, and names that number. The accessors parse units with the project's one
unit parser (:mod:`tca.units`, platform spelling) and return SI base units (seconds, bytes per
second, bytes), so that the models never see a unit; values changed after loading (the
calibration solver's trials) are checked again there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tca import TcaError, units


@dataclass(frozen=True)
class Entry:
    """One parameter of a ``[baselines.<table>]`` table."""

    key: str
    value: object  # as loaded: "6.5 us", 8, "QDR"
    source: str
    calibrated: str | None


class Params:
    """The parameters of one ``[baselines.<table>]`` table, with unit-checked accessors."""

    def __init__(self, table: dict, where: str):
        self.where = where
        self._table = table

    def entry(self, key: str) -> Entry:
        """The parameter ``key``; a clear error when it is missing."""
        if key not in self._table:
            raise TcaError(f"{self.where}.{key}: missing parameter")
        item = self._table[key]
        return Entry(key, item["value"], item["source"], item.get("calibrated"))

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
        """All parameters in key order (for reports)."""
        return [self.entry(key) for key in self._table]


def table(baselines: dict, name: str) -> Params:
    """The ``[baselines.<name>]`` table of a platform's ``[baselines]`` tables."""
    if name not in baselines:
        raise TcaError(f"platform has no [baselines.{name}] table")
    return Params(baselines[name], f"baselines.{name}")


def load(platform: str | Path) -> dict:
    """The ``[baselines]`` tables of a platform (a name such as ``ha-pacs-tca`` or a ``.toml``
    path): ``{table: {key: {"value", "source", "calibrated"}}}``."""
    from tca.peach import platforms

    loaded = platforms.load(str(platform))
    baselines = loaded.baselines()
    if not baselines:
        raise TcaError(f"{Path(loaded.path).name}: no [baselines] table (see docs/baselines.md)")
    return baselines
