"""docs/reference/commands.md is every command under `dagger` as its --help prints it: current,
the same whatever the machine's environment, the same as the installed `dagger` prints, and every
command that reports answers --json."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dagger_runtime import cli_reference

ROOT = Path(__file__).resolve().parent.parent
PAGE = cli_reference.PAGE.read_text()
SECTIONS = {
    m.group(1): m.group(2) for m in re.finditer(r"^## (dagger[^\n]*)\n\n```text\n(.*?)\n```$", PAGE, re.M | re.S)
}
# the commands whose output is a report a script may want to read
REPORTING = [
    "lab status",
    "drill list",
    "drill validate",
    "drill history",
    "faults kinds",
    "faults show",
    "protos list",
    "protos show",
    "protos check",
    "team validate",
    "team plan",
    "validate",
    "status",
    "list",
    "history",
    "logs",
    "warm status",
]


def test_the_committed_page_is_current_whatever_the_environment_says():
    """Generated again in another process with another lab, runs folder, home and terminal width:
    the same page (a default read from the environment would show this machine's paths)."""
    env = {
        **os.environ,
        "DAGGER_LAB_DIR": "/elsewhere/lab",
        "DAGGER_DRILL_RUNS": "/elsewhere/runs",
        "DAGGER_LAB_PORT_BASE": "31000",
        "HOME": "/elsewhere/home",
        "COLUMNS": "40",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "dagger_runtime.cli_reference", "--check"],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert str(ROOT) not in PAGE and "/elsewhere" not in PAGE


def test_every_group_and_subcommand_has_its_section():
    assert set(SECTIONS) == {"dagger " + " ".join(p) if p else "dagger" for p in cli_reference.commands()}
    # the groups' own listings agree with their sections: each subcommand a group names is on the page
    for name in ("lab", "drill", "faults", "load", "protos", "team", "warm"):
        listed = re.findall(r"^ {2,4}([a-z][a-z-]+) {2,}\S", SECTIONS[f"dagger {name}"], re.M)
        assert listed and {f"dagger {name} {c}" for c in listed} <= set(SECTIONS), name
    for section, text in SECTIONS.items():
        assert text.startswith(f"usage: {section}"), section


@pytest.mark.parametrize("path", ["", "drill history", "team plan", "warm start", "faults inject", "load produce"])
def test_a_section_is_what_the_installed_dagger_prints(path):
    dagger = Path(sys.executable).parent / "dagger"
    proc = subprocess.run(
        [str(dagger), *path.split(), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": cli_reference.WIDTH},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip() == SECTIONS[f"dagger {path}".rstrip()]


@pytest.mark.parametrize("command", REPORTING)
def test_every_reporting_command_answers_json(command):
    assert re.search(r"^\s+--json\b", SECTIONS[f"dagger {command}"], re.M), command


def test_every_option_says_what_it_is_for():
    """An option listed with nothing after it (argparse prints just its name) tells a user nothing."""
    bare = []
    for section, text in SECTIONS.items():
        lines = text.split("\noptions:\n", 1)[-1].splitlines()
        for line, after in zip(lines, [*lines[1:], ""]):
            alone = re.fullmatch(r"  -\S.*", line) and "  " not in line.strip()
            if alone and not after.startswith(" " * 8):  # argparse puts a long option's help below it
                bare.append(f"{section}: {line.strip()}")
    assert bare == []
