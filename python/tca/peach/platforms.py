"""Finding and loading platform files: TCA's in ``platforms/*.toml``, the other systems' in
``platforms/<system>/*.toml`` (``hxb``, ``expether``), by name or by path."""

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


def available(system: str | None = None) -> list[Path]:
    """Bundled platform files of TCA (``system`` None) or of ``system``, sorted by name."""
    root = platforms_dir() if system is None else platforms_dir() / system
    return sorted(root.glob("*.toml"))


def resolve(name_or_path: str, system: str | None = None) -> Path:
    """A platform name (``peach2-testbed-2013``; with ``system="hxb"``, ``hxb-testbed-2006``
    from ``platforms/hxb``) or a path to a ``.toml`` file."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or os.sep in name_or_path:
        if not candidate.is_file():
            raise TcaError(f"platform file not found: {name_or_path}")
        return candidate
    root = platforms_dir() if system is None else platforms_dir() / system
    path = root / f"{name_or_path}.toml"
    if not path.is_file():
        names = ", ".join(p.stem for p in available(system)) or "none"
        what = "platform" if system is None else f"{'HXB' if system == 'hxb' else 'ExpEther'} platform"
        raise TcaError(f"unknown {what} '{name_or_path}' (available: {names})")
    return path


def load(name_or_path: str) -> _native.Platform:
    """Loads and validates a platform; errors become :class:`TcaError` with a one-line message."""
    path = resolve(name_or_path)
    try:
        return _native.Platform.load(str(path))
    except ValueError as e:
        raise TcaError(str(e)) from None


def check_nodes(name_or_path: str, counts, least: int = 1, label: str = "--nodes {n}") -> _native.Platform:
    """The platform, or a one-line error for a node count it cannot run: below ``least`` or
    above its nodes. The platform is named as the user gave it (a file by its path); ``label``
    says what asked for ``n`` nodes."""
    loaded = load(name_or_path)
    for n in counts:
        if n < least:
            raise TcaError(f"{label.format(n=n)}: needs {least} or more nodes")
        if n > loaded.nodes:
            nodes = "1 node" if loaded.nodes == 1 else f"{loaded.nodes} nodes"
            raise TcaError(f"{label.format(n=n)}: platform {name_or_path} has {nodes}")
    return loaded
