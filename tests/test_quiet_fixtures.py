"""A failing test's report never shows a lab's secrets: pytest prints the test's arguments, and the
lab's environment (the whole process environment) and logins are among them (tests/labrun.Quiet)."""

from __future__ import annotations

import subprocess
import sys

from tests.labrun import REPO

FAILING = """
import pytest

from tests.labrun import Quiet


@pytest.fixture
def lab_env():
    return Quiet({"DAGGER_REGISTRY_URL": "postgresql+psycopg://daggers:s3cret-pw@127.0.0.1/registry"})


def test_fails(lab_env):
    assert not lab_env
"""


def test_a_failing_lab_test_shows_the_keys_of_its_environment_not_their_values(tmp_path):
    (tmp_path / "test_failing.py").write_text(FAILING)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path / "test_failing.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "lab_env = {'DAGGER_REGISTRY_URL': ...}" in done.stdout, done.stdout[-3000:]
    assert "s3cret-pw" not in done.stdout + done.stderr
