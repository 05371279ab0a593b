"""The baseline tests run on the ``[baselines.*]`` tables of ``fixtures/*.toml`` (the snippets
of docs/baselines.md), loaded by the platform loader: each fixture replaces the tables of the
bundled platform of the same name."""

import copy
import functools
import tempfile
from pathlib import Path

from tca.peach.baselines import load_params

FIXTURES = Path(__file__).parent / "fixtures"
PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
_DIR = tempfile.TemporaryDirectory(prefix="tca-baselines-")  # removed when the tests exit


def without_baselines(text: str) -> str:
    """Platform text without its ``[baselines.*]`` sections."""
    kept, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            skipping = line.startswith("[baselines")
        if not skipping:
            kept.append(line)
    return "".join(kept)


def fixture_platform(name: str, tables: str | None = None) -> Path:
    """A platform file: bundled platform ``name`` carrying the fixture's tables, or ``tables``
    (TOML text) instead when given."""
    if tables is None:
        tables = (FIXTURES / f"{name}.toml").read_text()
    directory = Path(tempfile.mkdtemp(dir=_DIR.name))
    path = directory / f"{name}.toml"
    path.write_text(without_baselines((PLATFORMS / f"{name}.toml").read_text()) + "\n" + tables)
    return path


@functools.cache
def _loaded(name: str) -> dict:
    return load_params(fixture_platform(name))


def fixture_params(name: str) -> dict:
    """The fixture's baseline parameters as the loader returns them (a copy the caller may
    change)."""
    return copy.deepcopy(_loaded(name))
