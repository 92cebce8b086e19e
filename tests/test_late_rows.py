"""Late messages on a real Kafka and Spark: a message whose window the watermark has closed goes
to the dead-letter topic with reason `late` and is counted, instead of being dropped without a
trace; one on the other side of the boundary is counted in its window. Expected windows are
computed here from the produced events (plain Python and s2sphere); Spark's own count of rows it
dropped by the watermark must stay 0 (so LateRows follows Spark's rule: nothing it drops is missed,
and nothing it would keep is taken away, or the windows would differ)."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
import yaml

from loadtest import traffic
from protos import registry
from tests.kafka_jobs import consume_all, job_file, produce
from tests.reference import group, s2id, window_end

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]

TOPIC = "late-rows-ride"
T0 = traffic.START


def at(events, minute: float, count: int, seed: int, *, last_ms: int | None = None) -> list[dict]:
    """`count` completed bookings spread over a minute from T0 + minute (the last at last_ms
    into it, when given)."""
    out = traffic.bookings(count, minutes=1, seed=seed)
    for i, e in enumerate(out):
        offset_ms = (60_000 * i) // count if last_ms is None or i < count - 1 else last_ms
        e["event_timestamp"] = T0 + dt.timedelta(minutes=minute, milliseconds=offset_ms)
        e["status"] = "COMPLETED"
        e["order_number"] = f"{seed}-{i}"
    events += out
    return out


def expected(events, closed_by: dt.datetime) -> dict:
    counts = group(
        events,
        key=lambda e: (
            window_end(e["event_timestamp"], 60),
            e["city_id"],
            s2id(e["lat"], e["long"], 13),
            e["vehicle_type"],
        ),
        agg=len,
    )
    return {k: n for k, n in counts.items() if k[0] <= closed_by}


def test_a_message_behind_the_watermark_goes_to_the_dead_letters_as_late(kafka_broker, spark, tmp_path):
    from dagger_runtime.config import load_job
    from dagger_runtime.plan import plan_job
    from dagger_runtime.run import RunOptions, run

    dset = registry.load()
    message = dset.message_class(traffic.BOOKING)
    kafka_broker.create_topic(TOPIC, partitions=2)
    out_topic = "late-rows-out"
    job = job_file(
        tmp_path,
        "completed_bookings_by_s2.yaml",
        kafka=kafka_broker,
        name="late-rows",
        sink={
            "type": "kafka",
            "kafka": {"brokers": kafka_broker.bootstrap_servers, "topic": out_topic, "data_type": "JSON"},
        },
    )
    spec = yaml.safe_load(job.read_text())
    spec["streams"][0]["topics"] = [TOPIC]
    job.write_text(yaml.safe_dump(spec, sort_keys=False))
    plan = plan_job(load_job(job))
    checkpoint, progress = tmp_path / "ck", tmp_path / "progress.jsonl"

    def run_once(log: io.StringIO) -> None:
        options = RunOptions(checkpoint=str(checkpoint), available_now=True, log_path=str(progress))
        assert run(plan, options, spark=spark, out=log) == 0, log.getvalue()

    # five minutes, the last booking at T0 + 5:00.000: the watermark (60 s) is then T0 + 4:00
    kept: list[dict] = []
    for minute in range(5):
        at(kept, minute, 40, seed=minute)
    at(kept, 5, 1, seed=5, last_ms=0)
    produce(kafka_broker, [TOPIC], kept, message)
    first = io.StringIO()
    run_once(first)
    assert "late" not in first.getvalue().split("dead letters:")[-1]

    # then: bookings of the closed minute 3 (its window ends at T0 + 4:00, at the watermark: late),
    # the last at 3:59.999; bookings of minute 4 from 4:00.000 (its window is open: counted); and
    # one at 8:00 that moves the watermark to 7:00, closing minutes 4 to 6
    late: list[dict] = []
    at(late, 3, 12, seed=30, last_ms=59_999)
    on_time: list[dict] = []
    at(on_time, 4, 12, seed=40)
    assert min(e["event_timestamp"] for e in on_time) == T0 + dt.timedelta(minutes=4)
    at(on_time, 8, 1, seed=80, last_ms=0)
    produce(kafka_broker, [TOPIC], late + on_time, message)
    second = io.StringIO()
    run_once(second)
    assert f"dead letters: {len(late)} late" in second.getvalue(), second.getvalue()

    # the late ones, each whole on the dead-letter topic, saying why
    letters = consume_all(kafka_broker, plan.job.dlq_topic, expected=len(late))
    assert sorted(r.key.decode() for r in letters) == sorted(e["order_number"] for e in late)
    for record in letters:
        headers = {k: v.decode() for k, v in record.headers}
        assert headers["dagger.errors.kind"] == "late"
        assert headers["dagger.errors.reason"].startswith("late: event time 2026-11-22T00:03:")
        assert (
            "window ending 2026-11-22T00:04:00Z, closed by the watermark 2026-11-22T00:04:00Z"
            in headers["dagger.errors.reason"]
        )
    # the windows: every closed one, from what was kept and what came on time
    want = expected(kept + on_time, closed_by=T0 + dt.timedelta(minutes=7))
    records = consume_all(kafka_broker, out_topic, expected=len(want))
    got = {}
    for record in records:
        value = json.loads(record.value)
        window = dt.datetime.fromisoformat(value["window_timestamp"].replace("Z", "+00:00"))
        got[(window, value["tag_city_id"], value["tag_s2id"], value["tag_vehicle_type"])] = value["num_of_bookings"]
    assert got == want
    # and Spark dropped nothing itself: LateRows took exactly what its rule drops
    batches = [json.loads(line) for line in progress.read_text().splitlines()]
    assert sum(b["late_rows_dropped"] for b in batches) == 0
