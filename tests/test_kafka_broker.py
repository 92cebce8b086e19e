"""The lab's Kafka broker (lab/kafka.py) is a real Kafka that kafka-python can use.

The checks talk to the broker only through its bootstrap address and kafka-python,
so they do not trust the launcher's own helpers.
"""

import socket
import uuid
from collections import defaultdict

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient

from lab.kafka import KafkaBroker, KafkaBrokerError, KafkaJarsMissing

KEYS = [f"driver-{i}" for i in range(12)]


def unique_topic(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def produce_keyed(bootstrap, topic, n, first_seq=0):
    """Send n keyed messages; return [(key, value, partition, offset)] in send order."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        futures = []
        for i in range(first_seq, first_seq + n):
            key = KEYS[i % len(KEYS)]
            value = f"{key}|{i}"
            futures.append((key, value, producer.send(topic, key=key.encode(), value=value.encode())))
        producer.flush(timeout=30)
        sent = []
        for key, value, future in futures:
            meta = future.get(timeout=30)
            sent.append((key, value, meta.partition, meta.offset))
        return sent
    finally:
        producer.close(timeout=10)


def consume_all(bootstrap, topic, expected, timeout_s=30):
    """Read every partition of topic from the beginning until `expected` records arrived."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        partitions = consumer.partitions_for_topic(topic)
        assert partitions, f"no partitions for {topic}"
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        records = []
        polls = int(timeout_s * 4)
        while len(records) < expected and polls:
            for batch in consumer.poll(timeout_ms=250).values():
                records.extend(batch)
            polls -= 1
        return records
    finally:
        consumer.close()


def assert_same_log(sent, records):
    """Every sent message came back once, and each partition kept the send order."""
    got = [(r.key.decode(), r.value.decode(), r.partition, r.offset) for r in records]
    assert len(got) == len(sent)
    assert {(k, v) for k, v, _, _ in got} == {(k, v) for k, v, _, _ in sent}

    sent_by_partition, got_by_partition = defaultdict(list), defaultdict(list)
    for key, value, partition, offset in sent:
        sent_by_partition[partition].append((offset, key, value))
    for key, value, partition, offset in got:
        got_by_partition[partition].append((offset, key, value))
    assert sorted(got_by_partition) == sorted(sent_by_partition)
    for partition, entries in got_by_partition.items():
        offsets = [o for o, _, _ in entries]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets), partition
        assert entries == sent_by_partition[partition], f"partition {partition} out of order"

    # keyed partitioning: one key, one partition; and per key, the send order survives
    partitions_of_key = defaultdict(set)
    seqs_of_key = defaultdict(list)
    for key, value, partition, _ in sorted(got, key=lambda t: (t[2], t[3])):
        partitions_of_key[key].add(partition)
        seqs_of_key[key].append(int(value.split("|")[1]))
    assert all(len(p) == 1 for p in partitions_of_key.values()), partitions_of_key
    assert all(s == sorted(s) for s in seqs_of_key.values())


@pytest.mark.kafka
def test_keyed_messages_on_three_partitions_come_back_complete_and_in_order(kafka_broker):
    topic = unique_topic("keyed")
    kafka_broker.create_topic(topic, partitions=3)

    with KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers) as admin:
        (described,) = admin.describe_topics([topic])
    assert described["error_code"] == 0
    assert sorted(p["partition_index"] for p in described["partitions"]) == [0, 1, 2]

    sent = produce_keyed(kafka_broker.bootstrap_servers, topic, 600)
    assert len({p for _, _, p, _ in sent}) == 3, "12 keys should land on all 3 partitions"
    records = consume_all(kafka_broker.bootstrap_servers, topic, expected=len(sent))
    assert_same_log(sent, records)


@pytest.mark.kafka
def test_the_broker_does_not_create_topics_on_first_use_by_default(kafka_broker):
    topic = unique_topic("never-created")
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap_servers, max_block_ms=1500)
    try:
        with pytest.raises(Exception, match="(?i)timeout|metadata"):
            producer.send(topic, b"x").get(timeout=5)
    finally:
        producer.close(timeout=1)
    with KafkaAdminClient(bootstrap_servers=kafka_broker.bootstrap_servers) as admin:
        assert topic not in admin.list_topics()


@pytest.mark.kafka
def test_messages_survive_a_restart_and_a_kill_on_the_same_data_dir(tmp_path):
    data_dir = tmp_path / "kafka"
    with KafkaBroker(data_dir) as broker:
        address = broker.bootstrap_servers
        topic = broker.create_topic(unique_topic("durable"), partitions=3)
        sent = produce_keyed(address, topic, 300)

        broker.restart()  # SIGTERM: controlled shutdown
        assert broker.bootstrap_servers == address
        assert_same_log(sent, consume_all(address, topic, expected=len(sent)))

        broker.kill()  # SIGKILL: no shutdown at all
        assert not broker.is_running
        broker.start()
        assert broker.bootstrap_servers == address
        assert_same_log(sent, consume_all(address, topic, expected=len(sent)))

    # a new launcher on the same directory (as `python -m lab.kafka start --data-dir`)
    # keeps the data, the cluster and the address
    with KafkaBroker(data_dir) as again:
        assert again.bootstrap_servers == address
        more = produce_keyed(address, topic, 30, first_seq=len(sent))
        assert_same_log(sent + more, consume_all(address, topic, expected=len(sent) + 30))
    assert data_dir.is_dir(), "a data dir that was given must not be deleted"


@pytest.mark.kafka
def test_a_broker_that_cannot_start_fails_with_the_tail_of_its_log(tmp_path):
    with socket.socket() as squatter:  # something else already holds the port
        squatter.bind(("127.0.0.1", 0))
        port = squatter.getsockname()[1]
        broker = KafkaBroker(tmp_path / "kafka", port=port, start_timeout=60)
        with pytest.raises(KafkaBrokerError) as failure:
            broker.start()
    message = str(failure.value)
    assert str(broker.log_path) in message
    assert "Last 40 lines" in message
    assert "Address already in use" in message or "BindException" in message
    assert not broker.is_running


def test_a_missing_jar_dir_fails_with_a_hint_to_run_make_jars(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGGER_JVM_DIR", str(tmp_path / "no-jvm-here"))
    broker = KafkaBroker(tmp_path / "kafka")
    with pytest.raises(KafkaJarsMissing, match="run `make jars`") as failure:
        broker.start()
    assert str(tmp_path / "no-jvm-here" / "kafka") in str(failure.value)
    assert not broker.is_running
