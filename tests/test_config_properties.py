"""raystack/dagger properties files, read as they are: Java properties syntax, dagger's keys and defaults."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dagger_runtime.config import ConfigError, JobSpec, load_job
from dagger_runtime.config.properties import PropertiesSyntaxError, parse_entries

# A realistic dagger job: two streams joined, a SASL_SSL consumer, an SQL query over several
# lines joined by backslashes, and keys dagger needs that mean nothing here.
FULL_PROPERTIES = r"""# == Query ==
FLINK_JOB_ID=booking-driver-join
FLINK_SQL_QUERY=SELECT b.service_type AS tag_service_type, \
    COUNT(b.order_number) AS number_of_orders, \
    TUMBLE_END(b.rowtime, INTERVAL '60' SECOND) AS window_timestamp \
  FROM `booking` AS b \
  JOIN `location` AS l ON l.driver_id = b.driver_id \
   AND l.rowtime BETWEEN b.rowtime - INTERVAL '1' MINUTE AND b.rowtime \
  GROUP BY TUMBLE(b.rowtime, INTERVAL '60' SECOND), b.service_type
FLINK_WATERMARK_INTERVAL_MS=5000
FLINK_WATERMARK_DELAY_MS=1000
FLINK_PARALLELISM = 3
FLINK_CHECKPOINT_INTERVAL_MS: 60000
FLINK_RETENTION_IDLE_STATE_MINUTE=30
FLINK_ROWTIME_ATTRIBUTE_NAME=rowtime

! == Input Streams ==
STREAMS=[ \
  { \
    "SOURCE_KAFKA_TOPIC_NAMES": "GO_RIDE-booking-log|GO_CAR-booking-log", \
    "INPUT_SCHEMA_TABLE": "booking", \
    "INPUT_SCHEMA_PROTO_CLASS": "gojek.esb.booking.BookingLogMessage", \
    "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": "5", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS": "kafka-1.mainstream:9093,kafka-2.mainstream:9093", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_COMMIT_ENABLE": "false", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_OFFSET_RESET": "earliest", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_GROUP_ID": "dagger-booking-driver-join-v1", \
    "SOURCE_KAFKA_NAME": "mainstream", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SECURITY_PROTOCOL": "SASL_SSL", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SASL_MECHANISM": "SCRAM-SHA-512", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SASL_JAAS_CONFIG": "org.apache.kafka.common.security.scram.ScramLoginModule required username=\\"dagger\\" password=\\"${KAFKA_PASSWORD}\\";", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SSL_PROTOCOL": "TLSv1.2", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SSL_TRUSTSTORE_LOCATION": "/etc/kafka/truststore.jks", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SSL_TRUSTSTORE_PASSWORD": "${TRUSTSTORE_PASSWORD}", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_SSL_TRUSTSTORE_TYPE": "JKS", \
    "SOURCE_DETAILS": [{"SOURCE_TYPE": "UNBOUNDED", "SOURCE_NAME": "KAFKA_CONSUMER"}] \
  }, \
  { \
    "SOURCE_KAFKA_TOPIC_NAMES": "GO_RIDE-driver-location", \
    "INPUT_SCHEMA_TABLE": "location", \
    "INPUT_SCHEMA_PROTO_CLASS": "gojek.esb.driverlocation.DriverLocationLogMessage", \
    "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": 5, \
    "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS": "127.0.0.1:9092", \
    "SOURCE_KAFKA_CONSUMER_CONFIG_GROUP_ID": "dagger-booking-driver-join-v1", \
    "SOURCE_KAFKA_NAME": "local" \
  } \
]

# == Preprocessor / Postprocessor ==
PROCESSOR_PREPROCESSOR_ENABLE=false
PROCESSOR_PREPROCESSOR_CONFIG={}
PROCESSOR_POSTPROCESSOR_ENABLE=false
PROCESSOR_POSTPROCESSOR_CONFIG={}

# == Sink ==
SINK_TYPE=influx
SINK_INFLUX_URL=http://127.0.0.1:8086
SINK_INFLUX_USERNAME=dagger
SINK_INFLUX_PASSWORD=${INFLUX_PASSWORD}
SINK_INFLUX_DB_NAME=DAGGERS
SINK_INFLUX_MEASUREMENT_NAME=booking_driver_join
SINK_INFLUX_RETENTION_POLICY=autogen
SINK_INFLUX_BATCH_SIZE=100
SINK_INFLUX_FLUSH_DURATION_MS=1000

# == Stencil ==
SCHEMA_REGISTRY_STENCIL_ENABLE=true
SCHEMA_REGISTRY_STENCIL_URLS=http://stencil.local:8000/v1/namespaces/gojek/descriptors/latest,http://stencil.local:8000/extra.desc
SCHEMA_REGISTRY_STENCIL_FETCH_TIMEOUT_MS=20000
SCHEMA_REGISTRY_STENCIL_CACHE_AUTO_REFRESH=true
SCHEMA_REGISTRY_STENCIL_REFRESH_STRATEGY=VERSION_BASED_REFRESH

# == Telemetry ==
METRIC_TELEMETRY_SHUTDOWN_PERIOD_MS=10000
METRIC_TELEMETRY_ENABLE=true

# == Others ==
FUNCTION_FACTORY_CLASSES=org.raystack.dagger.functions.udfs.factories.FunctionFactory
PYTHON_UDF_ENABLE=false
PYTHON_UDF_CONFIG={"PYTHON_FILES":"/path/to/files.zip"}
"""

ENV = {"KAFKA_PASSWORD": "kafka-pa55", "TRUSTSTORE_PASSWORD": "trust-pa55", "INFLUX_PASSWORD": "influx-pa55"}

STREAM = {
    "SOURCE_KAFKA_TOPIC_NAMES": "GO_RIDE-booking-log",
    "INPUT_SCHEMA_TABLE": "data_stream",
    "INPUT_SCHEMA_PROTO_CLASS": "gojek.esb.booking.BookingLogMessage",
    "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": "5",
    "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS": "localhost:9092",
    "SOURCE_KAFKA_CONSUMER_CONFIG_GROUP_ID": "dagger-test",
}


def write(tmp_path: Path, text: str, name: str = "local.properties") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def properties(streams: list[dict] | None = None, **keys: str) -> str:
    """A small valid dagger file (log sink), with keys added or replaced (None removes)."""
    values = {
        "FLINK_SQL_QUERY": "SELECT COUNT(1) AS n FROM data_stream",
        # a backslash in a properties value is an escape: double it to keep JSON's own escapes
        "STREAMS": json.dumps(streams if streams is not None else [STREAM]).replace("\\", "\\\\"),
        "SINK_TYPE": "log",
    }
    values.update(keys)
    return "".join(f"{key}={value}\n" for key, value in values.items() if value is not None)


def load(tmp_path: Path, text: str, env: dict | None = None, name: str = "local.properties") -> JobSpec:
    return load_job(write(tmp_path, text, name), env=env if env is not None else {})


def problems_of(tmp_path: Path, text: str, env: dict | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text, env)
    return [re.sub(r" \(line \d+\)$", "", p) for p in caught.value.problems]


def warnings_of(job: JobSpec) -> list[str]:
    return [re.sub(r" \(line \d+\)$", "", w) for w in job.warnings]


# --- the Java properties syntax --------------------------------------------------------------


def test_properties_syntax_is_javas():
    text = (
        "# a comment\n"
        "! another comment \\\n"
        "plain=value\n"
        "colon: value two\n"
        "spaced   value three\n"
        "  indented = trailing blanks kept  \n"
        "continued = first \\\n"
        "            second\\\n"
        "third\n"
        "not_continued = ends in an escaped backslash \\\\\n"
        "escapes = tab\\there\\nnewline \\u0041 \\#hash \\=equals\n"
        "key\\ with\\ spaces\\=and\\:seps = x\n"
        "empty=\n"
        "plain=last wins\r\n"
        "crlf=yes\r\n"
    )
    entries = parse_entries(text)
    values = {entry.key: entry.value for entry in entries}
    assert values == {
        "plain": "last wins",
        "colon": "value two",
        "spaced": "value three",
        "indented": "trailing blanks kept  ",
        "continued": "first secondthird",
        "not_continued": "ends in an escaped backslash \\",
        "escapes": "tab\there\nnewline A #hash =equals",
        "key with spaces=and:seps": "x",
        "empty": "",
        "crlf": "yes",
    }
    continued = next(e for e in entries if e.key == "continued")
    assert (continued.line, continued.continued) == (7, True)


def test_a_malformed_unicode_escape_is_a_syntax_error_with_its_line():
    with pytest.raises(PropertiesSyntaxError, match=r"line 2: malformed \\uxxxx escape"):
        parse_entries("a=1\nb=\\u12G4\n")


# --- a full file -----------------------------------------------------------------------------


def test_a_full_dagger_properties_file_loads_with_every_value_in_place(tmp_path):
    job = load(tmp_path, FULL_PROPERTIES, env=ENV)

    assert job.origin == "dagger-properties"
    assert job.name == "booking-driver-join"
    assert job.team is None
    assert job.tables == ("booking", "location")

    booking, location = job.streams
    assert booking.topics == ("GO_RIDE-booking-log", "GO_CAR-booking-log")
    assert booking.topic_pattern is None
    assert booking.proto_class == "gojek.esb.booking.BookingLogMessage"
    assert booking.event_time.field_number == 5
    assert booking.event_time.field_name is None
    assert booking.data_type == "PROTO"
    kafka = booking.kafka
    assert kafka.name == "mainstream"
    assert kafka.bootstrap_servers == "kafka-1.mainstream:9093,kafka-2.mainstream:9093"
    assert kafka.group_id == "dagger-booking-driver-join-v1"
    assert kafka.auto_offset_reset == "earliest"
    assert kafka.auto_commit is False
    assert kafka.client == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.protocol": "TLSv1.2",
        "ssl.truststore.location": "/etc/kafka/truststore.jks",
        "ssl.truststore.type": "JKS",
    }
    assert kafka.client_secrets["sasl.jaas.config"].get_secret_value() == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="dagger" password="kafka-pa55";'
    )
    assert kafka.client_secrets["ssl.truststore.password"].get_secret_value() == "trust-pa55"

    assert location.topics == ("GO_RIDE-driver-location",)
    assert location.event_time.field_number == 5  # a JSON number works as it does with Gson
    assert location.kafka.auto_offset_reset == "latest"  # dagger's default
    assert location.kafka.client == {} and location.kafka.client_secrets == {}

    assert job.sql == (
        "SELECT b.service_type AS tag_service_type, COUNT(b.order_number) AS number_of_orders, "
        "TUMBLE_END(b.rowtime, INTERVAL '60' SECOND) AS window_timestamp FROM `booking` AS b "
        "JOIN `location` AS l ON l.driver_id = b.driver_id AND l.rowtime BETWEEN b.rowtime - INTERVAL '1' MINUTE "
        "AND b.rowtime GROUP BY TUMBLE(b.rowtime, INTERVAL '60' SECOND), b.service_type"
    )
    assert job.rowtime_attribute == "rowtime"
    assert (job.watermark_delay_ms, job.parallelism) == (1000, 3)

    assert job.schema.enabled is True
    assert job.schema.stencil_urls == (
        "http://stencil.local:8000/v1/namespaces/gojek/descriptors/latest",
        "http://stencil.local:8000/extra.desc",
    )
    assert job.schema.fetch_timeout_ms == 20_000
    assert job.schema.auto_refresh is True
    assert job.schema.refresh_strategy == "VERSION_BASED_REFRESH"
    assert job.schema.version is None

    assert job.sink.type == "influx"
    influx = job.sink.influx
    assert (influx.url, influx.username, influx.db_name) == ("http://127.0.0.1:8086", "dagger", "DAGGERS")
    assert influx.password.get_secret_value() == "influx-pa55"
    assert (influx.measurement_name, influx.retention_policy) == ("booking_driver_join", "autogen")
    assert (influx.batch_size, influx.flush_duration_ms) == (100, 1000)

    assert warnings_of(job) == [
        "local.properties: FLINK_WATERMARK_INTERVAL_MS: ignored: Spark moves the watermark once per micro-batch, "
        "from every message the batch read",
        "local.properties: FLINK_CHECKPOINT_INTERVAL_MS: ignored: Spark commits every micro-batch to the "
        "checkpoint; there is no separate interval",
        "local.properties: FLINK_RETENTION_IDLE_STATE_MINUTE: ignored: a dagger's state is its open windows and "
        "join buffers, which the watermark closes; nothing else is kept to expire",
        "local.properties: FUNCTION_FACTORY_CLASSES: ignored: every built-in UDF is always registered",
    ]


def test_secrets_from_a_properties_file_never_appear_in_repr_str_or_redacted(tmp_path):
    job = load(tmp_path, FULL_PROPERTIES, env=ENV)
    for text in (repr(job), str(job), json.dumps(job.redacted()), str(job.warnings)):
        for secret in ENV.values():
            assert secret not in text
    assert job.redacted()["sink"]["influx"]["password"] == "***"
    assert job.redacted()["streams"][0]["kafka"]["client_secrets"]["sasl.jaas.config"] == "***"


def test_an_unset_env_variable_in_a_properties_secret_names_key_and_variable(tmp_path):
    problems = problems_of(tmp_path, FULL_PROPERTIES, env={"KAFKA_PASSWORD": "x", "TRUSTSTORE_PASSWORD": "y"})
    assert problems == [
        "local.properties: SINK_INFLUX_PASSWORD: environment variable INFLUX_PASSWORD is not set (referenced as ${INFLUX_PASSWORD})"
    ]


def test_a_secret_written_in_a_properties_file_gives_a_warning(tmp_path):
    stream = {
        **STREAM,
        "SOURCE_KAFKA_CONSUMER_CONFIG_SECURITY_PROTOCOL": "SSL",
        "SOURCE_KAFKA_CONSUMER_CONFIG_SSL_KEY_PASSWORD": "k3y",
    }
    job = load(tmp_path, properties([stream]))
    assert job.streams[0].kafka.client_secrets["ssl.key.password"].get_secret_value() == "k3y"
    assert warnings_of(job) == [
        "local.properties: STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_SSL_KEY_PASSWORD: a secret is written in the file;"
        " prefer an ${ENV_VAR} reference"
    ]


# --- dagger's defaults and naming ------------------------------------------------------------


def test_raystack_daggers_defaults_apply_when_keys_are_absent(tmp_path):
    job = load(tmp_path, properties(), name="driver-counts.properties")
    assert job.name == "driver-counts"  # no DAGGER_NAME / FLINK_JOB_ID: the file name
    assert job.rowtime_attribute == "rowtime"
    assert job.watermark_delay_ms == 10_000
    assert job.parallelism == 1
    assert job.idle_timeout_ms == 0  # Flink's default: a quiet stream holds the watermark
    assert job.schema.enabled is False and job.schema.fetch_timeout_ms == 10_000
    assert job.streams[0].kafka.auto_offset_reset == "latest"
    assert job.streams[0].data_type == "PROTO"
    assert job.warnings == ()


@pytest.mark.parametrize(
    "value, problem", [("5000", None), ("-1", "must be at least 0, got -1"), ("5s", "expected an integer, got '5s'")]
)
def test_the_idle_timeout_is_ours_under_a_dagger_key(tmp_path, value, problem):
    text = properties(DAGGER_IDLE_TIMEOUT_MS=value)
    if problem is None:
        assert load(tmp_path, text).idle_timeout_ms == 5000
    else:
        [said] = problems_of(tmp_path, text)
        assert "DAGGER_IDLE_TIMEOUT_MS" in said and problem in said


def test_the_sink_type_defaults_to_influx_as_in_dagger(tmp_path):
    problems = problems_of(tmp_path, properties(SINK_TYPE=None))
    assert problems == [
        "local.properties: SINK_INFLUX_URL: is required",
        "local.properties: SINK_INFLUX_DB_NAME: is required",
        "local.properties: SINK_INFLUX_MEASUREMENT_NAME: is required",
    ]


def test_the_job_name_comes_from_dagger_name_before_flink_job_id(tmp_path):
    job = load(tmp_path, properties(DAGGER_NAME="booking-counts", FLINK_JOB_ID="other-name"))
    assert job.name == "booking-counts"
    assert warnings_of(job) == [
        "local.properties: FLINK_JOB_ID: ignored: the job is named by DAGGER_NAME ('booking-counts')"
    ]
    assert load(tmp_path, properties(FLINK_JOB_ID="from-flink-job-id")).name == "from-flink-job-id"


def test_a_bad_job_name_names_the_key_it_came_from(tmp_path):
    assert problems_of(tmp_path, properties(FLINK_JOB_ID="SQL Flink job")) == [
        "local.properties: FLINK_JOB_ID: a job name is 1-128 letters, digits, '.', '_' or '-', starting with a letter"
        " or digit, got 'SQL Flink job'"
    ]


# --- streams ---------------------------------------------------------------------------------


def test_the_event_timestamp_index_must_be_a_protobuf_field_number(tmp_path):
    second = {**STREAM, "INPUT_SCHEMA_TABLE": "other", "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": "event_timestamp"}
    assert problems_of(tmp_path, properties([STREAM, second])) == [
        "local.properties: STREAMS[1].INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX: expected a protobuf field number"
        " (an integer), got 'event_timestamp'"
    ]


def test_topic_names_joined_by_a_pipe_become_topics_and_a_regex_becomes_a_topic_pattern(tmp_path):
    job = load(tmp_path, properties([{**STREAM, "SOURCE_KAFKA_TOPIC_NAMES": "a-topic|b.topic|c_topic"}]))
    assert job.streams[0].topics == ("a-topic", "b.topic", "c_topic")

    job = load(tmp_path, properties([{**STREAM, "SOURCE_KAFKA_TOPIC_NAMES": "GO_.*-booking-log"}]))
    assert job.streams[0].topics == ()
    assert job.streams[0].topic_pattern == "GO_.*-booking-log"
    assert warnings_of(job) == [
        "local.properties: STREAMS[0].SOURCE_KAFKA_TOPIC_NAMES: read as a regular expression over topic names:"
        " 'GO_.*-booking-log'"
    ]


def test_a_json_stream_reads_its_schema_and_event_time_field_name(tmp_path):
    stream = {
        k: v
        for k, v in STREAM.items()
        if k not in ("INPUT_SCHEMA_PROTO_CLASS", "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX")
    }
    stream.update(
        INPUT_DATATYPE="JSON",
        INPUT_SCHEMA_JSON_SCHEMA='{"type": "object"}',
        INPUT_SCHEMA_JSON_EVENT_TIMESTAMP_FIELD_NAME="event_timestamp",
    )
    job = load(tmp_path, properties([stream]))
    assert job.streams[0].data_type == "JSON"
    assert job.streams[0].json_schema == '{"type": "object"}'
    assert job.streams[0].event_time.field_name == "event_timestamp"


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        pytest.param(
            {**STREAM, "SOURCE_KAFKA_TOPIC_NAMES": "GO_RIDE booking"},
            "STREAMS[0].SOURCE_KAFKA_TOPIC_NAMES: invalid Kafka topic name 'GO_RIDE booking'",
            id="topic",
        ),
        pytest.param(
            {k: v for k, v in STREAM.items() if k != "SOURCE_KAFKA_TOPIC_NAMES"},
            "STREAMS[0].SOURCE_KAFKA_TOPIC_NAMES: at least one topic is required",
            id="no-topics",
        ),
        pytest.param(
            {**STREAM, "INPUT_SCHEMA_TABLE": "data-stream"},
            "STREAMS[0].INPUT_SCHEMA_TABLE: expected an SQL identifier",
            id="table",
        ),
        pytest.param(
            {k: v for k, v in STREAM.items() if k != "INPUT_SCHEMA_PROTO_CLASS"},
            "STREAMS[0].INPUT_SCHEMA_PROTO_CLASS: is required for PROTO input",
            id="proto-missing",
        ),
        pytest.param(
            {k: v for k, v in STREAM.items() if k != "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX"},
            "STREAMS[0].INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX: is required",
            id="index-missing",
        ),
        pytest.param(
            {k: v for k, v in STREAM.items() if k != "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS"},
            "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS: is required",
            id="bootstrap-missing",
        ),
        pytest.param(
            {**STREAM, "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS": "localhost"},
            "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS: expected a comma-separated list of host:port",
            id="bootstrap-port",
        ),
        pytest.param(
            {**STREAM, "SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_COMMIT_ENABLE": "yes"},
            "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_COMMIT_ENABLE: expected true or false, got 'yes'",
            id="boolean",
        ),
        pytest.param(
            {**STREAM, "SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_OFFSET_RESET": "smallest"},
            "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_OFFSET_RESET: must be one of 'latest' or 'earliest', got 'smallest'",
            id="offset-reset",
        ),
        pytest.param(
            {**STREAM, "SOURCE_KAFKA_CONSUMER_CONFIG_SECURITY_PROTOCOL": "SASL"},
            "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_SECURITY_PROTOCOL: must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
            id="security-protocol",
        ),
        pytest.param(
            {
                **STREAM,
                "SOURCE_KAFKA_CONSUMER_CONFIG_SECURITY_PROTOCOL": "SSL",
                "SOURCE_KAFKA_CONSUMER_CONFIG_SSL_PROTOCOL": "TLSv9",
            },
            "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_SSL_PROTOCOL: must be one of TLS, TLSv1.1, TLSv1.2, TLSv1.3, SSL, SSLv2, SSLv3",
            id="ssl-protocol",
        ),
        pytest.param(
            {**STREAM, "INPUT_DATATYPE": "AVRO"},
            "STREAMS[0].INPUT_DATATYPE: must be one of 'PROTO' or 'JSON', got 'AVRO'",
            id="data-type",
        ),
        pytest.param(
            {**STREAM, "SOURCE_DETAILS": [{"SOURCE_TYPE": "BOUNDED", "SOURCE_NAME": "PARQUET_SOURCE"}]},
            "STREAMS[0].SOURCE_DETAILS: Parquet sources are not supported",
            id="parquet",
        ),
        pytest.param(
            {**STREAM, "SOURCE_KAFKA_CONFIG_AUTO_OFFSET_RESET": "latest"},
            "STREAMS[0].SOURCE_KAFKA_CONFIG_AUTO_OFFSET_RESET: raystack/dagger's code does not read this key (its docs name it"
            " so); use SOURCE_KAFKA_CONSUMER_CONFIG_AUTO_OFFSET_RESET",
            id="docs-only-name",
        ),
    ],
)
def test_a_bad_stream_is_reported_by_its_dagger_key(tmp_path, stream, expected):
    problems = problems_of(tmp_path, properties([stream]))
    assert any(problem.startswith(f"local.properties: {expected}") for problem in problems), problems


def test_stream_table_names_must_be_unique_and_at_most_two_streams_run(tmp_path):
    assert problems_of(tmp_path, properties([STREAM, STREAM])) == [
        "local.properties: STREAMS[1].INPUT_SCHEMA_TABLE: table name 'data_stream' is already used by the stream at index 0"
    ]
    three = [{**STREAM, "INPUT_SCHEMA_TABLE": f"t{i}"} for i in range(3)]
    sql_problem, stream_problem = problems_of(tmp_path, properties(three))  # in file order
    assert stream_problem == "local.properties: STREAMS: at most 2 streams are supported (as in raystack/dagger), got 3"
    # the query reads data_stream, no longer a table here: said in the same refusal
    assert sql_problem.startswith(
        "local.properties: FLINK_SQL_QUERY: SQL line 1, column 27: refused: unknown table `data_stream`"
    )


def test_streams_must_be_json_and_an_unescaped_quote_gets_a_hint(tmp_path):
    assert problems_of(tmp_path, properties(STREAMS="[{]")) == [
        "local.properties: STREAMS: not valid JSON: Expecting property name enclosed in double quotes at character 3"
    ]
    text = properties(STREAMS='[{"INPUT_SCHEMA_TABLE": "a \\"quoted\\" name"}]')
    (problem,) = problems_of(tmp_path, text)
    assert problem.startswith("local.properties: STREAMS: not valid JSON:")
    assert 'in a properties file \\" is just "; write \\\\" to keep a JSON escape' in problem


def test_a_missing_streams_key_is_required(tmp_path):
    assert problems_of(tmp_path, properties(STREAMS=None)) == ["local.properties: STREAMS: is required"]


# --- global keys -----------------------------------------------------------------------------


def test_the_sql_query_lines_are_joined_and_a_comment_there_gets_a_warning(tmp_path):
    text = properties(FLINK_SQL_QUERY="SELECT COUNT(1) AS n -- all of them \\\n   FROM data_stream")
    job = load(tmp_path, text)
    assert job.sql == "SELECT COUNT(1) AS n -- all of them FROM data_stream"
    assert any("FLINK_SQL_QUERY: contains '--'" in warning for warning in job.warnings)


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ({"FLINK_SQL_QUERY": None}, "local.properties: FLINK_SQL_QUERY: is required"),
        ({"FLINK_PARALLELISM": "0"}, "local.properties: FLINK_PARALLELISM: must be at least 1, got 0"),
        (
            {"FLINK_WATERMARK_DELAY_MS": "10s"},
            "local.properties: FLINK_WATERMARK_DELAY_MS: expected an integer, got '10s'",
        ),
        (
            {"FLINK_ROWTIME_ATTRIBUTE_NAME": "row-time"},
            "local.properties: FLINK_ROWTIME_ATTRIBUTE_NAME: expected an SQL identifier",
        ),
        (
            {"SINK_TYPE": "bigquery"},
            "local.properties: SINK_TYPE: the bigquery sink is not supported (use influx, kafka or log)",
        ),
        (
            {"SINK_TYPE": "elastic"},
            "local.properties: SINK_TYPE: must be one of 'influx', 'kafka', 'postgres' or 'log', got 'elastic'",
        ),
        (
            {"SCHEMA_REGISTRY_STENCIL_ENABLE": "1"},
            "local.properties: SCHEMA_REGISTRY_STENCIL_ENABLE: expected true or false, got '1'",
        ),
        (
            {"SCHEMA_REGISTRY_STENCIL_ENABLE": "true"},
            "local.properties: SCHEMA_REGISTRY_STENCIL_URLS: at least one URL is required",
        ),
        (
            {"PROCESSOR_PREPROCESSOR_ENABLE": "true"},
            "local.properties: PROCESSOR_PREPROCESSOR_ENABLE: pre-processors are not supported",
        ),
        (
            {"PYTHON_UDF_ENABLE": "true"},
            "local.properties: PYTHON_UDF_ENABLE: Python UDFs from PYTHON_UDF_CONFIG are not supported",
        ),
        (
            {"FLINK_SQL_QUERY": None, "SQL_QUERY": "SELECT 1"},
            "local.properties: SQL_QUERY: raystack/dagger's code does not read this key (its docs name it so); use FLINK_SQL_QUERY",
        ),
    ],
)
def test_a_bad_global_key_is_reported_by_name(tmp_path, keys, expected):
    assert expected in "\n".join(problems_of(tmp_path, properties(**keys)))


def test_a_kafka_sink_reads_its_keys_and_the_large_message_switch(tmp_path):
    text = properties(
        SINK_TYPE="kafka",
        SINK_KAFKA_BROKERS="kafka-out-1:9092,kafka-out-2:9092",
        SINK_KAFKA_TOPIC="booking-counts",
        SINK_KAFKA_PROTO_KEY="gojek.esb.aggregate.BookingCountKey",
        SINK_KAFKA_PROTO_MESSAGE="gojek.esb.aggregate.BookingCount",
        SINK_KAFKA_STREAM="output-stream",
        SINK_KAFKA_LINGER_MS="25",
        SINK_KAFKA_PRODUCE_LARGE_MESSAGE_ENABLE="true",
        SINK_INFLUX_URL="http://leftover:8086",
    )
    job = load(tmp_path, text)
    kafka = job.sink.kafka
    assert job.sink.type == "kafka" and job.sink.influx is None
    assert (kafka.brokers, kafka.topic, kafka.name) == (
        "kafka-out-1:9092,kafka-out-2:9092",
        "booking-counts",
        "output-stream",
    )
    assert (kafka.proto_key, kafka.proto_message) == (
        "gojek.esb.aggregate.BookingCountKey",
        "gojek.esb.aggregate.BookingCount",
    )
    assert (kafka.data_type, kafka.linger_ms) == ("PROTO", 25)
    assert kafka.client == {"compression.type": "snappy", "max.request.size": "20971520"}
    assert warnings_of(job) == ["local.properties: SINK_INFLUX_URL: ignored: SINK_TYPE is 'kafka'"]


def test_a_kafka_sink_without_its_keys_names_each_missing_key(tmp_path):
    assert problems_of(tmp_path, properties(SINK_TYPE="kafka")) == [
        "local.properties: SINK_KAFKA_BROKERS: is required",
        "local.properties: SINK_KAFKA_TOPIC: is required",
        "local.properties: SINK_KAFKA_PROTO_MESSAGE: is required when data_type is PROTO",
    ]


def test_unknown_and_ignored_keys_are_warnings_not_errors(tmp_path):
    text = properties(
        FUNCTION_FACTORY_CLASSES="FunctionFactory",
        FLINK_PARALELISM="2",
        FLINK_CHECKPOINT_TIMEOUT_MS="900000",
        PROCESSOR_LONGBOW_GCP_PROJECT_ID="p",
        METRIC_TELEMETRY_ENABLE="true",
        SCHEMA_REGISTRY_STENCIL_URLS="http://stencil.local/descriptors.bin",
    )
    job = load(tmp_path, text)
    assert warnings_of(job) == [
        "local.properties: FUNCTION_FACTORY_CLASSES: ignored: every built-in UDF is always registered",
        "local.properties: FLINK_PARALELISM: unknown key, ignored (did you mean 'FLINK_PARALLELISM'?)",
        "local.properties: FLINK_CHECKPOINT_TIMEOUT_MS: ignored: Flink checkpoint tuning has no Spark equivalent",
        "local.properties: PROCESSOR_LONGBOW_GCP_PROJECT_ID: unknown key, ignored",
        "local.properties: SCHEMA_REGISTRY_STENCIL_URLS: ignored: SCHEMA_REGISTRY_STENCIL_ENABLE is false",
    ]
    assert job.schema.stencil_urls == ()
    assert job.warnings[0].endswith("(line 4)")


def test_every_problem_in_a_properties_file_is_reported_at_once(tmp_path):
    second = {
        **STREAM,
        "INPUT_SCHEMA_TABLE": "data_stream",
        "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": "event_timestamp",
    }
    first = {**STREAM, "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS": "localhost"}
    text = properties(
        [first, second],
        FLINK_PARALLELISM="-1",
        FLINK_SQL_QUERY="",
        SINK_TYPE="influx",
        SINK_INFLUX_URL="localhost:8086",
        PYTHON_UDF_ENABLE="true",
    )
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    problems = caught.value.problems
    expected = [
        "FLINK_PARALLELISM: must be at least 1, got -1",
        "FLINK_SQL_QUERY: is required",
        "STREAMS[0].SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS: expected a comma-separated list of host:port",
        "STREAMS[1].INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX: expected a protobuf field number (an integer), got 'event_timestamp'",
        "STREAMS[1].INPUT_SCHEMA_TABLE: table name 'data_stream' is already used by the stream at index 0",
        "SINK_INFLUX_URL: expected a URL starting with http:// or https://",
        "SINK_INFLUX_DB_NAME: is required",
        "SINK_INFLUX_MEASUREMENT_NAME: is required",
        "PYTHON_UDF_ENABLE: Python UDFs from PYTHON_UDF_CONFIG are not supported",
    ]
    for piece in expected:
        assert any(p.startswith(f"local.properties: {piece}") for p in problems), piece
    assert len(problems) == len(expected)
    assert str(caught.value).count("\n  - local.properties: ") == len(expected)


def test_a_file_without_an_extension_in_dagger_style_is_read_as_properties(tmp_path):
    job = load(tmp_path, properties(FLINK_JOB_ID="no-extension"), name="dagger.env")
    assert job.origin == "dagger-properties"
    assert job.name == "no-extension"
