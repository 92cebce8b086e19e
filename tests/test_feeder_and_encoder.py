"""The feeder fills a topic with exactly the pool's messages, each copy moved later in event time
and nothing else changed; the JVM encoder writes what protobuf's own serializer writes."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import functions as F

from dagger_runtime.streams import StreamPlan, decode
from loadtest import traffic
from loadtest.feeder import feed
from protos import registry

pytestmark = [pytest.mark.spark]


@pytest.mark.kafka
def test_the_feeder_writes_each_copy_of_the_pool_moved_in_event_time(kafka_broker, spark):
    dset = registry.load()
    kafka_broker.create_topic("feeder-test", partitions=2)
    fed = feed(spark, kafka_broker.bootstrap_servers, "feeder-test", 25_000, pool=10_000, minutes_per_pool=10, seed=5)
    assert fed.messages == 25_000
    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("subscribe", "feeder-test")
        .load()
        .select("key", "value", "partition", "offset")
        .collect()
    )
    assert len(rows) == 25_000
    assert len({bytes(r["key"]) for r in rows}) == 25_000
    pool = traffic.bookings(10_000, minutes=10, seed=5)  # the same pool, generated independently here
    message = dset.message_class(traffic.BOOKING)
    copies = {0: 0, 1: 0, 2: 0}
    for r in rows[::7]:
        position, copy = (int(x) for x in bytes(r["key"]).decode().split("/"))
        got = message.FromString(bytes(r["value"]))
        want = message.FromString(traffic.encode([pool[position]], message)[0])
        shift = dt.timedelta(seconds=600 * copy)
        assert got.event_timestamp.ToDatetime() == want.event_timestamp.ToDatetime() + shift
        got.ClearField("event_timestamp")
        want.ClearField("event_timestamp")
        assert got == want
        copies[copy] += 1
    assert all(copies.values())
    # each partition in event-time order, but for the pool's own jitter of up to 2 s: a stream
    # engine's watermark (Flink's, in the bench) must find nothing late
    for partition in (0, 1):
        times = [
            message.FromString(bytes(r["value"])).event_timestamp.ToDatetime()
            for r in sorted((r for r in rows if r["partition"] == partition), key=lambda r: r["offset"])
        ]
        latest = times[0]
        for t in times:
            assert t >= latest - dt.timedelta(seconds=4), f"partition {partition}: {t} after {latest}"
            latest = max(latest, t)


def test_the_jvm_encoder_writes_the_bytes_protobufs_serializer_writes(spark):
    dset = registry.load()
    events = traffic.bookings(3000, minutes=3, seed=12)
    values = traffic.encode(events, dset.message_class(traffic.BOOKING))
    raw = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i long, value binary")
    stream = StreamPlan("enc", traffic.BOOKING, "PROTO", "event_timestamp", 5, "rowtime")
    _, _, decoded = decode(spark, raw, stream, dset, keep=("i",))
    table = decoded.select("i", "__d.message.*")
    spark._jvm.dev.daggers.runtime.Functions.registerEncoder(
        spark._jsparkSession, "__test_encode", bytearray(dset.data), traffic.BOOKING
    )
    columns = [c for c in table.columns if c != "i"]
    encoded = {
        r["i"]: bytes(r["v"])
        for r in table.select("i", F.call_udf("__test_encode", F.struct(*columns)).alias("v")).collect()
    }
    assert len(encoded) == len(values)
    message = dset.message_class(traffic.BOOKING)
    for i, value in enumerate(values):
        assert message.FromString(encoded[i]) == message.FromString(value)
        assert encoded[i] == value, i  # canonical: byte for byte what Python's serializer wrote
