"""The streaming rows of `make bench`: a real Kafka topic pre-loaded with bookings before any
timing starts, then Spark reading it (raw, decoded, the surge dagger into a no-op sink), the same
dagger on Flink (bench/flink.py), and the dagger into each real sink (InfluxDB, Kafka,
PostgreSQL, started here on loopback). Each with Trigger.AvailableNow (all of it, then stop), wall
time from start to stop."""

from __future__ import annotations

import contextlib
import io
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.flink import compare, run_flink
from bench.state import state_rows
from dagger_runtime.config.model import SinkSpec
from dagger_runtime.sinks.base import Sink
from dagger_runtime.source import read_kafka
from dagger_runtime.streams import decode
from loadtest.feeder import feed

TOPIC = "bench-booking-log"


def _stream_time(spark, dataframe, checkpoint: Path) -> float:
    shutil.rmtree(checkpoint, ignore_errors=True)
    started = time.perf_counter()
    query = (
        dataframe.writeStream.format("noop")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return time.perf_counter() - started


def _best(label: str, messages: int, repeat: int, fn, warm_up: bool = False) -> dict:
    if warm_up:
        print(f"[bench] {label}: warm-up {fn():.1f}s", file=sys.stderr, flush=True)
    best = float("inf")
    for i in range(repeat):
        seconds = fn()
        best = min(best, seconds)
        print(
            f"[bench] {label}: run {i + 1}/{repeat} {seconds:.1f}s ({messages / seconds:,.0f}/s)",
            file=sys.stderr,
            flush=True,
        )
    return {"path": label, "items": messages, "best_seconds": round(best, 3), "per_second": round(messages / best)}


class NoopSink(Sink):
    """Stores nothing: the dagger's own speed. Keeps each batch's result rows in the driver's JVM,
    as Flink's bench keeps its rows in a list of its JVM (jvm/flink/.../FlinkBench.java), and
    hands them to Python once, after the timing: `NoopSink.kept()`."""

    kind = "noop"
    reads_batch_once = True
    _batches: list = []  # (the JVM's list of rows, their schema), one a batch with rows

    def write(self, dataframe, batch_id):
        rows = dataframe._jdf.collectAsList()
        count = rows.size()
        if count:
            NoopSink._batches.append((rows, dataframe.schema))
        self.stats.rows += count
        return count

    @classmethod
    def reset(cls) -> None:
        cls._batches = []

    @classmethod
    def kept(cls) -> list[dict]:
        """The rows of the last run, as dicts (one transfer a batch)."""
        from pyspark.sql import DataFrame, SparkSession

        spark = SparkSession.getActiveSession()
        kept = []
        for rows, schema in cls._batches:
            jdf = spark._jsparkSession.createDataFrame(rows, spark._jsparkSession.parseDataType(schema.json()))
            kept.extend(row.asDict() for row in DataFrame(jdf, spark).collect())
        return kept


def on_topic(plan, bootstrap: str, topic: str):
    """The plan with its one stream reading `topic` on `bootstrap` from the earliest offset."""
    spec = plan.job.streams[0]
    spec = spec.model_copy(
        update={
            "topics": (topic,),
            "kafka": spec.kafka.model_copy(update={"bootstrap_servers": bootstrap, "auto_offset_reset": "earliest"}),
        }
    )
    return replace(plan, job=plan.job.model_copy(update={"streams": (spec,)}))


def dagger_once(spark, plan, checkpoint: Path, sink_factory=None, log_path: str | None = None) -> float:
    """Seconds for `run --available-now` of the plan, from a fresh checkpoint (its batches' records
    appended to `log_path`, if given)."""
    from dagger_runtime.run import RunOptions, run

    shutil.rmtree(checkpoint, ignore_errors=True)
    NoopSink.reset()
    started = time.perf_counter()
    log = io.StringIO()
    code = run(
        plan,
        RunOptions(checkpoint=str(checkpoint), available_now=True, log_path=log_path),
        spark=spark,
        out=log,
        sink_factory=sink_factory,
    )
    seconds = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"the bench's dagger exited {code}:\n{log.getvalue()[-3000:]}")
    return seconds


def _messages_in(bootstrap: str, topic: str) -> int:
    """How many messages the topic holds (its partitions' end offsets: nothing is deleted here)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return sum(consumer.end_offsets(partitions).values())
    finally:
        consumer.close()


def kafka_rows(spark, plan, messages: int, repeat: int = 2) -> tuple[list[dict], dict]:

    from lab.influxdb import InfluxDB
    from lab.kafka import KafkaBroker
    from lab.postgres import Postgres

    work = Path(tempfile.mkdtemp(prefix="dagger-bench-"))
    results = []
    postgres = Postgres()
    postgres.start()
    with KafkaBroker(work / "kafka") as kafka, InfluxDB(work / "influxdb") as influx, contextlib.closing(postgres):
        kafka.create_topic(TOPIC, partitions=2)
        kafka.create_topic(f"{plan.job.name}-dlq", partitions=1)
        fed = feed(spark, kafka.bootstrap_servers, TOPIC, messages)
        results.append(
            {
                "path": "feeder: bookings into Kafka (JVM)",
                "items": messages,
                "best_seconds": round(fed.seconds, 3),
                "per_second": round(fed.per_second),
            }
        )
        kplan = on_topic(plan, kafka.bootstrap_servers, TOPIC)
        job = kplan.job
        stream_spec = job.streams[0]

        raw = read_kafka(spark, stream_spec)
        results.append(
            _best(
                "Kafka: Spark's raw read (ceiling)",
                messages,
                repeat,
                lambda: _stream_time(spark, raw.selectExpr("length(value) AS n"), work / "ck-raw"),
            )
        )
        table, _, _ = decode(spark, raw, plan.streams[0], plan.descriptor_set)
        results.append(
            _best(
                "Kafka: read + JVM decode",
                messages,
                repeat,
                lambda: _stream_time(spark, table.selectExpr("city_id"), work / "ck-decode"),
            )
        )

        results.append(
            _best(
                "Kafka: surge dagger end to end, no-op sink",
                messages,
                repeat,
                lambda: dagger_once(spark, kplan, work / "ck-dagger", NoopSink),
                warm_up=True,  # as Flink's (bench/flink.py)
            )
        )
        ours = NoopSink.kept()
        flink_seconds = run_flink(kplan, kafka.bootstrap_servers, TOPIC, repeat, work / "flink-rows.jsonl")
        results.append(
            {
                "path": "Kafka: surge dagger on Flink SQL 1.20 (flink-protobuf), no-op sink",
                "items": messages,
                "best_seconds": round(min(flink_seconds), 3),
                "per_second": round(messages / min(flink_seconds)),
            }
        )
        rows_vs_flink = compare(ours, work / "flink-rows.jsonl", "window_timestamp")
        print(f"[bench] our rows against Flink's: {rows_vs_flink}", file=sys.stderr)
        # the same dagger into each real sink; InfluxDB and PostgreSQL (which upsert) are checked
        # below to hold every result row
        influx.create_database("bench")
        postgres.create_database("bench")
        measurement = job.sink.influx.measurement_name
        sinks = {
            "InfluxDB": {"influx": {"url": influx.url, "db_name": "bench", "measurement_name": measurement}},
            "Kafka": {"kafka": {"brokers": kafka.bootstrap_servers, "topic": "bench-results", "data_type": "JSON"}},
            "PostgreSQL": {
                "postgres": {
                    "url": f"postgresql://127.0.0.1:{postgres.port}/bench",
                    "table": "public.completed_bookings",
                    "user": "dagger_admin",
                    "password": postgres.password,
                }
            },
        }
        for label, section in sinks.items():
            (kind,) = section
            sink = SinkSpec.model_validate({"type": kind, **section})
            splan = replace(kplan, job=job.model_copy(update={"sink": sink}))
            results.append(
                _best(
                    f"Kafka: surge dagger end to end, {label} sink",
                    messages,
                    repeat,
                    lambda splan=splan, kind=kind: dagger_once(spark, splan, work / f"ck-{kind}"),
                )
            )
        # a sink that took the rows and kept them: every window ours has (an upsert per run), and
        # on Kafka each run's rows once (the topic is appended to: `repeat` runs)
        (series,) = influx.query(f'SELECT count("num_of_bookings") FROM "{measurement}"', db="bench")
        with postgres.connect("bench") as connection:
            stored = {
                "InfluxDB": series["values"][0][1],
                "PostgreSQL": connection.execute("SELECT count(*) FROM completed_bookings").fetchone()[0],
                "Kafka": _messages_in(kafka.bootstrap_servers, "bench-results") / repeat,
            }
        if any(n != len(ours) for n in stored.values()):
            raise RuntimeError(f"the sinks hold {stored} rows a run, the dagger wrote {len(ours)}")
        kafka.create_topic("bench-state-dlq", partitions=1)
        state_results, state = state_rows(spark, kplan, messages, work, dagger_once)
        results += state_results
    shutil.rmtree(work, ignore_errors=True)
    by = {r["path"]: r["per_second"] for r in results}
    raw_rate = by["Kafka: Spark's raw read (ceiling)"]
    dagger_rate = by["Kafka: surge dagger end to end, no-op sink"]
    flink_rate = by["Kafka: surge dagger on Flink SQL 1.20 (flink-protobuf), no-op sink"]
    summary = {
        "flink_msgs_per_s": flink_rate,
        "dagger_vs_flink": round(dagger_rate / flink_rate, 3),
        "rows_vs_flink": rows_vs_flink,
        "raw_msgs_per_s": raw_rate,
        "decode_msgs_per_s": by["Kafka: read + JVM decode"],
        "dagger_msgs_per_s": dagger_rate,
        "dagger_influx_msgs_per_s": by["Kafka: surge dagger end to end, InfluxDB sink"],
        "dagger_kafka_msgs_per_s": by["Kafka: surge dagger end to end, Kafka sink"],
        "dagger_postgres_msgs_per_s": by["Kafka: surge dagger end to end, PostgreSQL sink"],
        "sinks_vs_noop": {
            kind: round(by[f"Kafka: surge dagger end to end, {label} sink"] / dagger_rate, 3)
            for label, kind in (("InfluxDB", "influx"), ("Kafka", "kafka"), ("PostgreSQL", "postgres"))
        },
        "dagger_vs_raw": round(dagger_rate / raw_rate, 3),
        "state": state,
        "feeder_msgs_per_s": round(fed.per_second),
        "messages": messages,
    }
    return results, summary
