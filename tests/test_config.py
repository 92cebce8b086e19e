"""The job configuration layer: the native YAML format, the model, errors and secrets."""

from __future__ import annotations

import copy
import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from dagger_runtime.config import (
    ConfigError,
    DaggerError,
    JobSpec,
    SinkSpec,
    StreamSpec,
    detect_format,
    load_job,
    loads_job,
    native,
)

FULL_YAML = """\
name: completed-bookings-by-s2
team: allocations
description: Completed bookings per S2 cell and service type, every 30 seconds

streams:
  - table: booking
    proto: gojek.esb.booking.BookingLogMessage
    topics: [GO_RIDE-booking-log, GO_CAR-booking-log]
    event_time: event_timestamp
    kafka:
      cluster: mainstream
      bootstrap_servers: [kafka-1.mainstream:9093, kafka-2.mainstream:9093]
      group_id: dagger-completed-bookings
      auto_offset_reset: earliest
      auto_commit: false
      client:
        security.protocol: SASL_SSL
        sasl:
          mechanism: SCRAM-SHA-512
          jaas.config: >-
            org.apache.kafka.common.security.scram.ScramLoginModule required
            username="dagger" password="${KAFKA_PASSWORD}";
        ssl.truststore.location: /etc/kafka/truststore.jks
        ssl.truststore.password: ${TRUSTSTORE_PASSWORD}
        fetch.max.bytes: 52428800
  - table: location
    proto: gojek.esb.driverlocation.DriverLocationLogMessage
    topic_pattern: 'GO_.*-driver-location'
    event_time: {field_number: 5, field_name: event_timestamp}
    kafka: {bootstrap_servers: 127.0.0.1:9092}

sql: |
  SELECT S2Id(b.pickup_lat, b.pickup_lng, 13) AS tag_s2id,
         COUNT(1) AS completed,
         TUMBLE_END(b.rowtime, INTERVAL '30' SECOND) AS window_timestamp
  FROM booking AS b
  WHERE b.status = 'COMPLETED'
  GROUP BY TUMBLE(b.rowtime, INTERVAL '30' SECOND), S2Id(b.pickup_lat, b.pickup_lng, 13)

rowtime_attribute: rowtime
watermark_delay: 1m30s
watermark_interval_ms: 5000
checkpoint_interval: 1m
idle_state_retention: 2h
parallelism: 2

schema:
  version: 4957B56C57DA625E

sink:
  type: influx
  influx:
    url: http://127.0.0.1:8086
    username: dagger
    password: ${INFLUX_PASSWORD}
    db_name: daggers
    measurement_name: completed_bookings
    retention_policy: autogen
    batch_size: 500
    flush_duration: 2s
"""

ENV = {
    "KAFKA_PASSWORD": "kafka-pa55",
    "TRUSTSTORE_PASSWORD": "trust-pa55",
    "INFLUX_PASSWORD": "influx-pa55",
}
SECRETS = ENV.values()

MINIMAL = {
    "streams": [
        {
            "table": "data_stream",
            "proto": "gojek.esb.booking.BookingLogMessage",
            "topics": ["GO_RIDE-booking-log"],
            "event_time": "event_timestamp",
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        }
    ],
    "sql": "SELECT COUNT(1) AS n FROM data_stream",
    "sink": {"type": "log"},
}


def without_line(problem: str) -> str:
    """A message without its trailing ' (line N)'."""
    return re.sub(r" \(line \d+\)$", "", problem)


def write(tmp_path: Path, text: str, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def load_data(tmp_path: Path, data: dict, name: str = "job.yaml", env: dict | None = None) -> JobSpec:
    return load_job(write(tmp_path, yaml.safe_dump(data, sort_keys=False), name), env=env or {})


def problems_of(tmp_path: Path, data: dict, env: dict | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_data(tmp_path, data, env=env)
    return caught.value.problems


def minimal(**changes) -> dict:
    data = copy.deepcopy(MINIMAL)
    data.update(changes)
    return data


def with_stream(**changes) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["streams"][0].update(changes)
    return data


def with_kafka(**changes) -> dict:
    data = copy.deepcopy(MINIMAL)
    data["streams"][0]["kafka"].update(changes)
    return data


INFLUX = {"url": "http://127.0.0.1:8086", "db_name": "daggers", "measurement_name": "m"}
KAFKA_SINK = {"brokers": "127.0.0.1:9092", "topic": "results", "proto_message": "gojek.esb.aggregate.Count"}
POSTGRES = {"url": "postgresql://127.0.0.1:5432/daggers", "table": "results", "key_columns": ["s2id"]}


# --- a full job -----------------------------------------------------------------------------


def test_a_full_native_yaml_job_loads_with_every_value_in_place(tmp_path):
    job = load_job(write(tmp_path, FULL_YAML), env=ENV)

    assert job.name == "completed-bookings-by-s2"
    assert job.team == "allocations"
    assert job.description.startswith("Completed bookings per S2 cell")
    assert job.origin == "yaml"
    assert job.source_path == str(tmp_path / "job.yaml")
    assert job.tables == ("booking", "location")

    booking, location = job.streams
    assert booking.proto_class == "gojek.esb.booking.BookingLogMessage"
    assert booking.topics == ("GO_RIDE-booking-log", "GO_CAR-booking-log")
    assert booking.topic_pattern is None
    assert booking.event_time.field_name == "event_timestamp"
    assert booking.event_time.field_number is None
    assert booking.data_type == "PROTO"
    assert booking.kafka.name == "mainstream"
    assert booking.kafka.bootstrap_servers == "kafka-1.mainstream:9093,kafka-2.mainstream:9093"
    assert booking.kafka.group_id == "dagger-completed-bookings"
    assert booking.kafka.auto_offset_reset == "earliest"
    assert booking.kafka.auto_commit is False
    assert booking.kafka.client == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.truststore.location": "/etc/kafka/truststore.jks",
        "fetch.max.bytes": "52428800",
    }
    assert set(booking.kafka.client_secrets) == {"sasl.jaas.config", "ssl.truststore.password"}
    options = booking.kafka.kafka_options()
    assert options["bootstrap.servers"] == "kafka-1.mainstream:9093,kafka-2.mainstream:9093"
    assert options["group.id"] == "dagger-completed-bookings"
    assert options["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="dagger" password="kafka-pa55";'
    )
    assert options["ssl.truststore.password"] == "trust-pa55"

    assert location.topics == ()
    assert location.topic_pattern == "GO_.*-driver-location"
    assert (location.event_time.field_number, location.event_time.field_name) == (5, "event_timestamp")
    assert location.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert location.kafka.name is None

    assert job.sql.startswith("SELECT S2Id(b.pickup_lat, b.pickup_lng, 13) AS tag_s2id,")
    assert job.sql.endswith("S2Id(b.pickup_lat, b.pickup_lng, 13)")
    assert job.rowtime_attribute == "rowtime"
    assert job.watermark_delay_ms == 90_000
    assert job.parallelism == 2

    assert job.schema.version == "4957b56c57da625e"
    assert job.schema.enabled is False
    assert job.schema.stencil_urls == ()

    assert job.sink.type == "influx"
    assert job.sink.kafka is None and job.sink.postgres is None
    influx = job.sink.influx
    assert influx.url == "http://127.0.0.1:8086"
    assert influx.username == "dagger"
    assert influx.password.get_secret_value() == "influx-pa55"
    assert (influx.db_name, influx.measurement_name, influx.retention_policy) == (
        "daggers",
        "completed_bookings",
        "autogen",
    )
    assert (influx.batch_size, influx.flush_duration_ms) == (500, 2000)
    # Flink's timing settings load, each with a note that Spark has no use for it
    assert [re.sub(r" \(line \d+\)$", "", w) for w in job.warnings] == [
        "job.yaml: watermark_interval_ms: ignored: Spark moves the watermark once per micro-batch, from every "
        "message the batch read",
        "job.yaml: checkpoint_interval: ignored: Spark commits every micro-batch to the checkpoint; there is no "
        "separate interval",
        "job.yaml: idle_state_retention: ignored: a dagger's state is its open windows and join buffers, which the "
        "watermark closes; nothing else is kept to expire",
    ]


def test_a_minimal_job_gets_raystack_daggers_defaults(tmp_path):
    job = load_data(tmp_path, MINIMAL, name="driver-counts.yaml")

    assert job.name == "driver-counts"  # the file name without .yaml
    assert job.team is None and job.description == ""
    assert job.rowtime_attribute == "rowtime"
    assert job.watermark_delay_ms == 10_000  # FLINK_WATERMARK_DELAY_MS_DEFAULT
    assert job.parallelism == 1
    assert job.idle_timeout_ms == 0
    assert job.schema.fetch_timeout_ms == 10_000
    assert job.schema.refresh_strategy == "LONG_POLLING"
    stream = job.streams[0]
    assert stream.kafka.auto_offset_reset == "latest"
    assert stream.kafka.auto_commit is False
    assert stream.data_type == "PROTO"
    assert job.sink.type == "log"
    assert (job.sink.influx, job.sink.kafka, job.sink.postgres) == (None, None, None)


@pytest.mark.parametrize(
    ("given", "number", "name"),
    [(5, 5, None), ("5", 5, None), ("event_timestamp", None, "event_timestamp"), ({"field_number": 19}, 19, None)],
)
def test_the_event_time_is_a_field_name_or_a_protobuf_field_number(tmp_path, given, number, name):
    job = load_data(tmp_path, with_stream(event_time=given))
    assert (job.streams[0].event_time.field_number, job.streams[0].event_time.field_name) == (number, name)


@pytest.mark.parametrize(
    ("duration", "millis"), [("500ms", 500), ("60s", 60_000), ("5m", 300_000), ("1h30m", 5_400_000), ("1d", 86_400_000)]
)
def test_durations_are_written_with_units(tmp_path, duration, millis):
    assert load_data(tmp_path, minimal(watermark_delay=duration)).watermark_delay_ms == millis


def test_a_duration_can_also_be_given_in_milliseconds(tmp_path):
    assert load_data(tmp_path, minimal(watermark_delay_ms=2500)).watermark_delay_ms == 2500


def test_an_influx_sink_job_loads(tmp_path):
    job = load_data(tmp_path, minimal(sink={"type": "influx", "influx": INFLUX}))
    assert job.sink.influx.url == "http://127.0.0.1:8086"
    assert (job.sink.influx.batch_size, job.sink.influx.flush_duration_ms) == (0, 0)


def test_a_kafka_sink_job_loads(tmp_path):
    sink = {
        **KAFKA_SINK,
        "proto_key": "gojek.esb.aggregate.Key",
        "linger": "5ms",
        "client": {"compression.type": "snappy"},
    }
    job = load_data(tmp_path, minimal(sink={"type": "kafka", "kafka": sink}))
    kafka = job.sink.kafka
    assert (kafka.brokers, kafka.topic, kafka.data_type) == ("127.0.0.1:9092", "results", "PROTO")
    assert (kafka.proto_key, kafka.proto_message) == ("gojek.esb.aggregate.Key", "gojek.esb.aggregate.Count")
    assert kafka.linger_ms == 5
    assert kafka.kafka_options() == {
        "bootstrap.servers": "127.0.0.1:9092",
        "linger.ms": "5",
        "compression.type": "snappy",
    }


def test_a_postgres_sink_job_loads(tmp_path):
    sink = {**POSTGRES, "user": "dagger", "password": "${PG_PASSWORD}", "key_columns": ["s2id", "window_timestamp"]}
    job = load_data(tmp_path, minimal(sink={"type": "postgres", "postgres": sink}), env={"PG_PASSWORD": "pg-pa55"})
    postgres = job.sink.postgres
    assert (postgres.url, postgres.table, postgres.user) == ("postgresql://127.0.0.1:5432/daggers", "results", "dagger")
    assert postgres.key_columns == ("s2id", "window_timestamp")
    assert postgres.password.get_secret_value() == "pg-pa55"


def test_a_json_stream_names_its_event_time_field_and_schema(tmp_path):
    stream = {"data_type": "json", "json_schema": '{"type": "object"}', "event_time": "event_time"}
    data = with_stream(**stream)
    del data["streams"][0]["proto"]
    job = load_data(tmp_path, data)
    assert job.streams[0].data_type == "JSON"
    assert job.streams[0].proto_class is None
    assert job.streams[0].event_time.field_name == "event_time"


def test_stencil_urls_fetch_descriptors_as_dagger_does(tmp_path):
    schema = {"stencil_urls": "http://stencil:8000/a.desc, http://stencil:8000/b.desc", "fetch_timeout": "30s"}
    job = load_data(tmp_path, minimal(schema=schema))
    assert job.schema.enabled is True  # implied by giving URLs
    assert job.schema.stencil_urls == ("http://stencil:8000/a.desc", "http://stencil:8000/b.desc")
    assert job.schema.fetch_timeout_ms == 30_000


def test_a_stencil_url_with_a_login_is_refused_without_repeating_it(tmp_path):
    schema = {"stencil_urls": "https://stencil:s3cret-token@stencil.example/a.desc"}
    with pytest.raises(ConfigError) as caught:
        load_data(tmp_path, minimal(schema=schema))
    assert "may not carry a login" in str(caught.value) and "s3cret-token" not in str(caught.value)


# --- bad input -------------------------------------------------------------------------------

BAD_INPUTS = [
    pytest.param(
        with_stream(topics=[]), ["job.yaml: streams[0].topics: at least one topic is required"], id="no-topics"
    ),
    pytest.param(
        with_stream(topics=["GO_RIDE booking"]),
        ["job.yaml: streams[0].topics[0]: invalid Kafka topic name 'GO_RIDE booking'"],
        id="topic-with-space",
    ),
    pytest.param(
        with_stream(topics=[".."]), ["streams[0].topics[0]: '..' is not a valid Kafka topic name"], id="topic-dotdot"
    ),
    pytest.param(
        with_stream(topics=["t" * 250]), ["streams[0].topics[0]: Kafka topic names are at most 249"], id="topic-long"
    ),
    pytest.param(
        with_stream(topics=["a", "a"]), ["streams[0].topics: topic 'a' is listed more than once"], id="topic-twice"
    ),
    pytest.param(
        with_stream(topics=["a"], topic_pattern="a.*"),
        ["streams[0].topic_pattern: give either topics or topic_pattern, not both"],
        id="topics-and-pattern",
    ),
    pytest.param(
        with_stream(topic_pattern="a(", topics=[]),
        ["streams[0].topic_pattern: not a valid regular expression"],
        id="bad-regex",
    ),
    pytest.param(
        with_stream(table="data-stream"), ["streams[0].table: expected an SQL identifier", "'data-stream'"], id="table"
    ),
    pytest.param(
        minimal(streams=[MINIMAL["streams"][0], MINIMAL["streams"][0]]),
        ["streams[1].table: table name 'data_stream' is already used by the stream at index 0"],
        id="duplicate-table",
    ),
    pytest.param(
        minimal(streams=[dict(MINIMAL["streams"][0], table=f"t{i}") for i in range(3)]),
        ["job.yaml: streams: at most 2 streams are supported", "got 3"],
        id="three-streams",
    ),
    pytest.param(minimal(streams=[]), ["job.yaml: streams: at least one stream is required"], id="no-streams"),
    pytest.param(minimal(streams=None), ["job.yaml: streams: expected a list, got nothing"], id="streams-null"),
    pytest.param({k: v for k, v in MINIMAL.items() if k != "sql"}, ["job.yaml: sql: is required"], id="sql-missing"),
    pytest.param(minimal(sql="   "), ["job.yaml: sql: must not be empty"], id="sql-blank"),
    pytest.param(
        {
            "streams": [{k: v for k, v in MINIMAL["streams"][0].items() if k != "proto"}],
            "sql": "x",
            "sink": {"type": "log"},
        },
        ["streams[0].proto: is required for PROTO input"],
        id="proto-missing",
    ),
    pytest.param(
        with_stream(proto="BookingLogMessage"),
        ["streams[0].proto: expected a fully qualified protobuf message name", "'BookingLogMessage'"],
        id="proto-not-qualified",
    ),
    pytest.param(
        {
            "streams": [{k: v for k, v in MINIMAL["streams"][0].items() if k != "event_time"}],
            "sql": "x",
            "sink": {"type": "log"},
        },
        ["streams[0].event_time: is required"],
        id="event-time-missing",
    ),
    pytest.param(
        with_stream(event_time=19500),
        ["streams[0].event_time: protobuf field numbers 19000-19999 are reserved"],
        id="reserved-number",
    ),
    pytest.param(
        with_stream(event_time=0),
        ["streams[0].event_time: a protobuf field number is between 1 and 536870911, got 0"],
        id="number-zero",
    ),
    pytest.param(
        with_stream(event_time="event-time"),
        ["streams[0].event_time: expected a field name", "'event-time'"],
        id="field-name",
    ),
    pytest.param(
        with_stream(event_time={}),
        ["streams[0].event_time: give the event-time field's name or its protobuf field number"],
        id="event-time-empty",
    ),
    pytest.param(
        with_stream(data_type="AVRO"),
        ["streams[0].data_type: must be one of 'PROTO' or 'JSON', got 'AVRO'"],
        id="data-type",
    ),
    pytest.param(
        with_kafka(bootstrap_servers="127.0.0.1"),
        [
            "streams[0].kafka.bootstrap_servers: expected a comma-separated list of host:port",
            "'127.0.0.1': expected host:port",
        ],
        id="bootstrap-no-port",
    ),
    pytest.param(
        with_kafka(bootstrap_servers="kafka-1:9092,kafka-2:99999"),
        ["streams[0].kafka.bootstrap_servers:", "port '99999' is not a number between 1 and 65535"],
        id="bootstrap-port",
    ),
    pytest.param(with_kafka(bootstrap_servers="kafka_1!:9092"), ["is not a host name or address"], id="bootstrap-host"),
    pytest.param(
        with_kafka(auto_offset_reset="newest"),
        ["streams[0].kafka.auto_offset_reset: must be one of 'latest' or 'earliest', got 'newest'"],
        id="offset-reset",
    ),
    pytest.param(
        with_kafka(auto_commit="maybe"),
        ["streams[0].kafka.auto_commit: expected true or false, got 'maybe'"],
        id="auto-commit",
    ),
    pytest.param(
        with_kafka(client={"security.protocol": "SASL_SSLX"}),
        [
            "streams[0].kafka.client.security.protocol: must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, got 'SASL_SSLX'"
        ],
        id="security-protocol",
    ),
    pytest.param(
        with_kafka(client={"sasl.mechanism": "PLAIN"}),
        [
            "streams[0].kafka.client.sasl.mechanism: has no effect unless security.protocol is SASL_PLAINTEXT or SASL_SSL"
        ],
        id="sasl-without-sasl-protocol",
    ),
    pytest.param(
        with_kafka(client={"group.id": "other"}),
        ["streams[0].kafka.client.group.id: set with kafka.group_id instead"],
        id="client-group-id",
    ),
    pytest.param(
        with_kafka(client={"Security_Protocol": "SSL"}),
        ["streams[0].kafka.client.Security_Protocol: expected a Kafka client setting name like 'security.protocol'"],
        id="client-key-form",
    ),
    pytest.param(
        minimal(rowtime_attribute="row time"), ["job.yaml: rowtime_attribute: expected an SQL identifier"], id="rowtime"
    ),
    pytest.param(minimal(parallelism=0), ["job.yaml: parallelism: must be at least 1, got 0"], id="parallelism-zero"),
    pytest.param(minimal(state_rows=0), ["job.yaml: state_rows: must be at least 1, got 0"], id="state-rows-zero"),
    pytest.param(
        minimal(state_rows=10**9 + 1),
        ["job.yaml: state_rows: must be at most 1,000,000,000, got 1,000,000,001"],
        id="state-rows-past-any-worker",
    ),
    pytest.param(
        minimal(state_rows=10**400),
        ["job.yaml: state_rows: must be at most 1,000,000,000, got a number of 401 digits"],
        id="state-rows-huge",
    ),
    pytest.param(
        minimal(state_rows=False), ["job.yaml: state_rows: expected an integer, got False"], id="state-rows-bool"
    ),
    pytest.param(
        minimal(parallelism="two"), ["job.yaml: parallelism: expected an integer, got 'two'"], id="parallelism-text"
    ),
    pytest.param(
        minimal(parallelism=True), ["job.yaml: parallelism: expected an integer, got True"], id="parallelism-bool"
    ),
    pytest.param(
        minimal(watermark_delay_ms=-1),
        ["job.yaml: watermark_delay_ms: must be at least 0, got -1"],
        id="delay-negative",
    ),
    pytest.param(
        minimal(watermark_delay=60),
        ["job.yaml: watermark_delay: 60 has no unit: write 60s, 60m or 60h"],
        id="duration-no-unit",
    ),
    pytest.param(
        minimal(watermark_delay="soon"), ["job.yaml: watermark_delay: 'soon' is not a duration"], id="duration-text"
    ),
    pytest.param(
        minimal(watermark_delay="1s", watermark_delay_ms=1000),
        ["job.yaml: watermark_delay_ms: give either watermark_delay or watermark_delay_ms, not both"],
        id="duration-twice",
    ),
    pytest.param(minimal(idle_timeout="soon"), ["job.yaml: idle_timeout: 'soon' is not a duration"], id="idle-timeout"),
    pytest.param(
        minimal(name="completed bookings"),
        ["job.yaml: name: a job name is 1-128 letters", "'completed bookings'"],
        id="name",
    ),
    pytest.param(minimal(team="Allocations"), ["job.yaml: team: a team name is a DNS label"], id="team"),
    # DAGGER_SECRET_API__HEALTH__* would fall under team api's secrets (DAGGER_SECRET_API__*)
    pytest.param(minimal(team="api--health"), ["job.yaml: team: a team name is a DNS label"], id="team-double-hyphen"),
    pytest.param(
        minimal(paralelism=2), ["job.yaml: paralelism: unknown field (did you mean 'parallelism'?)"], id="unknown-field"
    ),
    pytest.param(
        with_stream(topcs=["a"]),
        ["job.yaml: streams[0].topcs: unknown field (did you mean 'topics'?)"],
        id="unknown-stream-field",
    ),
    pytest.param(
        minimal(schema={"version": "3f1c"}),
        ["job.yaml: schema.version: expected a descriptor-set digest (8 to 64 hex digits), got '3f1c'"],
        id="version-short",
    ),
    pytest.param(
        minimal(schema={"version": "not-a-hex-digest"}),
        ["schema.version: expected a descriptor-set digest"],
        id="version-not-hex",
    ),
    pytest.param(
        minimal(schema={"version": 12345678}),
        ["schema.version: expected a hex digest as text, got the number 12345678; quote it"],
        id="version-number",
    ),
    pytest.param(
        minimal(schema={"enabled": True}),
        ["schema.stencil_urls: at least one URL is required when the stencil schema registry is enabled"],
        id="stencil-no-url",
    ),
    pytest.param(
        minimal(schema={"stencil_urls": ["stencil.local/x"]}),
        ["schema.stencil_urls[0]: expected an http(s)://"],
        id="stencil-url",
    ),
    pytest.param(
        minimal(schema={"version": "4957b56c", "auto_refresh": True}),
        ["schema.auto_refresh: a pinned schema version cannot be refreshed"],
        id="pinned-refresh",
    ),
    pytest.param(
        minimal(sink={"type": "bigquery"}),
        ["job.yaml: sink.type: must be one of 'influx', 'kafka', 'postgres' or 'log', got 'bigquery'"],
        id="sink-type",
    ),
    pytest.param(minimal(sink={"influx": INFLUX}), ["job.yaml: sink.type: is required"], id="sink-type-missing"),
    pytest.param({k: v for k, v in MINIMAL.items() if k != "sink"}, ["job.yaml: sink: is required"], id="sink-missing"),
    pytest.param(
        minimal(sink={"type": "influx"}),
        ["job.yaml: sink.influx: is required when the sink type is 'influx'"],
        id="influx-missing",
    ),
    pytest.param(
        minimal(sink={"type": "kafka", "influx": INFLUX}),
        [
            "sink.influx: must be absent when the sink type is 'kafka'",
            "sink.kafka: is required when the sink type is 'kafka'",
        ],
        id="wrong-section",
    ),
    pytest.param(
        minimal(sink={"type": "influx", "influx": {"url": "http://127.0.0.1:8086"}}),
        ["job.yaml: sink.influx.db_name: is required", "job.yaml: sink.influx.measurement_name: is required"],
        id="influx-incomplete",
    ),
    pytest.param(
        minimal(sink={"type": "influx", "influx": {**INFLUX, "url": "127.0.0.1:8086"}}),
        ["sink.influx.url: expected a URL starting with http:// or https://"],
        id="influx-url",
    ),
    pytest.param(
        minimal(sink={"type": "influx", "influx": {**INFLUX, "url": "http://root:hunter2@127.0.0.1:8086"}}),
        ["sink.influx.url: the URL must not contain a password; give it in the password field"],
        id="influx-url-password",
    ),
    pytest.param(
        minimal(sink={"type": "influx", "influx": {**INFLUX, "password": "${P}"}}),
        ["sink.influx.password: a password is given but no username"],
        id="influx-password-no-user",
    ),
    pytest.param(
        minimal(sink={"type": "influx", "influx": {**INFLUX, "batch_size": -5}}),
        ["sink.influx.batch_size: must be at least 0, got -5"],
        id="influx-batch",
    ),
    pytest.param(
        minimal(sink={"type": "kafka", "kafka": {k: v for k, v in KAFKA_SINK.items() if k != "proto_message"}}),
        ["sink.kafka.proto_message: is required when data_type is PROTO"],
        id="kafka-sink-proto",
    ),
    pytest.param(
        minimal(sink={"type": "kafka", "kafka": {**KAFKA_SINK, "topic": "results topic", "brokers": "x"}}),
        [
            "sink.kafka.topic: invalid Kafka topic name 'results topic'",
            "sink.kafka.brokers: expected a comma-separated list of host:port",
        ],
        id="kafka-sink-topic",
    ),
    pytest.param(
        minimal(
            sink={"type": "postgres", "postgres": {**POSTGRES, "url": "postgresql://dagger:hunter2@db:5432/daggers"}}
        ),
        ["sink.postgres.url: the URL must not contain a password"],
        id="postgres-url-password",
    ),
    pytest.param(
        minimal(sink={"type": "postgres", "postgres": {**POSTGRES, "key_columns": []}}),
        ["sink.postgres.key_columns: at least one key column is required"],
        id="postgres-keys",
    ),
]


@pytest.mark.parametrize(("data", "expected"), BAD_INPUTS)
def test_bad_input_is_reported_with_file_field_and_problem(tmp_path, data, expected):
    problems = problems_of(tmp_path, data, env={"P": "x"})
    text = "\n".join(problems)
    for piece in expected:
        assert piece in text, f"{piece!r} not in:\n{text}"


def test_every_problem_is_reported_at_once(tmp_path):
    data = minimal(parallelism=0, sql="", team="Team A", sink={"type": "influx", "influx": {"url": "x"}})
    data["streams"].append(dict(MINIMAL["streams"][0], topics=[], event_time="event-time"))
    data["streams"][0]["kafka"]["bootstrap_servers"] = "nohost"

    with pytest.raises(ConfigError) as caught:
        load_data(tmp_path, data)

    text = str(caught.value)
    expected = [
        "job.yaml: team: a team name is a DNS label",
        "job.yaml: streams[0].kafka.bootstrap_servers: expected a comma-separated list of host:port",
        "job.yaml: streams[1].topics: at least one topic is required",
        "job.yaml: streams[1].event_time: expected a field name",
        "job.yaml: streams[1].table: table name 'data_stream' is already used by the stream at index 0",
        "job.yaml: sql: must not be empty",
        "job.yaml: parallelism: must be at least 1, got 0",
        "job.yaml: sink.influx.url: expected a URL starting with http:// or https://",
        "job.yaml: sink.influx.db_name: is required",
        "job.yaml: sink.influx.measurement_name: is required",
    ]
    for piece in expected:
        assert any(piece in problem for problem in caught.value.problems), piece
    assert len(caught.value.problems) == len(expected)
    assert text.splitlines()[0] == f"invalid job configuration in {tmp_path / 'job.yaml'} ({len(expected)} problems):"
    assert all(line.startswith("  - job.yaml: ") for line in text.splitlines()[1:])


def test_problems_point_at_the_line_of_the_field(tmp_path):
    text = FULL_YAML.replace("parallelism: 2", "parallelism: -2")
    with pytest.raises(ConfigError) as caught:
        load_job(write(tmp_path, text), env=ENV)
    line = 1 + text.splitlines().index("parallelism: -2")
    assert caught.value.problems == [f"job.yaml: parallelism: must be at least 1, got -2 (line {line})"]


def test_a_yaml_syntax_error_names_the_line(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_job(write(tmp_path, "name: x\nstreams: [\n  - a\nsql: 'unclosed\n"))
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith("job.yaml: not valid YAML:")
    assert "(line " in caught.value.problems[0]


def test_a_key_given_twice_is_an_error(tmp_path):
    text = yaml.safe_dump(MINIMAL, sort_keys=False) + "sql: SELECT 2\n"
    with pytest.raises(ConfigError) as caught:
        load_job(write(tmp_path, text))
    assert any(p.startswith("job.yaml: sql: given twice (lines ") for p in caught.value.problems)


def test_a_file_that_is_not_a_mapping_is_an_error(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_job(write(tmp_path, "- just\n- a list\n"))
    assert caught.value.problems == ["job.yaml: expected a mapping of job settings at the top level, got a list"]


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_job(tmp_path / "nope.yaml")
    assert caught.value.problems[0].startswith("nope.yaml: cannot read the file:")


def test_config_error_is_a_dagger_error():
    error = ConfigError(["a.yaml: sql: must not be empty"], source="a.yaml")
    assert isinstance(error, DaggerError)
    assert str(error) == "invalid job configuration in a.yaml (1 problem):\n  - a.yaml: sql: must not be empty"


# --- secrets ---------------------------------------------------------------------------------


def test_secrets_never_appear_in_repr_str_or_redacted(tmp_path):
    job = load_job(write(tmp_path, FULL_YAML), env=ENV)

    shown = [
        repr(job),
        str(job),
        json.dumps(job.redacted()),
        repr(job.sink),
        str(job.streams[0].kafka),
        repr(job.model_dump()),
    ]
    for text in shown:
        for secret in SECRETS:
            assert secret not in text
    redacted = job.redacted()
    assert redacted["sink"]["influx"]["password"] == "***"
    assert redacted["streams"][0]["kafka"]["client_secrets"] == {
        "sasl.jaas.config": "***",
        "ssl.truststore.password": "***",
    }
    assert redacted["streams"][0]["kafka"]["client"]["security.protocol"] == "SASL_SSL"


def test_secrets_are_not_echoed_in_error_messages(tmp_path):
    data = minimal(sink={"type": "influx", "influx": {**INFLUX, "username": "u", "password": 918273645}})
    problems = problems_of(tmp_path, data)
    assert [without_line(p) for p in problems] == [
        "job.yaml: sink.influx.password: expected text, got a value (hidden: it is a secret)"
    ]
    assert "918273645" not in "\n".join(problems)


def test_an_env_reference_is_resolved_when_the_job_is_loaded(tmp_path):
    sink = {"type": "influx", "influx": {**INFLUX, "username": "dagger", "password": "${INFLUX_PASSWORD}"}}
    job = load_data(tmp_path, minimal(sink=sink), env={"INFLUX_PASSWORD": "s3cret"})
    assert job.sink.influx.password.get_secret_value() == "s3cret"
    assert job.warnings == ()


def test_an_unset_env_variable_is_an_error_naming_the_variable(tmp_path):
    sink = {"type": "influx", "influx": {**INFLUX, "username": "dagger", "password": "${INFLUX_PASSWORD}"}}
    problems = problems_of(tmp_path, minimal(sink=sink), env={})
    assert [without_line(p) for p in problems] == [
        "job.yaml: sink.influx.password: environment variable INFLUX_PASSWORD is not set (referenced as ${INFLUX_PASSWORD})"
    ]


def test_env_references_inside_a_jaas_config_are_resolved_and_double_dollar_is_literal(tmp_path):
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="${KP}$${KEEP}";'
    data = with_kafka(
        client={"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas}
    )
    job = load_data(tmp_path, data, env={"KP": "pw"})
    resolved = job.streams[0].kafka.client_secrets["sasl.jaas.config"].get_secret_value()
    assert resolved.endswith('password="pw${KEEP}";')


def test_an_unset_env_variable_in_a_kafka_secret_names_the_setting(tmp_path):
    data = with_kafka(client={"security.protocol": "SSL", "ssl.keystore.password": "${KEYSTORE_PASSWORD}"})
    problems = problems_of(tmp_path, data, env={})
    assert [without_line(p) for p in problems] == [
        "job.yaml: streams[0].kafka.client.ssl.keystore.password: environment variable KEYSTORE_PASSWORD is not set"
        " (referenced as ${KEYSTORE_PASSWORD})"
    ]


def test_a_secret_written_in_the_file_gives_a_warning(tmp_path):
    sink = {"type": "influx", "influx": {**INFLUX, "username": "dagger", "password": "plain-text"}}
    job = load_data(tmp_path, minimal(sink=sink))
    assert job.sink.influx.password.get_secret_value() == "plain-text"
    assert [without_line(w) for w in job.warnings] == [
        "job.yaml: sink.influx.password: a secret is written in the file; prefer an ${ENV_VAR} reference"
    ]


# --- the model on its own --------------------------------------------------------------------


def test_models_are_frozen(tmp_path):
    job = load_data(tmp_path, MINIMAL)
    with pytest.raises(ValidationError):
        job.parallelism = 4  # type: ignore[misc]


def test_models_refuse_unknown_fields_when_built_directly():
    with pytest.raises(ValidationError, match="extra"):
        SinkSpec(type="log", colour="blue")  # type: ignore[call-arg]


def test_models_check_their_cross_field_rules_when_built_directly():
    with pytest.raises(ValidationError, match="influx: is required when the sink type is 'influx'"):
        SinkSpec(type="influx")
    with pytest.raises(ValidationError, match="topics: at least one topic is required"):
        StreamSpec(
            table="t",
            proto_class="a.B",
            event_time={"field_number": 5},
            kafka={"bootstrap_servers": "localhost:9092"},
        )


def test_a_job_built_directly_equals_the_loaded_one(tmp_path):
    loaded = load_data(tmp_path, MINIMAL)
    built = JobSpec.model_validate(loaded.model_dump())
    assert built == loaded


# --- formats ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("job.yaml", "STREAMS=[]\n", "yaml"),
        ("job.yml", "name: x\n", "yaml"),
        ("local.properties", "name: x\n", "properties"),
        ("job.conf", "# dagger\nSTREAMS=[]\nSINK_TYPE : log\n", "properties"),
        ("job.conf", "name: x\nsql: SELECT 1\n", "yaml"),
    ],
)
def test_the_format_follows_the_extension_or_else_the_content(name, text, expected):
    assert detect_format(name, text) == expected


def test_text_can_be_loaded_without_a_file():
    job = loads_job(yaml.safe_dump(MINIMAL), fmt="yaml", source="inline.yaml")
    assert job.name == "inline"
    assert job.source_path == "inline.yaml"


def test_the_module_docstring_example_is_a_valid_job():
    doc = native.__doc__
    start = doc.index("::\n") + 3
    end = doc.index("\nSecrets (")
    example = textwrap.dedent(doc[start:end])
    env = {"KAFKA_PASSWORD": "a", "TRUSTSTORE_PASSWORD": "b", "INFLUX_PASSWORD": "c"}
    job = loads_job(example, fmt="yaml", source="completed-bookings-by-s2.yaml", env=env)
    assert job.name == "completed-bookings-by-s2"
    assert job.sink.influx.password.get_secret_value() == "c"


def test_a_yaml_indentation_error_says_how_to_fix_it(tmp_path):
    text = "name: x\nstreams:\n  - table: t\n    proto_class: a.B\n   topics: [x]\nsql: SELECT 1\n"
    with pytest.raises(ConfigError) as caught:
        load_job(write(tmp_path, text), env=ENV)
    (problem,) = caught.value.problems
    assert "expected <block end>" in problem and "(line 5, column 4)" in problem
    assert "line up fields of the same mapping (two spaces a level)" in problem
