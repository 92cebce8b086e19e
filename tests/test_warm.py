"""`dagger warm`: validate and preview through a running Spark answer exactly as they answer alone,
in the caller's directory and environment, and only for the user who started it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bench.commands import inputs_for
from dagger_runtime.warm import client, wire

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "daggers"
NOBODY = 65534

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("warm")]


def dagger(*argv, env, cwd, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "dagger_runtime", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )


def start_warm(folder: Path, **extra_env) -> tuple[dict, dict]:
    """`warm start` with the socket in folder; the callers' env and the process's status."""
    env = {**os.environ, "DAGGER_WARM_SOCKET": str(folder / "warm.sock"), "PYTHONPATH": str(ROOT)}
    env.pop("DAGGER_TEST_SECRET", None)
    started = dagger("warm", "start", env={**env, **extra_env}, cwd=ROOT)
    assert started.returncode == 0, started.stderr + started.stdout
    status = client.ask("status", folder / "warm.sock")
    assert status is not None and status["current"]
    return env, status


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm")
    # the process itself has a value for the secret the jobs below use; only the caller's may count
    env, status = start_warm(folder, DAGGER_TEST_SECRET="the warm process's own")
    yield {"env": env, "sock": folder / "warm.sock", "pid": status["pid"], "folder": folder}
    client.ask("stop", folder / "warm.sock")


def commands_run(warm) -> int:
    return client.ask("status", warm["sock"])["commands_run"]


def test_validate_through_the_warm_process_prints_what_it_prints_alone(warm, tmp_path):
    shutil.copy(EXAMPLES / "api_health.yaml", tmp_path / "mine.yaml")
    before = commands_run(warm)
    hot = dagger("validate", "mine.yaml", env=warm["env"], cwd=tmp_path)  # relative to the caller's directory
    assert commands_run(warm) == before + 1
    cold = dagger("validate", "mine.yaml", "--no-warm", env=warm["env"], cwd=tmp_path)
    assert commands_run(warm) == before + 1
    assert hot.returncode == cold.returncode == 0, hot.stderr
    assert hot.stdout == cold.stdout
    assert hot.stdout.startswith("api-health: valid\n")
    assert "label_path string, label_status_code string, requests bigint" in hot.stdout
    assert "WARNING: Using incubator" not in hot.stderr + cold.stderr


def test_a_refusal_is_the_same_through_the_warm_process_json_included(warm, tmp_path):
    text = (EXAMPLES / "api_health.yaml").read_text().replace("request.path AS label_path", "request.pth AS label_path")
    (tmp_path / "typo.yaml").write_text(text)
    for extra in ([], ["--json"]):
        hot = dagger("validate", "typo.yaml", *extra, env=warm["env"], cwd=tmp_path)
        cold = dagger("validate", "typo.yaml", *extra, "--no-warm", env=warm["env"], cwd=tmp_path)
        assert hot.returncode == cold.returncode == 2
        assert hot.stdout == cold.stdout
        assert hot.stderr == cold.stderr  # the cold run's JVM says nothing more either
        assert "did you mean `path`?" in hot.stderr and "line 1" in hot.stderr
    assert json.loads(hot.stdout)["valid"] is False


def test_secrets_resolve_from_the_callers_environment_not_the_warm_processs(warm, tmp_path):
    text = (
        (EXAMPLES / "api_health.yaml")
        .read_text()
        .replace(
            "measurement_name: api_health}",
            "measurement_name: api_health, username: dagger, password: '${DAGGER_TEST_SECRET}'}",
        )
    )
    (tmp_path / "secret.yaml").write_text(text)
    unset = dagger("validate", "secret.yaml", env=warm["env"], cwd=tmp_path)
    assert unset.returncode == 2
    assert "environment variable DAGGER_TEST_SECRET is not set" in unset.stderr
    given = dagger("validate", "secret.yaml", env={**warm["env"], "DAGGER_TEST_SECRET": "s3cret"}, cwd=tmp_path)
    assert given.returncode == 0, given.stderr
    assert "s3cret" not in given.stdout + given.stderr
    assert "s3cret" not in (warm["folder"] / "warm.log").read_text()


def test_preview_rows_through_the_warm_process_are_the_rows_it_gives_alone(warm, tmp_path):
    job = EXAMPLES / "driver_supply_by_s2.yaml"
    inputs = [a for i in inputs_for(job, tmp_path, 600) for a in ("--input", i)]
    hot = dagger("preview", str(job), *inputs, env=warm["env"], cwd=tmp_path)
    cold = dagger("preview", str(job), *inputs, "--no-warm", env=warm["env"], cwd=tmp_path)
    assert hot.returncode == cold.returncode == 0, hot.stderr
    rows = [json.loads(line) for line in hot.stdout.splitlines()]
    assert rows and hot.stdout == cold.stdout


def test_each_command_gets_a_session_of_its_own(spark):
    # a name no other test gives a view: the shared session may hold theirs (preview's supply_data)
    VIEW = "warm_session_probe"
    from dagger_runtime.session import build_session, sessions_of

    with sessions_of(spark):
        first = build_session("first", parallelism=3)
        first.range(3).createOrReplaceTempView(VIEW)
        first.table(VIEW).cache().count()
        assert first.conf.get("spark.sql.shuffle.partitions") == "3"
    with sessions_of(spark):
        second = build_session("second", parallelism=1)
        assert not second.catalog.tableExists(VIEW)
        assert second.conf.get("spark.sql.shuffle.partitions") == "1"
        # the sandbox's settings hold in every session, not only in the one they were built with
        assert second.conf.get("spark.sql.variable.substitute") == "false"
        assert second.conf.get("spark.sql.runSQLOnFiles") == "false"
    assert not spark.catalog.tableExists(VIEW)
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()


def test_only_validate_and_preview_run_there(warm):
    job = str(EXAMPLES / "api_health.yaml")
    for argv in (["run", job], ["warm", "stop"], ["deploy", job]):
        frames = raw(
            warm["sock"],
            {"op": "run", "argv": argv, "cwd": str(ROOT), "env": {}, "umask": 0o077, "fingerprint": wire.fingerprint()},
        )
        assert frames[-1] == (wire.EXIT, b"2"), (argv, frames)
        assert b"runs validate and preview only" in b"".join(d for k, d in frames if k == wire.ERR)
    assert client.ask("status", warm["sock"])["pid"] == warm["pid"]


def raw(sock: Path, request: dict) -> list[tuple[bytes, bytes]]:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(sock))
    with conn:
        wire.send_request(conn, request)
        frames = []
        while not frames or frames[-1][0] not in (wire.EXIT, wire.STALE, wire.INFO):
            frames.append(wire.recv_frame(conn))
    return frames


_AS_NOBODY = """
import json, os, socket, struct, sys
os.setgid(65534); os.setuid(65534)
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(sys.argv[1])
data = json.dumps({"op": "status"}).encode()
try:
    conn.sendall(struct.pack("!I", len(data)) + data)
    got = conn.recv(100)
    print("closed" if got == b"" else repr(got))
except (BrokenPipeError, ConnectionResetError):  # closed before or after the request was read
    print("closed")
"""


def test_another_user_is_refused_even_when_the_file_modes_let_them_in(warm):
    folder, sock = warm["sock"].parent, warm["sock"]
    # a second name for the socket where uid 65534 can reach it (pytest's own folders are 0700),
    # and the socket's mode opened: only the process's own check of its peer is left
    public = Path(tempfile.mkdtemp(prefix="warm-public-", dir="/tmp"))
    os.chmod(public, 0o755)
    os.link(sock, public / "warm.sock")
    os.chmod(sock, 0o666)
    try:
        done = subprocess.run(
            [sys.executable, "-c", _AS_NOBODY, str(public / "warm.sock")], capture_output=True, text=True, timeout=60
        )
    finally:
        os.chmod(sock, 0o600)
        shutil.rmtree(public)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "closed"  # without a word
    assert "refused a connection from uid 65534" in (folder / "warm.log").read_text()
    assert client.ask("status", sock)["pid"] == warm["pid"]


def test_the_socket_is_the_users_alone(warm):
    assert oct(os.stat(warm["sock"]).st_mode & 0o777) == "0o600"
    assert oct(os.stat(warm["sock"].parent).st_mode & 0o777) == "0o700"


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda d: (d.mkdir(), os.chown(d, NOBODY, NOBODY)), "belongs to uid 65534"),
        (lambda d: (d.mkdir(mode=0o755), os.chmod(d, 0o755)), "can be entered by other users (mode 755)"),
        (lambda d: (d.with_name("real").mkdir(mode=0o700), d.symlink_to(d.with_name("real"))), "is not a directory"),
    ],
)
def test_the_client_tells_nothing_to_a_socket_it_cannot_trust(tmp_path, monkeypatch, capsys, make, says):
    folder = tmp_path / "daggers"
    make(folder)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "warm.sock"))
    listener.listen(1)
    listener.settimeout(0.5)
    monkeypatch.setenv("DAGGER_WARM_SOCKET", str(folder / "warm.sock"))
    monkeypatch.setenv("DAGGER_TEST_SECRET", "s3cret")
    try:
        assert client.forward(["validate", "job.yaml"]) is None  # the command runs on its own Spark
        with pytest.raises(socket.timeout):
            listener.accept()  # nobody even connected
    finally:
        listener.close()
    err = capsys.readouterr().err
    assert says in err and "starting a Spark of its own" in err


def test_a_request_that_is_not_an_object_is_dropped_and_the_next_one_served(warm):
    for body in (b"[]", b"null", b"[" * 5000 + b"]" * 5000, b"\xff\xfe"):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(warm["sock"]))
        with conn:
            conn.sendall(len(body).to_bytes(4, "big") + body)
            assert conn.recv(10) == b""
    assert client.ask("status", warm["sock"])["pid"] == warm["pid"]


def test_a_client_of_another_checkout_is_refused_and_the_process_goes_on(warm, monkeypatch, capsys):
    monkeypatch.setenv("DAGGER_WARM_SOCKET", str(warm["sock"]))
    monkeypatch.setattr(wire, "fingerprint", lambda: "0123456789abcdef")  # this client's code differs
    assert client.forward(["validate", str(EXAMPLES / "api_health.yaml")]) is None
    assert "runs another checkout or install of the runtime" in capsys.readouterr().err
    monkeypatch.undo()
    assert client.ask("status", warm["sock"])["pid"] == warm["pid"]


def test_preview_into_a_closed_pipe_ends_quietly_as_it_does_alone(warm, tmp_path):
    job = EXAMPLES / "driver_supply_by_s2.yaml"
    inputs = [a for i in inputs_for(job, tmp_path, 600) for a in ("--input", i)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagger_runtime", "preview", str(job), *inputs],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=warm["env"],
        cwd=tmp_path,
    )
    proc.stdout.close()  # `| head -0`: the reader is gone before the first row
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert b"error" not in err and b"Traceback" not in err


def test_a_client_that_hangs_up_has_its_spark_jobs_cancelled(warm, tmp_path):
    job = EXAMPLES / "driver_supply_by_s2.yaml"
    inputs = [a for i in inputs_for(job, tmp_path, 200_000) for a in ("--input", i)]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(warm["sock"]))
    wire.send_request(
        conn,
        {
            "op": "run",
            "argv": ["preview", str(job), *inputs],
            "cwd": str(tmp_path),
            "env": warm["env"],
            "umask": 0o077,
            "fingerprint": wire.fingerprint(),
        },
    )
    assert wire.recv_frame(conn)[0] == wire.ACK
    time.sleep(0.5)  # the preview of 200,000 pings takes seconds: it is running
    conn.close()  # Ctrl-C
    log = warm["folder"] / "warm.log"
    gone_by(lambda: "the client left; cancelling its Spark jobs" in log.read_text(), what="no cancel logged")
    assert client.ask("status", warm["sock"])["pid"] == warm["pid"]


def test_a_process_older_than_the_code_stops_and_the_command_runs_alone(warm, monkeypatch, capsys):
    monkeypatch.setenv("DAGGER_WARM_SOCKET", str(warm["sock"]))
    # the runtime changes under the running process (its content as it was, so nothing else sees it)
    touched = ROOT / "dagger_runtime" / "warm" / "__init__.py"
    before = os.stat(touched)
    os.utime(touched, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    try:
        assert client.forward(["validate", str(EXAMPLES / "api_health.yaml")]) is None
    finally:
        os.utime(touched, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert "ran the runtime as it was before your last change and has stopped" in capsys.readouterr().err
    gone_by(lambda: not warm["sock"].exists() and not pid_alive(warm["pid"]))


def test_warm_stop_ends_it_and_status_says_so(tmp_path):
    env, status = start_warm(tmp_path)
    said = dagger("warm", "status", "--json", env=env, cwd=ROOT)
    assert said.returncode == 0 and json.loads(said.stdout)["pid"] == status["pid"]
    again = dagger("warm", "start", env=env, cwd=ROOT)  # one runs already: nothing new starts
    assert again.returncode == 0 and f"already answers: pid {status['pid']}" in again.stdout
    stopped = dagger("warm", "stop", env=env, cwd=ROOT)
    assert stopped.returncode == 0 and f"stopped warm process {status['pid']}" in stopped.stdout
    gone_by(lambda: not (tmp_path / "warm.sock").exists() and not pid_alive(status["pid"]))
    after = dagger("warm", "status", env=env, cwd=ROOT)
    assert after.returncode == 3 and "no warm process answers" in after.stdout


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie until `warm start`'s child is reaped: gone for every purpose here
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ")[1][0] != "Z"


def gone_by(check, timeout: float = 60.0, what: str = "the warm process did not stop") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)
