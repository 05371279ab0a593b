#!/usr/bin/env python3
"""Checks the layout rules of DESIGN.md on the Cargo workspace and the source tree.

- A protocol core (``*-proto``) depends on no simulator, model, platform or I/O crate: of the
  workspace it may use other protocol cores only, and no external crate that does I/O.
- A real driver (``*-shm``, ``*-net``) depends, even indirectly, on no simulator or model crate.
- A timing model (``*-model``) depends on no protocol core: only a ``*-sim`` crate joins the two.
- No source file is longer than 800 lines.

Prints one line per broken rule and exits 1 if any; run by ``make lint`` and the tests.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 800
# Crates of the workspace that simulate or model hardware.
SIMULATION = ("base", "pcie")
IO_CRATES = {"libc", "nix", "socket2", "tokio", "mio", "pyroute2"}


def workspace_deps() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Direct workspace and external dependencies (normal ones, not dev or build) by crate."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    packages = json.loads(out)["packages"]
    names = {p["name"] for p in packages}
    inner: dict[str, set[str]] = {}
    outer: dict[str, set[str]] = {}
    for p in packages:
        deps = {d["name"] for d in p["dependencies"] if d["kind"] is None}
        inner[p["name"]] = deps & names
        outer[p["name"]] = deps - names
    return inner, outer


def closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(graph.get(n, ()))
    return seen


def is_sim_or_model(name: str) -> bool:
    return name in SIMULATION or name.endswith(("-model", "-sim"))


def crate_rules(inner: dict[str, set[str]], outer: dict[str, set[str]]) -> list[str]:
    """The broken rules of a workspace given its direct dependencies (workspace, external)."""
    errors = []
    for name in sorted(inner):
        reach = closure(inner, name)
        if name.endswith("-proto"):
            bad = sorted(d for d in reach if not d.endswith("-proto"))
            bad += sorted(outer[name] & IO_CRATES)
            if bad:
                errors.append(f"{name}: a protocol core depends on {', '.join(bad)}")
        if name.endswith(("-shm", "-net")):
            bad = sorted(d for d in reach if is_sim_or_model(d))
            if bad:
                errors.append(f"{name}: a real driver depends on {', '.join(bad)}")
        if name.endswith("-model"):
            bad = sorted(d for d in reach if d.endswith("-proto"))
            if bad:
                errors.append(f"{name}: a model depends on {', '.join(bad)} (only a sim crate joins them)")
    return errors


def long_files() -> list[str]:
    errors = []
    for top in ("crates", "python", "tests", "tools", "examples"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in (".rs", ".py", ".c", ".h") or "target" in path.parts:
                continue
            n = sum(1 for _ in path.open(encoding="utf-8", errors="replace"))
            if n > MAX_LINES:
                errors.append(f"{path.relative_to(ROOT)}: {n} lines (at most {MAX_LINES})")
    return errors


def main() -> int:
    errors = crate_rules(*workspace_deps()) + long_files()
    for e in errors:
        print(f"layout: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
