"""The bench's Flink side: the same dagger's SQL on Apache Flink 1.20 over the same Kafka topic
(`dev.daggers.bench.FlinkBench`, built by `make flink`), and its rows compared with ours.

Set up as a Flink user would run it on this machine: one MiniCluster with 2 task slots and
parallelism 2 (the dagger's own `parallelism`, as Spark gets `local[2]`), the topic read by
flink-connector-kafka from its first offset to the end offsets it finds at start (Spark's
Trigger.AvailableNow) with the consumer settings our reader uses, messages decoded by flink-protobuf through protoc's Java classes, S2Id as a
Java function over Google's S2 library, the rows into a sink that keeps them. Each run is timed
from planning to the job's end; the JVM and its cluster are started before the first, the first
run warms the JVM up and is not counted, and the best of the others counts, as on the Spark side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from sqlglot.tokens import TokenType

from dagger_runtime.jvm import jvm_dir
from dagger_runtime.source import CONSUMER_DEFAULTS
from dagger_runtime.sql.dialect import FlinkSQL

REPO = Path(__file__).resolve().parent.parent


def flink_sql(sql: str) -> str:
    """The analyst's query as Flink's parser takes it: the seeds' slide has a comma before FROM,
    which our translator forgives and Calcite does not (found by our own tokenizer, so a string
    or a comment that says ", from" stays as written)."""
    tokens = FlinkSQL().tokenize(sql)
    commas = [
        a for a, b in zip(tokens, tokens[1:]) if a.token_type == TokenType.COMMA and b.token_type == TokenType.FROM
    ]
    for comma in reversed(commas):
        sql = sql[: comma.start] + sql[comma.end + 1 :]
    return sql


def run_flink(plan, bootstrap: str, topic: str, repeat: int, rows_out: Path, parallelism: int = 2) -> list[float]:
    """Seconds of each counted run of the plan's query on Flink (after one warm-up run); the last
    run's rows are in rows_out."""
    flink = jvm_dir() / "flink"
    stream = plan.streams[0]
    command = [
        "java",
        "-Xmx4g",
        f"-Dlog4j.configurationFile={REPO / 'jvm' / 'flink' / 'log4j2.properties'}",
        "-cp",
        f"{flink / 'conformance-runner.jar'}:{flink / 'deps' / '*'}",
        "dev.daggers.bench.FlinkBench",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--table",
        stream.table,
        "--message-class",
        java_class(plan.descriptor_set, stream.proto_class),
        "--event-time-field",
        stream.event_time_field,
        "--consumer",
        ",".join(f"{k}={v}" for k, v in CONSUMER_DEFAULTS.items()),
        "--rowtime",
        stream.rowtime,
        "--watermark-delay-ms",
        str(plan.job.watermark_delay_ms),
        "--query",
        flink_sql(plan.job.sql),
        "--parallelism",
        str(parallelism),
        "--repeat",
        str(repeat + 1),
        "--rows-out",
        str(rows_out),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"the bench's Flink job exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    seconds = []
    for line in proc.stdout.splitlines():
        run = json.loads(line)
        what = "warm-up" if run["run"] == 1 else f"run {run['run'] - 1}/{repeat}"
        print(f"[bench] Flink SQL: {what} {run['seconds']:.1f}s ({run['rows']:,} rows)", file=sys.stderr)
        if run["run"] > 1:
            seconds.append(run["seconds"])
    return seconds


def java_class(descriptor_set, message: str) -> str:
    """protoc's Java class name of a message: the file's java_package and the message's name
    (java_multiple_files), as `make flink` generated it."""
    descriptor = descriptor_set.message_descriptor(message)
    options = descriptor.file.GetOptions()
    package = options.java_package or descriptor.file.package
    if not options.java_multiple_files:
        raise ValueError(f"{message}: the bench's Flink job needs java_multiple_files in {descriptor.file.name}")
    return f"{package}.{descriptor.full_name.removeprefix(descriptor.file.package + '.')}"


def compare(ours: list[dict], flink_rows: Path, window_column: str) -> dict:
    """Our rows against Flink's, over the windows our run closed: Flink ends its bounded input
    with a last watermark that closes every window, while a Spark query stopped by AvailableNow
    keeps the last ones (less than the watermark delay behind the newest message) open."""
    theirs = [json.loads(line) for line in flink_rows.read_text().splitlines()]
    if not ours:
        return {"equal": False, "ours": 0, "flink": len(theirs), "flink_windows_still_open_here": 0}
    ours = [{k: (_millis(v) if k == window_column else v) for k, v in row.items()} for row in ours]
    closed = max(row[window_column] for row in ours)
    theirs_closed = [row for row in theirs if row[window_column] <= closed]

    def key(row):
        return tuple(sorted(row.items()))

    return {
        "equal": Counter(map(key, ours)) == Counter(map(key, theirs_closed)),
        "ours": len(ours),
        "flink": len(theirs_closed),
        "flink_windows_still_open_here": len({r[window_column] for r in theirs if r[window_column] > closed}),
    }


def _millis(value) -> int:
    # a naive datetime as pyspark gives it (local time of this process), or epoch milliseconds
    return value if isinstance(value, int) else round(value.timestamp() * 1000)
