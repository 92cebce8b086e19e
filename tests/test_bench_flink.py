"""The bench's Flink side: the query as Flink's parser takes it, protoc's Java class names, and the
comparison of our rows with Flink's over the windows both closed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from bench.flink import compare, flink_sql, java_class, run_flink
from protos import registry

REPO = Path(__file__).resolve().parent.parent


def test_only_the_comma_before_from_is_taken_out():
    assert (
        flink_sql("SELECT a,\n  b AS c,\nFROM t WHERE x = ',from'") == "SELECT a,\n  b AS c\nFROM t WHERE x = ',from'"
    )
    assert flink_sql("SELECT a, b from t") == "SELECT a, b from t"
    assert flink_sql("SELECT a, fromage FROM t") == "SELECT a, fromage FROM t"
    assert flink_sql("SELECT a, -- x, FROM\n b FROM t") == "SELECT a, -- x, FROM\n b FROM t"


def test_the_java_class_is_the_files_java_package_and_the_message():
    dset = registry.load()
    assert java_class(dset, "gojek.esb.booking.BookingLogMessage") == "com.gojek.esb.booking.BookingLogMessage"


def _flink(tmp_path, rows):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


MINUTE = 60_000
T0 = 1_795_305_660_000  # 2026-11-22T00:01:00Z


def _ours(millis):
    # as pyspark collects a TIMESTAMP: a naive datetime in this process's local time
    return dt.datetime.fromtimestamp(millis / 1000)


def test_rows_equal_over_the_windows_we_closed_and_flinks_last_windows_counted_apart(tmp_path):
    flink = [
        {"city": 1, "n": 3, "w": T0},
        {"city": 2, "n": 1, "w": T0},
        {"city": 1, "n": 5, "w": T0 + MINUTE},
        {"city": 1, "n": 2, "w": T0 + 2 * MINUTE},  # still open on our side at the end
    ]
    ours = [
        {"city": 2, "n": 1, "w": _ours(T0)},
        {"city": 1, "n": 5, "w": _ours(T0 + MINUTE)},
        {"city": 1, "n": 3, "w": _ours(T0)},
    ]
    assert compare(ours, _flink(tmp_path, flink), "w") == {
        "equal": True,
        "ours": 3,
        "flink": 3,
        "flink_windows_still_open_here": 1,
    }


def test_a_count_off_by_one_or_a_missing_row_is_not_equal(tmp_path):
    flink = [{"city": 1, "n": 3, "w": T0}, {"city": 2, "n": 1, "w": T0}]
    path = _flink(tmp_path, flink)
    assert not compare([{"city": 1, "n": 4, "w": _ours(T0)}, {"city": 2, "n": 1, "w": _ours(T0)}], path, "w")["equal"]
    assert not compare([{"city": 1, "n": 3, "w": _ours(T0)}], path, "w")["equal"]
    # a row twice is not the row once
    twice = [{"city": 1, "n": 3, "w": _ours(T0)}] * 2 + [{"city": 2, "n": 1, "w": _ours(T0)}]
    assert not compare(twice, path, "w")["equal"]
    assert compare([], path, "w")["equal"] is False


@pytest.mark.kafka
@pytest.mark.jvm
def test_the_seed_query_on_flink_over_kafka_gives_our_rows(kafka_broker, spark, tmp_path):
    """The whole seed query, S2Id and all, on Flink itself (flink-protobuf, Google's Java S2) and
    on ours, over one Kafka topic: the same rows, and rows there are (a windowed count of a
    fifth of the bookings)."""
    from bench.kafka import NoopSink, dagger_once, on_topic
    from dagger_runtime.config import load_job
    from dagger_runtime.plan import plan_job
    from dagger_runtime.udfs import register_all
    from loadtest.feeder import feed

    plan = plan_job(load_job(REPO / "examples" / "daggers" / "completed_bookings_by_s2.yaml"), registry.load())
    kafka_broker.create_topic("bench-flink-test", partitions=2)
    kafka_broker.create_topic(f"{plan.job.name}-dlq", partitions=1, exist_ok=True)  # other tests run this job too
    feed(spark, kafka_broker.bootstrap_servers, "bench-flink-test", 30_000, pool=10_000, minutes_per_pool=5)
    kplan = on_topic(plan, kafka_broker.bootstrap_servers, "bench-flink-test")
    register_all(spark)
    dagger_once(spark, kplan, tmp_path / "ck", NoopSink)
    ours = NoopSink.kept()
    seconds = run_flink(kplan, kafka_broker.bootstrap_servers, "bench-flink-test", 1, tmp_path / "flink.jsonl")
    assert len(seconds) == 1
    verdict = compare(ours, tmp_path / "flink.jsonl", "window_timestamp")
    assert verdict["equal"], verdict
    assert verdict["ours"] > 100 and verdict["flink_windows_still_open_here"] >= 1
    assert sum(r["num_of_bookings"] for r in ours) > 3_000
