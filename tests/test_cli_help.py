"""Every command answers --help with its usage, without starting anything."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "command",
    [
        ["dagger_runtime"],
        ["dagger_runtime", "validate"],
        ["dagger_runtime", "preview"],
        ["dagger_runtime.demo"],
        ["protos"],
        ["protos", "check"],
        ["protos", "compile"],
        ["lab.kafka"],
        ["lab.kafka", "start"],
        ["loadtest.traffic"],
        ["bench"],
        ["bench.commands"],
        ["dagger_runtime", "run"],
        ["dagger_runtime", "deploy"],
        ["dagger_runtime", "edit"],
        ["dagger_runtime", "stop"],
        ["dagger_runtime", "status"],
        ["dagger_runtime", "list"],
        ["dagger_runtime", "history"],
        ["dagger_runtime", "logs"],
        ["lab"],
        ["lab", "up"],
        ["lab", "status"],
        ["lab", "down"],
        ["lab.demo"],
        ["monitoring.dashboards"],
        ["infra.inventory_export"],
        ["dagger_runtime", "failover"],
        ["dagger_runtime", "watchdog"],
        ["loadtest"],
        ["loadtest", "produce"],
        ["loadtest", "record"],
        ["loadtest", "replay"],
        ["loadtest", "shapes"],
        ["chaos"],
        ["chaos", "drill"],
        ["chaos", "drill", "list"],
        ["chaos", "drill", "validate"],
        ["chaos", "drill", "run"],
        ["chaos", "drill", "history"],
        ["chaos.history"],
        ["chaos.faults"],
        ["dagger_runtime", "warm"],
        ["dagger_runtime", "warm", "start"],
        ["dagger_runtime", "warm", "serve"],
        ["dagger_runtime", "warm", "status"],
        ["dagger_runtime", "warm", "stop"],
        ["dagger_runtime", "portal"],
    ],
)
def test_each_command_has_help(command):
    proc = subprocess.run(
        [sys.executable, "-m", *command, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.lower().startswith("usage:")
    # the runtime's command line is `dagger` (python -m dagger_runtime is its other spelling)
    assert ("dagger" if command[-1] == "dagger_runtime" else command[-1].split(".")[-1]) in proc.stdout
