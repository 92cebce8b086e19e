"""The pure parts of `run`: Kafka source options, the influx mapping, progress arithmetic, the new
job keys. Expectations are written out by hand from the contracts (raystack/dagger's influx
mapping, Spark's Kafka source options)."""

from __future__ import annotations

import datetime as dt

import pytest

from dagger_runtime.config import ConfigError, load_job
from dagger_runtime.progress import lag_by_partition, messages_read
from dagger_runtime.sinks.influx import points
from dagger_runtime.source import kafka_source_options

UTC = dt.timezone.utc
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"

JOB = """
name: parts
streams:
  - table: t
    proto: gojek.esb.booking.BookingLogMessage
    {topics}
    event_time: event_timestamp
    kafka:
      bootstrap_servers: [10.0.0.1:9092, 10.0.0.2:9092]
      group_id: g1
      auto_offset_reset: earliest
      max_messages_per_batch: 5000
      client:
        security.protocol: SASL_SSL
        sasl.mechanism: SCRAM-SHA-512
        sasl.jaas.config: ${{JAAS}}
sql: SELECT 1 AS x FROM t
sink: {sink}
{extra}
"""


def job(tmp_path, topics="topics: [a, b]", sink="{type: log}", extra="", monkeypatch=None):
    path = tmp_path / "job.yaml"
    path.write_text(JOB.format(topics=topics, sink=sink, extra=extra))
    return load_job(path)


def test_kafka_source_options_carry_every_setting_under_sparks_names(tmp_path, monkeypatch):
    monkeypatch.setenv("JAAS", SCRAM_JAAS)
    options = kafka_source_options(job(tmp_path).streams[0])
    assert options == {
        "kafka.bootstrap.servers": "10.0.0.1:9092,10.0.0.2:9092",
        "startingOffsets": "earliest",
        "subscribe": "a,b",
        "groupIdPrefix": "g1",
        "maxOffsetsPerTrigger": "5000",
        # the reader's defaults (bench/results/ has what they are worth)
        "kafka.max.poll.records": "20000",
        "kafka.max.partition.fetch.bytes": "8388608",
        "kafka.receive.buffer.bytes": "1048576",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    }
    pattern = kafka_source_options(job(tmp_path, topics="topic_pattern: 'GO_.*-booking'").streams[0])
    assert pattern["subscribePattern"] == "GO_.*-booking" and "subscribe" not in pattern


def test_a_jobs_own_consumer_setting_wins_and_the_producer_gets_no_reader_default(tmp_path, monkeypatch):
    from dagger_runtime.dead_letters import producer_options

    monkeypatch.setenv("JAAS", SCRAM_JAAS)
    stream = job(tmp_path).streams[0]
    own = stream.model_copy(
        update={"kafka": stream.kafka.model_copy(update={"client": {**stream.kafka.client, "max.poll.records": "300"}})}
    )
    assert kafka_source_options(own)["kafka.max.poll.records"] == "300"
    assert kafka_source_options(own)["kafka.receive.buffer.bytes"] == "1048576"
    # the dead-letter producer on the same cluster: the job's settings, not the reader's defaults
    assert producer_options(stream) == {
        "bootstrap.servers": "10.0.0.1:9092,10.0.0.2:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
    }
    assert producer_options(own)["max.poll.records"] == "300"


def test_the_influx_mapping_is_raystack_daggers(tmp_path):
    when = dt.datetime(2026, 11, 22, 0, 1, tzinfo=UTC)
    names = ["tag_city", "label_status", "count", "ratio", "note", "window_timestamp", "missing", "label_empty"]
    lines = [p.to_line_protocol() for p in points("m", names, [(1, "DONE", 7, 0.5, "a b", when, None, "")])]
    assert lines == ['m,status=DONE,tag_city=1 count=7i,note="a b",ratio=0.5 1795305660000']
    # a row whose window is NULL, or that has no field left, is no point
    assert points("m", names, [(1, "DONE", None, None, None, when, None, "x")]) == []
    assert points("m", names, [(1, "DONE", 7, 0.5, "a", None, None, "x")]) == []


def test_messages_read_come_from_offsets_and_lag_from_the_latest_offsets():
    sources = [
        {
            "description": "KafkaV2[Subscribe[a]]",
            "numInputRows": 20,
            "startOffset": '{"a":{"0":5,"1":10}}',
            "endOffset": '{"a":{"0":9,"1":16}}',
            "latestOffset": '{"a":{"0":12,"1":16}}',
        }
    ]
    assert messages_read(sources) == 10
    assert lag_by_partition(sources) == {"a-0": 3, "a-1": 0}
    first = [{**sources[0], "startOffset": None}]
    assert messages_read(first, scans=2.0) == 10  # 20 scanned rows / 2 scans


@pytest.mark.parametrize(
    "extra, message",
    [
        ("checkpoint_location: hdfs:/x", "expected a local directory, a file:// URL or gs://bucket/path"),
        ('checkpoint_location: "/tmp/a\\nb"', "no control characters"),
        ("dead_letter_topic: 'bad topic'", "dead_letter_topic"),
    ],
)
def test_bad_run_keys_are_refused_with_the_key_named(tmp_path, monkeypatch, extra, message):
    monkeypatch.setenv("JAAS", SCRAM_JAAS)
    with pytest.raises(ConfigError) as e:
        job(tmp_path, extra=extra)
    assert message in str(e.value)


@pytest.mark.parametrize(
    "sink, message",
    [
        (
            "{type: postgres, postgres: {url: 'postgresql://h/db?passfile=/etc/shadow', table: t}}",
            "'passfile' is not allowed",
        ),
        ("{type: influx, influx: {url: 'http://h:8086', db_name: d, measurement_name: m, org: o}}", "api: v2 only"),
        ("{type: influx, influx: {url: 'http://h:8086', db_name: d, measurement_name: m, password: x}}", "no username"),
        # found by an attacker's look: a local socket instead of a network host; a URL that redirects /write
        ("{type: postgres, postgres: {url: 'postgresql://%2Ftmp/db', table: t}}", "must name a network host"),
        ("{type: postgres, postgres: {url: 'postgresql://user@/db', table: t}}", "must name a network host"),
        (
            "{type: influx, influx: {url: 'http://h:8086/write?db=other&u=admin&', db_name: d, measurement_name: m}}",
            "no user, query, fragment or escapes",
        ),
        ("{type: influx, influx: {url: 'http://h:8086#', db_name: d, measurement_name: m}}", "no user, query"),
        ("{type: influx, influx: {url: 'http://h:8086', db_name: d, measurement_name: '#m'}}", "starts with '#'"),
    ],
)
def test_bad_sink_settings_are_refused(tmp_path, monkeypatch, sink, message):
    monkeypatch.setenv("JAAS", SCRAM_JAAS)
    with pytest.raises(ConfigError) as e:
        job(tmp_path, sink=sink)
    assert message in str(e.value)


def test_a_v2_influx_sink_may_use_a_token_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("JAAS", SCRAM_JAAS)
    spec = job(
        tmp_path,
        sink="{type: influx, influx: {url: 'http://h:8086', api: v2, db_name: d, "
        "measurement_name: m, password: tok, org: o}}",
    ).sink.influx
    assert (spec.api, spec.org, spec.password.get_secret_value()) == ("v2", "o", "tok")
