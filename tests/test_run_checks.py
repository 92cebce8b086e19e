"""What validate (and run, before it starts) refuses about streaming and sinks, and the schema
version lock: every refusal names the problem in the analyst's terms."""

from __future__ import annotations

import json

import pytest
import yaml

from dagger_runtime.cli import main
from protos.versions import read_index
from tests.kafka_jobs import EXAMPLES

pytestmark = pytest.mark.spark
FIRST_VERSION = "4957b56c57da625e"  # the examples' pin: before the aggregate output messages


def job(tmp_path, *, sql=None, sink=None, version=FIRST_VERSION):
    spec = yaml.safe_load((EXAMPLES / "completed_bookings_by_s2.yaml").read_text())
    if sql:
        spec["sql"] = sql
    if sink:
        spec["sink"] = sink
    if version:
        spec["schema"] = {"version": version}
    else:
        spec.pop("schema", None)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return str(path)


@pytest.mark.parametrize(
    "sql, message, column",
    [
        (
            "SELECT status, count(1) AS n FROM data_stream GROUP BY status",
            "GROUP BY without a TUMBLE or HOP window",
            56,
        ),
        ("SELECT order_number FROM data_stream ORDER BY order_number", "ORDER BY cannot run on a stream", 47),
        (
            "SELECT count(DISTINCT driver_id) AS n, TUMBLE_END(rowtime, INTERVAL '1' MINUTE) AS w FROM data_stream "
            "GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE)",
            "use DistinctCount(x)",
            23,
        ),
        ("SELECT order_number FROM data_stream LIMIT 5", "LIMIT cannot run on a stream", 44),
        (
            "SELECT order_number, row_number() OVER (PARTITION BY city_id ORDER BY rowtime) AS r FROM data_stream",
            "OVER (...) windows cannot run on a stream",
            54,
        ),
        ("SELECT DISTINCT order_number FROM data_stream", "SELECT DISTINCT on a stream", None),
    ],
)
def test_a_query_that_cannot_stream_is_refused_in_the_analysts_terms(spark, tmp_path, capsys, sql, message, column):
    assert main(["validate", job(tmp_path, sql=sql, sink={"type": "log"})]) == 2
    err = capsys.readouterr().err
    assert message in err
    if column:
        assert f"SQL line 1, column {column}:" in err
    assert "Traceback" not in err and "UnsupportedOperationChecker" not in err


OUT = "gojek.esb.aggregate.CompletedBookingsMessage"


@pytest.mark.parametrize(
    "kafka, message",
    [
        ({"proto_message": "gojek.esb.aggregate.CompletedBookingMessage"}, "CompletedBookingsMessage"),
        (
            {"proto_message": OUT, "proto_key": "gojek.esb.booking.BookingLogMessage"},
            "its fields order_number, order_url, service_type",
        ),
        (
            {"proto_message": "gojek.esb.booking.BookingLogMessage"},
            "column tag_city_id is not a field of gojek.esb.booking.BookingLogMessage",
        ),
    ],
)
def test_a_kafka_sink_whose_messages_do_not_fit_the_columns_is_refused(spark, tmp_path, capsys, kafka, message):
    sink = {"type": "kafka", "kafka": {"brokers": "127.0.0.1:9092", "topic": "out", "data_type": "PROTO", **kafka}}
    assert main(["validate", job(tmp_path, sink=sink, version=read_index().latest)]) == 2
    assert message in capsys.readouterr().err


def test_a_column_whose_type_does_not_fit_its_field_is_refused(spark, tmp_path, capsys):
    sql = (
        "SELECT city_id AS tag_city_id, count(1) AS tag_s2id, TUMBLE_END(rowtime, INTERVAL '1' MINUTE) "
        "AS window_timestamp FROM data_stream GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), city_id"
    )
    sink = {"type": "kafka", "kafka": {"brokers": "127.0.0.1:9092", "topic": "out", "proto_message": OUT}}
    assert main(["validate", job(tmp_path, sql=sql, sink=sink, version=read_index().latest)]) == 2
    err = capsys.readouterr().err
    assert "column tag_s2id (bigint) cannot be written to field tag_s2id: a string field needs a string" in err


@pytest.mark.parametrize(
    "sink, message",
    [
        (
            {"type": "influx", "influx": {"url": "http://127.0.0.1:8086", "db_name": "d", "measurement_name": "m"}},
            "the query must have a window_timestamp column",
        ),
        (
            {
                "type": "postgres",
                "postgres": {"url": "postgresql://127.0.0.1/d", "table": "t", "key_columns": ["s2id"]},
            },
            "key_columns s2id are not output columns",
        ),
    ],
)
def test_a_sink_that_cannot_take_the_output_is_refused(spark, tmp_path, capsys, sink, message):
    sql = "SELECT order_number, status FROM data_stream WHERE status = 'COMPLETED'"
    assert main(["validate", job(tmp_path, sql=sql, sink=sink)]) == 2
    assert message in capsys.readouterr().err


def test_a_pinned_job_keeps_its_version_after_a_newer_one_is_released(spark, tmp_path, capsys):
    assert read_index().latest != FIRST_VERSION  # a newer set has been released since
    assert main(["validate", "--json", job(tmp_path)]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["schema_version"] == FIRST_VERSION
    assert "does not pin" not in out.err


def test_an_unpinned_job_warns_and_strict_refuses_it(spark, tmp_path, capsys):
    path = job(tmp_path, version=None)
    assert main(["validate", "--json", path]) == 0
    out = capsys.readouterr()
    latest = read_index().latest
    assert json.loads(out.out)["schema_version"] == latest
    assert "warning: schema: the job does not pin a descriptor version" in out.err
    assert f"schema.version: {latest}" in out.err
    assert main(["validate", "--strict", path]) == 2
    assert "does not pin a descriptor version" in capsys.readouterr().err


JOIN = """SELECT b.service_type AS tag_service_type, count(1) AS n,
       TUMBLE_END(b.rowtime, INTERVAL '1' MINUTE) AS window_timestamp
FROM bookings b JOIN pings p ON b.driver_id = p.driver_id{on}{where}
GROUP BY TUMBLE(b.rowtime, INTERVAL '1' MINUTE), b.service_type"""


@pytest.mark.parametrize(
    "on, where, refused",
    [
        (" AND p.rowtime BETWEEN b.rowtime - INTERVAL '30' SECOND AND b.rowtime", "", False),
        ("", "\nWHERE p.rowtime BETWEEN b.rowtime - INTERVAL '30' SECOND AND b.rowtime", False),  # bound in WHERE
        ("", "", True),  # no bound
        (" AND p.rowtime >= b.rowtime - INTERVAL '30' SECOND", "", True),  # bookings kept for ever
    ],
)
def test_a_join_of_two_streams_must_bound_their_rowtimes(spark, tmp_path, capsys, on, where, refused):
    spec = yaml.safe_load((EXAMPLES / "pings_before_completion.yaml").read_text())
    spec["sql"] = JOIN.format(on=on, where=where)
    spec["sink"] = {"type": "log"}
    path = tmp_path / "join.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    assert main(["validate", str(path)]) == (2 if refused else 0)
    err = capsys.readouterr().err
    assert ("a join of two streams needs a time bound between their rowtimes" in err) == refused
    if refused:
        assert "SQL line 3, column" in err
