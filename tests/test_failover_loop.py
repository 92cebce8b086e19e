"""A dagger's driver lost again and again while it works: killed with SIGKILL mid-batch
(--supervise starts it again on the same cluster) and moved between the lab's clusters (`dagger
failover`), again and again (LOSSES) with traffic flowing. Every launch must commit a batch of its own:
after a failover a driver once crashed at every restart ("The Spark SQL phase planning failed",
a null session under StateStoreSaveExec) and wrote nothing for the rest of the drill while the
registry said RUNNING. At the end every window the fed bookings close is in the sink with its
count, computed here from the bookings (tests/reference.py)."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import time
import uuid
from pathlib import Path

import psutil
import pytest
import yaml
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dagger_runtime import launches
from dagger_runtime.lifecycle.registry import Registry
from dagger_runtime.lifecycle.state import crash_loop
from lab import access
from loadtest import traffic
from protos import registry as protos
from tests.kafka_jobs import EXAMPLES, read_topic, run_cli
from tests.labrun import Quiet
from tests.reference import group, s2id, window_end

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]
TEAM = "allocations"
# 4 in the suite (about 3 minutes); DAGGER_FAILOVER_LOOP_LOSSES=10 took 7 minutes on the 2-core lab
LOSSES = int(os.environ.get("DAGGER_FAILOVER_LOOP_LOSSES", "4"))
CHUNK_S = 30  # event time each loss's bookings span
DELAY_S = 60  # the example's watermark delay


@pytest.fixture(scope="module")
def lab(lab_env, tmp_path_factory):
    return make_lab(lab_env, tmp_path_factory, "loop")


def make_lab(lab_env, tmp_path_factory, prefix: str) -> dict:
    """A dagger of the example's query on topics of its own, reading and writing as team allocations."""
    base = int(lab_env["DAGGER_LAB_PORT_BASE"])
    lab_dir = Path(lab_env["DAGGER_LAB_DIR"])
    run_id = uuid.uuid4().hex[:6]
    servers = ",".join(f"127.0.0.1:{base + 100 * n + 92}" for n in (1, 2, 3))
    topic, out = f"bookings-{run_id}-{prefix}", f"{TEAM}-{prefix}-{run_id}"
    login = access.kafka_python("admin", lab=lab_dir)
    admin = KafkaAdminClient(bootstrap_servers=servers, **login)
    admin.create_topics(
        [NewTopic(topic, num_partitions=2, replication_factor=3), NewTopic(out, num_partitions=1, replication_factor=3)]
    )
    admin.close()
    name = f"{prefix}-{run_id}"
    job = yaml.safe_load((EXAMPLES / "completed_bookings_by_s2.yaml").read_text())
    job.update(name=name, team=TEAM, parallelism=1, dead_letter_topic=f"{TEAM}-{name}-dlq")
    job["streams"] = job["streams"][:1]
    job["streams"][0]["topics"] = [topic]
    job["streams"][0]["kafka"].update(
        bootstrap_servers=servers,
        auto_offset_reset="earliest",
        group_id=access.consumer_group(TEAM, name),
        client=access.team_client(TEAM),
    )
    job["sink"] = {
        "type": "kafka",
        "kafka": {"brokers": servers, "topic": out, "data_type": "JSON", "client": access.team_client(TEAM)},
    }
    path = tmp_path_factory.mktemp(prefix) / f"{name}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    env = {
        "DAGGER_CLUSTERS": str(lab_dir / "clusters"),
        "DAGGER_REGISTRY_URL": (lab_dir / "secrets" / "registry.url").read_text().strip(),
        **access.team_env(TEAM, lab=lab_dir),
    }
    return Quiet(
        {
            "name": name,
            "spec": path,
            "topic": topic,
            "out": out,
            "servers": servers,
            "login": login,
            "env": env,
            "job": job,
        }
    )


def cli(lab, *args: str) -> str:
    done = run_cli(*args, env=lab["env"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def current(lab):
    registry = Registry(lab["env"]["DAGGER_REGISTRY_URL"])
    try:
        return registry.get(lab["name"])
    finally:
        registry.close()


def committed(checkpoint: str) -> int:
    return launches.last_committed_batch(Path(checkpoint))


def kill_driver(submission_id: str) -> int:
    """SIGKILL the driver's JVM (the DriverWrapper in the driver's folder) and everything under it,
    the JVM first, as a lost machine takes both at once; returns how many processes there were.
    (Python first let the JVM plan one more batch without its Python side and log Spark's internal
    error for it; and the JVM, gone by itself a moment later, was not counted.)"""
    found = 0
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "org.apache.spark.deploy.worker.DriverWrapper" in (proc.info["cmdline"] or []) and proc.cwd().endswith(
                "/" + submission_id
            ):
                tree = [proc, *proc.children(recursive=True)]
            else:
                continue
        except psutil.Error:
            continue
        found += len(tree)
        for each in tree:
            try:
                each.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
    return found


def feed(lab, chunk: int) -> list[dict]:
    """CHUNK_S seconds of bookings in event time, after the previous chunks' (seed = chunk)."""
    events = traffic.bookings(120, minutes=1, seed=100 + chunk)  # a minute from traffic.START
    # squeezed into CHUNK_S seconds, starting chunk * CHUNK_S after traffic.START
    events = [
        {
            **e,
            "event_timestamp": traffic.START
            + dt.timedelta(seconds=chunk * CHUNK_S)
            + (e["event_timestamp"] - traffic.START) * (CHUNK_S / 60),
        }
        for e in events
    ]
    producer = KafkaProducer(bootstrap_servers=lab["servers"], acks="all", linger_ms=5, **lab["login"])
    message = protos.load().message_class(traffic.BOOKING)
    for event, value in zip(events, traffic.encode(events, message)):
        producer.send(lab["topic"], key=event["order_number"].encode(), value=value)
    producer.flush()
    producer.close()
    return events


def wait_own_commit(lab, checkpoint: str, since: float, what: str, timeout_s: float = 240) -> None:
    """A launch of the driver after `since` (epoch s) commits a batch of its own: its ledger line
    says which batch was the last committed when it started, and a later one appears. A crash loop
    or Spark's internal error fails at once."""
    ledger = Path(checkpoint) / launches.LAUNCHES_FILE
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # the ledger appears once the first launch holds the checkpoint's lease
        text = ledger.read_text() if ledger.exists() else ""
        after = [e for e in launches.parse(text) if e["at_ms"] > since * 1000]
        if after and committed(checkpoint) > after[-1]["committed"]:
            return
        looping = crash_loop(checkpoint)
        assert looping is None, f"{what}: {looping}"
        time.sleep(2)
    logs = run_cli("logs", lab["name"], "-n", "300", env=lab["env"]).stdout
    raise AssertionError(f"{what}: no launch since the loss committed a batch in {timeout_s:g} s\n{logs[-4000:]}")


def test_driver_losses_in_a_row_each_resume_and_every_window_is_written(lab):
    sent: list[dict] = []
    deployed_at = time.time()
    cli(lab, "deploy", str(lab["spec"]), "--cluster", "blue", "--as", "loop-test")
    try:
        sent += feed(lab, 0)
        checkpoint = current(lab).checkpoint
        wait_own_commit(lab, checkpoint, deployed_at, "the first launch")
        for loss in range(1, LOSSES + 1):
            sent += feed(lab, 2 * loss - 1)  # a batch is about to run, or runs, when the driver goes
            dagger, lost_at = current(lab), time.time()
            if loss % 2:  # killed: --supervise starts it again where it was
                assert kill_driver(dagger.submission_id) >= 2, f"loss {loss}: no driver process of {dagger}"
                what = f"loss {loss}: {dagger.submission_id} killed on {dagger.cluster}"
            else:  # moved to the other cluster, on the same checkpoint
                to = "green" if dagger.cluster == "blue" else "blue"
                cli(lab, "failover", lab["name"], "--cluster", to, "--as", "loop-test")
                what = f"loss {loss}: moved from {dagger.cluster} to {to}"
            # and more once it is gone: the old driver may have stored all of the first chunk
            sent += feed(lab, 2 * loss)
            wait_own_commit(lab, checkpoint, lost_at, what)
        # the last chunk's windows close once event time passes them by the watermark delay
        sent += feed(lab, 2 * LOSSES + 1 + DELAY_S // CHUNK_S + 1)
        logs = run_cli("logs", lab["name"], "-n", "2000", env=lab["env"]).stdout
        assert "INTERNAL_ERROR" not in logs and "SparkPlan.session" not in logs
        completed = [e for e in sent if e["status"] == "COMPLETED"]
        watermark = max(e["event_timestamp"] for e in sent) - dt.timedelta(seconds=DELAY_S)
        want = {
            k: n
            for k, n in group(
                completed,
                key=lambda e: (
                    window_end(e["event_timestamp"], 60),
                    e["city_id"],
                    s2id(e["lat"], e["long"], 13),
                    e["vehicle_type"],
                ),
                agg=len,
            ).items()
            if k[0] <= watermark
        }
        # read before the stop: a stop ends the driver within a second (its fence), so the last
        # windows must be written first
        got = read_all(lab, len(want), timeout_s=180)
    finally:
        run_cli("stop", lab["name"], "--as", "loop-test", env=lab["env"])
    assert got == want


def read_all(lab, expected: int, timeout_s: float = 120) -> dict:
    """The sink's rows by window and key; a row written again by a batch run again after a loss
    must carry the same count (at-least-once into Kafka), never another."""

    def rows_of(records) -> dict:
        rows = {}
        for record in records:
            value = json.loads(record.value)
            window = dt.datetime.fromisoformat(value["window_timestamp"].replace("Z", "+00:00"))
            key = (window, value["tag_city_id"], value["tag_s2id"], value["tag_vehicle_type"])
            assert rows.get(key, value["num_of_bookings"]) == value["num_of_bookings"], (key, rows[key], value)
            rows[key] = value["num_of_bookings"]
        return rows

    records = read_topic(
        lab["servers"],
        lab["out"],
        expected,
        timeout_s,
        enough=lambda got: len(rows_of(got)) >= expected,
        **lab["login"],
    )
    return rows_of(records)
