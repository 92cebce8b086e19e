"""The portal's preview: the draft's query over its topic's latest messages, read back from a real
Kafka (a bounded read: the last messages of every partition, up to the end it had when the read
began) and run by `dagger preview`'s own code on the portal's warm Spark, every window closed. The
rows are compared with a count computed here from the messages that were sent."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from dagger_runtime import inputs
from dagger_runtime.errors import DaggerError
from loadtest import traffic
from portal import drafts, latest
from portal.platform_rules import RULES
from portal.workbench import Workbench
from protos import registry as protos
from tests.reference import group, iso, window_end

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

QUERY = """SELECT city_id, COUNT(1) AS bookings,
       TUMBLE_END(rowtime, INTERVAL '60' SECOND) AS window_timestamp
FROM `data_stream`
WHERE status = 'COMPLETED'
GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND), city_id"""


@pytest.fixture(scope="module")
def sent(kafka_broker):
    """300 bookings over 3 minutes on a topic of 2 partitions, each partition's messages kept."""
    topic = f"booking-events-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers)
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])
    admin.close()
    events = traffic.bookings(300, minutes=3, seed=71)
    values = traffic.encode(events, protos.load().message_class(traffic.BOOKING))
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers)
    by_partition: dict[int, list[tuple[dict, bytes]]] = {0: [], 1: []}
    for i, (event, value) in enumerate(zip(events, values)):
        producer.send(topic, value=value, partition=i % 2)
        by_partition[i % 2].append((event, value))
    producer.flush()
    producer.close()
    return topic, by_partition


def test_the_bounded_read_takes_each_partitions_last_messages(kafka_broker, sent):
    topic, by_partition = sent
    got = latest.latest(kafka_broker.bootstrap_servers, topic, {}, count=40)
    want = [v for p in (0, 1) for _, v in by_partition[p][-20:]]
    assert sorted(got) == sorted(want) and len(got) == 40
    everything = latest.latest(kafka_broker.bootstrap_servers, topic, {}, count=10_000)
    assert len(everything) == 300
    # framed as preview's input files are (writeDelimitedTo), read back by the runtime's own reader
    assert [r.value for r in inputs.read_delimited(latest.delimited(got))] == got


def test_the_bounded_read_of_a_missing_topic_says_so(kafka_broker):
    with pytest.raises(DaggerError, match="does not exist, or your team may not read it"):
        latest.latest(kafka_broker.bootstrap_servers, "no-such-topic-here", {}, count=10, timeout_s=5)


def test_the_preview_counts_what_was_sent(kafka_broker, sent, spark):
    topic, by_partition = sent
    granted = drafts.inputs([_entry()], "allocations", ["mainstream"])
    job = drafts.job(
        {
            "name": "preview-probe",
            "input": "mainstream/booking-events-*",
            "topic_suffix": topic.removeprefix("booking-events-"),
            "query": QUERY,
            "sink": {"type": "log"},
        },
        team="allocations",
        granted=granted,
        servers=drafts.Servers(kafka_broker.bootstrap_servers),
        rules=RULES,
    )
    values = latest.latest(kafka_broker.bootstrap_servers, topic, {}, count=10_000)
    answer = Workbench(spark).preview(job, values)
    assert answer["valid"] is True and answer["read"] == 300 and answer["skipped"] == 0
    events = [e for p in (0, 1) for e, _ in by_partition[p] if e["status"] == "COMPLETED"]
    want = group(events, key=lambda e: (e["city_id"], iso(window_end(e["event_timestamp"], 60))), agg=len)
    got = {(r["city_id"], r["window_timestamp"]): r["bookings"] for r in answer["rows"]}
    assert got == want and answer["row_count"] == len(want)


def test_a_preview_of_a_broken_query_is_validates_refusal(kafka_broker, sent, spark):
    topic, _ = sent
    granted = drafts.inputs([_entry()], "allocations", ["mainstream"])
    job = drafts.job(
        {
            "name": "preview-probe",
            "input": "mainstream/booking-events-*",
            "topic_suffix": topic.removeprefix("booking-events-"),
            "query": QUERY.replace("city_id, COUNT", "cityid, COUNT"),
            "sink": {"type": "log"},
        },
        team="allocations",
        granted=granted,
        servers=drafts.Servers(kafka_broker.bootstrap_servers),
        rules=RULES,
    )
    answer = Workbench(spark).preview(job, [])
    assert answer["valid"] is False and answer["errors"][0]["line"] == 1


def _entry():
    from infra.topics import parse_catalogue

    (entry,) = parse_catalogue(
        "mainstream",
        [
            {
                "prefix": "booking-events-",
                "owner": "booking",
                "sensitivity": "internal",
                "criticality": "standard",
                "contact": "@gojek/booking-platform",
                "readers": ["allocations"],
                "message": "gojek.esb.booking.BookingLogMessage",
                "event_time": "event_timestamp",
            }
        ],
    )
    return entry
