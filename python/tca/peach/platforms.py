"""Finding and loading platform files (``platforms/*.toml``)."""

from __future__ import annotations

import os
from pathlib import Path

from tca import TcaError, _native


def platforms_dir() -> Path:
    """The directory of bundled platform files (``$TCA_PLATFORMS`` overrides it)."""
    env = os.environ.get("TCA_PLATFORMS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "platforms"


def available() -> list[Path]:
    """Bundled platform files, sorted by name."""
    return sorted(platforms_dir().glob("*.toml"))


def resolve(name_or_path: str) -> Path:
    """A platform name (``peach2-testbed-2013``) or a path to a ``.toml`` file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or os.sep in name_or_path:
        if not candidate.is_file():
            raise TcaError(f"platform file not found: {name_or_path}")
        return candidate
    path = platforms_dir() / f"{name_or_path}.toml"
    if not path.is_file():
        names = ", ".join(p.stem for p in available()) or "none"
        raise TcaError(f"unknown platform '{name_or_path}' (available: {names})")
    return path


def load(name_or_path: str) -> _native.Platform:
    """Loads and validates a platform; errors become :class:`TcaError` with a one-line message."""
    path = resolve(name_or_path)
    try:
        return _native.Platform.load(str(path))
    except ValueError as e:
        raise TcaError(str(e)) from None
