"""`dagger run` on a real Kafka: the seeds' surge query end to end into each real sink, with
corrupt messages, tombstones and messages without event time among the traffic. Every
expectation is computed independently from the produced events (plain Python and s2sphere)."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from loadtest import traffic
from protos import registry
from protos.versions import read_index
from tests.kafka_jobs import consume_all, job_file, produce, run_cli
from tests.reference import group, s2id, window_end

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

DELAY_S = 60  # the example's watermark_delay
WINDOW_S = 60
TOPICS = ["surge-GO_RIDE-booking-log", "surge-GO_CAR-booking-log"]


def closed_windows_expected(events):
    """Completed bookings per (window end, city, S2 cell, vehicle), for the windows the watermark
    (the latest event time minus the delay) has passed: what append mode may have written."""
    watermark = max(e["event_timestamp"] for e in events) - dt.timedelta(seconds=DELAY_S)
    completed = [e for e in events if e["status"] == "COMPLETED"]
    counts = group(
        completed,
        key=lambda e: (
            window_end(e["event_timestamp"], WINDOW_S),
            e["city_id"],
            s2id(e["lat"], e["long"], 13),
            e["vehicle_type"],
        ),
        agg=len,
    )
    return {k: n for k, n in counts.items() if k[0] <= watermark}


def bad_records(dset):
    no_time = traffic.bookings(1, seed=99)[0]
    del no_time["event_timestamp"]
    valid = traffic.encode(traffic.bookings(1, seed=98), dset.message_class(traffic.BOOKING))[0]
    return [
        (b"corrupt-1", b"\xff\xff\xff\xff", "unparsable"),
        (b"corrupt-2", valid[:7], "unparsable"),
        (b"tombstone-1", None, "tombstone"),
        (b"tombstone-2", None, "tombstone"),
        (b"no-time", traffic.encode([no_time], dset.message_class(traffic.BOOKING))[0], "no_event_time"),
    ]


@pytest.fixture(scope="module")
def surge(kafka_broker):
    """Six minutes of bookings on two topics of two partitions, bad records among them."""
    dset = registry.load()
    for topic in TOPICS:
        kafka_broker.create_topic(topic, partitions=2)
    events = traffic.bookings(3000, minutes=6, seed=11)
    return produce(kafka_broker, TOPICS, events, dset.message_class(traffic.BOOKING), bad=bad_records(dset))


def surge_job(tmp_path, kafka_broker, name, sink):
    path = job_file(tmp_path, "completed_bookings_by_s2.yaml", kafka=kafka_broker, sink=sink, name=name)
    path.write_text(
        path.read_text()
        .replace("- GO_RIDE-booking-log", f"- {TOPICS[0]}")
        .replace("- GO_CAR-booking-log", f"- {TOPICS[1]}")
    )
    return path


def run_surge(tmp_path, kafka_broker, surge, name, sink, env=None):
    job = surge_job(tmp_path, kafka_broker, name, sink)
    result = run_cli(
        "run",
        str(job),
        "--available-now",
        "--checkpoint",
        str(tmp_path / "ck"),
        "--log",
        str(tmp_path / "progress.jsonl"),
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert_dead_letters(kafka_broker, f"{name}-dlq", name, surge.bad)
    lines = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    # one JSON line per batch; every message counted once; the summary names the dead letters
    assert sum(line["input_rows"] for line in lines) == len(surge.events) + len(surge.bad)
    assert lines[-1]["rows_written_total"] == len(closed_windows_expected(surge.events))
    assert lines[-1]["dead_letters_total"] == len(surge.bad)
    assert lines[-1]["lag"] == 0
    assert "dead letters: 1 no_event_time, 2 tombstone, 2 unparsable" in result.stderr
    return result


def assert_dead_letters(kafka_broker, topic, job, bad):
    """The dead-letter topic holds each bad message once, untouched, with where it came from and why."""
    records = consume_all(kafka_broker, topic, expected=len(bad))
    assert len(records) == len(bad)
    seen = {}
    for record in records:
        headers = {k: v.decode() for k, v in record.headers}
        where = (
            headers["dagger.errors.topic"],
            int(headers["dagger.errors.partition"]),
            int(headers["dagger.errors.offset"]),
        )
        seen[where] = {"key": record.key, "value": record.value, "kind": headers["dagger.errors.kind"]}
        assert headers["dagger.errors.job"] == job
        assert headers["dagger.errors.reason"]
        assert int(headers["dagger.errors.timestamp"]) > 0
    assert seen == bad


def utc_ms(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def test_influxdb_1x_holds_exactly_the_closed_windows_read_back_with_influxql(kafka_broker, influxdb, surge, tmp_path):
    influxdb.create_database("surge")
    run_surge(
        tmp_path,
        kafka_broker,
        surge,
        "surge-influx",
        {
            "type": "influx",
            "influx": {"url": influxdb.url, "db_name": "surge", "measurement_name": "completed_bookings"},
        },
    )
    series = influxdb.query("SELECT * FROM completed_bookings", db="surge")
    assert len(series) == 1
    assert series[0]["columns"] == ["time", "num_of_bookings", "tag_city_id", "tag_s2id", "tag_vehicle_type"]
    got = {(utc_ms(t), int(city), s2, vehicle): n for t, n, city, s2, vehicle in series[0]["values"]}
    want = closed_windows_expected(surge.events)
    assert len(want) > 100
    assert got == want


def test_a_v2_write_api_server_holds_exactly_the_closed_windows(kafka_broker, victoria_metrics, surge, tmp_path):
    run_surge(
        tmp_path,
        kafka_broker,
        surge,
        "surge-v2",
        {
            "type": "influx",
            "influx": {
                "url": victoria_metrics.url,
                "api": "v2",
                "db_name": "surge",
                "username": victoria_metrics.user,
                "password": "${V2_PASSWORD}",
                "measurement_name": "completed_bookings",
            },
        },
        env={"V2_PASSWORD": victoria_metrics.password},
    )
    got = {}
    for series in victoria_metrics.export('{__name__="completed_bookings_num_of_bookings"}'):
        labels = series["metric"]
        for t, n in zip(series["timestamps"], series["values"]):
            key = (utc_ms(t), int(labels["tag_city_id"]), labels["tag_s2id"], labels["tag_vehicle_type"])
            assert key not in got
            got[key] = int(n)
    assert got == closed_windows_expected(surge.events)


def test_postgres_holds_exactly_the_closed_windows_in_a_table_it_created(kafka_broker, postgres, surge, tmp_path):
    postgres.create_database("surge")
    sink = {
        "type": "postgres",
        "postgres": {
            "url": f"postgresql://127.0.0.1:{postgres.port}/surge",
            "table": "public.completed_bookings",
            "user": "dagger_admin",
            "password": "${PG_PASSWORD}",
        },
    }
    result = run_surge(tmp_path, kafka_broker, surge, "surge-pg", sink, env={"PG_PASSWORD": postgres.password})
    assert postgres.password not in result.stderr + result.stdout
    with postgres.connect("surge") as conn:
        rows = conn.execute(
            "SELECT window_timestamp, tag_city_id, tag_s2id, tag_vehicle_type, num_of_bookings FROM completed_bookings"
        ).fetchall()
        key = conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'completed_bookings'::regclass "
            "AND i.indisprimary"
        ).fetchall()
    got = {(w, city, s2, vehicle): n for w, city, s2, vehicle, n in rows}
    assert len(got) == len(rows)
    assert got == closed_windows_expected(surge.events)
    assert {k[0] for k in key} == {"window_timestamp", "tag_city_id", "tag_s2id", "tag_vehicle_type"}


@pytest.mark.parametrize("data_type", ["PROTO", "JSON"])
def test_kafka_sink_writes_exactly_the_closed_windows_keyed_by_window_and_tags(
    kafka_broker, surge, tmp_path, data_type, spark
):

    from dagger_runtime.config import load_job
    from dagger_runtime.plan import plan_job
    from dagger_runtime.run import RunOptions, run

    name = f"surge-kafka-{data_type.lower()}"
    out_topic = f"{name}-out"
    if data_type == "PROTO":
        kafka_broker.create_topic(out_topic, partitions=1)  # JSON's the run creates: it says so below
    sink = {
        "type": "kafka",
        "kafka": {"brokers": kafka_broker.bootstrap_servers, "topic": out_topic, "data_type": data_type},
    }
    if data_type == "PROTO":
        sink["kafka"].update(proto_message=OUT_MESSAGE, proto_key=OUT_KEY)
    # the output messages came in a later descriptor set: the job pins it
    version = read_index().latest
    job = surge_job(tmp_path, kafka_broker, name, sink)
    job.write_text(job.read_text().replace("version: 4957b56c57da625e", f"version: {version}"))
    # in the test's Spark session; the other sinks run through the CLI's own process
    log = io.StringIO()
    options = RunOptions(checkpoint=str(tmp_path / "ck"), available_now=True)
    assert run(plan_job(load_job(job)), options, spark=spark, out=log) == 0
    assert "dead letters: 1 no_event_time, 2 tombstone, 2 unparsable" in log.getvalue()
    assert (f"run: created the sink topic {out_topic}" in log.getvalue()) == (data_type == "JSON"), log.getvalue()
    want = closed_windows_expected(surge.events)
    records = consume_all(kafka_broker, out_topic, expected=len(want))
    assert len(records) == len(want)
    dset = registry.load(None, version)
    got, keys = {}, set()
    for record in records:
        if data_type == "PROTO":
            value = dset.message_class(OUT_MESSAGE).FromString(record.value)
            key = dset.message_class(OUT_KEY).FromString(record.key)
            window = value.window_timestamp.ToDatetime(dt.timezone.utc)
            row = (window, value.tag_city_id, value.tag_s2id, value.tag_vehicle_type)
            assert (
                key.window_timestamp.ToDatetime(dt.timezone.utc),
                key.tag_city_id,
                key.tag_s2id,
                key.tag_vehicle_type,
            ) == row
            got[row] = value.num_of_bookings
        else:
            value, key = json.loads(record.value), json.loads(record.key)
            window = dt.datetime.fromisoformat(value["window_timestamp"].replace("Z", "+00:00"))
            row = (window, value["tag_city_id"], value["tag_s2id"], value["tag_vehicle_type"])
            assert key == {k: v for k, v in value.items() if k != "num_of_bookings"}
            got[row] = value["num_of_bookings"]
        keys.add(record.key)
    assert len(keys) == len(records)  # one key per window and cell: a compacted topic keeps each
    assert got == want


OUT_MESSAGE = "gojek.esb.aggregate.CompletedBookingsMessage"
OUT_KEY = "gojek.esb.aggregate.CompletedBookingsKey"
