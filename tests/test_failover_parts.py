"""Failover's parts without a cluster: a query that writes only the windows a previous version
had not written (checked on Spark's own streaming engine against a count by hand), the
watermark read from a checkpoint written the way Spark writes it, where a replay starts, and a
spec moved onto the copy of its topics on a Kafka mirror and back."""

from __future__ import annotations

import datetime as dt
import json
import re
import types
from collections import Counter

import pytest
import yaml

from dagger_runtime.config import load_job
from dagger_runtime.errors import DaggerError, QueryError
from dagger_runtime.lifecycle.failover import REPLAY_MARGIN_MS, KafkaCluster, kafka_clusters, moved_spec, replay_from_ms
from dagger_runtime.lifecycle.state import Start, committed_watermark, first_start
from dagger_runtime.plan import plan_job
from dagger_runtime.sql.translate import translate
from tests.kafka_jobs import EXAMPLES

T0 = dt.datetime(2026, 11, 23, 10, 0, 0)  # the session runs in UTC
MS = 1000


# --- the emit filter -------------------------------------------------------------------------------
def test_the_window_end_is_added_as_a_column_of_the_outermost_windowed_select_and_nothing_else():
    sql = (
        "SELECT k, count(1) AS n, TUMBLE_END(rowtime, INTERVAL '1' MINUTE) AS w FROM s "
        "GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), k HAVING count(1) > 1"
    )
    plain = translate(sql, ["s"])
    marked = plain.with_window_end("__end")
    assert marked.spark_sql == plain.spark_sql.replace(
        " AS w FROM s", " AS w, WINDOW(rowtime, '1 minutes').end AS __end FROM s"
    )
    assert marked.output_columns == ("k", "n", "w", "__end") and "__end" not in plain.spark_sql
    nested = translate(
        "SELECT k, count(1) AS n FROM (SELECT a AS k, TUMBLE_END(rowtime, INTERVAL '1' MINUTE) AS "
        "rowtime FROM s GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), a) "
        "GROUP BY HOP(rowtime, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE), k",
        ["s"],
    )
    text = nested.with_window_end("__end").spark_sql
    assert text.startswith("SELECT k, COUNT(1) AS n, WINDOW(rowtime, '5 minutes', '1 minutes').end AS __end FROM (")
    assert text.count("__end") == 1


def test_a_query_without_an_outer_window_cannot_be_replayed_this_way():
    for sql in (
        "SELECT a FROM s",
        "SELECT a, count(1) AS n FROM s GROUP BY a",
        "SELECT * FROM (SELECT a, count(1) AS n FROM s GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), a)",
    ):
        with pytest.raises(QueryError, match="outermost SELECT has no TUMBLE or HOP window"):
            translate(sql, ["s"]).with_window_end("__end")
    with pytest.raises(QueryError, match="already has a column named __end"):
        translate(
            "SELECT a AS __END, count(1) AS n FROM s GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), a", ["s"]
        ).with_window_end("__end")


@pytest.mark.spark
def test_on_a_stream_only_windows_ending_after_the_boundary_are_written_and_they_are_whole(spark, tmp_path):
    """A replay: events from 10:00:00 to 10:04:59, a previous version having written the windows
    that ended by 10:02:00. The filtered query must write 10:02-10:03 and later with their full
    counts, and nothing for 10:00 and 10:01 (whose events it sees only in part here)."""
    from dagger_runtime.query import WINDOW_END, only_windows_after

    events = []
    for i in range(300):  # one event a second, keys a/b/c
        events.append({"k": "abc"[i % 3], "rowtime": (T0 + dt.timedelta(seconds=i)).isoformat()})
    replayed = [e for e in events if e["rowtime"] >= "2026-11-23T10:01:30"]  # the replay starts mid-window
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "part.json").write_text("\n".join(json.dumps(e) for e in replayed))
    boundary = int(dt.datetime(2026, 11, 23, 10, 2, tzinfo=dt.timezone.utc).timestamp() * MS)
    sql = (
        "SELECT k, count(1) AS n, TUMBLE_END(rowtime, INTERVAL '1' MINUTE) AS w FROM replay_in "
        "GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), k"
    )
    stream = (
        spark.readStream.schema("k string, rowtime timestamp").json(str(folder)).withWatermark("rowtime", "5 seconds")
    )
    stream.createOrReplaceTempView("replay_in")
    results = only_windows_after(
        spark.sql(translate(sql, ["replay_in"]).with_window_end(WINDOW_END).spark_sql), boundary
    )
    assert results.columns == ["k", "n", "w"]
    query = (
        results.writeStream.format("memory")
        .queryName("replayed_windows")
        .outputMode("append")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    got = {(r.k, r.w.strftime("%H:%M")): r.n for r in spark.table("replayed_windows").collect()}
    # by hand: whole windows ending 10:03, 10:04 (10:05 stays open: the watermark is 10:04:54)
    expected = Counter()
    for e in events:
        end = dt.datetime.fromisoformat(e["rowtime"]).replace(second=0) + dt.timedelta(minutes=1)
        if dt.time(10, 2) < end.time() <= dt.time(10, 4):
            expected[(e["k"], end.strftime("%H:%M"))] += 1
    assert got == dict(expected) and set(w for _, w in got) == {"10:03", "10:04"}
    assert all(n == 20 for n in got.values())  # 60 events a window over 3 keys: whole


# --- the watermark of the last committed batch -------------------------------------------------------
def _checkpoint(root, batches: dict[int, int], committed: list[int]) -> None:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, watermark in batches.items():
        meta = {"batchWatermarkMs": watermark, "batchTimestampMs": 1795440000000, "conf": {}}
        (root / "offsets" / str(batch)).write_text("\n".join(["v1", json.dumps(meta), '{"rides":{"0":1}}']))
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_the_watermark_is_that_of_the_last_batch_whose_results_were_stored(tmp_path):
    _checkpoint(tmp_path / "ck", {7: 1_795_000_000_000, 8: 1_795_000_030_000, 9: 1_795_000_060_000}, committed=[7, 8])
    assert committed_watermark(str(tmp_path / "ck")) == 1_795_000_030_000
    _checkpoint(tmp_path / "none", {0: 5}, committed=[])
    with pytest.raises(DaggerError, match="no committed batch"):
        committed_watermark(str(tmp_path / "none"))
    broken = tmp_path / "broken"
    _checkpoint(broken, {3: 1}, committed=[3])
    (broken / "offsets" / "3").write_text('v1\n{"batchTimestampMs": 1}\n{"rides":{"0":1}}')
    with pytest.raises(DaggerError, match="no batch watermark"):
        committed_watermark(str(broken))


def test_a_replay_starts_early_enough_for_every_window_it_must_rebuild():
    surge = plan_job(load_job(str(EXAMPLES / "completed_bookings_by_s2.yaml")))
    window_ms = surge.query.windows[0].size.millis
    watermark = 1_795_000_000_000
    start = replay_from_ms(surge, watermark)
    # by hand: the oldest unwritten window began just after watermark - size; its events are no
    # older than that, and the margin covers the clocks
    assert start == watermark - window_ms - surge.job.watermark_delay_ms - REPLAY_MARGIN_MS
    assert window_ms == 60_000


# --- moving a spec onto a mirror and back -------------------------------------------------------------
CLUSTERS = {
    "primary": KafkaCluster(name="primary", bootstrap_servers="127.0.0.1:23192,127.0.0.1:23292"),
    "mirror": KafkaCluster(
        name="mirror", bootstrap_servers="127.0.0.1:24192", mirror_of={"cluster": "primary", "topic_prefix": "primary."}
    ),
    "other": KafkaCluster(name="other", bootstrap_servers="127.0.0.1:25192"),
}


def _spec(**stream) -> str:
    spec = yaml.safe_load((EXAMPLES / "completed_bookings_by_s2.yaml").read_text())
    spec["streams"][0]["kafka"]["bootstrap_servers"] = "127.0.0.1:23292"  # one broker of the primary
    spec["streams"][0].update(stream)
    return yaml.safe_dump(spec, sort_keys=False)


def test_a_spec_moves_onto_the_copies_of_its_topics_and_back(tmp_path):
    moved = yaml.safe_load(moved_spec(_spec(), "mirror", CLUSTERS))
    stream = moved["streams"][0]
    assert stream["topics"] == ["primary.GO_RIDE-booking-log", "primary.GO_CAR-booking-log"]
    assert stream["kafka"]["bootstrap_servers"] == "127.0.0.1:24192" and stream["kafka"]["cluster"] == "mirror"
    assert stream["kafka"]["group_id"] == "dagger-completed-bookings-by-s2"  # the rest as it was
    path = tmp_path / "completed-bookings-by-s2.yaml"
    path.write_text(yaml.safe_dump(moved))
    assert load_job(str(path)).streams[0].topics == ("primary.GO_RIDE-booking-log", "primary.GO_CAR-booking-log")
    back = yaml.safe_load(moved_spec(yaml.safe_dump(moved), "primary", CLUSTERS))["streams"][0]
    assert back["topics"] == ["GO_RIDE-booking-log", "GO_CAR-booking-log"]
    assert back["kafka"]["bootstrap_servers"] == "127.0.0.1:23192,127.0.0.1:23292"


def test_a_topic_pattern_matches_exactly_the_copies_and_turns_back():
    text = _spec(topics=None, topic_pattern="GO_.*-booking-log")
    pattern = yaml.safe_load(moved_spec(text, "mirror", CLUSTERS))["streams"][0]["topic_pattern"]
    assert re.fullmatch(pattern, "primary.GO_RIDE-booking-log")
    assert not re.fullmatch(pattern, "GO_RIDE-booking-log") and not re.fullmatch(pattern, "primaryXGO_A-booking-log")
    moved = moved_spec(text, "mirror", CLUSTERS)
    assert yaml.safe_load(moved_spec(moved, "primary", CLUSTERS))["streams"][0]["topic_pattern"] == "GO_.*-booking-log"


def test_a_move_without_a_copy_or_to_nowhere_is_refused():
    with pytest.raises(DaggerError, match="other holds no copy of primary's topics"):
        moved_spec(_spec(), "other", CLUSTERS)
    with pytest.raises(DaggerError, match="no Kafka cluster named 'elsewhere'; known: mirror, other, primary"):
        moved_spec(_spec(), "elsewhere", CLUSTERS)
    with pytest.raises(DaggerError, match="every stream already reads primary"):
        moved_spec(_spec(), "primary", CLUSTERS)
    spec = yaml.safe_load(_spec())
    spec["streams"][0]["kafka"]["bootstrap_servers"] = "10.1.2.3:9092"
    with pytest.raises(DaggerError, match="none of the Kafka clusters defined"):
        moved_spec(yaml.safe_dump(spec), "mirror", CLUSTERS)
    for odd in (
        "streams: [1]",
        "streams: [{kafka: x}]",
        "streams: [{kafka: {bootstrap_servers: 127.0.0.1:23192}, topics: a}]",
        "streams: [{kafka: {bootstrap_servers: 127.0.0.1:23192}, topics: [{x: 1}]}]",
        "streams: [{kafka: {bootstrap_servers: 127.0.0.1:23192}, topic_pattern: 5}]",
    ):
        with pytest.raises(DaggerError, match=r"streams\[0\] is not a stream of the native format"):
            moved_spec(odd, "mirror", CLUSTERS)
    stray = yaml.safe_load(moved_spec(_spec(), "mirror", CLUSTERS))
    stray["streams"][0]["topics"] = ["local-topic"]  # a mirror topic that is no copy
    with pytest.raises(DaggerError, match="not a copy of primary"):
        moved_spec(yaml.safe_dump(stray), "primary", CLUSTERS)


def test_kafka_cluster_definitions_are_checked(tmp_path):
    folder = tmp_path / "kafka"
    folder.mkdir()
    with pytest.raises(DaggerError, match="no Kafka clusters defined"):
        kafka_clusters(str(tmp_path))
    (folder / "mirror.json").write_text(
        json.dumps(
            {
                "name": "mirror",
                "bootstrap_servers": "127.0.0.1:1",
                "mirror_of": {"cluster": "primary", "topic_prefix": "primary."},
            }
        )
    )
    assert kafka_clusters(str(tmp_path))["mirror"].mirror_of.topic_prefix == "primary."
    (folder / "x.json").write_text(json.dumps({"name": "y", "bootstrap_servers": "127.0.0.1:1"}))
    with pytest.raises(DaggerError, match="file name must be the cluster's name"):
        kafka_clusters(str(tmp_path))
    (folder / "x.json").write_text(json.dumps({"name": "x", "bootstrap_servers": "127.0.0.1:1; rm -rf /"}))
    with pytest.raises(DaggerError, match="x.json: not a Kafka cluster definition"):
        kafka_clusters(str(tmp_path))


def test_a_checkpoint_keeps_how_it_was_begun(tmp_path):
    """A dagger moved to another cluster before its first offsets were committed must start where
    its first version was told to, not from auto_offset_reset (seen in a Spark failover drill:
    the windows before the move were lost); a replay's window filter must stay too."""
    from dagger_runtime.run import STARTING_FILE, remembered_start

    checkpoint = str(tmp_path / "v2")
    starting = {"bookings": {"startingTimestamp": "1795486365347", "startingOffsetsByTimestampStrategy": "latest"}}
    assert remembered_start(checkpoint, starting, 1795486410347) == (starting, 1795486410347)
    assert (tmp_path / "v2" / STARTING_FILE).is_file()
    # the redeploy on the same checkpoint passes neither: both come back
    assert remembered_start(checkpoint, None, None) == (starting, 1795486410347)
    # a relaunch with its own arguments does not rewrite what the checkpoint began with
    assert remembered_start(checkpoint, {"bookings": {"startingOffsets": "latest"}}, None)[0] != starting
    assert remembered_start(checkpoint, None, None) == (starting, 1795486410347)
    # a checkpoint begun with nothing asked, and a remote one, give nothing back
    assert remembered_start(str(tmp_path / "fresh"), None, None) == (None, None)
    assert remembered_start("gs://bucket/cp", None, None) == (None, None)


def test_a_failover_before_any_window_reads_from_where_the_old_version_began(tmp_path):
    """Seen in a Kafka failover drill: the primary died before the dagger's first commit. The new
    version must read all the old one read (same Kafka times on the mirror), not refuse."""

    from dagger_runtime.run import remembered_start

    deployed = 1795486080000
    stream = types.SimpleNamespace(kafka=types.SimpleNamespace(auto_offset_reset="latest"))
    by_time = str(tmp_path / "a")
    remembered_start(
        by_time, {"t": {"startingTimestamp": "1795486000000", "startingOffsetsByTimestampStrategy": "latest"}}, None
    )
    assert first_start(by_time, [stream], deployed) == Start("timestamp", 1795486000000)
    earliest = str(tmp_path / "b")
    remembered_start(earliest, {"t": {"startingOffsets": "earliest"}}, None)
    assert first_start(earliest, [stream], deployed) == Start("earliest")
    # offsets of the old cluster mean nothing on the mirror, and `latest` was "from its deploy"
    by_offsets = str(tmp_path / "c")
    remembered_start(by_offsets, {"t": {"startingOffsets": '{"x": {"0": 42}}'}}, None)
    assert first_start(by_offsets, [stream], deployed) == Start("timestamp", deployed)
    # nothing kept: the job's own auto_offset_reset
    assert first_start(str(tmp_path / "none"), [stream], deployed) == Start("timestamp", deployed)
    stream.kafka.auto_offset_reset = "earliest"
    assert first_start(str(tmp_path / "none"), [stream], deployed) == Start("earliest")
