"""`make bench`: how fast the hot paths run on this machine, next to what the machine can do.

Each line pairs a runtime path with a baseline that bounds it: Spark scanning the same rows
without decoding (the engine's own limit on this machine), and S2Id in the JVM next to s2sphere
(one Python call a row, the reference it is tested against). Then the same on a real Kafka topic pre-loaded with a few million
bookings: Spark's raw read of the topic (the ceiling), read and decode, and the seeds' surge query
end to end with `run --available-now` into a no-op sink and into InfluxDB, and the same query on
Flink SQL 1.20 over the same topic (bench/flink.py), its rows compared with ours. The last line of
stdout is one JSON object, kept in bench/results/latest.json and appended with the commit to
bench/results/history.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

from bench import history
from dagger_runtime.jvm import jvm_dir
from dagger_runtime.session import build_session
from loadtest import traffic

REPO = Path(__file__).resolve().parent.parent
BENCH_HEAP = "4g"


def timed(label: str, fn, count: int, repeat: int) -> dict:
    best = float("inf")
    for i in range(repeat):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
        print(f"[bench] {label}: run {i + 1}/{repeat} {time.perf_counter() - started:.2f}s", file=sys.stderr)
    return {"path": label, "items": count, "best_seconds": round(best, 4), "per_second": round(count / best)}


def build_parser(prog: str = "python -m bench") -> argparse.ArgumentParser:
    """The command line's parser (`dagger` builds it under its own name; docs/reference/commands.md)."""
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("-n", "--messages", type=int, default=200_000, help="messages per measurement (default 200000)")
    p.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept (default 3)")
    p.add_argument(
        "--kafka-messages",
        type=int,
        default=2_000_000,
        help="messages pre-loaded into Kafka for the streaming rows (default 2000000; 0 skips them)",
    )
    p.add_argument(
        "--out",
        default=str(history.LATEST),
        metavar="PATH",
        help="where the JSON line of results goes (default: bench/results/latest.json)",
    )
    history.add_history_argument(p)
    return p


def main(argv: list[str] | None = None, prog: str = "python -m bench") -> int:
    args = build_parser(prog).parse_args(argv)

    import numpy as np
    import pandas as pd

    from dagger_runtime.config import load_job
    from dagger_runtime.plan import plan_job
    from dagger_runtime.streams import decode
    from dagger_runtime.udfs import register_all
    from protos import registry

    n = args.messages
    dset = registry.load()
    print(f"[bench] generating {n} booking messages", file=sys.stderr)
    events = traffic.bookings(n, minutes=10)
    values = traffic.encode(events, dset.message_class(traffic.BOOKING))
    # a 4 GB heap: the state bench's million keys a window take ~1 KB each in Spark's default
    # state store, more than the 1 GB a session gets by default (bench/state.py)
    spark = build_session(
        "dagger-bench", parallelism=os.cpu_count() or 2, extra_conf={"spark.driver.memory": BENCH_HEAP}
    )
    register_all(spark)
    raw = spark.createDataFrame(pd.DataFrame({"value": values}), "value binary").cache()
    raw.count()
    plan = plan_job(load_job(REPO / "examples" / "daggers" / "completed_bookings_by_s2.yaml"), dset)
    stream = plan.streams[0]
    table, _, _ = decode(spark, raw, stream, dset)
    table.createOrReplaceTempView(stream.table)
    lat = np.array([e["lat"] for e in events])
    lng = np.array([e["long"] for e in events])
    points = spark.createDataFrame(pd.DataFrame({"lat": lat, "lng": lng})).cache()
    points.count()

    results = [
        timed(
            "spark scan, no decoding (engine limit)",
            lambda: raw.selectExpr("length(value) AS l").agg({"l": "sum"}).collect(),
            n,
            args.repeat,
        ),
        timed("JVM protobuf decode", lambda: table.agg({"city_id": "sum"}).collect(), n, args.repeat),
        timed(
            "seed query 1 (decode + S2Id + window)", lambda: spark.sql(plan.query.spark_sql).collect(), n, args.repeat
        ),
        timed(
            "S2Id in Spark (JVM UDF)",
            lambda: points.selectExpr("S2Id(lat, lng, 13) AS s").agg({"s": "max"}).collect(),
            n,
            args.repeat,
        ),
    ]
    sample = min(n, 20_000)
    results.append(timed("s2sphere per row (reference)", lambda: _s2sphere(lat[:sample], lng[:sample]), sample, 1))
    summary = {}
    raw.unpersist()
    points.unpersist()
    if args.kafka_messages:
        from bench.kafka import kafka_rows

        kafka_results, summary = kafka_rows(spark, plan, args.kafka_messages, repeat=args.repeat)
        results += kafka_results
    java = spark._jvm.java.lang.System.getProperty("java.version")
    spark.stop()
    by_path = {r["path"]: r["per_second"] for r in results}
    s2id = by_path["S2Id in Spark (JVM UDF)"]
    summary.update(
        {
            "s2id_rows_per_s": s2id,
            "s2id_vs_s2sphere": round(s2id / by_path["s2sphere per row (reference)"], 1),
            "cores": os.cpu_count(),
            "versions": {**_versions(), "java": java},
        }
    )
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine()}
    from rich.console import Console
    from rich.table import Table

    table = Table(title="hot paths", title_justify="left")
    table.add_column("path")
    table.add_column("items/s", justify="right")
    table.add_column("best s", justify="right")
    for r in results:
        table.add_row(r["path"], f"{r['per_second']:,}", f"{r['best_seconds']:.2f}")
    Console().print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine, "results": results, "summary": summary}, indent=2) + "\n")
    if args.history:
        history.append(args.history, summary)
    print(f"(on {machine['cpus']} cores; results in {out})")
    print(json.dumps(summary))
    return 0


def _s2sphere(lat, lng) -> list[int]:
    import s2sphere

    return [s2sphere.CellId.from_lat_lng(s2sphere.LatLng.from_degrees(a, b)).parent(13).id() for a, b in zip(lat, lng)]


def _versions() -> dict:
    kafka = sorted(p.name for p in (jvm_dir() / "kafka").glob("kafka-clients-*.jar"))
    return {
        "pyspark": version("pyspark"),
        "python": platform.python_version(),
        "kafka": kafka[0].removeprefix("kafka-clients-").removesuffix(".jar") if kafka else None,
    }


if __name__ == "__main__":
    sys.exit(main())
