"""The layout rules of DESIGN.md hold for this tree, and the checker catches each broken rule."""

import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import check_layout  # noqa: E402


def test_the_tree_keeps_the_layout_rules():
    r = subprocess.run([sys.executable, ROOT / "tools" / "check_layout.py"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_each_broken_rule_is_named():
    inner = {
        "base": set(),
        "tca-proto": {"base"},
        "tca-model": {"base", "tca-proto"},
        "tca-sim": {"tca-model", "tca-proto"},
        "tca-shm": {"tca-sim"},
        "hxb-proto": set(),
    }
    outer = {name: set() for name in inner} | {"hxb-proto": {"libc"}}
    errors = check_layout.crate_rules(inner, outer)
    assert errors == [
        "hxb-proto: a protocol core depends on libc",
        "tca-model: a model depends on tca-proto (only a sim crate joins them)",
        "tca-proto: a protocol core depends on base",
        "tca-shm: a real driver depends on base, tca-model, tca-sim",
    ]
