"""The Spark session every command builds: its JVM's stderr reaches the user's, less the one line
the JVM prints on every start; a JVM that cannot start still says why; a short-lived command's JVM
runs the JIT's first tier only, a dagger's keeps the JVM's default."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.spark]

SCRIPT = r"""
import json, sys
from dagger_runtime.session import build_session
args = json.loads(sys.argv[1])
spark = build_session("test-session", parallelism=1, **args)
jvm = spark._jvm
err = jvm.java.lang.System.err
err.println("a line the JVM writes to stderr")
err.flush()
flags = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
with open(f"/proc/{jvm.java.lang.ProcessHandle.current().pid()}/cmdline") as f:
    cmdline = f.read().replace("\0", " ")
secret = spark.sparkContext.getConf().get("spark.authenticate.secret", None)
print(json.dumps({"n": spark.sql("SELECT 6 * 7 AS n").collect()[0].n, "flags": flags, "cmdline": cmdline, "secret": secret}))
spark.stop()
"""


def session_script(tmp_path, **args) -> subprocess.CompletedProcess:

    # no spark-defaults.conf: the tests' own (tests/spark-conf) would add the flag looked for
    (tmp_path / "conf").mkdir()
    env = {**os.environ, "SPARK_CONF_DIR": str(tmp_path / "conf")}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(args)], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )


def test_a_short_lived_commands_jvm_is_quiet_and_runs_the_first_jit_tier_only(tmp_path):
    proc = session_script(tmp_path, short_lived=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["n"] == 42
    assert "-XX:TieredStopAtLevel=1" in out["flags"]
    assert "a line the JVM writes to stderr" in proc.stderr.splitlines()
    assert "WARNING: Using incubator modules" not in proc.stderr


def test_a_daggers_jvm_keeps_the_jvms_default_jit(tmp_path):
    proc = session_script(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not [f for f in json.loads(proc.stdout)["flags"] if f.startswith("-XX:TieredStopAtLevel")]


def test_a_jvm_that_cannot_start_says_why_on_stderr(tmp_path):
    proc = session_script(tmp_path, extra_conf={"spark.driver.memory": "12zz"})  # -Xmx12zz: refused
    assert proc.returncode != 0
    assert "Invalid maximum heap size: -Xmx12zz" in proc.stderr, proc.stderr[-3000:]


def test_a_secret_setting_reaches_the_session_but_not_the_command_line_of_its_jvm(tmp_path):
    """A client-mode driver's spark.authenticate.secret: every user's `ps` shows a command line."""
    canary = "canary-" + os.urandom(8).hex()
    proc = session_script(tmp_path, secret_conf={"spark.authenticate.secret": canary})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["secret"] == canary
    assert "spark.sql.session.timeZone=UTC" in out["cmdline"]  # the other settings are on it, as before
    assert canary not in out["cmdline"]
    assert canary not in proc.stderr
