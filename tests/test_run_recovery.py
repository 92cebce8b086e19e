"""Nothing lost, nothing doubled: a dagger restarted from its checkpoint, a sink that goes down for
a while, and a driver killed with SIGKILL in the middle of a batch all end with the sink holding
exactly the aggregates computed independently from the produced messages."""

from __future__ import annotations

import os
import random
import signal
import urllib.request

import pytest
import yaml

from lab.process import free_ports
from loadtest import traffic
from protos import registry
from tests.kafka_jobs import job_file, produce, progress_lines, run_cli, start_cli, wait_for
from tests.test_run_kafka import closed_windows_expected, utc_ms

pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.e2e]


def setup_job(tmp_path, kafka_broker, influxdb, name, topics, per_batch=None):
    db = name.replace("-", "_")
    influxdb.create_database(db)
    for topic in topics:
        kafka_broker.create_topic(topic, partitions=2)
    path = job_file(
        tmp_path,
        "completed_bookings_by_s2.yaml",
        kafka=kafka_broker,
        name=name,
        sink={
            "type": "influx",
            "influx": {"url": influxdb.url, "db_name": db, "measurement_name": "completed_bookings"},
        },
    )
    job = yaml.safe_load(path.read_text())
    job["streams"][0]["topics"] = topics
    if per_batch:
        job["streams"][0]["kafka"]["max_messages_per_batch"] = per_batch
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path, db


def influx_windows(influxdb, db):
    series = influxdb.query("SELECT * FROM completed_bookings", db=db)
    if not series:
        return {}
    assert series[0]["columns"] == ["time", "num_of_bookings", "tag_city_id", "tag_s2id", "tag_vehicle_type"]
    return {(utc_ms(t), int(city), s2, vehicle): n for t, n, city, s2, vehicle in series[0]["values"]}


def halves(seed):
    events = traffic.bookings(4000, minutes=8, seed=seed)
    return events[:2000], events[2000:]


def test_a_job_stopped_and_restarted_from_its_checkpoint_loses_and_doubles_nothing(kafka_broker, influxdb, tmp_path):
    topics = ["restart-a", "restart-b"]
    job, db = setup_job(tmp_path, kafka_broker, influxdb, "restart", topics)
    message = registry.load().message_class(traffic.BOOKING)
    first, second = halves(21)
    produce(kafka_broker, topics, first, message)
    log, progress = tmp_path / "run1.log", tmp_path / "progress.jsonl"
    proc = start_cli("run", str(job), "--checkpoint", str(tmp_path / "ck"), "--log", str(progress), log=log)
    try:
        wait_for(
            "windows written",
            lambda: any(p["rows_written_total"] for p in progress_lines(progress)),
            proc=proc,
            log=log,
        )
        produce(kafka_broker, topics, second[:1000], message)  # arrives while the job runs
        os.kill(proc.pid, signal.SIGTERM)  # finish the batch, stop
        assert proc.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "stopping after the current batch" in log.read_text()
    produce(kafka_broker, topics, second[1000:], message)  # arrives while the job is down
    result = run_cli("run", str(job), "--available-now", "--checkpoint", str(tmp_path / "ck"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert influx_windows(influxdb, db) == closed_windows_expected(first + second)


def test_a_sink_down_for_a_while_is_retried_and_ends_with_exactly_the_expected_windows(
    kafka_broker, influxdb, tmp_path
):
    topics = ["outage-a", "outage-b"]
    job, db = setup_job(tmp_path, kafka_broker, influxdb, "outage", topics)
    message = registry.load().message_class(traffic.BOOKING)
    first, second = halves(22)
    produce(kafka_broker, topics, first, message)
    log, progress = tmp_path / "run.log", tmp_path / "progress.jsonl"
    metrics_port = _free_port()
    proc = start_cli(
        "run",
        str(job),
        "--checkpoint",
        str(tmp_path / "ck"),
        "--log",
        str(progress),
        "--metrics-port",
        str(metrics_port),
        log=log,
    )
    try:
        wait_for(
            "windows written",
            lambda: any(p["rows_written_total"] for p in progress_lines(progress)),
            proc=proc,
            log=log,
        )
        influxdb.stop()
        produce(kafka_broker, topics, second, message)
        wait_for("a failed write being retried", lambda: "retry" in log.read_text(), proc=proc, log=log)
        errors = wait_for(
            "sink errors in the metrics", lambda: _metric(metrics_port, "dagger_sink_errors_total"), proc=proc, log=log
        )
        assert errors >= 1
        influxdb.start()
        want = closed_windows_expected(first + second)
        wait_for("every closed window written", lambda: influx_windows(influxdb, db) == want, proc=proc, log=log)
        # the batch is counted just after its write returns
        wait_for(
            "the written rows counted",
            lambda: _metric(metrics_port, "dagger_result_rows_written_total") == len(want),
            proc=proc,
            log=log,
        )
        assert _metric(metrics_port, "dagger_dead_letters_total") is None  # no bad message, no series
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(120) == 0, log.read_text()[-3000:]
    finally:
        if influxdb.pid is None:
            influxdb.start()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert influx_windows(influxdb, db) == closed_windows_expected(first + second)


def test_a_driver_killed_with_sigkill_mid_batch_resumes_from_its_checkpoint_exactly(kafka_broker, influxdb, tmp_path):
    topics = ["kill-a", "kill-b"]
    job, db = setup_job(tmp_path, kafka_broker, influxdb, "killed", topics, per_batch=400)
    message = registry.load().message_class(traffic.BOOKING)
    first, second = halves(23)
    produce(kafka_broker, topics, first + second, message)
    log, progress = tmp_path / "run1.log", tmp_path / "progress.jsonl"
    proc = start_cli("run", str(job), "--checkpoint", str(tmp_path / "ck"), "--log", str(progress), log=log)
    try:
        # small batches run back to back: a moment after a batch ends, the next one is running
        wait_for("three batches", lambda: len(progress_lines(progress)) >= 3, proc=proc, log=log)
        import time

        time.sleep(random.Random(23).uniform(0.2, 1.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    done = progress_lines(progress)
    assert done[-1]["input_rows"] and sum(p["input_rows"] for p in done) < len(first + second)  # killed midway
    result = run_cli("run", str(job), "--available-now", "--checkpoint", str(tmp_path / "ck"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert influx_windows(influxdb, db) == closed_windows_expected(first + second)


def _free_port() -> int:
    return free_ports(1)[0]


def _metric(port: int, name: str):
    """The sum of a metric's samples on the job's /metrics, or None if it has none."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    values = [s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]
    return sum(values) if values else None
