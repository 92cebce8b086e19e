"""`run --available-now` over Kafka gives the same rows as `preview` over the same messages, for
every example dagger: the same query, through two ways in (Kafka and files). A stream writes a
window only once the watermark has passed it, so the comparison is over those windows, the
watermark computed from the produced events (their latest event time minus the job's delay)."""

from __future__ import annotations

import datetime as dt
import io
import json
import re

import pytest
import yaml

from dagger_runtime.config import load_job
from dagger_runtime.inputs import write_delimited
from dagger_runtime.plan import plan_job
from dagger_runtime.preview import run_preview
from dagger_runtime.run import RunOptions, run
from dagger_runtime.sinks import create_sink
from loadtest import traffic
from protos import registry
from tests.kafka_jobs import EXAMPLES, produce

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.iterdir() if p.suffix in (".yaml", ".properties"))
COUNTS = {traffic.BOOKING: 1500, traffic.DRIVER_PING: 3000, traffic.API_LOG: 2000}
# A stream-stream join holds its output's event time back by the join's time bound (a ping up to 30 s
# older may still join a booking), so Spark closes the windows after it that much later.
JOIN_BOUND = {"pings_before_completion.yaml": dt.timedelta(seconds=30)}


def kafka_copy(example: str, kafka, prefix: str, tmp_path):
    """The example pointed at the test broker, from the earliest offsets, its topics prefixed (so
    tests sharing the broker do not share topics), results to the log sink."""
    text = (EXAMPLES / example).read_text()
    if example.endswith(".properties"):
        text = text.replace("127.0.0.1:9092", kafka.bootstrap_servers)
        text = re.sub(r'("SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_OFFSET_RESET": )"latest"', r'\1"earliest"', text)
        text = re.sub(
            r'("SOURCE_KAFKA_TOPIC_NAMES": ")([^"]+)"',
            lambda m: m.group(1) + "|".join(prefix + t for t in m.group(2).split("|")) + '"',
            text,
        )
        text = re.sub(r"(?m)^SINK_TYPE = .*$", "SINK_TYPE = log", text)
    else:
        job = yaml.safe_load(text)
        for stream in job["streams"]:
            stream["kafka"]["bootstrap_servers"] = kafka.bootstrap_servers
            stream["kafka"]["auto_offset_reset"] = "earliest"
            stream["topics"] = [prefix + t for t in stream["topics"]]
        job["sink"] = {"type": "log"}
        text = yaml.safe_dump(job, sort_keys=False)
    path = tmp_path / example
    path.write_text(text)
    return path


@pytest.mark.parametrize("example", EXAMPLE_FILES)
def test_run_available_now_gives_the_rows_preview_gives(example, kafka_broker, spark, tmp_path):
    dset = registry.load()
    prefix = f"same-{len(example)}-{example.split('.')[0][:12]}-"
    job_path = kafka_copy(example, kafka_broker, prefix, tmp_path)
    job = load_job(job_path)
    inputs, latest = {}, []
    for i, stream in enumerate(job.streams):
        events = traffic.GENERATORS[stream.proto_class](COUNTS[stream.proto_class], minutes=4, seed=40 + i)
        for topic in stream.topics:
            kafka_broker.create_topic(topic, partitions=2)
        produce(kafka_broker, list(stream.topics), events, dset.message_class(stream.proto_class))
        path = tmp_path / f"{stream.table}.bin"
        write_delimited(traffic.encode(events, dset.message_class(stream.proto_class)), path)
        inputs[stream.table] = str(path)
        latest.append(max(e["event_timestamp"] for e in events))

    # in the test's Spark session (the CLI's own process is covered by test_run_kafka): the log sink's
    # rows into a buffer
    out = io.StringIO()
    plan = plan_job(job)
    assert (
        run(
            plan,
            RunOptions(checkpoint=str(tmp_path / "ck"), available_now=True),
            spark=spark,
            out=io.StringIO(),
            sink_factory=lambda p, columns: create_sink(p, columns, out=out),
        )
        == 0
    )
    ran = [json.loads(line) for line in out.getvalue().splitlines()]

    previewed = run_preview(plan_job(job), inputs, spark=spark).rows
    # Spark's watermark is the smallest of the streams' (latest event time - delay)
    watermark = (
        min(latest) - dt.timedelta(milliseconds=job.watermark_delay_ms) - JOIN_BOUND.get(example, dt.timedelta())
    )
    closed = [r for r in previewed if _utc(r["window_timestamp"]) <= watermark]
    assert len(closed) >= 3
    assert len(closed) < len(previewed)  # some windows were still open when the topics ended
    assert sorted(map(_key, ran)) == sorted(map(_key, closed))


def _utc(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _key(row: dict) -> str:
    return json.dumps(row, sort_keys=True)
