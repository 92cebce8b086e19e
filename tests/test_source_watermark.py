"""The watermark comes from the source, as in Flink: every decoded message of a stream moves it,
whatever the query's WHERE keeps.

On a real broker: a dagger counting COMPLETED bookings per minute, whose stream ends with
messages an hour later that its WHERE drops. Those messages carry the watermark past every
window, so every window is written (Spark alone would let only the rows that pass the WHERE
move the watermark, and the last windows would stay open until the next COMPLETED booking).
Expected windows come from plain Python over the produced events (tests/reference.py).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import time
from pathlib import Path

import pytest
import yaml

from dagger_runtime.config import load_job
from dagger_runtime.plan import plan_job
from dagger_runtime.run import RunOptions, run, start
from loadtest import traffic
from protos import registry
from tests.kafka_jobs import consume_all, produce, wait_for
from tests.reference import group, window_end

WINDOW_S = 60
DELAY_S = 30
SQL = """
SELECT service_type AS tag_service,
       COUNT(1) AS completed,
       TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp
FROM data_stream
WHERE status = 'COMPLETED'   -- rare events: the later messages are all something else
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), service_type
"""


def early_and_late(seed: int):
    """Six minutes of bookings, then bookings an hour later that the WHERE drops."""
    early = traffic.bookings(600, minutes=6, seed=seed)
    late = traffic.bookings(40, minutes=1, seed=seed + 1)
    for event in late:
        event["status"] = "CUSTOMER_CANCELLED"
        event["event_timestamp"] += dt.timedelta(hours=1)
    return early, late


def expected(events) -> dict:
    completed = [e for e in events if e["status"] == "COMPLETED"]
    counts = group(completed, key=lambda e: (window_end(e["event_timestamp"], WINDOW_S), e["service_type"]), agg=len)
    assert len(counts) >= 20  # enough windows that a held one shows
    return counts


def job(tmp_path, kafka_broker, name: str, topic: str, out_topic: str):
    spec = {
        "name": name,
        "team": "growth",
        "streams": [
            {
                "table": "data_stream",
                "proto": traffic.BOOKING,
                "topics": [topic],
                "event_time": "event_timestamp",
                "kafka": {
                    "cluster": "test",
                    "bootstrap_servers": kafka_broker.bootstrap_servers,
                    "group_id": f"dagger-{name}",
                    "auto_offset_reset": "earliest",
                },
            }
        ],
        "sql": SQL,
        "watermark_delay": f"{DELAY_S}s",
        "parallelism": 2,
        "sink": {
            "type": "kafka",
            "kafka": {"brokers": kafka_broker.bootstrap_servers, "topic": out_topic, "data_type": "JSON"},
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return plan_job(load_job(path))


def windows_written(records, count: str = "completed") -> dict:
    """(window end, service) -> the count column, from the Kafka sink's JSON records; each once."""
    got = {}
    for record in records:
        value = json.loads(record.value)
        when = dt.datetime.fromisoformat(value["window_timestamp"].replace("Z", "+00:00"))
        key = (when, value["tag_service"])
        assert key not in got, f"window {key} written twice"
        got[key] = value[count]
    return got


def topics(kafka_broker, name: str) -> tuple[str, str]:
    topic, out = f"{name}-in", f"{name}-out"
    kafka_broker.create_topic(topic, partitions=2)
    kafka_broker.create_topic(out, partitions=1)
    return topic, out


def test_available_now_writes_every_window_when_the_last_messages_fail_the_where(kafka_broker, spark, tmp_path):
    name = "wm-rare-backfill"
    topic, out = topics(kafka_broker, name)
    early, late = early_and_late(seed=31)
    message = registry.load().message_class(traffic.BOOKING)
    produce(kafka_broker, [topic], early + late, message)
    plan = job(tmp_path, kafka_broker, name, topic, out)
    log = io.StringIO()
    assert run(plan, RunOptions(checkpoint=str(tmp_path / "ck"), available_now=True), spark=spark, out=log) == 0
    want = expected(early)
    got = windows_written(consume_all(kafka_broker, out, expected=len(want)))
    assert got == want, log.getvalue()[-2000:]


@pytest.mark.e2e
def test_a_live_dagger_closes_its_windows_on_messages_its_where_drops(kafka_broker, spark, tmp_path):
    """Live: the early messages first; the windows after the last COMPLETED booking stay open
    (nothing has passed them yet); then the late messages, which all fail the WHERE, close them."""
    name = "wm-rare-live"
    topic, out = topics(kafka_broker, name)
    early, late = early_and_late(seed=41)
    message = registry.load().message_class(traffic.BOOKING)
    plan = job(tmp_path, kafka_broker, name, topic, out)
    running = start(plan, RunOptions(checkpoint=str(tmp_path / "ck")), spark, out=io.StringIO())
    try:
        produce(kafka_broker, [topic], early, message)
        wait_for("the early messages to be read", lambda: running.counters.summary() and _read(running) >= len(early))
        want = expected(early)
        # the watermark the early messages give: windows ending after it are still open
        watermark = max(e["event_timestamp"] for e in early) - dt.timedelta(seconds=DELAY_S)
        open_windows = {k for k in want if k[0] > watermark}
        assert open_windows
        produce(kafka_broker, [topic], late, message)
        wait_for("the late messages to be read", lambda: _read(running) >= len(early) + len(late))
        _wait_written(running, len(want))
        got = windows_written(consume_all(kafka_broker, out, expected=len(want), timeout_s=60))
        assert got == want
    finally:
        running.query.stop()
        for listener in running.listeners():
            spark.streams.removeListener(listener)
        running.sink.close()
        for writer in running.writers:
            writer.close()


def _wait_written(running, rows: int) -> None:
    """Until the sink has stored `rows` rows: the batch that closes the last windows runs when
    Spark next triggers, which on a loaded machine may be minutes after the records were read.
    A query that failed fails the wait at once, with its error."""

    def written():
        error = running.query.exception()
        assert error is None, f"the query failed: {error}"
        return running.sink.stats.rows >= rows

    wait_for(f"{rows} rows in the sink", written)


def _read(running) -> int:
    """Input rows of the batches committed so far."""
    return sum(
        p["numInputRows"]
        for p in (json.loads(q.json) if not isinstance(q, dict) else q for q in running.query.recentProgress)
    )


# --- idle streams (Flink's table.exec.source.idle-timeout) ------------------------------------

UNION_SQL = """
SELECT service_type AS tag_service, COUNT(1) AS bookings,
       TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp
FROM (SELECT service_type, rowtime FROM busy UNION ALL SELECT service_type, rowtime FROM quiet)
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), service_type
"""


def union_job(tmp_path, kafka_broker, name: str, busy: str, quiet: str, out_topic: str, idle_timeout: str | None):
    def stream(table, topic):
        return {
            "table": table,
            "proto": traffic.BOOKING,
            "topics": [topic],
            "event_time": "event_timestamp",
            "kafka": {
                "cluster": "test",
                "bootstrap_servers": kafka_broker.bootstrap_servers,
                "group_id": f"dagger-{name}",
                "auto_offset_reset": "earliest",
            },
        }

    spec = {
        "name": name,
        "team": "growth",
        "streams": [stream("busy", busy), stream("quiet", quiet)],
        "sql": UNION_SQL,
        "watermark_delay": f"{DELAY_S}s",
        "parallelism": 2,
        "sink": {
            "type": "kafka",
            "kafka": {"brokers": kafka_broker.bootstrap_servers, "topic": out_topic, "data_type": "JSON"},
        },
    }
    if idle_timeout:
        spec["idle_timeout"] = idle_timeout
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return plan_job(load_job(path))


def union_windows(events, watermark) -> dict:
    counts = group(events, key=lambda e: (window_end(e["event_timestamp"], WINDOW_S), e["service_type"]), agg=len)
    return {k: n for k, n in counts.items() if k[0] <= watermark}


@pytest.mark.e2e
def test_an_idle_stream_stops_holding_the_watermark_after_the_idle_timeout(kafka_broker, spark, tmp_path):
    """Two streams unioned: `quiet` speaks in the first minute only, `busy` for six. Without an idle
    timeout (Spark's and Flink's default) the job's watermark is quiet's, and only the first
    minute's windows are written; with idle_timeout the quiet stream lets go once it has read
    nothing for that long, and the windows follow busy's watermark."""
    message = registry.load().message_class(traffic.BOOKING)
    busy_events = traffic.bookings(720, minutes=6, seed=51)
    quiet_events = traffic.bookings(40, minutes=1, seed=52)
    half = min(e["event_timestamp"] for e in busy_events) + dt.timedelta(minutes=3)
    first, second = (
        [e for e in busy_events if e["event_timestamp"] < half],
        [e for e in busy_events if e["event_timestamp"] >= half],
    )
    busy, quiet, out_default, out_idle = ("idle-busy", "idle-quiet", "idle-default-out", "idle-timeout-out")
    for topic in (busy, quiet):
        kafka_broker.create_topic(topic, partitions=2)
    for topic in (out_default, out_idle):
        kafka_broker.create_topic(topic, partitions=1)
    produce(kafka_broker, [quiet], quiet_events, message)
    produce(kafka_broker, [busy], first, message)

    plan = union_job(tmp_path, kafka_broker, "idle-timeout", busy, quiet, out_idle, idle_timeout="2s")
    log = io.StringIO()
    running = start(plan, RunOptions(checkpoint=str(tmp_path / "ck-idle")), spark, out=log)
    try:
        wait_for("the first messages to be read", lambda: _read(running) >= len(quiet_events) + len(first))
        time.sleep(3)  # quiet reads nothing for longer than its idle timeout
        produce(kafka_broker, [busy], second, message)
        watermark = max(e["event_timestamp"] for e in busy_events) - dt.timedelta(seconds=DELAY_S)
        want = union_windows(busy_events + quiet_events, watermark)
        _wait_written(running, len(want))
        records = consume_all(kafka_broker, out_idle, expected=len(want), timeout_s=60)
        got = windows_written(records, count="bookings")
        assert got == want, log.getvalue()[-2000:]
        assert log.getvalue().count("quiet idle for 2 s") == 1, "said once per idle spell, not per heartbeat"
        # the file source deletes each heartbeat once a committed batch has read it
        written = running.heartbeats.written
        beats = Path(running.heartbeats.directories["quiet"].removeprefix("file:"))
        assert written >= 1
        wait_for("the heartbeats read to be deleted", lambda: len(list(beats.glob("heartbeat-*.json"))) < written)
    finally:
        running.query.stop()
        for listener in running.listeners():
            spark.streams.removeListener(listener)
        running.sink.close()
        for writer in running.writers:
            writer.close()

    # the same topics without the timeout: quiet's watermark holds every later window open
    default = union_job(tmp_path, kafka_broker, "idle-default", busy, quiet, out_default, idle_timeout=None)
    assert (
        run(
            default,
            RunOptions(checkpoint=str(tmp_path / "ck-default"), available_now=True),
            spark=spark,
            out=io.StringIO(),
        )
        == 0
    )
    held = max(e["event_timestamp"] for e in quiet_events) - dt.timedelta(seconds=DELAY_S)
    want = union_windows(busy_events + quiet_events, held)
    records = consume_all(kafka_broker, out_default, expected=len(want) + 1, timeout_s=10)
    assert windows_written(records, count="bookings") == want
