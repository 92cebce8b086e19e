"""The daggers' lifecycle on the lab: deploy to a Spark standalone cluster, edit keeping the state,
edit with a query change that cannot keep it, stop, list, and the registry's history (in the
lab's PostgreSQL). Results are compared with counts computed here from the produced events."""

from __future__ import annotations

import datetime as dt
import json
import re
import socket
import time
import uuid
from pathlib import Path

import pytest
import yaml
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from lab import access
from loadtest import traffic
from protos import registry as protos
from tests.kafka_jobs import EXAMPLES, read_topic, run_cli
from tests.reference import group, s2id, window_end

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]
DELAY_S = 60
MINUTES = 6


def bootstrap(port_base: int) -> str:
    return ",".join(f"127.0.0.1:{port_base + 100 * n + 92}" for n in (1, 2, 3))


def closed(events, window_s: int, watermark: dt.datetime) -> dict:
    completed = [e for e in events if e["status"] == "COMPLETED"]
    counts = group(
        completed,
        key=lambda e: (
            window_end(e["event_timestamp"], window_s),
            e["city_id"],
            s2id(e["lat"], e["long"], 13),
            e["vehicle_type"],
        ),
        agg=len,
    )
    return {k: n for k, n in counts.items() if k[0] <= watermark}


def watermark_of(events) -> dt.datetime:
    return max(e["event_timestamp"] for e in events) - dt.timedelta(seconds=DELAY_S)


def shifted(events, minutes: int) -> list[dict]:
    return [{**e, "event_timestamp": e["event_timestamp"] + dt.timedelta(minutes=minutes)} for e in events]


def read_results(setup, topic: str, expected: int, timeout_s: float = 240) -> dict:
    """The sink topic's rows by (window end, city, cell, vehicle); waits for `expected` rows."""
    rows = {}
    for record in read_topic(setup["servers"], topic, expected, timeout_s, **setup["admin"]):
        value = json.loads(record.value)
        window = dt.datetime.fromisoformat(value["window_timestamp"].replace("Z", "+00:00"))
        key = (window, value["tag_city_id"], value["tag_s2id"], value["tag_vehicle_type"])
        assert key not in rows, f"{topic}: {key} written twice"
        rows[key] = value["num_of_bookings"]
    return rows


@pytest.fixture(scope="module")
def setup(lab_env, tmp_path_factory):
    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    servers = bootstrap(base)
    run_id = uuid.uuid4().hex[:6]
    topics = [f"bookings-{run_id}-ride", f"bookings-{run_id}-car"]
    # the dagger logs in as team allocations, which may write only topics named allocations-*
    outs = [f"allocations-surge-{run_id}-v{n}" for n in (1, 2, 3)]
    lab_dir = Path(lab_env["DAGGER_LAB_DIR"])
    login = access.kafka_python("admin", lab=lab_dir)
    admin = KafkaAdminClient(bootstrap_servers=servers, **login)
    admin.create_topics(
        [NewTopic(t, num_partitions=2, replication_factor=3) for t in topics]
        + [NewTopic(t, num_partitions=1, replication_factor=3) for t in outs]
    )
    admin.close()
    env = {
        "DAGGER_CLUSTERS": str(lab_dir / "clusters"),
        "DAGGER_REGISTRY_URL": (lab_dir / "secrets" / "registry.url").read_text().strip(),
        **access.team_env("allocations", lab=lab_dir),
    }
    return {
        "servers": servers,
        "topics": topics,
        "outs": outs,
        "env": env,
        "name": f"surge-{run_id}",
        "dir": tmp_path_factory.mktemp("lifecycle"),
        "admin": login,
    }


def spec(setup, version: int, *, window_s: int = 60, parallelism: int = 2) -> Path:
    job = yaml.safe_load((EXAMPLES / "completed_bookings_by_s2.yaml").read_text())
    job["name"] = setup["name"]
    job["description"] = f"version {version}"
    job["streams"][0]["topics"] = setup["topics"]
    job["streams"][0]["kafka"].update(
        bootstrap_servers=setup["servers"],
        auto_offset_reset="earliest",
        group_id=f"dagger-allocations--{setup['name']}",
        client=access.team_client("allocations"),
    )
    job["dead_letter_topic"] = f"allocations-{setup['name']}-dlq"
    job["sql"] = job["sql"].replace("INTERVAL '60' SECOND", f"INTERVAL '{window_s}' SECOND")
    job["parallelism"] = parallelism
    job["sink"] = {
        "type": "kafka",
        "kafka": {
            "brokers": setup["servers"],
            "topic": setup["outs"][version - 1],
            "data_type": "JSON",
            "client": access.team_client("allocations"),
        },
    }
    path = setup["dir"] / f"v{version}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def produce(setup, events) -> None:
    producer = KafkaProducer(bootstrap_servers=setup["servers"], acks="all", linger_ms=5, **setup["admin"])
    message = protos.load().message_class(traffic.BOOKING)
    for i, value in enumerate(traffic.encode(events, message)):
        producer.send(setup["topics"][i % 2], key=str(events[i]["order_number"]).encode(), value=value)
    producer.flush()
    producer.close()


def dagger(setup, *args, timeout: float = 600):
    result = run_cli(*args, timeout=timeout, env=setup["env"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def test_deploy_edit_and_stop_keep_every_result_once_and_the_registry_holds_the_history(setup):
    name = setup["name"]
    first = traffic.bookings(1500, minutes=MINUTES, seed=21)
    produce(setup, first)

    # deploy: the job's own start (earliest); the first window rows arrive, timed
    deployed = dagger(setup, "deploy", str(spec(setup, 1)), "--cluster", "blue", "--wait", "--as", "ana")
    print(deployed.stdout)  # the deploy-to-first-row time, in the test's output
    assert re.search(r"first result row written [\d.]+ s after", deployed.stdout)
    want_1 = closed(first, 60, watermark_of(first))
    got_1 = read_results(setup, setup["outs"][0], len(want_1))
    assert got_1 == want_1

    # edit the sink and parallelism: the state is kept, so the window open at the end of the first
    # traffic closes in version 2 with the first traffic's bookings in it
    edited = dagger(setup, "edit", name, str(spec(setup, 2, parallelism=1)), "--as", "ben")
    assert "kept" in edited.stdout and f"/{name}/v1 " in edited.stdout, edited.stdout
    second = shifted(traffic.bookings(1500, minutes=MINUTES, seed=22), MINUTES)
    produce(setup, second)
    both = first + second
    want_2 = {k: n for k, n in closed(both, 60, watermark_of(both)).items() if k not in want_1}
    got_2 = read_results(setup, setup["outs"][1], len(want_2))
    assert got_2 == want_2
    assert any(k[0] <= watermark_of(first) + dt.timedelta(seconds=DELAY_S) for k in got_2)  # a straddling window

    # edit the query (2-minute windows): the old state cannot serve it; it says so and starts a new
    # checkpoint from version 2's last committed offsets, so it reads only what came after
    changed = dagger(setup, "edit", name, str(spec(setup, 3, window_s=120)), "--as", "ana")
    assert "cannot be used" in changed.stdout and "committed offsets" in changed.stdout, changed.stdout
    assert f"/{name}/v3" in changed.stdout
    third = shifted(traffic.bookings(1500, minutes=MINUTES, seed=23), 2 * MINUTES)
    produce(setup, third)
    want_3 = closed(third, 120, watermark_of(third))
    got_3 = read_results(setup, setup["outs"][2], len(want_3))
    assert got_3 == want_3

    status = json.loads(dagger(setup, "status", name, "--json").stdout)
    row = status["daggers"][0]
    assert row["status"] == "RUNNING" and row["version"] == 3
    assert row["rows_written"] == len(want_3) and row["lag"] == 0
    assert {c["cluster"]: c["master"] for c in status["clusters"]} == {"blue": "ALIVE"}
    logs = dagger(setup, "logs", name, "-n", "200").stdout
    assert f"run: sink kafka {setup['outs'][2]}" in logs

    dagger(setup, "stop", name, "--as", "ben")
    listed = {d["dagger"]: d for d in json.loads(dagger(setup, "list", "--json").stdout)}
    assert listed[name]["status"] == "STOPPED" and listed[name]["version"] == 3
    assert listed[name]["deployed_by"] == "ana"
    history = json.loads(dagger(setup, "history", name, "--json").stdout)
    assert [(v["version"], v["deployed_by"]) for v in history["versions"]] == [(1, "ana"), (2, "ben"), (3, "ana")]
    assert history["versions"][0]["checkpoint"] == history["versions"][1]["checkpoint"]
    assert history["versions"][2]["checkpoint"] != history["versions"][1]["checkpoint"]
    actions = [(e["actor"], e["action"], e["status"]) for e in history["events"]]
    assert actions[0] == ("ana", "deploy", "SUBMITTED")
    assert ("ben", "edit", "STOPPED") in actions and actions[-1] == ("ben", "stop", "STOPPED")
    # the registry is the lab's PostgreSQL
    assert setup["env"]["DAGGER_REGISTRY_URL"].startswith("postgresql")
    # Prometheus no longer scrapes a stopped dagger
    targets = Path(setup["env"]["DAGGER_CLUSTERS"]).parent / "prometheus" / "targets"
    assert not (targets / f"{name}.json").exists()


def test_an_unknown_cluster_is_refused_naming_the_known_ones(setup):
    result = run_cli("deploy", str(spec(setup, 1)), "--cluster", "purple", env=setup["env"])
    assert result.returncode == 2 and "unknown cluster 'purple'; known clusters: blue, green" in result.stderr


def wait_for_status(setup, status: str, timeout_s: float) -> dict:
    """`dagger status NAME --json`'s row, once it says `status`."""
    deadline, seen = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        seen = json.loads(dagger(setup, "status", setup["name"], "--json").stdout)["daggers"][0]
        if seen["status"] == status:
            return seen
        time.sleep(5)
    raise AssertionError(f"{setup['name']} is not {status} after {timeout_s:g} s: {seen}")


def test_a_driver_that_fails_at_every_start_is_a_crash_loop_in_status_and_the_registry(setup):
    """Forced: the dagger's /metrics port is taken as soon as it is deployed, so each launch of its
    driver fails before its query runs and --supervise starts it again, while the master says
    RUNNING. `dagger status` and the registry say CRASH_LOOP, with why; once the port is free, the
    next launch runs, and the status is the master's again."""
    crashing = {**setup, "name": f"{setup['name']}-loop"}
    job = yaml.safe_load(spec(crashing, 1, parallelism=1).read_text())
    job["sink"] = {"type": "log"}  # its results go nowhere another test reads
    path = setup["dir"] / "crash-loop.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    deployed = dagger(crashing, "deploy", str(path), "--cluster", "blue", "--as", "crash-test", "--json")
    data = json.loads(deployed.stdout)
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", data["metrics_port"]))  # before the driver's first launch binds it
    squatter.listen()
    try:
        wait_for_status(crashing, "CRASH_LOOP", timeout_s=420)
        history = json.loads(dagger(crashing, "history", crashing["name"], "--json").stdout)
        looped = [e for e in history["events"] if e["status"] == "CRASH_LOOP"]
        assert looped and re.fullmatch(
            r"[3-9] driver launches in a row without a committed batch since \S+Z "
            r"\(no batch committed yet\)",
            looped[-1]["detail"],
        ), looped
        # the driver's own log says why each launch ended
        logs = dagger(crashing, "logs", crashing["name"]).stdout
        assert "Address already in use" in logs and "a crash loop" in logs, logs[-3000:]
    finally:
        squatter.close()
    try:
        # the port free again: the next launch runs its query, waits for data and settles
        wait_for_status(crashing, "RUNNING", timeout_s=300)
    finally:
        dagger(crashing, "stop", crashing["name"], "--as", "crash-test")
