"""The InfluxDB sink's line protocol built in the JVM against influxdb-client's own Points (the
Python path): the same points, as InfluxDB itself reads them back, for values that need escaping,
NULLs, empties and every number type."""

from __future__ import annotations

import datetime as dt
import decimal
import http.client
from urllib.parse import urlencode

import pytest
from pyspark.sql import types as T

from dagger_runtime.sinks import line_protocol
from dagger_runtime.sinks.influx import points, tag_name

pytestmark = [pytest.mark.spark]

UTC = dt.timezone.utc
W = dt.datetime(2026, 11, 22, 0, 1, tzinfo=UTC)

SCHEMA = T.StructType(
    [
        T.StructField("tag_city", T.StringType()),
        T.StructField("label_kind", T.StringType()),
        T.StructField("tag_n", T.IntegerType()),
        T.StructField("count", T.LongType()),
        T.StructField("ratio", T.DoubleType()),
        T.StructField("small", T.FloatType()),
        T.StructField("ok", T.BooleanType()),
        T.StructField("note", T.StringType()),
        T.StructField("amount", T.DecimalType(10, 2)),
        T.StructField("seen", T.TimestampType()),
        T.StructField("window_timestamp", T.TimestampType()),
    ]
)

ROWS = [
    ("jakarta", "DONE", 1, 7, 0.5, 0.1, True, "a b", decimal.Decimal("1.50"), W, W),
    # escapes in tags (comma, equals, blank, newline, tab, a trailing backslash) and in strings
    ("a,b=c d", "x\ny\tz\\", -3, -(2**63), 1e-05, 3.0, False, 'say "hi" \\o/', None, None, W + dt.timedelta(minutes=1)),
    # empty and NULL tags are left out; NaN and infinities are no field
    ("", None, None, 0, float("nan"), float("inf"), None, "", decimal.Decimal("-0.01"), W, W + dt.timedelta(minutes=2)),
    ("ünïcode ✓", "k", 2**31 - 1, 2**63 - 1, 1.0e20, -1.5e-7, True, "émoji 🚀", decimal.Decimal("99999999.99"), W, W),
    # no window, or no field left: no point
    ("x", "y", 1, 1, 1.0, 1.0, True, "n", None, W, None),
    ("x", "y", 1, None, float("nan"), None, None, None, None, None, W),
    # a whole number as a double, and the float nearest 0.1 (as Python widens it)
    ("whole", "w", 5, 1, 42.0, 16777217.0, False, "w", decimal.Decimal("0.00"), W, W),
]


def _python_lines(rows):
    names = [f.name for f in SCHEMA.fields]
    widened = []
    for row in rows:
        row = list(row)
        small = names.index("small")
        if row[small] is not None:  # what a FLOAT column collects as: the float32's double
            import struct

            row[small] = struct.unpack("f", struct.pack("f", row[small]))[0]
        widened.append(tuple(row))
    return [p.to_line_protocol() for p in points("m,eas ure", names, widened)]


def _write(influxdb, db, lines):
    influxdb.create_database(db)
    connection = http.client.HTTPConnection("127.0.0.1", influxdb.port, timeout=30)
    connection.request("POST", "/write?" + urlencode({"db": db, "precision": "ms"}), body="\n".join(lines).encode())
    response = connection.getresponse()
    assert response.status == 204, response.read()


def test_only_types_whose_text_agrees_take_the_jvm_path():
    assert line_protocol.applies(SCHEMA, tag_name)
    for kind in (T.BooleanType(), T.DoubleType(), T.TimestampType(), T.BinaryType()):
        schema = T.StructType([T.StructField("tag_x", kind), T.StructField("n", T.LongType())])
        assert not line_protocol.applies(schema, tag_name), kind
    nested = T.StructType([T.StructField("n", T.ArrayType(T.LongType()))])
    assert not line_protocol.applies(nested, tag_name)


def test_the_lines_without_floating_point_are_byte_for_byte_influxdb_clients(spark):
    # no double, float or decimal values: those are written as doubles, in Java's digits
    rows = [r[:4] + (None, None) + r[6:8] + (None,) + r[9:] for r in ROWS]
    frame = spark.createDataFrame(rows, SCHEMA)
    assert line_protocol.lines(frame, "m,eas ure", tag_name) == [line for line in _python_lines(rows) if line]


@pytest.mark.parametrize("size", [0, 1, 2, 3, 7])
def test_the_request_bodies_hold_each_line_once_and_at_most_size_lines(spark, size):
    rows = [r[:4] + (None, None) + r[6:8] + (None,) + r[9:] for r in ROWS] * 3
    frame = spark.createDataFrame(rows, SCHEMA).repartition(2)
    expected = sorted(line for line in _python_lines(rows) if line)
    bodies = line_protocol.bodies(frame, "m,eas ure", tag_name, size)
    assert sorted(line for body, _ in bodies for line in body.split("\n")) == expected
    assert [body.count("\n") + 1 for body, _ in bodies] == [count for _, count in bodies]
    assert sum(count for _, count in bodies) == len(expected) == 15
    if size:
        assert max(count for _, count in bodies) <= size
        assert len(bodies) >= -(-len(expected) // size)
    else:  # a body a partition
        assert len(bodies) <= 2


@pytest.mark.servers
def test_influxdb_reads_back_the_same_points_from_both_paths(spark, influxdb):
    frame = spark.createDataFrame(ROWS, SCHEMA)
    jvm = line_protocol.lines(frame, "m,eas ure", tag_name)
    python = [line for line in _python_lines(ROWS) if line]
    assert len(jvm) == len(python) == 5
    _write(influxdb, "lp_python", python)
    _write(influxdb, "lp_jvm", jvm)
    query = 'SELECT * FROM "m,eas ure" GROUP BY *'
    want = influxdb.query(query, db="lp_python")
    assert influxdb.query(query, db="lp_jvm") == want
    # and the reference holds what the rows say (a few values, checked by hand)
    by_tags = {tuple(sorted(s["tags"].items())): s for s in want}
    # InfluxDB 1.x unescapes only comma, equals and blank: a newline or tab stays as the two
    # characters influxdb-client writes, and the trailing backslash, given its blank, reads as a blank
    escaped = by_tags[(("kind", "x\\ny\\tz "), ("tag_city", "a,b=c d"), ("tag_n", "-3"))]
    assert dict(zip(escaped["columns"], escaped["values"][0]))["note"] == 'say "hi" \\o/'
    assert len(want) == 5 and all(len(series["values"]) == 1 for series in want)


def test_the_sink_sends_many_bodies_at_once_and_influxdb_holds_every_point(spark, influxdb):
    from types import SimpleNamespace

    from dagger_runtime.config.model import SinkSpec
    from dagger_runtime.sinks.influx import POSTS_AT_ONCE, InfluxSink

    minutes = 40
    rows = [(f"city{i % 7}", i, W + dt.timedelta(minutes=i)) for i in range(minutes)]
    frame = spark.createDataFrame(rows, "tag_city STRING, n BIGINT, window_timestamp TIMESTAMP").repartition(3)
    influxdb.create_database("lp_many")
    spec = SinkSpec.model_validate(
        {
            "type": "influx",
            "influx": {"url": influxdb.url, "db_name": "lp_many", "measurement_name": "m", "batch_size": 4},
        }
    )
    plan = SimpleNamespace(job=SimpleNamespace(name="t", sink=spec))
    columns = [{"name": f.name, "type": f.dataType.simpleString()} for f in frame.schema.fields]
    sink = InfluxSink(plan, columns, retry_for_s=5)
    sent = []
    post = sink._post
    sink._post = lambda body: (sent.append(body.count("\n") + 1), post(body))[1]
    try:
        assert sink.write(frame, 0) == minutes
    finally:
        sink.close()
    # three partitions of at most 4 points a body: more bodies than are sent at once
    assert sum(sent) == minutes and max(sent) <= 4 and len(sent) > POSTS_AT_ONCE
    (series,) = influxdb.query('SELECT sum("n"), count("n") FROM "m"', db="lp_many")
    assert series["values"][0][1:] == [sum(range(minutes)), minutes]
