"""Every command that prints a report ends quietly when its reader has gone (`... | head`): no
traceback, exit 0. The read end of its stdout is closed before it writes a byte, so the first
write meets the closed pipe whatever the size of the output (a pipe's buffer would otherwise
hide a small one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.labrun import REPO

PY = sys.executable
DRILL = str(Path(sys.executable).with_name("daggers-drill"))  # the console script
COMMANDS = {
    "dagger validate --json": [
        PY,
        "-m",
        "dagger_runtime",
        "validate",
        "--no-spark",
        "--json",
        "examples/daggers/api_health.yaml",
    ],
    "dagger --help": [PY, "-m", "dagger_runtime", "--help"],
    "daggers-drill list --json": [DRILL, "list", "--json"],
    "chaos drill list": [PY, "-m", "chaos", "drill", "list"],
    "chaos.faults kinds": [PY, "-m", "chaos.faults", "kinds"],
    "infra.plan --json": [PY, "-m", "infra.plan", "infra/teams/growth.yaml", "--json"],
    "infra.validate": [PY, "-m", "infra.validate"],
    "infra.codeowners": [PY, "-m", "infra.codeowners"],
    "protos list": [PY, "-m", "protos", "list"],
    "protos show": [PY, "-m", "protos", "show", "gojek.esb.booking.BookingLogMessage"],
    "loadtest --help": [PY, "-m", "loadtest", "--help"],
    "lab --help": [PY, "-m", "lab", "--help"],
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_whose_reader_left_ends_quietly(name):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes anything
    try:
        done = subprocess.run(
            COMMANDS[name],
            cwd=REPO,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "DAGGER_LAB_DIR": "/nonexistent/dagger-test-lab"},
        )
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr[-2000:]


def test_without_the_guard_the_same_write_fails(tmp_path):
    # the check above would pass if nothing were ever written to the closed pipe
    script = tmp_path / "bare.py"
    script.write_text("print('x' * 100000)\n")
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([PY, str(script)], stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write)
    assert "BrokenPipeError" in done.stderr and done.returncode != 0


def test_a_failure_with_its_output_thrown_away_still_fails(tmp_path):
    # `cmd > /dev/null; echo $?`: a command that fails is not taken for one whose reader left
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nbogus: 1\n")  # an unknown field
    with open(os.devnull, "w") as devnull:
        done = subprocess.run(
            [PY, "-m", "chaos", "drill", "validate", str(bad)],
            cwd=REPO,
            stdout=devnull,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode != 0, done.stderr
