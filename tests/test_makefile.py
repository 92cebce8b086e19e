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
