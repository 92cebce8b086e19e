"""Spark clusters only the platform can use, tried on the lab's real clusters as a stranger or a
team would: spark-submit without the cluster's secret, with a wrong one or another cluster's is
refused; the master runs no REST submission server; the master's and workers' UIs (status, log
pages, kill endpoints) refuse a request without a valid token, and kill nothing even with one; a
dagger deployed as team allocations (the real `dagger deploy`) runs as the workers' unprivileged
user, who cannot read any of the lab's secrets, with only its own team's secret and Spark's own
variables in its environment. Neither secret shows in a log or a command line.

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
from kafka.admin import KafkaAdminClient, NewTopic

from dagger_runtime.lifecycle import spark as spark_api
from dagger_runtime.lifecycle.clusters import load_clusters
from lab import access
from tests.kafka_jobs import EXAMPLES, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]
CLUSTER = "blue"
OTHER = "green"
TEAM = "allocations"
DRIVER_USER = "dagger-spark"


def clusters(env):
    return load_clusters(str(Path(env["DAGGER_LAB_DIR"]) / "clusters"))


def drivers_known(cluster) -> set[str]:
    state = spark_api.master_json(cluster, timeout=10)
    return {d["id"] for d in state.get("activedrivers", []) + state.get("completeddrivers", [])}


def submit(cluster, env_extra: dict, conf: dict, name: str) -> subprocess.CompletedProcess:
    """A cluster-mode spark-submit as anyone on the machine could run it (the driver would only
    fail: its script does not exist)."""
    home = spark_api.spark_home(cluster)
    jar = next(Path(home, "jars").glob("spark-core_*.jar"))
    argv = [f"{home}/bin/spark-submit", "--master", cluster.master, "--deploy-mode", "cluster", "--name", name,
            "--driver-memory", "256m", "--class", "org.apache.spark.deploy.PythonRunner"]
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
        "the other cluster's secret": (spark_api.client_env(other), spark_api.auth_conf(cluster)),
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
    done = subprocess.run([str(Path(sys.executable).parent / "supervisorctl"), "-c",
                           str(lab / "supervisor" / "supervisord.conf"), "pid", program],
                          capture_output=True, text=True, timeout=30)
    assert done.stdout.strip().isdigit(), done.stdout + done.stderr
    return int(done.stdout.strip())


def test_the_master_listens_on_its_rpc_and_ui_ports_only_no_rest_server(lab_env):
    cluster = clusters(lab_env)[CLUSTER]
    ports = listening_ports(supervised_pid(lab_env, f"spark-{CLUSTER}-master"))
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

    request = urllib.request.Request(url, data=urllib.parse.urlencode(data).encode() if data else None,
                                     headers={"Authorization": f"Bearer {token}"} if token else {})
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


@pytest.fixture(scope="module")
def deployed(lab_env, tmp_path_factory):
    """A dagger of team allocations deployed with `dagger deploy`, RUNNING, and its driver's
    processes (the DriverWrapper JVM and its Python); stopped with `dagger stop` at the end."""
    lab = Path(lab_env["DAGGER_LAB_DIR"])
    servers = bootstrap(int(lab_env["DAGGER_LAB_PORT_BASE"]))
    run_id = uuid.uuid4().hex[:6]
    name = f"isolation-{run_id}"
    topic, out = f"bookings-{run_id}-iso", f"allocations-iso-{run_id}"
    admin = KafkaAdminClient(bootstrap_servers=servers, **access.kafka_python("admin", lab=lab))
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3),
                         NewTopic(out, num_partitions=1, replication_factor=3)])
    admin.close()
    job = yaml.safe_load((EXAMPLES / "completed_bookings_by_s2.yaml").read_text())
    job.update(name=name, team=TEAM, parallelism=1, dead_letter_topic=f"allocations-{name}-dlq")
    job["streams"][0]["topics"] = [topic]
    job["streams"][0]["kafka"].update(bootstrap_servers=servers, group_id=access.consumer_group(TEAM, name),
                                      client=access.team_client(TEAM))
    job["sink"] = {"type": "kafka", "kafka": {"brokers": servers, "topic": out, "data_type": "JSON",
                                              "client": access.team_client(TEAM)}}
    path = tmp_path_factory.mktemp("isolation") / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    env = {"DAGGER_CLUSTERS": str(lab / "clusters"),
           "DAGGER_REGISTRY_URL": (lab / "secrets" / "registry.url").read_text().strip(),
           **access.team_env(TEAM, lab=lab)}
    done = run_cli("deploy", str(path), "--cluster", CLUSTER, "--as", "isolation-test", "--json", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    driver_id = re.search(r"driver-[0-9]+-[0-9]+", done.stdout).group(0)
    try:
        jvm, python = driver_processes(lab_env, driver_id)
        app_id = application(clusters(lab_env)[CLUSTER], f"dagger-{name}")
        yield {"name": name, "driver": driver_id, "app": app_id, "jvm": jvm, "python": python, "env": env,
               "lab": lab}
    finally:
        stopped = run_cli("stop", name, "--as", "isolation-test", env=env)
        assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]


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


def driver_processes(lab_env, driver_id: str, timeout_s: float = 180) -> tuple[psutil.Process, psutil.Process]:
    """The driver's JVM (a DriverWrapper working in the driver's folder of the worker) and the
    Python it starts (the runtime's driver.py)."""
    worker = psutil.Process(supervised_pid(lab_env, f"spark-{CLUSTER}-worker"))
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
    raise AssertionError(f"no driver process of {driver_id} with its Python under the {CLUSTER} worker")


def test_the_ui_refuses_anonymous_and_forged_requests_and_kills_nothing(lab_env, deployed):
    cluster = clusters(lab_env)[CLUSTER]
    state = spark_api.master_json(cluster, timeout=10)       # the platform's token: answered
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
        for kill, form in {"/driver/kill/": {"id": driver_id, "terminate": "true"},
                           "/app/kill/": {"id": app_id, "terminate": "true"}}.items():
            assert answer(cluster.web_ui + kill, token, form) in (401, 403), f"{kill} took {what}"
    # positive control: the platform's token opens each page
    platform = spark_api.ui_headers(cluster)["Authorization"].removeprefix("Bearer ")
    for page, url in pages.items():
        assert answer(url, platform) == 200, page
    # and even the platform's token kills nothing through the UI (spark.ui.killEnabled=false)
    for kill, form in {"/driver/kill/": {"id": driver_id, "terminate": "true"},
                       "/app/kill/": {"id": app_id, "terminate": "true"}}.items():
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
    while True:     # the driver prints its first lines once its streams are set up
        logs = run_cli("logs", deployed["name"], env=deployed["env"])
        assert logs.returncode == 0, logs.stderr[-2000:]
        if "run: " in logs.stdout or time.monotonic() > deadline:
            break
        time.sleep(5)
    assert f"checkpoint {deployed['lab']}/checkpoints/{deployed['name']}/v1" in logs.stdout


def identity(proc: psutil.Process) -> tuple[int, int, list[int]]:
    status = Path(f"/proc/{proc.pid}/status").read_text()
    uids = [int(x) for x in re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()]
    gids = [int(x) for x in re.search(r"^Gid:\s+(.*)$", status, re.M).group(1).split()]
    groups = [int(x) for x in re.search(r"^Groups:\s*(.*)$", status, re.M).group(1).split()]
    assert len(set(uids)) == 1 and len(set(gids)) == 1, status
    return uids[0], gids[0], groups


def read_as(ident: tuple[int, int, list[int]], path: Path) -> subprocess.CompletedProcess:
    """`cat path` with exactly the driver's user, group and supplementary groups (no capability)."""
    uid, gid, groups = ident
    group_args = [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", *group_args, "--", "cat", str(path)],
                          capture_output=True, text=True, timeout=30)


def test_the_driver_runs_unprivileged_and_reads_no_secret_of_the_lab(lab_env, deployed):
    lab = deployed["lab"]
    for proc in (deployed["jvm"], deployed["python"]):
        uid, gid, groups = identity(proc)
        assert uid == pwd.getpwnam(DRIVER_USER).pw_uid != 0
        assert 0 not in (gid, *groups)
    ident = identity(deployed["python"])
    secrets = sorted(p for p in (lab / "secrets").rglob("*") if p.is_file())
    # every kind of the lab's secret is there to be tried: another team's and the admin's Kafka
    # passwords, the registry's URL, both clusters' Spark secrets and UI keys
    names = {p.relative_to(lab / "secrets").as_posix() for p in secrets}
    assert {"kafka/primary/dagger-api-health.password", "kafka/primary/admin.password", "registry.url",
            f"spark/{CLUSTER}.secret", f"spark/{OTHER}.ui.key"} <= names
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
    lab_names = set(environ(psutil.Process(supervised_pid(lab_env, f"spark-{CLUSTER}-master")).parent()))
    assert "DAGGER_LAB_DIR" in lab_names
    # the worker itself runs with Spark's variables and PATH only
    worker_names = set(environ(psutil.Process(supervised_pid(lab_env, f"spark-{CLUSTER}-worker"))))
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
    for cluster in clusters(lab_env).values():
        values[f"{cluster.name} secret"] = Path(cluster.auth_secret_file).read_text().strip()
        values[f"{cluster.name} UI key"] = Path(cluster.ui_key_file).read_text().strip()
    assert all(len(v) >= 43 for v in values.values())
    logs = [p for folder in (lab / "supervisor" / "logs", lab / "spark", lab / ".runner")
            for p in folder.rglob("*") if p.is_file() and p.suffix not in (".jar",) and "conf" not in p.parts]
    assert any(p.name == "worker.log" for p in logs) and any(p.name == "stderr" for p in logs)
    for path in logs:
        text = path.read_bytes()
        for what, value in values.items():
            assert value.encode() not in text, f"the {what} is in {path}"
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        for what, value in values.items():
            assert value not in line, f"the {what} is on the command line of {proc.pid}"
