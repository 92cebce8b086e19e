"""The smoke test of the JVM parts: a real KRaft broker from the Maven-fetched jars, protobuf
messages produced with kafka-python, read back through Spark's Kafka source and decoded in the
JVM. Every later part (streaming jobs, mirrors, failover drills) stands on this path."""

from __future__ import annotations

import pytest
from kafka import KafkaProducer

from dagger_runtime.streams import StreamPlan, decode
from loadtest import traffic
from protos import registry

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_protobuf_messages_produced_to_kafka_come_back_through_spark_decoded(kafka_broker, spark):
    dset = registry.load()
    topic = "GO_RIDE-booking-log"
    kafka_broker.create_topic(topic, partitions=3)
    events = traffic.bookings(500, minutes=2, seed=21)
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, acks="all")
    for event, value in zip(events, traffic.encode(events, dset.message_class(traffic.BOOKING))):
        producer.send(topic, key=event["order_number"].encode(), value=value)
    producer.send(topic, key=b"bad", value=b"\xff\xff\xff\xff")  # kept aside, not fatal
    producer.send(topic, key=b"tombstone", value=None)
    producer.flush()
    producer.close()

    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka_broker.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    plan = StreamPlan("data_stream", traffic.BOOKING, "PROTO", "event_timestamp", 5, "rowtime")
    table, rejected, _ = decode(spark, raw, plan, dset, keep=("partition", "offset", "key"))
    tq = table.writeStream.format("memory").queryName("smoke_rows").trigger(availableNow=True).start()
    rq = rejected.writeStream.format("memory").queryName("smoke_rejected").trigger(availableNow=True).start()
    tq.awaitTermination(300)
    rq.awaitTermination(300)

    rows = {r["order_number"]: r for r in spark.sql("SELECT * FROM smoke_rows").collect()}
    assert len(rows) == len(events)
    for e in events:
        row = rows[e["order_number"]]
        assert row["status"] == e["status"]  # enums as names
        assert row["city_id"] == e["city_id"]
        assert row["pickup"]["latitude"] == e["pickup"]["latitude"]
        assert (
            row["rowtime"].replace(tzinfo=None) == e["event_timestamp"].replace(tzinfo=None)
            or abs((row["rowtime"].timestamp() - e["event_timestamp"].timestamp())) < 1e-3
        )
        assert {kv["key"]: kv["value"] for kv in row["metadata"]} == e["metadata"]  # maps as key/value rows
    bad = {bytes(r["key"]): r["reason"] for r in spark.sql("SELECT * FROM smoke_rejected").collect()}
    assert set(bad) == {b"bad", b"tombstone"}
    assert "tombstone" in bad[b"tombstone"]
