"""Examples are tests: every example's output is checked against tests/examples/*.out.

Each .out file holds one command and the output it must print (syntax: tests/examples/README.md).
Simulated runs are deterministic and checked line for line, simulated times included; runs on
this host's shm fabric print measured times, which the file matches with regular expressions.

When a model change moves a simulated number on purpose, regenerate the exact lines with

    python tests/test_examples.py --update [NAME ...]      (or: make examples-expected)

and explain the diff of tests/examples/ in the commit message.
"""

import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = Path(__file__).resolve().parent / "examples"
TIMEOUT_S = 180
ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class FormatError(Exception):
    """A .out file that does not follow the syntax of tests/examples/README.md."""


@dataclass
class Example:
    """One .out file: the lines before the output, the command, and the expected lines."""

    path: Path
    header: list[str]  # comments, directives and the command, kept verbatim by --update
    command: str  # as written after "$ "
    env: dict[str, str]
    argv: list[str]
    needs: list[str]
    expected: list[str]  # "> TEXT" (exact) or "~ REGEX" (pattern), as written


def parse(path: Path) -> Example:
    header, expected, commands, needs = [], [], [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        where = f"{path.name}:{number}"
        if line == ">" or line.startswith(("> ", "~ ")):
            if line.startswith("~ "):
                try:
                    re.compile(line[2:])
                except re.error as e:
                    raise FormatError(f"{where}: bad regular expression: {e}") from None
            expected.append(line)
        elif expected:
            raise FormatError(f"{where}: only '> ' and '~ ' lines may follow the first output line")
        elif line.startswith("$ "):
            commands.append(line[2:])
        elif line.startswith("! needs "):
            needs.append(line[len("! needs ") :].strip())
        elif line.startswith("#") or not line.strip():
            pass
        else:
            raise FormatError(f"{where}: a line must start with '# ', '! needs ', '$ ', '> ' or '~ '")
        if not expected:
            header.append(line)
    if len(commands) != 1:
        raise FormatError(f"{path.name}: needs exactly one '$ ' command line, found {len(commands)}")
    words = shlex.split(commands[0])
    env = {}
    while words and ENV_WORD.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words:
        raise FormatError(f"{path.name}: the '$ ' line names no program")
    return Example(path, header, commands[0], env, words, needs, expected)


def missing_prerequisite(example: Example) -> str | None:
    """The first `! needs` entry that is absent here: a path (starts with /) or a command."""
    for need in example.needs:
        present = Path(need).exists() if need.startswith("/") else shutil.which(need)
        if not present:
            return need
    return None


def run(example: Example) -> list[str]:
    """Runs the command from the repository root; returns its stdout lines, trailing blanks cut."""
    # Settings of the caller's shell that examples read are dropped: the file says what is set.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCA_") and k != "RANKS"}
    # `tca` and `python` are the ones of the interpreter running the tests (the .venv's).
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(example.env)
    proc = subprocess.run(
        example.argv,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"{example.path.name}: `{example.command}` exited with {proc.returncode}\n"
            f"stderr:\n{proc.stderr[-4000:]}"
        )
    return [line.rstrip() for line in proc.stdout.splitlines()]


def line_matches(expected: str, actual: str) -> bool:
    if expected.startswith("~ "):
        return re.fullmatch(expected[2:], actual) is not None
    return expected[2:] == actual if expected != ">" else actual == ""


def render(expected: list[str], actual: list[str]) -> list[str]:
    """The actual output in file syntax: a pattern line stays as written where it matches the
    line at its position, every other line becomes an exact '> ' line."""
    out = []
    for i, line in enumerate(actual):
        if i < len(expected) and expected[i].startswith("~ ") and line_matches(expected[i], line):
            out.append(expected[i])
        else:
            out.append(f"> {line}" if line else ">")
    return out


def mismatch(example: Example, actual: list[str]) -> str | None:
    """None if `actual` is the expected output, else a unified diff (expected -> actual)."""
    if len(actual) == len(example.expected) and all(
        line_matches(e, a) for e, a in zip(example.expected, actual, strict=True)
    ):
        return None
    diff = difflib.unified_diff(
        example.expected,
        render(example.expected, actual),
        f"{example.path.name} (expected)",
        "actual output",
        lineterm="",
    )
    return "\n".join(diff)


def update(example: Example, actual: list[str]) -> str:
    """Rewrites the file's output lines from `actual`; returns what it did. Refuses where a
    pattern line would be lost (a measured time must not become an exact line)."""
    rendered = render(example.expected, actual)
    patterns = sum(line.startswith("~ ") for line in example.expected)
    if patterns and (
        len(actual) != len(example.expected) or patterns != sum(line.startswith("~ ") for line in rendered)
    ):
        return f"{example.path.name}: NOT updated: a pattern line no longer matches; edit it by hand"
    if rendered == example.expected:
        return f"{example.path.name}: unchanged"
    example.path.write_text("\n".join(example.header + rendered) + "\n")
    return f"{example.path.name}: updated"


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.out"))


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.stem)
def test_example_output(path):
    example = parse(path)
    need = missing_prerequisite(example)
    if need:
        pytest.skip(f"{path.name} needs {need}, which this machine does not have")
    for word in example.argv:
        if word.startswith("target/") and not (ROOT / word).exists():
            pytest.fail(f"{word} is not built: run `make examples` (or `make test`) first")
    diff = mismatch(example, run(example))
    if diff is not None:
        pytest.fail(f"output of `{example.command}` differs:\n{diff}", pytrace=False)


def sources_run_by(commands: list[str]) -> set[str]:
    """The example sources the commands run, as repository paths."""
    named = set()
    for command in commands:
        for word in shlex.split(command):
            if m := re.fullmatch(r"target/c/(\w+)(\.\w+)?", word):
                named.add(f"examples/c/{m[1]}.c")
            elif word.startswith("examples/python/"):
                named.add(word)
        if m := re.search(r"--example (\w+)", command):
            named.add(f"crates/tca/sim/examples/{m[1]}.rs")
    return named


def test_every_example_has_an_expected_output():
    commands = [parse(p).command for p in example_files()]
    sources = {
        str(p.relative_to(ROOT))
        for pattern in ("examples/c/*.c", "examples/python/*.py", "crates/tca/sim/examples/*.rs")
        for p in ROOT.glob(pattern)
    }
    assert sources, "no example sources found"
    assert sources - sources_run_by(commands) == set()


# ---- the runner itself: it must be able to fail ----


def write(tmp_path, text) -> Example:
    path = tmp_path / "t.out"
    path.write_text(text)
    return parse(path)


def test_exact_and_pattern_lines(tmp_path):
    ex = write(tmp_path, "# c\n$ X=1 prog a 'b c'\n> 8 B: 2.50 us\n~ \\d+ B: [0-9.]+ us\n>\n")
    assert (ex.env, ex.argv) == ({"X": "1"}, ["prog", "a", "b c"])
    assert mismatch(ex, ["8 B: 2.50 us", "16 B: 9.99 us", ""]) is None
    assert "+> 8 B: 2.51 us" in mismatch(ex, ["8 B: 2.51 us", "16 B: 9.99 us", ""])
    assert "+> 16 B: slow us" in mismatch(ex, ["8 B: 2.50 us", "16 B: slow us", ""])
    assert mismatch(ex, ["8 B: 2.50 us", "16 B: 1.0 us"]) is not None  # a line missing
    assert mismatch(ex, ["8 B: 2.50 us", "16 B: 1.0 us", "", "more"]) is not None
    # a pattern matches the whole line, not a part of it
    assert mismatch(ex, ["8 B: 2.50 us", "x16 B: 1.0 us", ""]) is not None


def test_update_keeps_patterns_and_refuses_to_lose_one(tmp_path):
    ex = write(tmp_path, "$ prog\n> a 1\n~ b [0-9]+\n")
    assert update(ex, ["a 2", "b 7"]).endswith("updated")
    assert ex.path.read_text() == "$ prog\n> a 2\n~ b [0-9]+\n"
    ex = parse(ex.path)
    assert update(ex, ["a 2", "b x"]).endswith("edit it by hand")
    assert ex.path.read_text() == "$ prog\n> a 2\n~ b [0-9]+\n"


@pytest.mark.parametrize(
    "text, error",
    [
        ("> a\n", "exactly one '\\$ ' command"),
        ("$ a\n$ b\n", "exactly one"),
        ("$ a\n> x\n# late\n", "may follow the first output line"),
        ("$ a\n~ (\n", "bad regular expression"),
        ("$ a\nplain\n", "must start with"),
        ("$ A=1\n", "names no program"),
    ],
)
def test_bad_files_are_reported(tmp_path, text, error):
    with pytest.raises(FormatError, match=error):
        write(tmp_path, text)


def main() -> int:
    parser = argparse.ArgumentParser(description="Rewrite the exact lines of tests/examples/*.out")
    parser.add_argument("--update", action="store_true", required=True)
    parser.add_argument("names", nargs="*", help="file names without .out (default: all)")
    args = parser.parse_args()
    paths = [EXAMPLES / f"{n}.out" for n in args.names] or example_files()
    status = 0
    for path in paths:
        try:
            example = parse(path)
        except (OSError, FormatError) as e:
            print(f"{path.name}: {e}")
            status = 1
            continue
        need = missing_prerequisite(example)
        if need:
            print(f"{path.name}: skipped: needs {need}")
            continue
        try:
            message = update(example, run(example))
        except (AssertionError, OSError, subprocess.TimeoutExpired) as e:
            message, status = f"{path.name}: NOT updated: {e}", 1
        print(message)
        status |= "NOT updated" in message
    return status


if __name__ == "__main__":
    sys.exit(main())
