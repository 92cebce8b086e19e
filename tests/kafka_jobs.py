"""Helpers for tests that run daggers on a real Kafka: produce traffic with bad messages among
it, write a job file pointing at the test servers, run `dagger run` as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from loadtest import traffic

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "daggers"


@dataclass
class Produced:
    """What a test produced: the good events and every bad record, by (topic, partition, offset)."""

    events: list[dict] = field(default_factory=list)
    bad: dict[tuple[str, int, int], dict] = field(default_factory=dict)  # -> {key, value, kind}


def produce(
    broker,
    topics: list[str],
    events: list[dict],
    message_class,
    *,
    bad: list[tuple[bytes, bytes | None, str]] = (),
    every: int = 97,
) -> Produced:
    """Produce events round-robin over topics (key = order number or driver id), with the bad
    records (key, value, kind) spread among them; record where each bad one landed."""
    out = Produced(events=list(events))
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=5)
    encoded = traffic.encode(events, message_class)
    pending_bad = list(bad)
    futures = []
    for i, (event, value) in enumerate(zip(events, encoded)):
        key = str(event.get("order_number") or event.get("driver_id") or event.get("request_id")).encode()
        producer.send(topics[i % len(topics)], key=key, value=value)
        if pending_bad and i % every == every - 1:
            k, v, kind = pending_bad.pop()
            futures.append((producer.send(topics[i % len(topics)], key=k, value=v), k, v, kind))
    for k, v, kind in pending_bad:
        futures.append((producer.send(topics[0], key=k, value=v), k, v, kind))
    producer.flush()
    for future, k, v, kind in futures:
        meta = future.get(timeout=30)
        out.bad[(meta.topic, meta.partition, meta.offset)] = {"key": k, "value": v, "kind": kind}
    producer.close()
    return out


def job_file(tmp_path: Path, example: str, *, kafka, sink: dict | None = None, **changes) -> Path:
    """An example job pointed at the test's Kafka (earliest offsets) and sink."""
    job = yaml.safe_load((EXAMPLES / example).read_text())
    for stream in job["streams"]:
        stream["kafka"]["bootstrap_servers"] = kafka.bootstrap_servers
        stream["kafka"]["auto_offset_reset"] = "earliest"
    if sink is not None:
        job["sink"] = sink
    job.update(changes)
    path = tmp_path / example
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def run_cli(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dagger_runtime", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def consume_all(broker, topic: str, expected: int, timeout_s: float = 30) -> list:
    """Every record of a topic (waits until `expected` arrived or the timeout passes)."""
    return read_topic(broker.bootstrap_servers, topic, expected, timeout_s)


def read_topic(
    bootstrap_servers: str, topic: str, expected: int, timeout_s: float = 30, *, enough=None, **client
) -> list:
    """Every record of a topic from its start, until `expected` arrived (or `enough(records)`
    says so) or `timeout_s` passed, then
    2 s more, in which anything beyond `expected` (a duplicate) would show. The partitions are
    assigned, not subscribed to, and polled with short timeouts: a subscription without a group
    waits on metadata that a loaded machine may deliver after an iterator's timeout, and a
    consumer once read nothing for three minutes from a topic holding every record (kafka-python
    3.0). A topic the job has yet to create is waited for."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap_servers, enable_auto_commit=False, **client)
    records: list = []
    try:
        deadline = time.monotonic() + timeout_s
        partitions = set()
        while not partitions and time.monotonic() < deadline:
            partitions = consumer.partitions_for_topic(topic) or set()
            if not partitions:
                consumer.topics()  # asks the brokers again
                time.sleep(0.5)
        if not partitions:
            return records
        assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        enough = enough or (lambda got: len(got) >= expected)
        while not enough(records) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        # anything beyond what was expected is a duplicate: read on for a moment to see it
        more_until = time.monotonic() + 2
        while time.monotonic() < more_until:
            for batch in consumer.poll(timeout_ms=200).values():
                records.extend(batch)
    finally:
        consumer.close()
    return records


def start_cli(*args: str, log: Path, env: dict | None = None) -> subprocess.Popen:
    """`dagger ...` in the background, in its own process group (so a test can SIGKILL the driver
    and its JVM together), stderr to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "dagger_runtime", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "wb"),
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def wait_for(what: str, check, timeout_s: float = 600, proc: subprocess.Popen | None = None, log: Path | None = None):
    """Poll check() until it returns something truthy; fail with the job's log if the time passes
    or the job exits. The time is a guard against a hung job, not a speed limit: on a loaded 2-core
    machine (the lab's JVMs on the other worker) Spark alone took over 130 s to start a driver."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"the job exited ({proc.returncode}) while waiting for {what}:\n"
                f"{log.read_text()[-3000:] if log else ''}"
            )
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}:\n{log.read_text()[-3000:] if log else ''}")


def progress_lines(path: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []
