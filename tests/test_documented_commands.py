"""Every command the docs show in a ```console block runs here as shown, and prints what the docs
print after it: a newcomer copying it gets that answer.

A block holds `$ command` lines, each followed by the output the docs promise: stdout, then
stderr. A line that is only `...` stands for any number of lines; `...` inside a line stands for
any text (a time, a version). A command ending in `# exit N` must exit N; any other, 0. The
commands of a block run in order, in the repository, through bash, with `dagger` from this
virtualenv on PATH. Commands that need the lab are shown in plain ``` blocks (the lab's tests run
those paths), so they are not run here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark]  # validate and preview start Spark (one warm process for the module)
ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([*(ROOT / "docs").rglob("*.md"), ROOT / "README.md"])
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)
EXIT = re.compile(r"#\s*exit (\d+)\s*$")


@dataclass
class Command:
    line: int
    text: str
    exit: int
    expected: list[str]


def parse(body: str, first_line: int) -> list[Command]:
    commands: list[Command] = []
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            assert commands, f"line {first_line + i}: output before any command"
            commands[-1].expected.append(lines[i].rstrip())
            i += 1
            continue
        start, text = i, lines[i][2:]
        while text.endswith("\\"):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        code = EXIT.search(text)
        commands.append(Command(first_line + start, text, int(code.group(1)) if code else 0, []))
        i += 1
    return commands


def blocks():
    for page in PAGES:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            line = text[: m.start()].count("\n") + 2
            yield pytest.param(parse(m.group(1), line), id=f"{page.relative_to(ROOT)}:{line}")


def _line_pattern(expected: str) -> re.Pattern:
    return re.compile("(?s)" + ".*?".join(re.escape(part) for part in expected.split("...")) + r"\Z")


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line, a line of `...` matching any number of lines, `...` in a line any text."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == "...":
        return any(matches(rest, actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and bool(_line_pattern(head).match(actual[0].rstrip())) and matches(rest, actual[1:])


def test_the_docs_hold_console_blocks_for_each_kind_of_user():
    """The analyst, the team, the SRE and the platform engineer each meet a command they can run."""
    found = {str(p.relative_to(ROOT)) for p in PAGES if BLOCK.search(p.read_text())}
    assert {"docs/analyst/write.md", "docs/team/ask.md", "docs/sre/drills.md", "docs/platform/apply.md"} <= found, found


def test_the_matcher_holds_a_line_to_its_text_and_lets_ellipses_stand_for_what_varies():
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"]) and matches(["a", "...", "z"], ["a", "z"])
    assert matches(["rows in ...s"], ["rows in 3.6s"]) and not matches(["rows in ...s"], ["rows in 3.6ms!"])
    assert not matches(["a", "z"], ["a", "b", "z"]) and not matches(["a"], ["a", "b"])
    assert not matches(["1 problem"], ["2 problems"])


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The docs' shell: this virtualenv's dagger first on PATH, and one warm process of its own that
    validate and preview use (the docs say their output is the same either way; tests/test_warm.py
    holds them to it), so the page's commands do not each start a Spark."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "100",
        "NO_COLOR": "1",
        "DAGGER_WARM_SOCKET": str(tmp_path_factory.mktemp("warm") / "warm.sock"),
    }
    started = subprocess.run(
        ["dagger", "warm", "start"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert started.returncode == 0, started.stderr
    yield env
    subprocess.run(["dagger", "warm", "stop"], cwd=ROOT, env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize("commands", list(blocks()))
def test_a_documented_command_prints_what_the_docs_say(commands, env):
    for command in commands:
        proc = subprocess.run(
            ["bash", "-c", command.text], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
        )
        actual = (proc.stdout + proc.stderr).splitlines()
        where = f"line {command.line}: $ {command.text}"
        assert proc.returncode == command.exit, f"{where}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
        assert matches(command.expected, actual), (
            f"{where}\n--- the docs say\n" + "\n".join(command.expected) + "\n--- it prints\n" + "\n".join(actual)
        )
