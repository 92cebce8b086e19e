"""Flink group windows become Spark windows with the same bounds and argument order."""

import pytest

from dagger_runtime.errors import QueryError
from dagger_runtime.sql import translate


def spark(sql: str) -> str:
    return translate(sql, ["data_stream"]).spark_sql


def test_tumble_becomes_a_spark_window_and_tumble_end_its_end():
    out = spark(
        "SELECT TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS w, count(1) AS n FROM data_stream "
        "GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)"
    )
    assert "WINDOW(rowtime, '1 minutes').end AS w" in out
    assert "GROUP BY WINDOW(rowtime, '1 minutes')" in out


def test_hop_takes_slide_then_size_in_flink_and_size_then_slide_in_spark():
    out = spark(
        "SELECT HOP_START(rowtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE) AS s FROM data_stream "
        "GROUP BY HOP(rowtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)"
    )
    assert "WINDOW(rowtime, '5 minutes', '1 minutes').start AS s" in out


@pytest.mark.parametrize(
    "interval, spark_duration",
    [
        ("INTERVAL '30' SECOND", "30 seconds"),
        ("INTERVAL '2' MINUTE", "2 minutes"),
        ("INTERVAL '1' HOUR", "1 hours"),
        ("INTERVAL '1' DAY", "1 days"),
        ("INTERVAL '90' SECOND", "90 seconds"),
    ],
)
def test_every_unit_is_translated(interval, spark_duration):
    assert f"'{spark_duration}'" in spark(f"SELECT count(1) AS n FROM data_stream GROUP BY TUMBLE(rowtime, {interval})")


def test_window_bounds_must_match_the_group_window():
    with pytest.raises(QueryError) as info:
        spark(
            "SELECT TUMBLE_END(rowtime, INTERVAL '30' SECOND) AS w FROM data_stream "
            "GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)"
        )
    assert "does not match the GROUP BY window" in str(info.value)


def test_a_window_bound_without_a_group_window_is_refused():
    with pytest.raises(QueryError) as info:
        spark("SELECT TUMBLE_END(rowtime, INTERVAL '30' SECOND) AS w FROM data_stream")
    assert "needs GROUP BY TUMBLE(...)" in str(info.value)


def test_a_window_on_a_column_that_is_not_the_time_attribute_is_refused():
    with pytest.raises(QueryError) as info:
        spark("SELECT count(1) AS n FROM data_stream GROUP BY TUMBLE(event_timestamp, INTERVAL '1' MINUTE)")
    assert "needs the time attribute `rowtime`" in str(info.value)


@pytest.mark.parametrize("interval", ["INTERVAL '0' SECOND", "INTERVAL '1' FORTNIGHT", "60"])
def test_bad_intervals_are_refused_with_the_reason(interval):
    with pytest.raises(QueryError) as info:
        spark(f"SELECT count(1) AS n FROM data_stream GROUP BY TUMBLE(rowtime, {interval})")
    assert "interval" in str(info.value)


def test_the_window_is_reported_for_the_job_plan():
    t = translate(
        "SELECT count(1) AS n FROM data_stream GROUP BY HOP(rowtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)",
        ["data_stream"],
    )
    (w,) = t.windows
    assert (w.kind, w.size.millis, w.intervals[0].millis) == ("HOP", 300_000, 60_000)


def test_an_interval_join_keeps_flink_interval_arithmetic():
    out = translate(
        "SELECT a.order_number FROM a JOIN b ON a.driver_id = b.driver_id AND "
        "b.rowtime BETWEEN a.rowtime - INTERVAL '30' SECOND AND a.rowtime",
        ["a", "b"],
    ).spark_sql
    assert "b.rowtime BETWEEN a.rowtime - INTERVAL '30' SECOND AND a.rowtime" in out


def test_a_wrong_number_of_udf_arguments_is_refused_with_the_signature():
    with pytest.raises(QueryError) as info:
        spark("SELECT S2Id(lat, long) AS s FROM data_stream")
    assert "S2Id takes 3 arguments: S2Id(lat, lng, level); got 2" in str(info.value)


def test_a_hop_whose_slide_is_longer_than_its_size_is_refused_with_the_swap():
    """Spark's own refusal is `[DATATYPE_MISMATCH...] window(rowtime, 60000000, ...)` with no line."""
    sql = "SELECT COUNT(1) AS n FROM data_stream\nGROUP BY HOP(rowtime, INTERVAL '5' MINUTE, INTERVAL '1' MINUTE)"
    with pytest.raises(QueryError) as e:
        translate(sql, ["data_stream"])
    assert (e.value.line, e.value.col) == (2, 10)
    assert "a slide of 5 minutes is longer than the size of 1 minute" in str(e.value)
    assert "write HOP(rowtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)" in str(e.value)
    # equal slide and size is a tumbling window, allowed
    translate(
        "SELECT COUNT(1) AS n FROM data_stream GROUP BY HOP(rowtime, INTERVAL '1' MINUTE, INTERVAL '60' SECOND)",
        ["data_stream"],
    )
