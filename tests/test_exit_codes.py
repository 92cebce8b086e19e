"""One table of exit codes (dagger_runtime/exit_codes.py, shown in docs/reference/exit-codes.md),
and commands of each part of the platform held to it: the same refusal is 2 everywhere, a check
that finds something is 1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dagger_runtime import exit_codes
from tests.labrun import REPO

DAGGER = str(Path(sys.executable).with_name("dagger"))


def test_the_manual_shows_the_table_as_the_code_has_it():
    page = (REPO / "docs" / "reference" / "exit-codes.md").read_text()
    for code, meaning in exit_codes.TABLE.items():
        assert f"| {code} | {meaning} |" in page


@pytest.mark.parametrize(
    "args, code",
    [
        (["validate", "--no-spark", "examples/daggers/api_health.yaml"], exit_codes.OK),
        (["team", "validate", "infra/teams/growth.yaml"], exit_codes.OK),
        (["drill", "validate", "sink-down"], exit_codes.OK),
        (["validate", "--no-spark", "tests/fixtures/drills/no-such-job.yaml"], exit_codes.REFUSED),
        (["team", "validate", "tests/fixtures/hostile_teams/newline-topic.yaml"], exit_codes.REFUSED),
        (["team", "plan", "tests/fixtures/hostile_teams/newline-topic.yaml"], exit_codes.REFUSED),
        (["drill", "validate", "tests/fixtures/hostile_playbooks/percent-150.yaml"], exit_codes.REFUSED),
        (["protos", "show", "no.such.Message"], exit_codes.REFUSED),
        (["no-such-command"], exit_codes.REFUSED),
        (["lab", "no-such-command"], exit_codes.REFUSED),
        (["lab", "status"], exit_codes.FOUND),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_each_command_exits_per_the_table(args, code, tmp_path):
    done = subprocess.run(
        [DAGGER, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DAGGER_LAB_DIR": str(tmp_path / "no-lab")},
    )  # `lab status`: no lab there
    assert done.returncode == code, done.stdout[-1500:] + done.stderr[-1500:]
    assert "Traceback" not in done.stderr
