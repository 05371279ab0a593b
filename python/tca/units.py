"""Quantities with units, parsed by the project's one unit parser (Rust ``base::units``).

Two spellings (the ``strict`` keyword picks one):

- platform files (``strict=True``): every value has a unit, sizes take binary prefixes only:
  ``"4 KiB"``, ``"150 ns"``, ``"3.66 GB/s"``;
- what people type (the default): also a bare integer size (``4096``), the OSU shorthand
  ``4K``, ``1M``, ``1G`` (binary), SI sizes ``1 kB``, ``4 GB`` (decimal), binary bandwidths
  ``1.2GiB/s`` and a bare ``0`` time. Python numbers are taken as already in the SI base unit.

Values come back in SI base units: bytes (int), seconds, bytes per second. Every bad value
raises :class:`tca.TcaError` with a one-line message, prefixed by ``what`` when given
(``"--sizes: expected a size ..."``).
"""

from __future__ import annotations

import math

from tca import TcaError, _native


def _fail(what: str | None, message: str) -> TcaError:
    return TcaError(f"{what}: {message}" if what else message)


def _quantity(value: object, dimension: str, what: str | None, strict: bool) -> float:
    """``value`` in the SI base unit of ``dimension`` (finite, not negative)."""
    if isinstance(value, str):
        try:
            return _native.parse_quantity(value, dimension, "platform" if strict else "argument")
        except ValueError as e:
            raise _fail(what, str(e)) from None
    if strict or isinstance(value, bool) or not isinstance(value, int | float):
        noun = "size" if dimension == "bytes" else dimension
        raise _fail(what, f"expected a {noun} with its unit as a string, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise _fail(what, f"{value!r} must be a finite number, not negative")
    return float(value)


def parse_bytes(
    value: object, what: str | None = None, *, strict: bool = False, allow_zero: bool = False
) -> int:
    """A size in bytes: ``"512MiB"``, ``"4 KiB"``, ``"1GB"``, ``4096``; positive unless
    ``allow_zero``."""
    if isinstance(value, int) and not isinstance(value, bool) and not strict:
        size = value
    else:
        number = _quantity(value, "bytes", what, strict)
        if number != int(number):
            raise _fail(what, f"'{value}' is not a whole number of bytes")
        size = int(number)
    if size < 0 or (size == 0 and not allow_zero):
        raise _fail(what, f"size '{value}' must be positive")
    return size


def parse_size_arg(text: str, what: str | None = None) -> int:
    """One positive size from a command line: ``8``, ``4K``, ``1M``, ``64KiB``, ``1GB``."""
    return parse_bytes(str(text), what)


def parse_sizes(text: str, what: str | None = "--sizes") -> list[int]:
    """``LOW:HIGH`` (powers of two times LOW, from LOW up to HIGH) or a comma list
    ``64,4096,1K``; every size positive."""
    text = str(text)
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 2:
            raise _fail(what, f"bad size range '{text}' (expected LOW:HIGH, e.g. 8:1M)")
        lo, hi = (parse_size_arg(t, what) for t in parts)
        if hi < lo:
            raise _fail(what, f"bad size range '{text}' (expected LOW:HIGH with LOW <= HIGH)")
        sizes, n = [], lo
        while n <= hi:
            sizes.append(n)
            n *= 2
        return sizes
    return [parse_size_arg(t, what) for t in text.split(",")]


def parse_counts(text: str, what: str, bounds: tuple[int, int] | None = None) -> list[int]:
    """A comma list of whole numbers (``1,2,4``), each within ``bounds`` (inclusive) if given."""
    try:
        values = [int(t) for t in str(text).split(",")]
    except ValueError:
        message = f"{what}: expected a comma list of whole numbers such as 1,2,4 (bad {what} '{text}')"
        raise TcaError(message) from None
    if bounds is not None:
        low, high = bounds
        for v in values:
            if not low <= v <= high:
                raise TcaError(f"{what}: {v} is outside {low}..{high}")
    return values


def parse_time(value: object, what: str | None = None, *, strict: bool = False) -> float:
    """A duration in seconds: ``"10us"``, ``"1.5 ms"``, ``"0"``, ``2e-6``."""
    return _quantity(value, "time", what, strict)


def parse_bandwidth(value: object, what: str | None = None, *, strict: bool = False) -> float:
    """A bandwidth in bytes per second, positive: ``"6GB/s"``, ``"500 MB/s"``, ``"1.2GiB/s"``."""
    rate = _quantity(value, "bandwidth", what, strict)
    if rate <= 0:
        raise _fail(what, f"bandwidth '{value}' must be greater than zero")
    return rate
