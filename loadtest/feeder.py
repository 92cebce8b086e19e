"""Fill a Kafka topic with many realistic protobuf messages, fast: a plain high-rate feeder.

A pool of distinct events comes from the traffic generator (encoded once, in Python); Spark then
writes the pool over and over in the JVM, each copy moved later in event time by the pool's span
(the Timestamp field rewritten on the wire, every other byte copied), so the topic holds one long,
ordered stretch of traffic and a dagger over it closes its windows as it would live. Keys are the
pool position and the copy, so they stay distinct.

    python -m loadtest.feeder -b BOOTSTRAP TOPIC -n 2000000
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from dataclasses import dataclass

from dagger_runtime.session import build_session

from . import traffic
from .settings import add_bootstrap_argument

POOL = 100_000


@dataclass(frozen=True)
class Fed:
    messages: int
    seconds: float
    first_event: object
    last_event: object

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0


def feed(
    spark,
    bootstrap_servers: str,
    topic: str,
    messages: int,
    *,
    minutes_per_pool: int = 10,
    seed: int = 7,
    pool: int = POOL,
    descriptor_set=None,
    client: dict[str, str] | None = None,
    log=sys.stderr,
) -> Fed:
    """Write `messages` booking messages to `topic` (which must exist); returns what was fed and
    how fast (the Spark write alone, not the pool's generation). `client`: Kafka producer settings
    (Java client names: security.protocol, sasl.jaas.config ...), e.g. a login."""
    import pandas as pd
    from pyspark.sql import functions as F

    from protos import registry

    dset = descriptor_set or registry.load()
    pool_size = min(pool, messages)
    copies = -(-messages // pool_size)
    print(
        f"[feeder] generating a pool of {pool_size:,} bookings ({minutes_per_pool} minutes of traffic)",
        file=log,
        flush=True,
    )
    events = traffic.bookings(pool_size, minutes=minutes_per_pool, seed=seed)
    values = traffic.encode(events, dset.message_class(traffic.BOOKING))
    pool_df = spark.createDataFrame(pd.DataFrame({"i": range(pool_size), "value": values}), "i long, value binary")
    pool_df = pool_df.cache()
    pool_df.count()
    span_s = minutes_per_pool * 60
    event_time = dset.message_descriptor(traffic.BOOKING).fields_by_name["event_timestamp"].number
    spark._jvm.dev.daggers.runtime.Functions.registerTimeShift(spark._jsparkSession, "__feeder_shift", event_time)
    # One task walks the copies in order and, for each, the pool in order, so every partition of
    # the topic is in event-time order (the pool's own jitter aside), as a live topic is; a stream
    # engine's watermark then drops nothing as late (copies written side by side would interleave
    # minutes apart). The pool (a few MB) goes to it as a broadcast.
    copies_df = spark.range(0, copies, 1, numPartitions=1).withColumnRenamed("id", "copy")
    moved = copies_df.crossJoin(F.broadcast(pool_df)).where(F.col("copy") * pool_size + F.col("i") < messages)
    records = moved.select(
        F.concat_ws("/", F.col("i").cast("string"), F.col("copy").cast("string")).cast("binary").alias("key"),
        F.call_udf("__feeder_shift", F.col("value"), F.col("copy") * span_s).alias("value"),
    )
    print(f"[feeder] writing {messages:,} messages to {topic} ({copies} copies of the pool)", file=log, flush=True)
    started = time.perf_counter()
    settings = {"linger.ms": "20", "batch.size": str(512 * 1024), "compression.type": "lz4", **(client or {})}
    (
        records.write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("topic", topic)
        .options(**{f"kafka.{k}": v for k, v in settings.items()})
        .save()
    )
    seconds = time.perf_counter() - started
    pool_df.unpersist()
    first = min(e["event_timestamp"] for e in events)
    last = max(e["event_timestamp"] for e in events)

    return Fed(messages, seconds, first, last + dt.timedelta(seconds=span_s * (copies - 1)))


def lab_client(properties) -> dict[str, str]:
    """A Kafka client settings file (the lab's, as Kafka's tools take it) as settings."""
    import javaproperties

    with open(properties) as f:
        return dict(javaproperties.load(f))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m loadtest.feeder", description=__doc__.split("\n\n")[0])
    add_bootstrap_argument(p)
    p.add_argument("topic", help="an existing topic")
    p.add_argument("-n", "--messages", type=int, default=1_000_000, help="how many (default 1000000)")
    p.add_argument("--minutes-per-pool", type=int, default=10, help="event-time span of each copy of the pool")
    p.add_argument(
        "--lab-user",
        metavar="PRINCIPAL",
        help="log in to the lab's Kafka as PRINCIPAL (its client settings file from the lab's secrets)",
    )
    p.add_argument("--lab-cluster", default="primary", help="the lab cluster of --lab-user (default primary)")
    args = p.parse_args(argv)

    client = None
    if args.lab_user:
        from lab import access

        try:
            client = lab_client(access.client_properties(args.lab_user, args.lab_cluster))
        except access.NoCredential as e:
            p.error(str(e))
    spark = build_session("dagger-feeder", parallelism=2)
    fed = feed(
        spark, args.bootstrap_servers, args.topic, args.messages, minutes_per_pool=args.minutes_per_pool, client=client
    )
    print(
        f"fed {fed.messages:,} messages in {fed.seconds:.1f}s ({fed.per_second:,.0f}/s), event time "
        f"{fed.first_event:%Y-%m-%dT%H:%M:%SZ} to {fed.last_event:%Y-%m-%dT%H:%M:%SZ}",
        file=sys.stderr,
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
