"""A standby's rehearsal (dagger_runtime/rehearsal.py) on a real Kafka broker and Spark: the job's
query runs once over the topics' recent records, in a session of its own, and leaves no trace:
no dead letter sent (counted only), no result written, the real checkpoint untouched, its own
folder removed once stopped. Counts compared with the produced records. A rehearsal on topics
with nothing recent reads nothing and says so."""

from __future__ import annotations

import io
import time

from dagger_runtime.config import load_job
from dagger_runtime.plan import plan_job
from dagger_runtime.rehearsal import rehearse
from loadtest import traffic
from protos import registry
from tests.kafka_jobs import consume_all, job_file, produce
from tests.test_run_kafka import bad_records, closed_windows_expected


def test_a_rehearsal_runs_the_query_on_recent_records_and_leaves_no_trace(kafka_broker, spark, tmp_path):
    dset = registry.load()
    topics = ["rehearse-ride", "rehearse-car"]
    for topic in topics:
        kafka_broker.create_topic(topic, partitions=2)
    events = traffic.bookings(600, minutes=3, seed=5)
    produced = produce(kafka_broker, topics, events, dset.message_class(traffic.BOOKING), bad=bad_records(dset))
    job = job_file(tmp_path, "completed_bookings_by_s2.yaml", kafka=kafka_broker, sink={"type": "log"}, name="rehearse")
    job.write_text(
        job.read_text()
        .replace("- GO_RIDE-booking-log", f"- {topics[0]}")
        .replace("- GO_CAR-booking-log", f"- {topics[1]}")
    )
    plan = plan_job(load_job(job))
    checkpoint = tmp_path / "daggers" / "rehearse" / "v1"
    checkpoint.parent.mkdir(parents=True)
    out = io.StringIO()

    rehearsal = rehearse(plan, spark, checkpoint, out=out)
    assert rehearsal is not None, out.getvalue()
    # its foreachBatch function is served behind a token, as the job's is (run.start)
    assert spark.sparkContext._gateway.callback_server_parameters.auth_token
    # it reads what the last 15 minutes hold (fewer records than a batch's bound), finds nothing
    # more, and says it is warm
    assert rehearsal.wait(240) is True, out.getvalue()
    assert rehearsal.query.exception() is None
    # every record produced in the last 15 minutes was read (the test produced them just now) ...
    read = sum(p["numInputRows"] for p in rehearsal.query.recentProgress)
    assert read == len(events) + len(produced.bad)
    # ... the bad ones counted, not sent
    counted = sum(n for w in rehearsal.writers for n in w.counts().values())
    assert counted == len(produced.bad)
    assert consume_all(kafka_broker, plan.job.dlq_topic, expected=1, timeout_s=5) == []
    # the windows the watermark closed were computed, and only counted
    assert rehearsal.sink.stats.rows == len(closed_windows_expected(events))
    assert not checkpoint.exists(), "the real checkpoint was touched"
    folder = rehearsal.folder
    assert folder.parent == checkpoint.parent
    deadline = time.monotonic() + 30
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not folder.exists()
    assert "rehearsing the query" in out.getvalue()


def test_a_rehearsal_on_quiet_topics_reads_nothing_and_says_so(kafka_broker, spark, tmp_path):
    for topic in ("rehearse-quiet-1", "rehearse-quiet-2"):
        kafka_broker.create_topic(topic, partitions=2)
    job = job_file(
        tmp_path, "completed_bookings_by_s2.yaml", kafka=kafka_broker, sink={"type": "log"}, name="rehearse-quiet"
    )
    job.write_text(
        job.read_text()
        .replace("- GO_RIDE-booking-log", "- rehearse-quiet-1")
        .replace("- GO_CAR-booking-log", "- rehearse-quiet-2")
    )
    checkpoint = tmp_path / "daggers" / "rehearse-quiet" / "v1"
    checkpoint.parent.mkdir(parents=True)
    rehearsal = rehearse(plan_job(load_job(job)), spark, checkpoint, out=io.StringIO())
    assert rehearsal is not None
    assert rehearsal.wait(240) is None  # nothing to rehearse on: neither warm nor failed
    assert rehearsal.sink.stats.rows == 0 and rehearsal.query.exception() is None
