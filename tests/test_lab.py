"""The lab, converged for real by the project's playbooks: Kafka primary (three KRaft nodes,
replication 3, min.insync.replicas 2) and mirror, MirrorMaker, Spark, InfluxDB, PostgreSQL (the job
registry) and Prometheus under supervisord, idempotent, and down again."""

from __future__ import annotations

import base64
import importlib.metadata
import json
import pwd
import re
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from lab import access
from tests.kafka_jobs import read_topic
from tests.labrun import PORT_BASE, lab

pytestmark = [pytest.mark.e2e, pytest.mark.kafka]


def wait_up(env, timeout_s: float = 180) -> dict:
    """lab status --json once every component runs and answers."""
    deadline = time.monotonic() + timeout_s
    while True:
        report = json.loads(lab(["status", "--json"], env).stdout)
        if report["up"] or time.monotonic() > deadline:
            return report
        time.sleep(1)


def bootstrap(cluster_offset: int, nodes: int) -> str:
    return ",".join(f"127.0.0.1:{PORT_BASE + cluster_offset + 100 * n + 92}" for n in range(1, nodes + 1))


def login(env, cluster: str = "primary") -> dict:
    """kafka-python arguments that log in as the cluster's administrator (the lab's clusters
    authenticate every client)."""
    return access.kafka_python("admin", cluster, Path(env["DAGGER_LAB_DIR"]))


def test_the_primary_cluster_has_three_brokers_and_keeps_writes_when_one_is_lost(lab_env):
    servers = bootstrap(0, 3)
    admin = KafkaAdminClient(bootstrap_servers=servers, client_id="lab-test", **login(lab_env))
    try:
        assert sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"]) == [1, 2, 3]
        topic = f"lab-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=-1)])  # the broker's default
        partitions = []
        for _ in range(50):  # the new topic's metadata reaches every broker
            partitions = admin.describe_topics([topic])[0]["partitions"]
            if len(partitions) == 3:
                break
            time.sleep(0.2)
        assert sorted(len(p["replica_nodes"]) for p in partitions) == [3, 3, 3]
    finally:
        admin.close()
    ctl = [
        str(Path(sys.executable).with_name("supervisorctl")),
        "-c",
        str(Path(lab_env["DAGGER_LAB_DIR"]) / "supervisor" / "supervisord.conf"),
    ]
    subprocess.run([*ctl, "stop", "kafka-primary-2"], check=True, capture_output=True, timeout=120)
    try:
        producer = KafkaProducer(bootstrap_servers=servers, acks="all", retries=10, **login(lab_env))
        for i in range(30):
            producer.send(topic, key=str(i).encode(), value=f"m{i}".encode())
        producer.flush(timeout=60)  # acks=all: two of three replicas in sync are enough
        producer.close()
        read = read_topic(servers, topic, 30, 120, **login(lab_env))
        assert sorted(r.value for r in read) == sorted(f"m{i}".encode() for i in range(30))
        # with a second broker gone, one replica is in sync: min.insync.replicas=2 refuses the write
        subprocess.run([*ctl, "stop", "kafka-primary-3"], check=True, capture_output=True, timeout=120)
        producer = KafkaProducer(
            bootstrap_servers=bootstrap(0, 1), acks="all", retries=0, request_timeout_ms=5000, **login(lab_env)
        )
        refused = [producer.send(topic, partition=p, value=b"x") for p in range(3)]
        producer.flush(timeout=30)
        errors = [type(f.exception).__name__ for f in refused if f.failed()]
        producer.close()
        assert "NotEnoughReplicasError" in errors, errors
    finally:
        subprocess.run(
            [*ctl, "start", "kafka-primary-2", "kafka-primary-3"], check=True, capture_output=True, timeout=120
        )
        assert wait_up(lab_env)["up"]


def test_the_mirror_is_a_separate_cluster(lab_env):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(1000, 1), client_id="lab-test", **login(lab_env, "mirror"))
    try:
        assert [b["broker_id"] for b in admin.describe_cluster()["brokers"]] == [1]
        primary = KafkaAdminClient(bootstrap_servers=bootstrap(0, 3), client_id="lab-test", **login(lab_env))
        assert admin.describe_cluster()["cluster_id"] != primary.describe_cluster()["cluster_id"]
        primary.close()
    finally:
        admin.close()


def test_mirrormaker_replicates_primary_into_the_mirror_and_writes_nothing_to_the_primary(lab_env):
    topic = f"orders-{uuid.uuid4().hex[:6]}"
    sent = {f"k{i}".encode(): f"order {i}".encode() for i in range(50)}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(0, 3), client_id="lab-test", **login(lab_env))
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3)])  # the lab creates none itself
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap(0, 3), acks="all", **login(lab_env))
    for key, value in sent.items():
        producer.send(topic, key=key, value=value)
    producer.flush(timeout=60)
    producer.close()
    # DefaultReplicationPolicy: the mirror's copy is named after its source cluster
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap(1000, 1),
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        **login(lab_env, "mirror"),
    )
    got: dict = {}
    deadline = time.monotonic() + 120  # MirrorMaker looks for new topics every 10 s
    while len(got) < len(sent) and time.monotonic() < deadline:
        if f"primary.{topic}" in consumer.topics():
            consumer.subscribe([f"primary.{topic}"])
            got.update({r.key: r.value for r in consumer})
        else:
            time.sleep(1)
    consumer.close()
    assert got == sent
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(0, 3), client_id="lab-test", **login(lab_env))
    try:
        on_primary = set(admin.list_topics())
    finally:
        admin.close()
    # the one-way flow keeps its heartbeats, offset syncs and Connect topics on the mirror
    assert not {t for t in on_primary if t.startswith(("mm2-", "heartbeats", "mirror.")) or "checkpoints" in t}, (
        on_primary
    )


APP = """
import json, os, sys
from pyspark.sql import SparkSession
builder = (SparkSession.builder.master(sys.argv[1]).appName(sys.argv[2]).config("spark.driver.host", "127.0.0.1")
           .config("spark.driver.bindAddress", "127.0.0.1").config("spark.executor.memory", "1g")
           .config("spark.ui.enabled", "false"))
# the cluster authenticates its clients: the platform's settings, the secret from the environment
for key, value in json.loads(sys.argv[3]).items():
    builder = builder.config(key, value)
if "_SPARK_AUTH_SECRET" in os.environ:
    builder = builder.config("spark.authenticate.secret", os.environ["_SPARK_AUTH_SECRET"])
spark = builder.getOrCreate()
print(spark.range(1000).selectExpr("sum(id)").collect()[0][0])
spark.stop()
"""


# each team's own cluster in blue and green, on base + 2000 or 3000 + 10 x the team's place
@pytest.mark.parametrize(
    "cluster, team, offset",
    [
        ("blue", "allocations", 2000),
        ("green", "allocations", 3000),
        ("blue", "api-health", 2010),
        ("green", "api-health", 3010),
    ],
)
def test_each_spark_master_runs_an_application_on_its_worker(lab_env, cluster, team, offset):
    from dagger_runtime.lifecycle import spark as spark_api
    from dagger_runtime.lifecycle.clusters import load_clusters

    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    spec = load_clusters(str(Path(lab_env["DAGGER_LAB_DIR"]) / "clusters"), team=team)[cluster]
    assert spec.team == team
    name = f"lab-check-{cluster}-{team}-{uuid.uuid4().hex[:6]}"
    app = subprocess.run(
        [
            sys.executable,
            "-c",
            APP,
            f"spark://127.0.0.1:{base + offset + 77}",
            name,
            json.dumps(spark_api.auth_conf(spec)),
        ],
        env={**lab_env, "SPARK_LOCAL_IP": "127.0.0.1", **spark_api.client_env(spec)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert app.returncode == 0, app.stderr[-3000:]
    assert app.stdout.strip().splitlines()[-1] == str(sum(range(1000)))
    assert spec.web_ui == f"http://127.0.0.1:{base + offset + 80}"
    master = spark_api.master_json(spec, timeout=10)
    assert master["status"] == "ALIVE" and master["aliveworkers"] == 1
    assert (name, "FINISHED") in {(a["name"], a["state"]) for a in master["completedapps"]}


def test_influxdb_answers_refuses_anonymous_queries_and_has_each_teams_database(lab_env):
    influx = f"http://127.0.0.1:{int(lab_env['DAGGER_LAB_PORT_BASE']) + 4086}"
    with urllib.request.urlopen(f"{influx}/ping", timeout=10) as r:
        assert r.status == 204
    query = urllib.parse.urlencode({"q": "SHOW DATABASES"}).encode()
    with pytest.raises(urllib.error.HTTPError) as anonymous:  # authentication is on
        urllib.request.urlopen(f"{influx}/query", data=query, timeout=10)
    assert anonymous.value.code == 401
    admin = access.influx_password("admin", Path(lab_env["DAGGER_LAB_DIR"]))
    request = urllib.request.Request(
        f"{influx}/query",
        data=query,
        headers={"Authorization": "Basic " + base64.b64encode(f"admin:{admin}".encode()).decode()},
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        series = json.load(r)["results"][0]["series"]
    assert {("allocations",), ("api-health",)} <= {tuple(v) for v in series[0]["values"]}


def test_postgresql_logs_in_with_the_registry_url_and_refuses_a_wrong_password(lab_env):
    import psycopg

    port = int(lab_env["DAGGER_LAB_PORT_BASE"]) + 4432
    secrets = Path(lab_env["DAGGER_LAB_DIR"]) / "secrets"
    url_file = secrets / "registry.url"
    assert stat.S_IMODE(url_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((secrets / "postgresql" / "daggers.password").stat().st_mode) == 0o600
    url = url_file.read_text().strip()
    prefix = "postgresql+psycopg://daggers:"
    assert url.startswith(prefix) and url.endswith(f"@127.0.0.1:{port}/daggers")
    password = urllib.parse.unquote(url[len(prefix) :].rpartition("@")[0])
    assert password == (secrets / "postgresql" / "daggers.password").read_text().strip()
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://", 1), connect_timeout=10) as conn:
        assert conn.execute("SELECT current_user, current_database()").fetchone() == ("daggers", "daggers")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(
            host="127.0.0.1", port=port, user="daggers", dbname="daggers", password=password + "x", connect_timeout=10
        )


def test_prometheus_is_ready_and_discovers_the_daggers_from_the_targets_directory(lab_env):
    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    prometheus = f"http://127.0.0.1:{base + 4090}"
    # it answers the platform's login only (tests/test_monitoring_isolation.py tries the others)
    user, password = access.prometheus_auth(Path(lab_env["DAGGER_LAB_DIR"]))
    login = {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}

    def get(path: str):
        return urllib.request.urlopen(urllib.request.Request(f"{prometheus}{path}", headers=login), timeout=10)

    with pytest.raises(urllib.error.HTTPError, match="401"):
        urllib.request.urlopen(f"{prometheus}/-/ready", timeout=10)
    with get("/-/ready") as r:
        assert r.status == 200
    targets_dir = Path(lab_env["DAGGER_LAB_DIR"]) / "prometheus" / "targets"
    with get("/api/v1/status/config") as r:
        config = json.load(r)["data"]["yaml"]
    assert "job_name: dagger" in config and f"- {targets_dir}/*.json" in config
    # what the daggers' deploy command writes: one file per dagger (nothing listens on the port)
    target = {
        "targets": [f"127.0.0.1:{base + 5999}"],
        "labels": {"dagger": "lab-check", "team": "lab", "cluster": "blue"},
    }
    (targets_dir / "lab-check.json").write_text(json.dumps([target]))
    try:
        deadline = time.monotonic() + 60
        found: list = []
        while not found and time.monotonic() < deadline:
            time.sleep(1)
            with get("/api/v1/targets") as r:
                found = [
                    t["labels"]
                    for t in json.load(r)["data"]["activeTargets"]
                    if t["labels"].get("dagger") == "lab-check"
                ]
        assert found == [
            {
                "job": "dagger",
                "instance": f"127.0.0.1:{base + 5999}",
                "dagger": "lab-check",
                "team": "lab",
                "cluster": "blue",
            }
        ]
    finally:
        (targets_dir / "lab-check.json").unlink()


def test_each_teams_checkpoints_and_specs_are_its_own(lab_env):
    lab = Path(lab_env["DAGGER_LAB_DIR"])
    for folder, mode in (("checkpoints", 0o700), ("daggers", 0o2750)):
        parent = lab / folder
        # root's, and no one may list it: a team's user only passes through to its own folder
        assert (parent.stat().st_uid, stat.S_IMODE(parent.stat().st_mode)) == (0, 0o711)
        for team in ("allocations", "api-health"):
            own = (parent / team).stat()
            user = pwd.getpwnam(f"dagger-spark-{team}")
            assert stat.S_IMODE(own.st_mode) == mode, (folder, team, oct(own.st_mode))
            # checkpoints: the team's user owns them; specs: root writes, the team's group reads
            assert (own.st_uid if folder == "checkpoints" else own.st_gid) == (
                user.pw_uid if folder == "checkpoints" else user.pw_gid
            )


def test_status_lists_every_component_up(lab_env):
    status = lab(["status", "--json"], lab_env)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    got = {(c["name"], c["address"], c["version"], c["up"]) for c in report["components"]}
    versions = {
        c["name"]: c["version"] for c in report["components"] if c["kind"] in ("influxdb", "postgresql", "prometheus")
    }
    assert set(versions) == {"influxdb", "postgresql", "prometheus"}
    assert got == {
        ("kafka primary 1", f"127.0.0.1:{PORT_BASE + 192}", "4.3.1", True),
        ("kafka primary 2", f"127.0.0.1:{PORT_BASE + 292}", "4.3.1", True),
        ("kafka primary 3", f"127.0.0.1:{PORT_BASE + 392}", "4.3.1", True),
        ("kafka mirror 1", f"127.0.0.1:{PORT_BASE + 1192}", "4.3.1", True),
        ("mirrormaker primary -> mirror", f"127.0.0.1:{PORT_BASE + 1192}", "4.3.1", True),
        ("spark blue allocations master", f"127.0.0.1:{PORT_BASE + 2077}", "4.0.0", True),
        ("spark blue allocations worker", f"127.0.0.1:{PORT_BASE + 2081}", "4.0.0", True),
        ("spark blue api-health master", f"127.0.0.1:{PORT_BASE + 2087}", "4.0.0", True),
        ("spark blue api-health worker", f"127.0.0.1:{PORT_BASE + 2091}", "4.0.0", True),
        ("spark green allocations master", f"127.0.0.1:{PORT_BASE + 3077}", "4.0.0", True),
        ("spark green allocations worker", f"127.0.0.1:{PORT_BASE + 3081}", "4.0.0", True),
        ("spark green api-health master", f"127.0.0.1:{PORT_BASE + 3087}", "4.0.0", True),
        ("spark green api-health worker", f"127.0.0.1:{PORT_BASE + 3091}", "4.0.0", True),
        ("influxdb", f"127.0.0.1:{PORT_BASE + 4086}", versions["influxdb"], True),
        ("postgresql", f"127.0.0.1:{PORT_BASE + 4432}", versions["postgresql"], True),
        ("prometheus", f"127.0.0.1:{PORT_BASE + 4090}", versions["prometheus"], True),
        ("keycloak", f"127.0.0.1:{PORT_BASE + 4180}", "26.7.3", True),
        ("portal", f"127.0.0.1:{PORT_BASE + 4080}", importlib.metadata.version("daggers"), True),
    }
    # the Debian packages' own versions, as the servers report them (1.6.7~rc0, 15.18, 2.42.0+ds)
    assert all(re.fullmatch(r"\d+\.\d+\S*", v) for v in versions.values()), versions
    assert all(isinstance(c["pid"], int) and Path(f"/proc/{c['pid']}").exists() for c in report["components"])


@pytest.mark.lab_last
def test_lab_down_stops_everything_and_status_says_down(lab_env):
    pids = [c["pid"] for c in json.loads(lab(["status", "--json"], lab_env).stdout)["components"]]
    down = lab(["down"], lab_env)
    assert down.returncode == 0, down.stderr[-3000:]
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)
    status = lab(["status", "--json"], lab_env)
    assert status.returncode == 1
    assert {c["up"] for c in json.loads(status.stdout)["components"]} == {False}
    # And back, from its data. This converge is also the idempotence check (one converge fewer
    # in the suite): with every setting already in place, the only changes are processes started.
    up = lab(["up"], lab_env)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    changed = [line.split(": ", 2)[2] for line in up.stdout.splitlines() if line.startswith("  changed: ")]
    assert changed, up.stdout[-3000:]
    assert [
        task for task in changed if task != "Start supervisord" and not task.startswith("Make sure it runs for ")
    ] == [], up.stdout[-3000:]
    assert json.loads(lab(["status", "--json"], lab_env).stdout)["up"] is True
