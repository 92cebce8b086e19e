"""The load side of the drills on a real broker: what the ledger says was written is what the topic
holds, failures are kept with their errors, a recording replays with its timing and event time
moved to now, and locust's statistics, the ledger and the topic count the same messages.

The topic is read back with a plain KafkaConsumer, not with the code under test."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition

from loadtest import traffic
from loadtest.generator import MessageGenerator
from loadtest.ledger import Ledger
from loadtest.producer import make_producer, produce
from loadtest.recording import read_recording, record, replay
from protos import registry

pytestmark = [pytest.mark.kafka]
ROOT = Path(__file__).resolve().parent.parent


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def read_topic(bootstrap: str, topic: str):
    """Every record of the topic, and its end offsets, read from the beginning."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records = []
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=250).values():
                records.extend(batch)
        return records, {tp.partition: ends[tp] for tp in tps}
    finally:
        consumer.close()


def test_every_acknowledged_message_is_in_the_topic_where_the_ledger_says(kafka_broker):
    dset = registry.load()
    topic = kafka_broker.create_topic(unique("lt-produce"), partitions=3)
    hints = {"driver_id": {"pool": {"prefix": "d", "size": 40}}, "status": {"enum": {"COMPLETED": 1, "CREATED": 1}}}
    gen = MessageGenerator(dset, traffic.BOOKING, hints, seed=4)
    producer = make_producer(kafka_broker.bootstrap_servers)
    try:
        result = produce(gen, topic, producer, rate=400, count=600, key_field="driver_id")
    finally:
        producer.close(timeout=10)
    ledger = result.ledger
    assert (result.sent, result.acked, result.failed) == (600, 600, 0)
    # a token bucket of 400/s holding at most 20 tokens cannot send 600 faster than (600 - 21) / 400 s
    assert result.seconds >= (600 - 21) / 400

    records, ends = read_topic(kafka_broker.bootstrap_servers, topic)
    assert len(records) == 600
    in_topic = Counter(r.partition for r in records)
    assert in_topic == Counter({p: n for (t, p), n in ledger.counts_by_partition().items() if t == topic})
    assert dict(in_topic) == {p: end for p, end in ends.items() if end}
    assert len(in_topic) == 3

    rows = ledger.frame().set_index(["partition", "offset"])
    assert sorted(rows["index"]) == list(range(600))
    cls = dset.message_class(traffic.BOOKING)
    partition_of_key = {}
    for r in records:
        row = rows.loc[(r.partition, r.offset)]
        value, facts = gen.make(int(row["index"]), int(row["event_time_ms"]))  # regenerated: same seed, index, time
        assert r.value == value
        assert r.key == row["key"] == cls.FromString(r.value).driver_id.encode()
        assert r.timestamp == row["timestamp_ms"]
        assert row["status"] == facts["status"] and row["driver_id"] == facts["driver_id"]
        assert partition_of_key.setdefault(r.key, r.partition) == r.partition  # a key stays on its partition


def test_a_failed_send_is_kept_with_its_error_never_lost(kafka_broker):
    dset = registry.load()
    gen = MessageGenerator(dset, traffic.BOOKING, seed=1)
    # refused by the broker (asynchronously: the future's errback) ...
    tiny = kafka_broker.create_topic(unique("lt-tiny"), config={"max.message.bytes": "64"})
    producer = make_producer(kafka_broker.bootstrap_servers)
    try:
        by_broker = produce(gen, tiny, producer, count=5, flush_timeout_s=20)
    finally:
        producer.close(timeout=10)
    # ... and refused by the client before sending (synchronously: send() raises)
    producer = make_producer(kafka_broker.bootstrap_servers, max_request_size=64)
    try:
        by_client = produce(gen, tiny, producer, count=3, flush_timeout_s=20)
    finally:
        producer.close(timeout=10)
    for result, n in ((by_broker, 5), (by_client, 3)):
        assert (result.sent, result.acked, result.failed) == (n, 0, n)
        failures = result.ledger.failures
        assert sorted(f["index"] for f in failures) == list(range(n))
        assert all("TooLarge" in f["error"] for f in failures), failures
    _, ends = read_topic(kafka_broker.bootstrap_servers, tiny)
    assert sum(ends.values()) == 0


def test_a_recording_replays_with_its_spacing_scaled_and_event_time_moved_to_now(kafka_broker, tmp_path):
    dset = registry.load()
    cls = dset.message_class(traffic.BOOKING)
    source = kafka_broker.create_topic(unique("lt-rec-src"), partitions=2)
    target = kafka_broker.create_topic(unique("lt-rec-dst"), partitions=1)
    gen = MessageGenerator(
        dset,
        traffic.BOOKING,
        {"event_timestamp": {"now": {"jitter_ms": 300}}, "order_number": {"pool": {"prefix": "o", "size": 10**9}}},
        seed=9,
    )
    producer = make_producer(kafka_broker.bootstrap_servers)
    try:
        produce(gen, source, producer, rate=100, count=200, key_field="order_number")
        path = tmp_path / "src.rec"
        recorded = record({"bootstrap_servers": kafka_broker.bootstrap_servers}, source, path)
        frames = list(read_recording(path))
        before = time.time_ns() // 1_000_000
        result = replay(path, producer, target, speed=2.0, message_name=traffic.BOOKING, descriptor_set=dset)
        after = time.time_ns() // 1_000_000
    finally:
        producer.close(timeout=10)

    src_records, _ = read_topic(kafka_broker.bootstrap_servers, source)
    assert recorded.messages == len(frames) == 200
    assert sorted((f.partition, f.offset, f.key, f.value, f.timestamp_ms) for f in frames) == sorted(
        (r.partition, r.offset, r.key, r.value, r.timestamp) for r in src_records
    )
    assert [f.timestamp_ms for f in frames] == sorted(f.timestamp_ms for f in frames)

    assert (result.sent, result.acked, result.failed, result.not_moved) == (200, 200, 0, 0)
    copies, _ = read_topic(kafka_broker.bootstrap_servers, target)
    assert len(copies) == 200
    copies.sort(key=lambda r: r.offset)  # one partition: the replay's send order
    ts0 = frames[0].timestamp_ms
    for frame, copy in zip(frames, copies):
        assert copy.key == frame.key
        old, new = cls.FromString(frame.value), cls.FromString(copy.value)
        moved_by = new.event_timestamp.ToMilliseconds() - (old.event_timestamp.ToMilliseconds() - ts0) / 2
        assert before - 1 <= moved_by <= after + 1  # event' = start of replay + (event - ts0) / 2
        old.ClearField("event_timestamp")
        new.ClearField("event_timestamp")
        assert new == old
    # the spacing, loosely: never faster than half the recorded span, and not much slower
    recorded_span = frames[-1].timestamp_ms - ts0
    replayed_span = copies[-1].timestamp - copies[0].timestamp
    assert recorded_span / 2 - 50 <= replayed_span <= recorded_span / 2 + 1500


def test_locust_headless_with_a_steps_shape_counts_what_the_ledger_and_topic_hold(kafka_broker, tmp_path):
    topic = kafka_broker.create_topic(unique("lt-locust"), partitions=2)
    shape = {
        "shape": "steps",
        "per_user_rate": 10,
        "steps": [{"rate": 20, "duration_s": 4}, {"rate": 50, "duration_s": 4}, {"rate": 10, "duration_s": 3}],
    }
    ledger_path = tmp_path / "locust.parquet"
    cmd = [
        str(ROOT / ".venv/bin/locust"),
        "-f",
        "loadtest/locustfile.py",
        "--headless",
        "--host",
        kafka_broker.bootstrap_servers,
        "--kafka-topic",
        topic,
        "--kafka-message",
        "BookingLogMessage",
        "--kafka-key",
        "driver_id",
        "--kafka-hints",
        json.dumps({"driver_id": {"pool": {"prefix": "d", "size": 9}}}),
        "--shape-config",
        json.dumps(shape),
        "--kafka-ledger",
        str(ledger_path),
        "--csv",
        str(tmp_path / "run"),
        "--loglevel",
        "WARNING",
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "run_stats.csv") as f:
        stats = {row["Name"]: row for row in csv.DictReader(f)}
    with open(tmp_path / "run_stats_history.csv") as f:
        users = [int(row["User Count"]) for row in csv.DictReader(f)]
    requests, failures = int(stats[topic]["Request Count"]), int(stats[topic]["Failure Count"])
    assert stats[topic]["Type"] == "kafka"
    ledger = Ledger.load(ledger_path)
    _, ends = read_topic(kafka_broker.bootstrap_servers, topic)
    assert failures == 0 and ledger.failed == 0
    assert requests == ledger.acked == sum(ends.values())
    assert max(users) == 5  # the shape's middle step: 50 msg/s at 10 per user
    assert 150 <= requests <= 330  # about 80 + 200 + 30 nominal, less while users spawn
    assert ledger.meta["shape"] == "steps"


def test_the_documented_commands_produce_by_a_short_name_and_record_what_the_ledger_holds(kafka_broker, tmp_path):
    """`dagger load produce -b … -m BookingLogMessage` as docs/sre/drills.md shows it, then
    `dagger load record -b …`: the ledger, the recording and the topic (read here with a plain
    consumer) hold the same messages; Kafka's address given positionally, as before, is refused."""
    topic = kafka_broker.create_topic(unique("lt-cli"), partitions=2)
    bootstrap = kafka_broker.bootstrap_servers
    dagger = [sys.executable, "-m", "dagger_runtime"]
    ledger_path, rec = tmp_path / "run.parquet", tmp_path / "rides.rec"
    produced = subprocess.run(
        [
            *dagger,
            "load",
            "produce",
            "-b",
            bootstrap,
            topic,
            "-m",
            "BookingLogMessage",
            "--rate",
            "200",
            "-n",
            "120",
            "--key",
            "driver_id",
            "--ledger",
            str(ledger_path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert produced.returncode == 0, produced.stderr
    recorded = subprocess.run(
        [*dagger, "load", "record", "--bootstrap-server", bootstrap, topic, str(rec)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert "recorded 120 messages" in recorded.stderr

    records, _ = read_topic(bootstrap, topic)
    ledger = Ledger.load(ledger_path).frame()
    assert len(records) == len(ledger) == 120
    assert sorted((r.partition, r.offset) for r in records) == sorted(zip(ledger["partition"], ledger["offset"]))
    assert sorted((f.partition, f.offset, f.value) for f in read_recording(rec)) == sorted(
        (r.partition, r.offset, r.value) for r in records
    )

    old_form = subprocess.run(
        [*dagger, "load", "produce", bootstrap, topic, "-m", "BookingLogMessage", "-n", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert old_form.returncode == 2 and "--bootstrap-server" in old_form.stderr
