"""Spark clusters only the platform can use, tried on the lab's real clusters as a stranger or a
team would: spark-submit without the cluster's secret, with a wrong one or another cluster's
(another team's, or the team's own other one) is refused; the master runs no REST submission
server; the master's and workers' UIs (status, log pages, kill endpoints) refuse a request without
a valid token, and kill nothing even with one; a dagger deployed as team allocations (the real
`dagger deploy`) runs on allocations' own cluster as the team's unprivileged user, who cannot read
any of the lab's secrets, with only its own team's secret and Spark's own variables in its
environment; a dagger of team api-health, on its own cluster, can neither read the allocations
driver's environment, files, checkpoints or worker configuration nor signal it. Neither secret
shows in a log or a command line.

Each refusal is checked against a positive control (the platform's own client, token or read), so
a probe that fails for an unrelated reason does not pass as a wall."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import pwd
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import psutil
import pytest
import yaml
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dagger_runtime.lifecycle import spark as spark_api
from dagger_runtime.lifecycle.clusters import load_all, load_clusters
from lab import access
from loadtest import traffic
from protos import registry as protos
from tests.kafka_jobs import EXAMPLES, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]
CLUSTER = "blue"
OTHER = "green"
TEAM = "allocations"
NEIGHBOUR = "api-health"
DRIVER_USER = f"dagger-spark-{TEAM}"


def clusters(env, team: str = TEAM):
    """The clusters a team's daggers run on, by name (its own in blue and in green)."""
    return load_clusters(str(Path(env["DAGGER_LAB_DIR"]) / "clusters"), team=team)


def program(role: str, team: str = TEAM, cluster: str = CLUSTER) -> str:
    return f"spark-{cluster}-{team}-{role}"


def drivers_known(cluster) -> set[str]:
    state = spark_api.master_json(cluster, timeout=10)
    return {d["id"] for d in state.get("activedrivers", []) + state.get("completeddrivers", [])}


def submit(cluster, env_extra: dict, conf: dict, name: str) -> subprocess.CompletedProcess:
    """A cluster-mode spark-submit as anyone on the machine could run it (the driver would only
    fail: its script does not exist)."""
    home = spark_api.spark_home(cluster)
    jar = next(Path(home, "jars").glob("spark-core_*.jar"))
    argv = [
        f"{home}/bin/spark-submit",
        "--master",
        cluster.master,
        "--deploy-mode",
        "cluster",
        "--name",
        name,
        "--driver-memory",
        "256m",
        "--class",
        "org.apache.spark.deploy.PythonRunner",
    ]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(jar), "/nonexistent/intruder.py", ""]
    env = {"PATH": os.environ["PATH"], "SPARK_LOCAL_IP": "127.0.0.1", **env_extra}
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)


def submitted(done: subprocess.CompletedProcess) -> bool:
    return done.returncode == 0 and "Driver successfully submitted" in done.stdout + done.stderr


def test_spark_submit_without_the_clusters_secret_is_refused(lab_env):
    cluster, other = clusters(lab_env)[CLUSTER], clusters(lab_env)[OTHER]
    before = drivers_known(cluster)
    attempts = {
        "no authentication": ({}, {}),
        "a wrong secret": ({spark_api.AUTH_SECRET_ENV: "x" * 48}, spark_api.auth_conf(cluster)),
        "the team's other cluster's secret": (spark_api.client_env(other), spark_api.auth_conf(cluster)),
        "another team's cluster's secret": (
            spark_api.client_env(clusters(lab_env, NEIGHBOUR)[CLUSTER]),
            spark_api.auth_conf(cluster),
        ),
        "a wrong secret, no encryption": ({spark_api.AUTH_SECRET_ENV: "y" * 48}, {"spark.authenticate": "true"}),
    }
    for what, (env_extra, conf) in attempts.items():
        done = submit(cluster, env_extra, conf, f"intruder-{uuid.uuid4().hex[:6]}")
        assert not submitted(done), f"{what}: accepted\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert drivers_known(cluster) == before
    # positive control: the same submission with the cluster's own secret is accepted (its driver
    # then fails at once: its script does not exist), so the refusals are the secret's doing
    done = submit(cluster, spark_api.client_env(cluster), spark_api.auth_conf(cluster), "platform-control")
    assert submitted(done), done.stderr[-3000:]
    assert len(drivers_known(cluster) - before) == 1


def listening_ports(pid: int) -> set[int]:
    ports = set()
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        ports |= {c.laddr.port for c in proc.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
    return ports


def supervised_pid(env, program: str) -> int:
    lab = Path(env["DAGGER_LAB_DIR"])
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "supervisorctl"),
            "-c",
            str(lab / "supervisor" / "supervisord.conf"),
            "pid",
            program,
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.stdout.strip().isdigit(), done.stdout + done.stderr
    return int(done.stdout.strip())


def test_the_master_listens_on_its_rpc_and_ui_ports_only_no_rest_server(lab_env):
    cluster = clusters(lab_env)[CLUSTER]
    ports = listening_ports(supervised_pid(lab_env, program("master")))
    assert ports == {int(cluster.master.rsplit(":", 1)[1]), int(cluster.web_ui.rsplit(":", 1)[1])}


def jws(key: bytes, claims: dict, alg: str = "HS256") -> str:
    b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=")  # noqa: E731
    head = b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    signature = b64(hmac.new(key, head + b"." + body, hashlib.sha256).digest()) if alg != "none" else b""
    return (head + b"." + body + b"." + signature).decode()


def answer(url: str, token: str | None = None, data: dict | None = None) -> int:
    """The HTTP status of a GET, redirects followed with the same token (Jetty sends /log to
    /log/), or of a form POST, its redirect not followed (Spark's kill answers with one)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(
        url,
        data=urllib.parse.urlencode(data).encode() if data else None,
        headers={"Authorization": f"Bearer {token}"} if token else {},
    )
    handlers = [NoRedirect] if data else []
    try:
        with urllib.request.build_opener(*handlers).open(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


def forged_tokens(cluster) -> dict[str, str]:
    key_text = Path(cluster.ui_key_file).read_text().strip()
    key = base64.urlsafe_b64decode(key_text + "=" * (-len(key_text) % 4))
    later = int(time.time()) + 600
    return {
        "no token": "",
        "a token signed with another key": jws(os.urandom(48), {"sub": "dagger-platform", "exp": later}),
        "an unsigned token (alg none)": jws(b"", {"sub": "dagger-platform", "exp": later}, alg="none"),
        "an expired token": jws(key, {"sub": "dagger-platform", "exp": int(time.time()) - 120}),
        "garbage": "not-a-jws",
    }


# --- a dagger deployed as team allocations ---------------------------------------------------


def bootstrap(port_base: int) -> str:
    return ",".join(f"127.0.0.1:{port_base + 100 * n + 92}" for n in (1, 2, 3))


def deploy_example(lab_env, folder: Path, team: str, example: str, prefix: str, topic: str):
    """`dagger deploy` of an example job as `team` (its input a topic of its own, its rows to a
    Kafka topic of the team's): the dagger's name, driver id, its driver's JVM and Python, the
    deploy's environment; the caller stops it with `stop_dagger`."""
    lab = Path(lab_env["DAGGER_LAB_DIR"])
    servers = bootstrap(int(lab_env["DAGGER_LAB_PORT_BASE"]))
    run_id = uuid.uuid4().hex[:6]
    name, topic, out = f"{prefix}-{run_id}", topic.format(run_id=run_id), f"{team}-iso-{run_id}"
    admin = KafkaAdminClient(bootstrap_servers=servers, **access.kafka_python("admin", lab=lab))
    admin.create_topics([NewTopic(t, num_partitions=1, replication_factor=3) for t in (topic, out)])
    admin.close()
    job = yaml.safe_load((EXAMPLES / example).read_text())
    job.update(name=name, team=team, parallelism=1, dead_letter_topic=f"{team}-{name}-dlq")
    job["streams"][0]["topics"] = [topic]
    job["streams"][0]["kafka"].update(
        bootstrap_servers=servers, group_id=access.consumer_group(team, name), client=access.team_client(team)
    )
    job["sink"] = {
        "type": "kafka",
        "kafka": {"brokers": servers, "topic": out, "data_type": "JSON", "client": access.team_client(team)},
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    env = {
        "DAGGER_CLUSTERS": str(lab / "clusters"),
        "DAGGER_REGISTRY_URL": (lab / "secrets" / "registry.url").read_text().strip(),
        **access.team_env(team, lab=lab),
    }
    done = run_cli("deploy", str(path), "--cluster", CLUSTER, "--as", "isolation-test", "--json", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    driver_id = re.search(r"driver-[0-9]+-[0-9]+", done.stdout).group(0)
    dagger = {"name": name, "driver": driver_id, "env": env, "lab": lab, "topic": topic, "servers": servers}
    try:
        dagger["jvm"], dagger["python"] = driver_processes(lab_env, driver_id, team=team)
    except BaseException:
        stop_dagger(dagger)
        raise
    return dagger


def stop_dagger(dagger: dict) -> None:
    stopped = run_cli("stop", dagger["name"], "--as", "isolation-test", env=dagger["env"])
    assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]


@pytest.fixture(scope="module")
def deployed(lab_env, tmp_path_factory):
    """A dagger of team allocations deployed with `dagger deploy`, RUNNING, and its driver's
    processes (the DriverWrapper JVM and its Python); stopped with `dagger stop` at the end."""
    dagger = deploy_example(
        lab_env,
        tmp_path_factory.mktemp("isolation"),
        TEAM,
        "completed_bookings_by_s2.yaml",
        "isolation",
        "bookings-{run_id}-iso",
    )
    try:
        dagger["app"] = application(clusters(lab_env)[CLUSTER], f"dagger-{dagger['name']}")
        yield dagger
    finally:
        stop_dagger(dagger)


@pytest.fixture(scope="module")
def neighbour(lab_env, tmp_path_factory):
    """A dagger of team api-health (its API-health example on a topic of its own), RUNNING on
    api-health's own blue cluster, and its driver's processes; stopped at the end."""
    dagger = deploy_example(
        lab_env, tmp_path_factory.mktemp("neighbour"), NEIGHBOUR, "api_health.yaml", "neighbour", "p-logstream-{run_id}"
    )
    try:
        yield dagger
    finally:
        stop_dagger(dagger)


def application(cluster, name: str, timeout_s: float = 180) -> str:
    """The id of the running application `name` (its driver registers it once its session is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = spark_api.master_json(cluster, timeout=10)
        found = [a["id"] for a in state.get("activeapps", []) if a["name"] == name and a["state"] == "RUNNING"]
        if found:
            return found[0]
        time.sleep(2)
    raise AssertionError(f"application {name} is not RUNNING on {cluster.name}")


def driver_processes(
    lab_env, driver_id: str, timeout_s: float = 180, team: str = TEAM
) -> tuple[psutil.Process, psutil.Process]:
    """The driver's JVM (a DriverWrapper working in the driver's folder of the worker) and the
    Python it starts (the runtime's driver.py)."""
    worker = psutil.Process(supervised_pid(lab_env, program("worker", team)))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for proc in worker.children(recursive=True):
            try:
                if any("DriverWrapper" in a for a in proc.cmdline()) and proc.cwd().endswith("/" + driver_id):
                    python = [c for c in proc.children(recursive=True) if any("driver.py" in a for a in c.cmdline())]
                    if python:
                        return proc, python[0]
            except psutil.Error:
                continue
        time.sleep(2)
    raise AssertionError(f"no driver process of {driver_id} with its Python under {team}'s {CLUSTER} worker")


def test_the_ui_refuses_anonymous_and_forged_requests_and_kills_nothing(lab_env, deployed):
    cluster = clusters(lab_env)[CLUSTER]
    state = spark_api.master_json(cluster, timeout=10)  # the platform's token: answered
    assert state["status"] == "ALIVE"
    worker_ui = next(w["webuiaddress"] for w in state["workers"] if w["state"] == "ALIVE")
    app_id = deployed["app"]
    driver_id = deployed["driver"]
    pages = {
        "the master's status": f"{cluster.web_ui}/json/",
        "the master's page": f"{cluster.web_ui}/",
        "the worker's page": f"{worker_ui}/",
        "the worker's log page": f"{worker_ui}/logPage/?driverId={driver_id}&logType=stderr",
        "the worker's log": f"{worker_ui}/log?driverId={driver_id}&logType=stderr",
    }
    for what, token in forged_tokens(cluster).items():
        for page, url in pages.items():
            assert answer(url, token) in (401, 403), f"{page} answered {what}"
        for kill, form in {
            "/driver/kill/": {"id": driver_id, "terminate": "true"},
            "/app/kill/": {"id": app_id, "terminate": "true"},
        }.items():
            assert answer(cluster.web_ui + kill, token, form) in (401, 403), f"{kill} took {what}"
    # positive control: the platform's token opens each page
    platform = spark_api.ui_headers(cluster)["Authorization"].removeprefix("Bearer ")
    for page, url in pages.items():
        assert answer(url, platform) == 200, page
    # and even the platform's token kills nothing through the UI (spark.ui.killEnabled=false)
    for kill, form in {
        "/driver/kill/": {"id": driver_id, "terminate": "true"},
        "/app/kill/": {"id": app_id, "terminate": "true"},
    }.items():
        answer(cluster.web_ui + kill, platform, form)
    time.sleep(5)
    state = spark_api.master_json(cluster, timeout=10)
    assert {d["id"]: d["state"] for d in state["activedrivers"]}.get(driver_id) == "RUNNING"
    assert app_id in {a["id"] for a in state["activeapps"]}
    assert deployed["jvm"].is_running() and deployed["python"].is_running()
    # the platform's own tools read the UIs with the token: status and the driver's log
    status = run_cli("status", deployed["name"], "--json", env=deployed["env"])
    assert status.returncode == 0, status.stderr[-2000:]
    deadline = time.monotonic() + 180
    checkpoint = f"checkpoint {deployed['lab']}/checkpoints/{TEAM}/{deployed['name']}/v1"
    while True:  # the driver prints where it checkpoints once its query has started
        logs = run_cli("logs", deployed["name"], env=deployed["env"])
        assert logs.returncode == 0, logs.stderr[-2000:]
        if checkpoint in logs.stdout or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert checkpoint in logs.stdout, logs.stdout[-3000:]


def identity(proc: psutil.Process) -> tuple[int, int, list[int]]:
    status = Path(f"/proc/{proc.pid}/status").read_text()
    uids = [int(x) for x in re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()]
    gids = [int(x) for x in re.search(r"^Gid:\s+(.*)$", status, re.M).group(1).split()]
    groups = [int(x) for x in re.search(r"^Groups:\s*(.*)$", status, re.M).group(1).split()]
    assert len(set(uids)) == 1 and len(set(gids)) == 1, status
    return uids[0], gids[0], groups


def read_as(ident: tuple[int, int, list[int]], path: Path) -> subprocess.CompletedProcess:
    """`cat path` with exactly the driver's user, group and supplementary groups (no capability)."""
    return as_identity(ident, ["cat", str(path)])


def test_the_driver_runs_unprivileged_and_reads_no_secret_of_the_lab(lab_env, deployed):
    lab = deployed["lab"]
    for proc in (deployed["jvm"], deployed["python"]):
        uid, gid, groups = identity(proc)
        assert uid == pwd.getpwnam(DRIVER_USER).pw_uid != 0
        assert 0 not in (gid, *groups)
        # what it creates is its user's alone, and its scratch space is a folder of its own
        assert re.search(r"^Umask:\s+0077$", Path(f"/proc/{proc.pid}/status").read_text(), re.M)
        scratch = Path(environ(proc)["SPARK_LOCAL_DIRS"])
        assert scratch.stat().st_uid == uid and scratch.stat().st_mode & 0o777 == 0o700, scratch
        assert scratch.is_relative_to(lab / "spark"), scratch  # the worker's own, not the machine's /tmp
    ident = identity(deployed["python"])
    secrets = sorted(p for p in (lab / "secrets").rglob("*") if p.is_file())
    # every kind of the lab's secret is there to be tried: another team's and the admin's Kafka
    # passwords, the registry's URL, both clusters' Spark secrets and UI keys
    names = {p.relative_to(lab / "secrets").as_posix() for p in secrets}
    assert {
        "kafka/primary/dagger-api-health.password",
        "kafka/primary/admin.password",
        "registry.url",
        f"spark/{CLUSTER}.{TEAM}.secret",
        f"spark/{OTHER}.{TEAM}.ui.key",
        f"spark/{CLUSTER}.{NEIGHBOUR}.secret",
    } <= names
    for path in secrets:
        done = read_as(ident, path)
        assert done.returncode != 0 and "Permission denied" in done.stderr, f"the driver's user reads {path}"
    # positive control: the same identity reads what the driver is meant to read (its spec)
    spec = next(a for a in deployed["python"].cmdline() if a.endswith(f"{deployed['name']}.yaml"))
    assert read_as(ident, Path(spec)).returncode == 0


SPARK_LAUNCH = re.compile(r"(SPARK|PYSPARK|PYTHON)_?[A-Z0-9_]*|_SPARK_AUTH_SECRET")
# what the platform's spark-submit hands on from its own environment (dagger_runtime.lifecycle.spark)
SUBMITTER = set(spark_api._BASE_ENV)
PROCESS = {"PWD", "SHLVL", "MASTER", "LC_CTYPE", "_"}


def environ(proc: psutil.Process) -> dict[str, str]:
    raw = Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_the_driver_environment_holds_its_teams_secret_and_nothing_of_the_workers(lab_env, deployed):
    """Checked by names only: a failure must not print a secret's value."""
    own = access.team_secret_env(TEAM)
    own_value = access.team_env(TEAM, lab=deployed["lab"])[own]
    spark_or_process = lambda k: bool(SPARK_LAUNCH.fullmatch(k)) or k in PROCESS  # noqa: E731
    # what the lab's supervisord runs with (the shell and Ansible that started it)
    lab_names = set(environ(psutil.Process(supervised_pid(lab_env, program("master"))).parent()))
    assert "DAGGER_LAB_DIR" in lab_names
    # the worker itself runs with Spark's variables and PATH only
    worker_names = set(environ(psutil.Process(supervised_pid(lab_env, program("worker")))))
    assert sorted(k for k in worker_names if not spark_or_process(k) and k != "PATH") == []
    for proc in (deployed["jvm"], deployed["python"]):
        env = environ(proc)
        names = set(env)
        assert own in names and env[own] == own_value, f"driver {proc.pid} lacks its team's secret"
        assert sorted(k for k in names if k.startswith("DAGGER_SECRET_") and k != own) == []
        # every variable is Spark's launch plumbing, what the platform's spark-submit hands on, or
        # the team's own secret
        assert sorted(k for k in names if k != own and k not in SUBMITTER and not spark_or_process(k)) == []
        assert sorted((lab_names - SUBMITTER) & {k for k in names if not spark_or_process(k)}) == []


def test_neither_secret_shows_in_a_log_or_a_command_line(lab_env, deployed):
    lab = deployed["lab"]
    values = {}
    for cluster in load_all(str(lab / "clusters")):
        values[f"{cluster.name} {cluster.team} secret"] = Path(cluster.auth_secret_file).read_text().strip()
        values[f"{cluster.name} {cluster.team} UI key"] = Path(cluster.ui_key_file).read_text().strip()
    assert len(values) == 8  # blue and green, a cluster of each of the two teams in each
    assert all(len(v) >= 43 for v in values.values())
    logs = [
        p
        for folder in (lab / "supervisor" / "logs", lab / "spark", lab / ".runner")
        for p in folder.rglob("*")
        if p.is_file() and p.suffix not in (".jar",) and "conf" not in p.parts
    ]
    assert any(p.name == "worker.log" for p in logs) and any(p.name == "stderr" for p in logs)
    for path in logs:
        text = path.read_bytes()
        for what, value in values.items():
            assert value.encode() not in text, f"the {what} is in {path}"
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        for what, value in values.items():
            assert value not in line, f"the {what} is on the command line of {proc.pid}"


def test_another_teams_driver_can_neither_read_nor_signal_this_teams_driver(lab_env, deployed, neighbour):
    """api-health's driver, on api-health's own cluster as api-health's user, tries what it could
    do to a driver of the same user: read its environment (the team's secrets), its command line's
    spec, its checkpoints, its worker's configuration (the cluster's secret), and signal it."""
    lab = deployed["lab"]
    ours, theirs = identity(deployed["python"]), identity(neighbour["python"])
    assert theirs[0] == pwd.getpwnam(f"dagger-spark-{NEIGHBOUR}").pw_uid
    assert theirs[0] != ours[0] and theirs[1] != ours[1] and ours[1] not in theirs[2]
    # the two drivers run on different clusters: each team's master placed its own
    assert clusters(lab_env)[CLUSTER].master != clusters(lab_env, NEIGHBOUR)[CLUSTER].master
    spec = Path(next(a for a in deployed["python"].cmdline() if a.endswith(f"{deployed['name']}.yaml")))
    worker_conf = (
        Path(
            next(
                a
                for a in psutil.Process(supervised_pid(lab_env, program("worker"))).environ().values()
                if a.endswith("/conf") and program("worker") in a
            )
        )
        / "spark-defaults.conf"
    )
    targets = {
        "the driver JVM's environment": Path(f"/proc/{deployed['jvm'].pid}/environ"),
        "the driver Python's environment": Path(f"/proc/{deployed['python'].pid}/environ"),
        "the driver's spec": spec,
        "the team's checkpoints": lab / "checkpoints" / TEAM,
        "the dagger's checkpoint": lab / "checkpoints" / TEAM / deployed["name"] / "v1" / "metadata",
        "the worker's spark-defaults.conf": worker_conf,
    }
    assert all(p.exists() for p in targets.values()), {w: str(p) for w, p in targets.items() if not p.exists()}
    for what, path in targets.items():
        argv = ["ls", str(path)] if path.is_dir() else ["cat", str(path)]
        done = as_identity(theirs, argv)
        assert done.returncode != 0 and "Permission denied" in done.stderr, f"api-health's driver reads {what}"
        # positive control: the allocations driver's own identity reads it (but not the worker's
        # configuration, which only its worker reads: the cluster's secret)
        if what != "the worker's spark-defaults.conf":
            assert as_identity(ours, argv).returncode == 0, f"the allocations driver cannot read {what}"
    for proc in (deployed["jvm"], deployed["python"]):
        done = as_identity(theirs, ["kill", "-0", str(proc.pid)])
        assert done.returncode != 0 and "not permitted" in done.stderr, done.stderr
        assert as_identity(ours, ["kill", "-0", str(proc.pid)]).returncode == 0
    assert deployed["python"].is_running() and neighbour["python"].is_running()


PROBE = """
import socket, sys
port, ids = int(sys.argv[1]), sys.argv[2:]
with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
    print("connected", flush=True)
    # a Py4J call of each object the driver may serve (its foreachBatch function, its listeners)
    received = b""
    try:
        conn.sendall("".join(f"c\\n{i}\\nonQueryIdle\\nn\\ne\\n" for i in ids).encode())
        conn.shutdown(socket.SHUT_WR)
        while chunk := conn.recv(4096):
            received += chunk
    except OSError:  # reset, or closed by the driver before our shutdown (ENOTCONN): nothing answered
        pass
    print(repr(received))
"""


def batches_done(cluster, name: str) -> float:
    """The dagger's `dagger_batches` from its own /metrics (counted in its foreachBatch function)."""
    for port in range(cluster.metrics_ports[0], cluster.metrics_ports[1] + 1):
        try:
            text = urllib.request.urlopen(f"http://{cluster.metrics_host}:{port}/metrics", timeout=5).read().decode()
        except OSError:
            continue
        found = re.search(rf'^dagger_batches_total{{dagger="{re.escape(name)}"}} ([0-9.e+]+)$', text, re.M)
        if found:
            return float(found.group(1))
    raise AssertionError(f"no /metrics of {name} on {cluster.name}")


def test_another_teams_driver_cannot_call_this_drivers_python_callbacks(lab_env, deployed, neighbour):
    """PySpark serves the driver's foreachBatch function and listeners on a loopback port (Py4J's
    callback server); api-health's driver connects to it and calls them without the token the
    driver shares with its own JVM only: the connection ends before any call runs, and the
    dagger's batches (which run through those same callbacks) go on."""
    cluster = clusters(lab_env)[CLUSTER]
    metrics = range(cluster.metrics_ports[0], cluster.metrics_ports[1] + 1)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ports = [
            c.laddr.port
            for c in deployed["python"].net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port not in metrics
        ]
        if ports:
            break
        time.sleep(2)
    # PySpark's two servers in the driver (its callback server and its accumulator server, which
    # checks a token of its own), both on loopback
    assert 1 <= len(ports) <= 2 and all(
        c.laddr.ip == "127.0.0.1"
        for c in deployed["python"].net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    ), ports
    message = protos.load().message_class(traffic.BOOKING)

    def feed(seed: int) -> None:
        producer = KafkaProducer(
            bootstrap_servers=deployed["servers"], acks="all", **access.kafka_python("admin", lab=deployed["lab"])
        )
        for value in traffic.encode(traffic.bookings(200, minutes=1, seed=seed), message):
            producer.send(deployed["topic"], value=value)
        producer.flush()
        producer.close()

    feed(1)
    deadline = time.monotonic() + 180
    while batches_done(cluster, deployed["name"]) < 1 and time.monotonic() < deadline:
        time.sleep(2)
    before = batches_done(cluster, deployed["name"])
    assert before >= 1, "the dagger committed no batch: its callbacks never ran"
    # its listeners as they are once the query runs (the callback server PySpark starts first is
    # replaced by one that checks a token before the query starts: dagger_runtime/callbacks.py)
    ports = [
        c.laddr.port
        for c in deployed["python"].net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.laddr.port not in metrics
    ]
    assert 1 <= len(ports) <= 2, ports
    for port in ports:
        probe = as_identity(
            identity(neighbour["python"]),
            [neighbour["python"].exe(), "-c", PROBE, str(port), *(f"p{i}" for i in range(8))],
        )
        assert probe.returncode == 0, probe.stderr
        # the port is reachable (the wall is the token, not the network) and nothing was answered
        assert probe.stdout.splitlines() == ["connected", "b''"], (port, probe.stdout)
    feed(2)
    deadline = time.monotonic() + 180
    while batches_done(cluster, deployed["name"]) <= before and time.monotonic() < deadline:
        time.sleep(2)
    assert batches_done(cluster, deployed["name"]) > before, "the dagger's batches stopped after the probe"
    assert deployed["python"].is_running()


def as_identity(ident: tuple[int, int, list[int]], argv: list[str]) -> subprocess.CompletedProcess:
    uid, gid, groups = ident
    group_args = [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", *group_args, "--", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )
