"""The drills' process-level faults on the real lab (chaos/faults): each kind injected, its effect
seen independently of the fault code (/proc, the ports, the Spark master's /json/, InfluxDB's
/ping, Kafka's own view of its cluster, `lab status --json`), undone, and the recovery seen the same
way; the journal undoing what a SIGKILLed drill left; SIGTERM rolling a drill back; the seeded
choice of a share of the brokers; LOKI's instance_recovery. Every test leaves the lab healthy."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest

from chaos.catalog import FAULT_KINDS
from chaos.faults import FaultError, Faults, Lab, NotInScope, choose, in_scope, make_fault
from lab import access
from tests.labrun import REPO, lab

pytestmark = [pytest.mark.e2e, pytest.mark.kafka]


# --- independent observers ----------------------------------------------------------------------


def status(env) -> dict[str, dict]:
    """`lab status --json` by program: supervisord's state, pid, whether the address answers."""
    return {c["program"]: c for c in json.loads(lab(["status", "--json"], env).stdout)["components"]}


def wait_lab_up(env, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        report = json.loads(lab(["status", "--json"], env).stdout)
        if report["up"]:
            return
        assert time.monotonic() < deadline, [c for c in report["components"] if not c["up"]]
        time.sleep(1)


def port_of(component: dict) -> int:
    return int(component["address"].rpartition(":")[2])


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def proc_state(pid: int) -> str | None:
    """The process's state letter in /proc/<pid>/stat (T: stopped), None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state = text[text.rindex(")") + 2 :].split()[0]
    return None if state in ("Z", "X") else state


def processes_with(needle: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if needle in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace"):
                    if proc_state(int(entry.name)):
                        found.append(int(entry.name))
            except OSError:
                pass
    return found


def poll(check, timeout_s: float, what: str, every: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            result = check()
        except Exception as e:  # noqa: BLE001 - a client failing while the servers come and go: ask again
            result, last = None, e
        else:
            last = result
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s (last: {last!r})"
        time.sleep(every)


def login(env, cluster: str = "primary") -> dict:
    return access.kafka_python("admin", cluster, Path(env["DAGGER_LAB_DIR"]))


def servers(env, cluster: str = "primary") -> str:
    return ",".join(c["address"] for p, c in sorted(status(env).items()) if p.startswith(f"kafka-{cluster}-"))


def live_brokers(env, cluster: str = "primary") -> list[int]:
    """The brokers Kafka's controller lists as serving (registered, not fenced)."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    up = ",".join(c["address"] for p, c in status(env).items() if p.startswith(f"kafka-{cluster}-") and c["answers"])
    admin = KafkaAdminClient(
        bootstrap_servers=up, client_id="chaos-test", request_timeout_ms=5000, **login(env, cluster)
    )
    try:
        # the client asks a broker of the metadata's, at random: one cut off the network times out,
        # and is left out of the next pick (its reconnect back-off)
        for attempt in range(5):
            try:
                return sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"] if not b.get("is_fenced"))
            except KafkaError:
                if attempt == 4:
                    raise
    finally:
        admin.close()


def under_replicated(env, cluster: str = "primary") -> list[str]:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(
        bootstrap_servers=servers(env, cluster), client_id="chaos-test", request_timeout_ms=5000, **login(env, cluster)
    )
    try:
        return [
            f"{t['name']}-{p['partition_index']}"
            for t in admin.describe_topics(admin.list_topics())
            for p in t["partitions"]
            if set(p["isr_nodes"]) != set(p["replica_nodes"])
        ]
    finally:
        admin.close()


def round_trip(env, topic: str) -> None:
    """acks=all writes to every partition and reads them back."""
    from kafka import KafkaConsumer, KafkaProducer

    sent = {f"{uuid.uuid4().hex}".encode() for _ in range(9)}
    producer = KafkaProducer(bootstrap_servers=servers(env), acks="all", retries=5, **login(env))
    for i, value in enumerate(sent):
        producer.send(topic, partition=i % 3, value=value)
    producer.flush(timeout=60)
    producer.close()
    consumer = KafkaConsumer(topic, bootstrap_servers=servers(env), auto_offset_reset="earliest", **login(env))
    got: set = set()
    # a hang guard, not a speed limit: after a broker leaves, a loaded 2-core CI machine took over 30 s
    # before the consumer's metadata led it to the partitions' new leaders
    deadline = time.monotonic() + 180
    while not sent <= got and time.monotonic() < deadline:  # done when all are read, not after idling
        for records in consumer.poll(timeout_ms=500).values():
            got.update(r.value for r in records)
    consumer.close()
    assert sent <= got


def kafka_answers_api(port: int, timeout_s: float = 3) -> bool:
    """The broker answers an ApiVersions request (allowed before SASL): a frozen broker accepts the
    TCP connection, in the kernel, and never answers."""
    client = b"chaos-test"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            return len(s.recv(4)) == 4
    except OSError:  # a timeout included
        return False


# the lab's teams, each with a Spark cluster of its own in blue and in green
TEAMS = ("allocations", "api-health")


def lab_cluster(env, cluster: str, team: str = TEAMS[0]):
    from dagger_runtime.lifecycle.clusters import load_clusters

    return load_clusters(str(Path(env["DAGGER_LAB_DIR"]) / "clusters"), team=team)[cluster]


def master_json(env, cluster: str, team: str = TEAMS[0]) -> dict | None:
    """The master's /json/, with the platform's UI token (its UIs refuse anonymous requests)."""
    from dagger_runtime.lifecycle.spark import master_json as fetch

    try:
        return fetch(lab_cluster(env, cluster, team), timeout=5)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def worker_state(env, cluster: str, worker: dict, team: str = TEAMS[0]) -> str | None:
    """The master's state for the worker serving at `worker`'s address: ALIVE if any entry is."""
    data = master_json(env, cluster, team)
    if data is None:
        return None
    states = [w["state"] for w in data["workers"] if w["webuiaddress"].endswith("//" + worker["address"])]
    return "ALIVE" if "ALIVE" in states else (states[-1] if states else None)


def influx_ping(component: dict) -> bool:
    try:
        with urllib.request.urlopen(f"http://{component['address']}/ping", timeout=3) as r:
            return r.status == 204
    except (urllib.error.URLError, OSError):
        return False


def postgres_query(env) -> bool:
    import psycopg

    url = (Path(env["DAGGER_LAB_DIR"]) / "secrets" / "registry.url").read_text().strip()
    try:
        with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), connect_timeout=3) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.Error:
        return False


@pytest.fixture
def faults(lab_env, tmp_path):
    """A drill's Faults on the test lab; whatever a test leaves is rolled back, and the lab is up."""
    lab_ = Lab.from_env(lab_env)
    with Faults(tmp_path / "faults.json", lab_, timeout_s=180) as f:
        yield lab_, f
    wait_lab_up(lab_env)


@pytest.fixture(scope="module")
def topic(lab_env):
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"chaos-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=servers(lab_env), client_id="chaos-test", **login(lab_env))
    admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=3)])
    admin.close()
    poll(lambda: round_trip(lab_env, name) or True, 60, "the new topic takes writes")
    return name


def healthy_kafka(env, topic: str) -> None:
    """The primary serves again: all brokers listed, nothing under-replicated, a round trip."""
    assert poll(lambda: live_brokers(env) == [1, 2, 3], 60, "all brokers listed")
    assert poll(lambda: not under_replicated(env), 90, "no under-replicated partition")
    round_trip(env, topic)


# --- the tests ----------------------------------------------------------------------------------


def test_broker_kill_stays_down_then_comes_back(lab_env, faults, topic):
    lab_, f = faults
    before = status(lab_env)["kafka-primary-2"]
    fault = f.inject(make_fault("broker-kill", lab_, target="primary", ids=[2], downtime="10s"))
    assert fault.programs == ["kafka-primary-2"]
    assert proc_state(before["pid"]) is None  # the JVM is gone
    # supervisord restarts what exits (autorestart=true): for longer than a restart and a broker's
    # start take, nothing may come back and serve
    server_properties = f"{lab_env['DAGGER_LAB_DIR']}/kafka/primary-2/config/server.properties"
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        assert processes_with(server_properties) == []
        assert not answers(port_of(before))
        time.sleep(0.25)
    now = status(lab_env)["kafka-primary-2"]
    assert now["state"] == "STOPPED" and now["pid"] is None
    log = (Path(lab_env["DAGGER_LAB_DIR"]) / "supervisor" / "logs" / "supervisord.log").read_text()
    since_kill = log[log.rindex("stopped: kafka-primary-2 (terminated by SIGKILL)") :]
    assert "spawned: 'kafka-primary-2'" not in since_kill  # supervisord started nothing
    assert poll(lambda: live_brokers(lab_env) == [1, 3], 30, "the controller drops broker 2")

    assert f.undo(fault) == []
    after = status(lab_env)["kafka-primary-2"]
    assert after["state"] == "RUNNING" and after["pid"] != before["pid"] and answers(port_of(after))
    healthy_kafka(lab_env, topic)
    assert fault.injected_at < fault.undone_at <= fault.healthy_at
    assert [t["signal"] for t in fault.touched] == ["SIGSTOP", "SIGKILL"]
    assert f.undo(fault) == []  # twice is harmless


def test_broker_pause_hangs_a_broker_with_its_port_open_and_undo_resumes_it(lab_env, faults, topic):
    lab_, f = faults
    broker = status(lab_env)["kafka-primary-3"]
    assert kafka_answers_api(port_of(broker))
    fault = f.inject(make_fault("broker-pause", lab_, target="primary", ids=[3]))
    assert proc_state(broker["pid"]) == "T"
    assert answers(port_of(broker))  # the kernel still accepts
    assert not kafka_answers_api(port_of(broker))  # Kafka never answers
    assert status(lab_env)["kafka-primary-3"]["state"] == "RUNNING"  # supervisord sees nothing
    assert f.undo(fault) == []
    assert proc_state(broker["pid"]) not in ("T", None)
    assert status(lab_env)["kafka-primary-3"]["pid"] == broker["pid"]
    assert kafka_answers_api(port_of(broker))
    healthy_kafka(lab_env, topic)


def test_failure_percentage_picks_a_seeded_share_and_broker_stop_stops_them_cleanly(lab_env, faults, topic):
    lab_, f = faults
    # 50% of 3 brokers is 1.5, rounded up to 2; the same seed picks the same two, every time
    picked = make_fault("broker-stop", lab_, target="primary", failure_percentage=50, seed=7)
    assert len(picked.params["brokers"]) == 2 and set(picked.params["brokers"]) <= {1, 2, 3}
    for _ in range(3):
        assert (
            make_fault("broker-stop", lab_, failure_percentage=50, seed=7).params["brokers"] == picked.params["brokers"]
        )
    assert len({tuple(choose([1, 2, 3], 50, seed)) for seed in range(20)}) > 1  # the seed matters
    assert choose([1, 2, 3], 1, "x") != [] and len(choose([1, 2, 3], 1, "x")) == 1  # at least one
    assert choose([1, 2, 3], 100, 0) == [1, 2, 3]
    assert len(choose(list(range(10)), 25, 3)) == 3
    with pytest.raises(FaultError):
        choose([1, 2, 3], 0, 0)

    states = status(lab_env)
    fault = f.inject(picked)
    stopped = [states[f"kafka-primary-{i}"] for i in picked.params["brokers"]]
    kept = sorted({1, 2, 3} - set(picked.params["brokers"]))
    for broker in stopped:
        assert proc_state(broker["pid"]) is None and not answers(port_of(broker))
    log = (Path(lab_env["DAGGER_LAB_DIR"]) / "supervisor" / "logs" / "supervisord.log").read_text()
    assert all(f"stopped: {b['program']} (exit status 143)" in log for b in stopped)  # SIGTERM, handled
    assert poll(lambda: live_brokers(lab_env) == kept, 30, "only the kept broker listed")
    assert f.undo(fault) == []
    healthy_kafka(lab_env, topic)


def test_cluster_down_stops_every_broker_of_the_cluster(lab_env, faults, topic):
    lab_, f = faults
    states = status(lab_env)
    brokers = [states[f"kafka-primary-{i}"] for i in (1, 2, 3)]
    fault = f.inject(make_fault("cluster-down", lab_, target="primary"))
    assert fault.params["brokers"] == [1, 2, 3]
    for broker in brokers:
        assert proc_state(broker["pid"]) is None and not answers(port_of(broker))
    assert all(status(lab_env)[b["program"]]["state"] == "STOPPED" for b in brokers)
    assert f.undo(fault) == []
    healthy_kafka(lab_env, topic)


def data_dir(env, broker: int) -> Path:
    return Path(env["DAGGER_LAB_DIR"]) / "kafka" / f"primary-{broker}" / "data"


def write_error(directory: Path) -> int | None:
    """The errno a new file in `directory` fails with (None: it can be written)."""
    probe = directory / f".chaos-test-{uuid.uuid4().hex[:6]}"
    try:
        with probe.open("wb") as out:
            out.write(b"x" * 8192)
            out.flush()
            os.fsync(out.fileno())
    except OSError as e:
        try:
            probe.unlink()
        except OSError:
            pass
        return e.errno
    probe.unlink()
    return None


def mounted_on(path: Path) -> list[str]:
    """The filesystem types mounted on `path`, read from the kernel's mount table."""
    with open("/proc/self/mountinfo") as f:
        rows = [line.split() for line in f]
    return [r[r.index("-") + 1] for r in rows if r[4] == str(path)]


@pytest.mark.parametrize("kind, broker, errno_", [("disk-break", 2, 30), ("disk-fill", 3, 28)])
def test_a_broken_or_full_data_disk_takes_the_broker_out_and_undo_brings_it_back(
    lab_env, faults, topic, kind, broker, errno_
):
    """LOKI's data_disk_failure: the broker's next write fails (EROFS 30, ENOSPC 28), Kafka takes
    the directory offline and the broker leaves the cluster; undo restores the disk and the broker."""
    lab_, f = faults
    directory = data_dir(lab_env, broker)
    before = status(lab_env)[f"kafka-primary-{broker}"]
    assert write_error(directory) is None and mounted_on(directory) == []
    fault = f.inject(make_fault(kind, lab_, target="primary", ids=[broker]))
    assert write_error(directory) == errno_
    if kind == "disk-fill":
        assert os.statvfs(directory).f_bavail == 0
    # what was on the disk is still readable: only writing fails
    assert (directory / "meta.properties").read_text().count("node.id=") == 1
    # Kafka finds out at its next checkpoint and the broker leaves; the other two carry on
    poll(lambda: proc_state(before["pid"]) is None, 120, "the broker shut down on its failed disk", every=1)
    assert poll(lambda: live_brokers(lab_env) == sorted({1, 2, 3} - {broker}), 60, "the controller drops it")
    round_trip(lab_env, topic)
    assert f.undo(fault) == []
    assert mounted_on(directory) == [] and write_error(directory) is None
    assert status(lab_env)[f"kafka-primary-{broker}"]["state"] == "RUNNING"
    healthy_kafka(lab_env, topic)
    assert f.undo(fault) == []  # twice is harmless


def nft_ruleset() -> str:
    return subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True, check=True).stdout


def test_network_cut_partitions_a_broker_from_its_clients_not_from_the_quorum(lab_env, faults, topic):
    lab_, f = faults
    broker = status(lab_env)["kafka-primary-2"]
    port = port_of(broker)
    controller_port = port + 1  # the lab's CONTROLLER listener (server.properties)
    assert kafka_answers_api(port) and answers(controller_port)
    fault = f.inject(make_fault("network-cut", lab_, target="primary", ids=[2]))
    assert str(port) in nft_ruleset()
    assert not answers(port) and not kafka_answers_api(port)  # dropped: no answer at all
    assert answers(controller_port)  # the quorum still reaches it
    # the broker runs on, and the controller still counts it: a partial partition
    assert status(lab_env)["kafka-primary-2"]["pid"] == broker["pid"] and proc_state(broker["pid"]) is not None
    time.sleep(3)
    assert 2 in live_brokers(lab_env)
    assert f.undo(fault) == []
    assert str(port) not in nft_ruleset()
    assert kafka_answers_api(port)
    healthy_kafka(lab_env, topic)
    assert f.undo(fault) == []


def topic_led_by(env, leaders: list[int]) -> str:
    """A new topic whose partition i is led by broker leaders[i] (its preferred replica, first)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"chaos-{uuid.uuid4().hex[:8]}"
    assignment = {i: [b] + sorted({1, 2, 3} - {b}) for i, b in enumerate(leaders)}
    admin = KafkaAdminClient(bootstrap_servers=servers(env), client_id="chaos-test", **login(env))
    try:
        admin.create_topics([NewTopic(name, num_partitions=-1, replication_factor=-1, replica_assignments=assignment)])
    finally:
        admin.close()
    poll(lambda: round_trip(env, name) or True, 60, "the new topic takes writes")
    return name


def produce_seconds(env, topic: str, partition: int, total_bytes: int) -> float:
    """How long acks=all writes of `total_bytes` to one partition take, end to end."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=servers(env),
        acks="all",
        linger_ms=0,
        batch_size=16384,
        request_timeout_ms=120_000,
        delivery_timeout_ms=300_000,
        **login(env),
    )
    producer.partitions_for(topic)
    payload = os.urandom(8000)  # random: nothing compresses it away
    started = time.monotonic()
    for _ in range(total_bytes // len(payload)):
        producer.send(topic, partition=partition, value=payload)
    producer.flush(timeout=300)
    took = time.monotonic() - started
    producer.close()
    return took


def tc_class_bytes(dev: str = "lo") -> dict[str, int]:
    out = subprocess.run(["tc", "-s", "class", "show", "dev", dev], capture_output=True, text=True, check=True).stdout
    found, current = {}, None
    for line in out.splitlines():
        words = line.split()
        if words[:2] == ["class", "htb"]:
            current = words[2]
        elif words[:1] == ["Sent"] and current:
            found[current] = int(words[1])
    return found


def test_network_slow_throttles_a_brokers_client_traffic_and_nothing_else(lab_env, faults, topic):
    lab_, f = faults
    broker = status(lab_env)["kafka-primary-3"]
    led = topic_led_by(lab_env, [3, 1, 2])  # partition 0 led by broker 3, partition 1 by broker 1
    fault = f.inject(make_fault("network-slow", lab_, target="primary", ids=[3]))
    rate_bits = 256_000
    assert fault.params["rate"] == "256kbit"
    klass = fault.params["tc_class"]
    # 320 kB to a partition broker 3 leads: its requests, and the followers' fetches of them, pass
    # the throttle; at 256 kbit/s (32 kB/s, less its 16 kB burst) that cannot take under 7 s
    took = produce_seconds(lab_env, led, 0, 320_000)
    assert took >= (320_000 - 16_384) / (rate_bits / 8) * 0.75, took
    assert tc_class_bytes()[klass] >= 320_000  # the kernel counted them through it
    # another broker's traffic is not throttled: the rest of loopback goes out unshaped
    assert produce_seconds(lab_env, led, 1, 64_000) < took
    assert proc_state(broker["pid"]) is not None
    assert f.undo(fault) == []
    assert klass not in tc_class_bytes()
    assert "htb" not in subprocess.run(["tc", "qdisc", "show", "dev", "lo"], capture_output=True, text=True).stdout
    healthy_kafka(lab_env, topic)
    assert f.undo(fault) == []


SLEEPER = textwrap.dedent("""
    import os, time
    parent = os.getppid()
    while os.getppid() == parent:      # ends with the driver JVM that started it
        time.sleep(0.5)
""")


def submit_sleeper(env, cluster: str, script: Path) -> str:
    """A supervised driver that only sleeps: the master places and restarts it as it does a dagger's."""
    from dagger_runtime.lifecycle.spark import auth_conf, client_env

    spec = lab_cluster(env, cluster).model_dump()
    home = spec["spark_home"]
    jar = next(Path(home, "jars").glob("spark-core_*.jar"))
    # where the drivers' user reads what deploy gives it (the driver runs unprivileged, and pytest's
    # folders are the test's own)
    script = Path(spec["spec_dir"]) / script.name
    script.write_text(SLEEPER)
    script.chmod(0o640)
    # the platform's client: the cluster's secret in the environment, its settings as --conf
    conf = [a for k, v in auth_conf(lab_cluster(env, cluster)).items() for a in ("--conf", f"{k}={v}")]
    done = subprocess.run(
        [
            f"{home}/bin/spark-submit",
            "--master",
            spec["master"],
            "--deploy-mode",
            "cluster",
            "--supervise",
            "--name",
            "chaos-sleeper",
            "--driver-memory",
            "256m",
            "--conf",
            f"spark.pyspark.python={spec['python']}",
            "--conf",
            f"spark.pyspark.driver.python={spec['python']}",
            *conf,
            "--class",
            "org.apache.spark.deploy.PythonRunner",
            str(jar),
            str(script),
            "",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**env, "SPARK_LOCAL_IP": "127.0.0.1", **client_env(lab_cluster(env, cluster))},
    )
    found = [w for w in (done.stdout + done.stderr).split() if w.startswith("driver-")]
    assert done.returncode == 0 and found, done.stderr[-2000:]
    return found[0].rstrip(".,")


def kill_driver(env, cluster: str, driver_id: str) -> None:
    """As `dagger stop` does (Spark's Client kill, with the secret): the UIs' kill is off."""
    from dagger_runtime.lifecycle.spark import kill

    kill(lab_cluster(env, cluster), driver_id)
    poll(lambda: not processes_with(driver_id), 60, f"{driver_id} ended")


def test_driver_kill_and_the_supervised_restart(lab_env, faults, tmp_path):
    lab_, f = faults
    driver_id = submit_sleeper(lab_env, "green", tmp_path / "sleeper.py")
    try:
        # the driver's JVM, working in its own folder of the worker
        first = poll(lambda: processes_with(f"/{driver_id}/"), 60, "the driver's JVM")
        jvm = [p for p in first if "DriverWrapper" in Path(f"/proc/{p}/cmdline").read_text()]
        assert len(jvm) == 1
        fault = f.inject(make_fault("driver-kill", lab_, target="green", ids=[driver_id]))
        assert proc_state(jvm[0]) is None
        assert [t["pid"] for t in fault.touched] == jvm
        assert f.undo(fault) == []  # only checks: --supervise restarted it
        again = [
            p for p in processes_with(f"/{driver_id}/") if "DriverWrapper" in Path(f"/proc/{p}/cmdline").read_text()
        ]
        assert again and again != jvm
        assert {d["id"]: d["state"] for d in master_json(lab_env, "green")["activedrivers"]}[driver_id] == "RUNNING"
    finally:
        kill_driver(lab_env, "green", driver_id)
    # a driver id that is not running is refused before anything is touched
    with pytest.raises(FaultError, match="not RUNNING"):
        make_fault("driver-kill", lab_, target="green", ids=[driver_id])


def test_spark_worker_kill_master_kill_and_cluster_down(lab_env, faults):
    """blue and green each hold a cluster per team: a worker named by its program is the only one
    hit; master-kill and spark-cluster-down on a name hit every team's cluster in it."""
    lab_, f = faults
    states = status(lab_env)
    workers = {t: states[f"spark-blue-{t}-worker"] for t in TEAMS}
    masters = {t: states[f"spark-blue-{t}-master"] for t in TEAMS}
    for t in TEAMS:
        assert worker_state(lab_env, "blue", workers[t], t) == "ALIVE"
    hit, spared = TEAMS
    worker = workers[hit]

    fault = f.inject(make_fault("worker-kill", lab_, target="blue", ids=[f"spark-blue-{hit}-worker"]))
    assert proc_state(worker["pid"]) is None and not answers(port_of(worker))
    assert poll(lambda: worker_state(lab_env, "blue", worker, hit) == "DEAD", 30, "the master lists the worker DEAD")
    time.sleep(4)  # longer than supervisord's restart and startsecs: still down
    assert status(lab_env)[f"spark-blue-{hit}-worker"]["state"] == "STOPPED" and not answers(port_of(worker))
    assert proc_state(workers[spared]["pid"]) is not None
    assert worker_state(lab_env, "blue", workers[spared], spared) == "ALIVE"
    assert f.undo(fault) == []
    assert worker_state(lab_env, "blue", worker, hit) == "ALIVE"

    fault = f.inject(make_fault("master-kill", lab_, target="blue"))
    assert sorted(fault.programs) == sorted(f"spark-blue-{t}-master" for t in TEAMS)
    for t in TEAMS:
        assert proc_state(masters[t]["pid"]) is None
        assert not answers(port_of(masters[t])) and master_json(lab_env, "blue", t) is None
    assert f.undo(fault) == []
    for t in TEAMS:
        assert master_json(lab_env, "blue", t)["status"] == "ALIVE"
        assert poll(
            lambda: worker_state(lab_env, "blue", states[f"spark-blue-{t}-worker"], t) == "ALIVE",  # noqa: B023 - polled before the loop moves on
            30,
            f"{t}'s blue worker registered again",
        )

    states = status(lab_env)
    green = {p: c for p, c in states.items() if p.startswith("spark-green-")}
    assert len(green) == 2 * len(TEAMS)
    fault = f.inject(make_fault("spark-cluster-down", lab_, target="green"))
    for c in green.values():
        assert proc_state(c["pid"]) is None and not answers(port_of(c))
    assert all(master_json(lab_env, "green", t) is None for t in TEAMS)
    assert f.undo(fault) == []
    for t in TEAMS:
        assert master_json(lab_env, "green", t)["status"] == "ALIVE"
        assert worker_state(lab_env, "green", states[f"spark-green-{t}-worker"], t) == "ALIVE"


def test_sink_down_for_influxdb_and_postgresql(lab_env, faults):
    lab_, f = faults
    states = status(lab_env)
    influx, pg = states["influxdb"], states["postgresql-daggers"]
    assert influx_ping(influx) and postgres_query(lab_env)

    down = [
        f.inject(make_fault("sink-down", lab_, target="influxdb")),
        f.inject(make_fault("sink-down", lab_, target="postgresql")),
    ]
    assert not influx_ping(influx) and proc_state(influx["pid"]) is None
    assert not postgres_query(lab_env) and not answers(port_of(pg)) and proc_state(pg["pid"]) is None
    for fault in down:
        assert f.undo(fault) == []
    assert influx_ping(influx) and postgres_query(lab_env)


def test_instance_recovery(lab_env, faults, tmp_path):
    """true: undone at the end of its downtime; false: down until the drill's final rollback."""
    lab_, _ = faults  # the fixture's rollback is the safety net; this drill has its own
    influx = status(lab_env)["influxdb"]
    with Faults(tmp_path / "drill.json", lab_) as drill:
        kept = drill.run(make_fault("sink-down", lab_, target="influxdb", downtime="1s", instance_recovery=False))
        assert kept.active and not influx_ping(influx)
        recovered = drill.run(make_fault("broker-pause", lab_, target="primary", ids=[1], downtime="1s"))
        assert recovered.state == "undone" and recovered.healthy_at and not recovered.active
        assert not influx_ping(influx)  # still down: only the final rollback undoes it
        assert drill.faults == [kept, recovered]
    assert kept.state == "undone" and kept.healthy_at and influx_ping(influx)
    assert kept.undone_at > recovered.undone_at


DRILL = textwrap.dedent("""
    import sys, time
    from chaos.faults import Faults, Lab, make_fault
    lab = Lab.from_env()
    with Faults(sys.argv[1], lab) as faults:
        faults.inject(make_fault("broker-pause", lab, target="primary", ids=[3]))
        faults.inject(make_fault("sink-down", lab, target="influxdb"))
        print("injected", flush=True)
        time.sleep(600)
""")


def test_a_killed_drill_is_undone_from_its_journal_and_sigterm_rolls_back(lab_env, tmp_path, topic):
    journal = tmp_path / "drill.json"
    env = {**lab_env, "PYTHONPATH": str(REPO)}
    states = status(lab_env)
    drill = subprocess.Popen(
        [sys.executable, "-c", DRILL, str(journal)], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert drill.stdout.readline().strip() == "injected"
    finally:
        drill.kill()  # SIGKILL: no rollback of its own
        drill.wait(30)
    assert proc_state(states["kafka-primary-3"]["pid"]) == "T"
    assert not influx_ping(states["influxdb"])
    undo = subprocess.run(
        [sys.executable, "-m", "chaos.faults", "undo", str(journal)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert proc_state(states["kafka-primary-3"]["pid"]) not in ("T", None) and influx_ping(states["influxdb"])
    assert all(f["state"] == "undone" for f in json.loads(journal.read_text())["faults"])
    again = subprocess.run(
        [sys.executable, "-m", "chaos.faults", "undo", str(journal)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0 and "nothing to undo" in again.stdout
    healthy_kafka(lab_env, topic)

    # SIGTERM to a drill (here the CLI holding a fault for 10 minutes) undoes its faults on the way out
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chaos.faults",
            "inject",
            "sink-down",
            "--target",
            "postgresql",
            "--downtime",
            "10m",
            "--journal",
            str(tmp_path / "cli.json"),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll(lambda: not answers(port_of(states["postgresql-daggers"])), 60, "PostgreSQL down")
        time.sleep(0.5)
        cli.send_signal(signal.SIGTERM)
        out, err = cli.communicate(timeout=180)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 128 + signal.SIGTERM, out + err
    assert "rolled back" in err
    assert postgres_query(lab_env)
    wait_lab_up(lab_env)


def test_kinds_out_of_scope_say_so_and_bad_targets_are_refused(lab_env):
    lab_ = Lab.from_env(lab_env)
    for kind in FAULT_KINDS:
        if not in_scope(kind.name):
            with pytest.raises(NotInScope, match="not implemented yet"):
                make_fault(kind.name, lab_, target="primary", ids=[1])
    assert issubclass(NotInScope, NotImplementedError) and issubclass(NotInScope, FaultError)
    with pytest.raises(FaultError, match="unknown fault kind"):
        make_fault("broker-melt", lab_)
    with pytest.raises(FaultError, match="no broker 7"):
        make_fault("broker-kill", lab_, target="primary", ids=[7])
    with pytest.raises(FaultError, match="failure_percentage"):
        make_fault("broker-kill", lab_, target="primary")
    with pytest.raises(FaultError, match="no Spark cluster"):
        make_fault("master-kill", lab_, target="purple")
    # a lab folder and a port base of two different labs are not mixed up
    with pytest.raises(FaultError, match="different labs"):
        make_fault("sink-down", Lab(lab_.dir, lab_.port_base + 10000), target="influxdb")
    help_text = subprocess.run(
        [sys.executable, "-m", "chaos.faults", "inject", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert help_text.returncode == 0 and "--failure-percentage" in help_text.stdout
