"""`validate` refuses a bad job before anything runs, naming what is wrong and where."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from dagger_runtime.cli import main
from dagger_runtime.config import load_job
from dagger_runtime.errors import DaggerError, QueryError
from dagger_runtime.plan import plan_job
from dagger_runtime.validate import analyze

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "daggers"
BASE = (EXAMPLES / "completed_bookings_by_s2.yaml").read_text()


def job_file(tmp_path, text: str, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_example_dagger_plans_without_errors():
    for path in sorted(EXAMPLES.iterdir()):
        plan = plan_job(load_job(path))
        assert plan.query.spark_sql.startswith("SELECT"), path


def test_an_event_time_field_number_that_does_not_exist_is_named_with_the_fields(tmp_path):
    path = job_file(tmp_path, BASE.replace("event_time: 5 ", "event_time: 42 "))
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(path))
    assert "streams[0] (data_stream): gojek.esb.booking.BookingLogMessage has no field number 42" in str(info.value)
    assert "event_timestamp=5" in str(info.value)


def test_an_event_time_field_that_is_not_a_timestamp_is_refused(tmp_path):
    path = job_file(tmp_path, BASE.replace("event_time: 5 ", "event_time: 8 "))
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(path))
    assert "city_id (8)" in str(info.value) and "is not a google.protobuf.Timestamp" in str(info.value)
    assert "event_timestamp (5)" in str(info.value)


def test_an_unknown_proto_class_is_named(tmp_path):
    path = job_file(tmp_path, BASE.replace("gojek.esb.booking.BookingLogMessage", "gojek.esb.booking.BookingLog"))
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(path))
    assert "gojek.esb.booking.BookingLog" in str(info.value)


def test_a_job_pinned_to_an_unknown_schema_version_is_refused(tmp_path):
    path = job_file(tmp_path, BASE.replace("version: 4957b56c57da625e", "version: deadbeefdeadbeef"))
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(path))
    assert "deadbeef" in str(info.value)


def test_a_query_on_a_table_the_job_does_not_have_is_refused(tmp_path):
    path = job_file(tmp_path, BASE.replace("FROM `data_stream`", "FROM `payments`"))
    with pytest.raises(QueryError) as info:
        plan_job(load_job(path))
    assert "unknown table `payments`" in str(info.value)


def test_the_cli_exits_2_and_prints_the_problem_on_stderr(tmp_path, capsys):
    path = job_file(tmp_path, BASE.replace("WHERE status='COMPLETED'", "WHERE status = reflect('a', 'b')"))
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert "refused: function reflect() is not allowed" in err and "line 7" in err


def test_the_cli_reports_every_config_problem_at_once(tmp_path, capsys):
    path = job_file(tmp_path, "name: x\nstreams: []\nsql: ''\nsink: {type: influx}\n")
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert "streams: at least one stream is required" in err
    assert "sql: must not be empty" in err
    assert "sink.influx: is required" in err


@pytest.mark.spark
def test_an_unknown_column_is_pointed_at_in_the_analysts_sql_with_a_suggestion(tmp_path, spark):
    path = job_file(tmp_path, BASE.replace("vehicle_type AS tag_vehicle_type", "vehicle AS tag_vehicle_type"))
    with pytest.raises(QueryError) as info:
        analyze(plan_job(load_job(path)), spark=spark)
    assert "unknown column `vehicle`; did you mean `vehicle_type`?" in str(info.value)
    assert (info.value.line, info.value.col) == (3, 8)  # where the analyst wrote it, not Spark's SQL


@pytest.mark.spark
def test_a_misspelled_nested_field_names_its_message_and_the_fields_it_has(tmp_path, spark):
    text = (EXAMPLES / "api_health.yaml").read_text()
    path = job_file(tmp_path, text.replace("request.path AS label_path", "request.pth AS label_path"))
    with pytest.raises(QueryError) as info:
        analyze(plan_job(load_job(path)), spark=spark)
    assert info.value.reason == (
        "request has no field `pth`; did you mean `path`? (its fields: method, path, host, headers, size_bytes)"
    )
    assert (info.value.line, info.value.col) == (1, 16)
    assert "FIELD_NOT_FOUND" not in str(info.value)


@pytest.mark.spark
def test_an_unknown_function_is_named_and_pointed_at(tmp_path, spark):
    path = job_file(tmp_path, BASE.replace("count(1) AS num_of_bookings", "NoSuchFn(1) AS num_of_bookings"))
    with pytest.raises(QueryError) as info:
        analyze(plan_job(load_job(path)), spark=spark)
    assert "unknown function NoSuchFn()" in str(info.value) and info.value.line == 4


@pytest.mark.spark
def test_a_column_outside_group_by_and_aggregates_is_explained(tmp_path, spark):
    path = job_file(tmp_path, BASE.replace("vehicle_type AS tag_vehicle_type", "order_number AS tag_vehicle_type"))
    with pytest.raises(QueryError) as info:
        analyze(plan_job(load_job(path)), spark=spark)
    assert "order_number is neither in GROUP BY nor inside an aggregate" in str(info.value)
    assert info.value.line == 3


@pytest.mark.spark
def test_spark_analysis_returns_the_output_columns_and_types(spark):
    columns = analyze(plan_job(load_job(EXAMPLES / "completed_bookings_by_s2.yaml")), spark=spark)
    assert [(c["name"], c["type"]) for c in columns] == [
        ("tag_city_id", "int"),
        ("tag_s2id", "string"),
        ("tag_vehicle_type", "string"),
        ("num_of_bookings", "bigint"),
        ("window_timestamp", "timestamp"),
    ]


@pytest.mark.spark
def test_a_malformed_literal_json_path_is_refused_before_the_job_runs(tmp_path, spark):
    path = job_file(
        tmp_path, BASE.replace("vehicle_type AS tag_vehicle_type", "JsonQuery(order_url, '$ .k1') AS tag_vehicle_type")
    )
    with pytest.raises(QueryError) as info:
        analyze(plan_job(load_job(path)), spark=spark)
    assert "JsonQuery: bad JSON path '$ .k1'" in str(info.value) and "line 3" in str(info.value)


def test_a_properties_job_can_take_its_descriptors_from_stencil_urls(tmp_path):
    from protos import registry

    latest = registry.load()
    desc = tmp_path / "descriptors.bin"
    desc.write_bytes(latest.data)
    text = (
        (EXAMPLES / "supply_per_minute.properties")
        .read_text()
        .replace(
            "SCHEMA_REGISTRY_STENCIL_ENABLE = false",
            f"SCHEMA_REGISTRY_STENCIL_ENABLE = true\nSCHEMA_REGISTRY_STENCIL_URLS = file://{desc}",
        )
    )
    plan = plan_job(load_job(job_file(tmp_path, text, "job.properties")))
    assert plan.descriptor_set.digest == latest.digest
    assert plan.descriptor_set.source.endswith("descriptors.bin")


def test_an_unreachable_stencil_url_is_named(tmp_path):
    text = (
        (EXAMPLES / "supply_per_minute.properties")
        .read_text()
        .replace(
            "SCHEMA_REGISTRY_STENCIL_ENABLE = false",
            f"SCHEMA_REGISTRY_STENCIL_ENABLE = true\nSCHEMA_REGISTRY_STENCIL_URLS = file://{tmp_path}/missing.desc",
        )
    )
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(job_file(tmp_path, text, "job.properties")))
    assert "missing.desc" in str(info.value)


def test_a_json_stream_without_a_proto_message_is_refused_with_the_reason(tmp_path):
    path = job_file(
        tmp_path,
        """\
name: j
streams:
  - table: t
    data_type: JSON
    json_schema: '{"type": "object"}'
    topics: [x]
    event_time: ts
    kafka: {bootstrap_servers: 127.0.0.1:9092}
sql: SELECT count(1) AS n FROM t
sink: {type: log}
""",
    )
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(path))
    assert "streams[0] (t): JSON input needs `proto`" in str(info.value)


PROPERTIES_WITH_TYPO = """\
FLINK_SQL_QUERY=SELECT count(1) AS n FROM data_stream_0
FLINK_WATERMARK_DELAY_MSS=5000
STREAMS=[{"SOURCE_KAFKA_TOPIC_NAMES": "GO_RIDE-booking-log", "INPUT_SCHEMA_TABLE": "data_stream_0", \\
  "INPUT_SCHEMA_PROTO_CLASS": "gojek.esb.booking.BookingLogMessage", \\
  "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": "5", \\
  "SOURCE_KAFKA_CONSUMER_CONFIG_BOOTSTRAP_SERVERS": "127.0.0.1:9092", \\
  "SOURCE_KAFKA_CONSUMER_CONFIG_GROUP_ID": "g"}]
SINK_TYPE=log
"""


def test_an_unknown_properties_key_is_a_warning_naming_the_closest_key(tmp_path, capsys):
    path = job_file(tmp_path, PROPERTIES_WITH_TYPO, "typo.properties")
    assert main(["validate", "--no-spark", str(path)]) == 0
    out, err = capsys.readouterr()
    # without Spark it says what it did not check
    assert out.splitlines()[0] == (
        "typo: valid as far as checked (--no-spark: not checked: the query's columns "
        "and their types against the messages' fields, the output columns against "
        "the sink)"
    )
    assert (
        "warning: typo.properties: FLINK_WATERMARK_DELAY_MSS: unknown key, ignored "
        "(did you mean 'FLINK_WATERMARK_DELAY_MS'?) (line 2)"
    ) in err


def test_strict_turns_a_warning_into_an_error(tmp_path, capsys):
    path = job_file(tmp_path, PROPERTIES_WITH_TYPO, "typo.properties")
    assert main(["validate", "--no-spark", "--strict", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "FLINK_WATERMARK_DELAY_MSS: unknown key" in err and "(an error under --strict)" in err


def test_preview_says_the_warnings_too_and_refuses_them_under_strict(tmp_path, capsys):
    path = job_file(tmp_path, PROPERTIES_WITH_TYPO, "typo.properties")
    assert main(["preview", "--strict", str(path), "--input", "data_stream_0=/nonexistent"]) == 2
    assert "FLINK_WATERMARK_DELAY_MSS" in capsys.readouterr().err


def test_validate_json_lists_the_warnings(tmp_path, capsys):
    path = job_file(tmp_path, PROPERTIES_WITH_TYPO, "typo.properties")
    assert main(["validate", "--no-spark", "--json", str(path)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert any("FLINK_WATERMARK_DELAY_MSS" in w for w in result["warnings"])
    assert len(result["not_checked"]) == 2 and "columns" not in result


def test_an_unknown_native_yaml_key_is_an_error_naming_the_closest_key(tmp_path, capsys):
    path = job_file(tmp_path, BASE.replace("watermark_delay: 60s", "watermark_delya: 60s"))
    assert main(["validate", "--no-spark", str(path)]) == 2
    assert "watermark_delya: unknown field (did you mean 'watermark_delay'?)" in capsys.readouterr().err


@pytest.mark.spark
def test_every_example_dagger_passes_both_sandbox_checks_and_spark_analysis(spark):
    for path in sorted(EXAMPLES.iterdir()):
        plan = plan_job(load_job(path))
        columns = analyze(plan, spark)
        # Spark resolved the query the sandbox let through to the columns the analyst named
        assert [c["name"] for c in columns] == list(plan.query.output_columns), path


def test_validate_json_prints_a_json_result_for_an_invalid_job_too(tmp_path, capsys):
    path = job_file(tmp_path, "name: x\nstreams: []\nsql: ''\nsink: {type: influx}\n")
    assert main(["validate", "--no-spark", "--json", str(path)]) == 2
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["valid"] is False and result["job"] == str(path)
    assert [e["kind"] for e in result["errors"]] == ["config"] * 3
    assert any("sql: must not be empty" in e["message"] for e in result["errors"])
    assert "sql: must not be empty" in err  # and said on stderr, as without --json
    # an SQL refusal carries where it is
    path = job_file(tmp_path, BASE.replace("status='COMPLETED'", "status='COMPLETD'"), "sql.yaml")
    assert main(["validate", "--no-spark", "--json", str(path)]) == 2
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["kind"] == "sql" and (error["line"], error["column"]) == (7, 14) and "'COMPLETD'" in error["message"]


def test_validate_says_how_a_job_was_read_its_source_sink_and_parallelism(tmp_path, capsys):

    spec = yaml.safe_load(BASE)
    path = job_file(tmp_path, BASE)
    assert main(["validate", "--no-spark", "--json", str(path)]) == 0
    info = json.loads(capsys.readouterr().out)
    stream = spec["streams"][0]
    assert info["streams"][0]["topics"] == stream["topics"]
    assert info["streams"][0]["bootstrap_servers"] == stream["kafka"]["bootstrap_servers"]
    assert info["sink"] == {
        "type": "influx",
        "url": spec["sink"]["influx"]["url"],
        "database": spec["sink"]["influx"]["db_name"],
        "measurement": spec["sink"]["influx"]["measurement_name"],
    }
    assert info["parallelism"] == spec["parallelism"] == 2
    assert main(["validate", "--no-spark", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"measurement={spec['sink']['influx']['measurement_name']}" in text and "parallelism     2" in text


def test_a_raystack_java_class_name_is_read_as_its_proto_message_and_said(tmp_path, capsys):
    proto, java = "gojek.esb.booking.BookingLogMessage", "com.gojek.esb.booking.BookingLogMessage"
    path = job_file(tmp_path, BASE.replace(proto, java))
    plan = plan_job(load_job(path))
    assert (plan.streams[0].proto_class, plan.streams[0].proto_as_written) == (proto, java)
    assert main(["validate", "--no-spark", str(path)]) == 0
    assert f"<- {proto} (the Java class {java})" in capsys.readouterr().out
    # a Java name that is no class is refused with the proto names close to it
    path = job_file(tmp_path, BASE.replace(proto, "com.gojek.esb.booking.BookingLogMesage"), "typo.yaml")
    with pytest.raises(DaggerError, match="unknown message 'com.gojek.esb.booking.BookingLogMesage'"):
        plan_job(load_job(path))


def test_a_kafka_sink_message_that_does_not_exist_is_refused_before_spark(tmp_path, capsys):
    spec = yaml.safe_load(BASE)
    spec["sink"] = {
        "type": "kafka",
        "kafka": {
            "brokers": "127.0.0.1:9092",
            "topic": "out",
            "data_type": "PROTO",
            "proto_message": "gojek.esb.booking.BookingLogMesage",
        },
    }
    path = job_file(tmp_path, yaml.safe_dump(spec))
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert "sink kafka proto_message: unknown message 'gojek.esb.booking.BookingLogMesage'" in err
    assert "did you mean gojek.esb.booking.BookingLogMessage" in err


def test_a_misspelt_event_time_field_name_gets_the_closest_name(tmp_path):
    text = (EXAMPLES / "api_health.yaml").read_text()
    assert "event_time: event_timestamp" in text
    path = job_file(tmp_path, text.replace("event_time: event_timestamp", "event_time: event_timestmp"))
    with pytest.raises(DaggerError) as info:
        plan_job(load_job(path))
    assert "has no field named 'event_timestmp'; did you mean event_timestamp?" in str(info.value)
    assert "Its timestamp fields: event_timestamp" in str(info.value)


def test_a_config_problem_and_an_sql_problem_are_refused_together(tmp_path, capsys):
    text = BASE.replace("status='COMPLETED'", "status = reflect('a', 'b')")
    text = text.replace("measurement_name: completed_bookings_by_s2", 'measurement_name: ""')
    assert text.count("reflect(") == 1 and 'measurement_name: ""' in text
    path = job_file(tmp_path, text)
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert "(2 problems)" in err
    assert "sql: SQL line 7, column 16: refused: function reflect() is not allowed" in err
    assert "sink.influx.measurement_name: must not be empty" in err
    # a raystack .properties job says it under its own key
    props = (EXAMPLES / "supply_per_minute.properties").read_text()
    assert "SINK_INFLUX_MEASUREMENT_NAME" in props
    bad = re.sub(r"SINK_INFLUX_MEASUREMENT_NAME\s*=.*", "SINK_INFLUX_MEASUREMENT_NAME=", props)
    bad = bad.replace("driver_status = 'AVAILABLE'", "driver_status = reflect('a', 'b')")
    path = job_file(tmp_path, bad, "supply.properties")
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert (
        "FLINK_SQL_QUERY: SQL line" in err
        and "reflect() is not allowed" in err
        and "SINK_INFLUX_MEASUREMENT_NAME" in err
    )


def test_a_misspelt_required_properties_key_is_named_beside_the_missing_one(tmp_path, capsys):
    # a properties file's unknown keys are only warnings: the one that was meant is named where the
    # required key is missing
    text = PROPERTIES_WITH_TYPO.replace("FLINK_WATERMARK_DELAY_MSS=", "FLINK_WATERMARK_DELAY_MS=").replace(
        "FLINK_SQL_QUERY=", "FLINK_SQL_QUERI="
    )
    assert "FLINK_SQL_QUERI=" in text
    path = job_file(tmp_path, text, "misspelt.properties")
    assert main(["validate", "--no-spark", str(path)]) == 2
    err = capsys.readouterr().err
    assert "FLINK_SQL_QUERY: is required; FLINK_SQL_QUERI (line " in err
    assert "is not a key: a misspelling of FLINK_SQL_QUERY?" in err
