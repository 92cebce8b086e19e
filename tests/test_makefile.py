"""What the Makefile's targets would run (make -n -B, nothing executed): the quick demo needs
neither root nor a server."""

from __future__ import annotations

import subprocess

from tests.labrun import REPO


def would_run(target: str) -> str:
    done = subprocess.run(["make", "-n", "-B", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_demo_preview_installs_no_server_and_starts_no_lab():
    commands = would_run("demo-preview")
    assert "dagger_runtime.demo" in commands
    for root_or_server in ("lab.packages", "apt-get", "sudo", "-m lab ", "lab.demo"):
        assert root_or_server not in commands, root_or_server


def test_the_full_demo_does_install_the_servers():
    # the check above would pass on a Makefile that names no server anywhere
    assert "lab.packages" in would_run("demo")


def test_ci_runs_every_test_make_test_and_the_long_ones():
    # make test leaves the long end-to-end tests out; CI runs them after it, so nothing is left out
    def pytest_line(target: str) -> str:
        (line,) = [line for line in would_run(target).splitlines() if "-m pytest" in line]
        return line.split("-m pytest", 1)[1]

    assert '-m "not e2e"' in pytest_line("test")
    assert "-m e2e" in pytest_line("test-e2e")
    assert " -m " not in pytest_line("test-all")
    ci = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert ci[-2:] == ["make test", "make test-e2e"], ci
    assert "set -euo pipefail" in ci  # a red `make test` stops CI red
