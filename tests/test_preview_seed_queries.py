"""The seeds' three sample queries run through `preview` on generated protobuf traffic and match
an independent computation (plain Python + s2sphere over the generated events)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format

from dagger_runtime.config import load_job
from dagger_runtime.inputs import write_delimited
from dagger_runtime.plan import plan_job
from dagger_runtime.preview import run_preview
from loadtest import traffic
from protos import registry
from tests.reference import as_multiset, group, iso, s2id, window_end, window_start

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "daggers"


@pytest.fixture(scope="module")
def dset():
    return registry.load()


def write_events(tmp_path, name, message, events, dset, garbage=()):
    encoded = traffic.encode(events, dset.message_class(message))
    for position, junk in garbage:
        encoded.insert(position, junk)
    path = tmp_path / name
    write_delimited(encoded, path)
    return path


def test_completed_bookings_by_city_s2_and_vehicle_match_an_independent_count(spark, tmp_path, dset):
    events = traffic.bookings(1500, minutes=4)
    path = write_events(tmp_path, "bookings.bin", traffic.BOOKING, events, dset)
    plan = plan_job(load_job(EXAMPLES / "completed_bookings_by_s2.yaml"))
    rows = run_preview(plan, {"data_stream": str(path)}, spark=spark).rows

    completed = [e for e in events if e["status"] == "COMPLETED"]
    expected = group(
        completed,
        key=lambda e: (
            e["city_id"],
            s2id(e["lat"], e["long"], 13),
            e["vehicle_type"],
            iso(window_end(e["event_timestamp"], 60)),
        ),
        agg=len,
    )
    want = [
        {
            "tag_city_id": k[0],
            "tag_s2id": k[1],
            "tag_vehicle_type": k[2],
            "num_of_bookings": n,
            "window_timestamp": k[3],
        }
        for k, n in expected.items()
    ]
    assert len(rows) == len(want) > 20
    assert as_multiset(rows) == as_multiset(want)
    assert list(rows[0]) == ["tag_city_id", "tag_s2id", "tag_vehicle_type", "num_of_bookings", "window_timestamp"]


def test_distinct_drivers_by_s2_and_status_match_an_independent_count(spark, tmp_path, dset):
    events = traffic.driver_pings(2000, minutes=3)
    path = write_events(tmp_path, "pings.bin", traffic.DRIVER_PING, events, dset)
    plan = plan_job(load_job(EXAMPLES / "driver_supply_by_s2.yaml"))
    rows = run_preview(plan, {"supply_data": str(path)}, spark=spark).rows

    expected = group(
        events,
        key=lambda e: (
            s2id(e["latitude"], e["longitude"], 13),
            e["driver_status"],
            iso(window_end(e["event_timestamp"], 60)),
        ),
        agg=lambda es: len({e["driver_id"] for e in es}),
    )
    want = [
        {"drivers": n, "label_s2id": k[0], "label_driver_status": k[1], "window_timestamp": k[2]}
        for k, n in expected.items()
    ]
    assert as_multiset(rows) == as_multiset(want)
    assert any(r["drivers"] > 1 for r in rows), "the sample should exercise distinct counting"


def test_the_dagger_properties_supply_query_with_bigint_s2_ids_matches(spark, tmp_path, dset):
    events = traffic.driver_pings(1500, minutes=3, seed=7)
    path = write_events(tmp_path, "pings.bin", traffic.DRIVER_PING, events, dset)
    plan = plan_job(load_job(EXAMPLES / "supply_per_minute.properties"))
    rows = run_preview(plan, {"data_stream_0": str(path)}, spark=spark).rows

    available = [e for e in events if e["driver_status"] == "AVAILABLE"]
    expected = group(
        available,
        key=lambda e: (
            int(s2id(e["driver_location"]["latitude"], e["driver_location"]["longitude"], 13)),
            iso(window_start(e["event_timestamp"], 60)),
        ),
        agg=lambda es: (len({e["driver_id"] for e in es}), len(es)),
    )
    want = [
        {
            "window_start_time": k[1],
            "window_timestamp": iso(
                window_end(__import__("datetime").datetime.fromisoformat(k[1].replace("Z", "+00:00")), 60)
            ),
            "s2_id": k[0],
            "s2_id_level": 13,
            "available_drivers": v[0],
            "pings": v[1],
        }
        for k, v in expected.items()
    ]
    assert as_multiset(rows) == as_multiset(want)
    assert all(isinstance(r["s2_id"], int) for r in rows)

    # raystack/dagger configs name the message by its Java class (java_package + the message, as
    # java_multiple_files has it): the same job with that name reads the same rows
    text = (EXAMPLES / "supply_per_minute.properties").read_text()
    proto = "gojek.esb.driverlocation.DriverLocationLogMessage"
    java = "com.gojek.esb.driverlocation.DriverLocationLogMessage"
    assert proto in text and java not in text
    (tmp_path / "java.properties").write_text(text.replace(proto, java))
    java_plan = plan_job(load_job(tmp_path / "java.properties"))
    assert (java_plan.streams[0].proto_class, java_plan.streams[0].proto_as_written) == (proto, java)
    assert as_multiset(run_preview(java_plan, {"data_stream_0": str(path)}, spark=spark).rows) == as_multiset(rows)


def test_preview_cli_prints_only_json_rows_and_reports_bad_messages_on_stderr(tmp_path, dset):
    events = traffic.bookings(300, minutes=2, seed=11)
    garbage = [(5, b"\xff\xff\xff\xff"), (50, b"\x08")]  # not protobuf; truncated varint field
    path = write_events(tmp_path, "bookings.bin", traffic.BOOKING, events, dset, garbage)
    env = {k: v for k, v in os.environ.items()} | {"PYTHONPATH": str(ROOT)}
    kept = tmp_path / "rejected"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagger_runtime",
            "preview",
            str(EXAMPLES / "completed_bookings_by_s2.yaml"),
            "--input",
            f"data_stream={path}",
            "--rejected",
            str(kept),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Setting default log level" not in proc.stderr  # no Spark start-up banner
    assert "WARNING: Using incubator modules" not in proc.stderr  # nor the JVM's own line
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    completed = [e for e in events if e["status"] == "COMPLETED"]
    assert sum(r["num_of_bookings"] for r in rows) == len(completed)
    assert "message 6 (byte" in proc.stderr and "message 51 (byte" in proc.stderr
    assert "302 messages read, 300 decoded, 2 skipped" in proc.stderr

    aside = [json.loads(line) for line in (kept / "data_stream.rejected.jsonl").read_text().splitlines()]
    assert [(a["position"], base64.b64decode(a["value_base64"])) for a in aside] == [
        (6, garbage[0][1]),
        (51, garbage[1][1]),
    ]  # nothing lost: the exact bytes, kept aside


def test_an_interval_join_of_two_streams_matches_an_independent_join(spark, tmp_path, dset):
    bookings = traffic.bookings(800, minutes=3, seed=5)
    pings = traffic.driver_pings(3000, minutes=3, seed=6)
    b_path = write_events(tmp_path, "b.bin", traffic.BOOKING, bookings, dset)
    p_path = write_events(tmp_path, "p.bin", traffic.DRIVER_PING, pings, dset)
    plan = plan_job(load_job(EXAMPLES / "pings_before_completion.yaml"))
    rows = run_preview(plan, {"bookings": str(b_path), "pings": str(p_path)}, spark=spark).rows

    counts: dict[tuple, int] = {}
    for b in (b for b in bookings if b["status"] == "COMPLETED"):
        lo = b["event_timestamp"] - dt.timedelta(seconds=30)
        n = sum(
            1 for p in pings if p["driver_id"] == b["driver_id"] and lo <= p["event_timestamp"] <= b["event_timestamp"]
        )
        if n:
            key = (b["service_type"], iso(window_end(b["event_timestamp"], 60)))
            counts[key] = counts.get(key, 0) + n
    want = [
        {"tag_service_type": k[0], "pings_before_completion": n, "window_timestamp": k[1]} for k, n in counts.items()
    ]
    assert len(want) > 5
    assert as_multiset(rows) == as_multiset(want)


def test_proto3_json_lines_give_the_same_results_as_binary_and_bad_lines_are_skipped(spark, tmp_path, dset):
    events = traffic.bookings(400, minutes=2, seed=9)
    cls = dset.message_class(traffic.BOOKING)
    lines = []
    for raw in traffic.encode(events, cls):
        m = cls()
        m.ParseFromString(raw)
        lines.append(json_format.MessageToJson(m, indent=None))
    lines.insert(10, '{"status": "NOT_A_STATUS"')  # broken JSON
    lines.insert(20, '{"no_such_field": 1}')  # not this message
    path = tmp_path / "bookings.jsonl"
    path.write_text("\n".join(lines) + "\n")
    binary = write_events(tmp_path, "bookings.bin", traffic.BOOKING, events, dset)

    plan = plan_job(load_job(EXAMPLES / "completed_bookings_by_s2.yaml"))
    from_json = run_preview(plan, {"data_stream": str(path)}, spark=spark)
    from_binary = run_preview(plan, {"data_stream": str(binary)}, spark=spark)
    assert from_json.rows == from_binary.rows and from_json.rows
    assert [p for p, _, _ in from_json.rejected["data_stream"]] == [11, 21]


def test_a_file_of_another_message_type_stops_preview_with_a_hint(tmp_path, dset):
    """The wrong file (API logs for a bookings stream): not 20,000 lines of 'skipped' and exit 0,
    but a few of them, a count, and a refusal that names the message type the stream expects."""
    events = traffic.api_logs(400, minutes=2, seed=5)
    path = write_events(tmp_path, "api.bin", traffic.API_LOG, events, dset)
    env = {k: v for k, v in os.environ.items()} | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagger_runtime",
            "preview",
            str(EXAMPLES / "completed_bookings_by_s2.yaml"),
            "--input",
            f"data_stream={path}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stdout == ""
    # protobuf reads API logs as bookings (their field numbers and wire types fit), with fields a
    # booking does not have: the refusal says so and what they read as
    assert (
        f"the messages in {path} do not look like gojek.esb.booking.BookingLogMessage: 200 of the first "
        "200 carry fields it does not have, while they read as gojek.esb.apilog.ApiLogMessage" in proc.stderr
    )
    assert "python -m protos show gojek.esb.booking.BookingLogMessage" in proc.stderr


def test_a_file_that_does_not_decode_stops_preview_after_ten_lines_and_a_count(tmp_path, dset):
    path = tmp_path / "junk.bin"
    write_delimited([b"\xff\xff\xff\xff" for _ in range(300)], path)
    env = {k: v for k, v in os.environ.items()} | {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagger_runtime",
            "preview",
            str(EXAMPLES / "completed_bookings_by_s2.yaml"),
            "--input",
            f"data_stream={path}",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr[-2000:]
    assert proc.stderr.count(" skipped: ") == 10 and "... and 290 more skipped" in proc.stderr, proc.stderr[-3000:]
    assert f"0 of the 300 messages in {path} decoded as gojek.esb.booking.BookingLogMessage" in proc.stderr
