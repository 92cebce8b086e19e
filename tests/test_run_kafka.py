"""`dagger run` on a real Kafka: the seeds' surge query end to end into real sinks, with corrupt
messages, tombstones and messages without event time among the traffic. Every expectation is
computed independently from the produced events (plain Python and s2sphere)."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from loadtest import traffic
from protos import registry
from tests.kafka_jobs import consume_all, job_file, produce, run_cli
from tests.reference import group, s2id, window_end

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

DELAY_S = 60      # the example's watermark_delay
WINDOW_S = 60


def closed_windows_expected(events):
    """Completed bookings per (window end, city, S2 cell, vehicle), for the windows the watermark
    (the latest event time minus the delay) has passed: what append mode may have written."""
    watermark = max(e["event_timestamp"] for e in events) - dt.timedelta(seconds=DELAY_S)
    completed = [e for e in events if e["status"] == "COMPLETED"]
    counts = group(completed, key=lambda e: (window_end(e["event_timestamp"], WINDOW_S), e["city_id"],
                                             s2id(e["lat"], e["long"], 13), e["vehicle_type"]), agg=len)
    return {k: n for k, n in counts.items() if k[0] <= watermark}


def bad_records(dset):
    no_time = traffic.bookings(1, seed=99)[0]
    del no_time["event_timestamp"]
    valid = traffic.encode(traffic.bookings(1, seed=98), dset.message_class(traffic.BOOKING))[0]
    return [(b"corrupt-1", b"\xff\xff\xff\xff", "unparsable"),
            (b"corrupt-2", valid[:7], "unparsable"),
            (b"tombstone-1", None, "tombstone"),
            (b"tombstone-2", None, "tombstone"),
            (b"no-time", traffic.encode([no_time], dset.message_class(traffic.BOOKING))[0], "no_event_time")]


@pytest.fixture(scope="module")
def dset():
    return registry.load()


def test_surge_query_on_kafka_writes_exactly_the_closed_windows_to_influxdb_and_bad_messages_to_the_dlq(
        kafka_broker, influxdb, dset, tmp_path):
    topics = ["t1-GO_RIDE-booking-log", "t1-GO_CAR-booking-log"]
    for topic in topics:
        kafka_broker.create_topic(topic, partitions=2)
    events = traffic.bookings(3000, minutes=6, seed=11)
    produced = produce(kafka_broker, topics, events, dset.message_class(traffic.BOOKING), bad=bad_records(dset))
    influxdb.create_database("surge_t1")
    job = job_file(tmp_path, "completed_bookings_by_s2.yaml", kafka=kafka_broker,
                   sink={"type": "influx", "influx": {"url": influxdb.url, "db_name": "surge_t1",
                                                      "measurement_name": "completed_bookings"}},
                   name="surge-t1")
    (tmp_path / "job.yaml").write_text(job.read_text().replace("GO_RIDE-booking-log", topics[0])
                                       .replace("GO_CAR-booking-log", topics[1]))
    result = run_cli("run", str(tmp_path / "job.yaml"), "--available-now", "--checkpoint", str(tmp_path / "ck"),
                     "--log", str(tmp_path / "progress.jsonl"))
    assert result.returncode == 0, result.stderr[-3000:]

    # InfluxDB holds exactly the expected points, read back with InfluxQL as a dashboard would
    series = influxdb.query("SELECT * FROM completed_bookings", db="surge_t1")
    assert len(series) == 1
    columns = series[0]["columns"]
    assert columns == ["time", "num_of_bookings", "tag_city_id", "tag_s2id", "tag_vehicle_type"]
    got = {(dt.datetime.fromtimestamp(t / 1000, dt.timezone.utc), int(city), s2, vehicle): n
           for t, n, city, s2, vehicle in series[0]["values"]}
    want = closed_windows_expected(events)
    assert len(want) > 100
    assert got == want

    # the dead-letter topic holds each bad message once, untouched, with where it came from and why
    records = consume_all(kafka_broker, "surge-t1-dlq", expected=len(produced.bad))
    assert len(records) == len(produced.bad)
    seen = {}
    for record in records:
        headers = {k: v.decode() for k, v in record.headers}
        where = (headers["dagger.errors.topic"], int(headers["dagger.errors.partition"]),
                 int(headers["dagger.errors.offset"]))
        seen[where] = {"key": record.key, "value": record.value, "kind": headers["dagger.errors.kind"]}
        assert headers["dagger.errors.job"] == "surge-t1"
        assert headers["dagger.errors.reason"]
        assert int(headers["dagger.errors.timestamp"]) > 0
    assert seen == produced.bad

    # progress: one JSON line per batch; every message counted once; the summary names the dead letters
    lines = [json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()]
    assert sum(line["input_rows"] for line in lines) == len(events) + len(produced.bad)
    assert lines[-1]["rows_written_total"] == len(want)
    assert lines[-1]["dead_letters_total"] == len(produced.bad)
    assert lines[-1]["lag"] == 0
    assert "dead letters: 1 no_event_time, 2 tombstone, 2 unparsable" in result.stderr
