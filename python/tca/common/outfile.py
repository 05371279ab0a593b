"""Checks of output files named on the command line (``--plot``, ``--trace``, ``--out``),
made before a benchmark runs so that a bad path costs nothing and never ends in a traceback."""

from __future__ import annotations

from pathlib import Path

from tca import TcaError


def writable_file(path: str | Path, option: str, suffixes: tuple[str, ...]) -> Path:
    """``path`` if a file with one of ``suffixes`` can be created there: not a directory, in an
    existing directory that takes it (tried; a file that was not there is removed again);
    otherwise a one-line TcaError naming ``option``."""
    if str(path) == "":
        raise TcaError(f"{option}: empty file name (give a file such as out{suffixes[0]})")
    p = Path(path)
    if p.is_dir():
        raise TcaError(f"{option} {path}: is a directory (give a file such as {p / ('out' + suffixes[0])})")
    if p.suffix.lower() not in suffixes:
        raise TcaError(
            f"{option} {path}: unsupported extension '{p.suffix}' (expected {', '.join(suffixes)})"
        )
    if not p.parent.is_dir():
        raise TcaError(f"{option} {path}: directory {p.parent} does not exist")
    existed = p.exists()
    try:
        with open(p, "a"):
            pass
    except OSError as e:
        raise TcaError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    if not existed:
        p.unlink(missing_ok=True)
    return p


def writable_dir(path: str | Path, option: str) -> Path:
    """``path`` as a directory that exists (created if needed) and can be written into."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".tca-write-test"
        probe.touch()
        probe.unlink()
    except OSError as e:
        raise TcaError(f"{option} {path}: cannot write there ({e.strerror or e})") from None
    return p
