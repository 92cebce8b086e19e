"""Dead letters are sent from the task that decoded them: stored before the task completes, or
the task (and so the micro-batch, which then is not committed) fails."""

from __future__ import annotations

import pytest

from dagger_runtime import dead_letters
from tests.kafka_jobs import consume_all

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def _register(spark, name, topic, **settings):
    config = spark._jvm.java.util.HashMap()
    for key, value in settings.items():
        config.put(key.replace("_", "."), str(value))
    return dead_letters.Writer(
        "t",
        name,
        spark._jvm.dev.daggers.runtime.Functions.registerDeadLetters(
            spark._jsparkSession, name, config, topic, "job-a"
        ),
    )


def _send_sql(name: str, size: int, key: str = "CAST(CAST(id AS STRING) AS BINARY)") -> str:
    # three rows of `size` zero bytes, one of each kind of reason the decoder gives
    return (
        f"SELECT {name}(reason, {key}, unhex(repeat('00', {size})), 'src', 1, id, 1700000000000) "
        "FROM (SELECT id, element_at(array('empty (tombstone) message', 'event time field event_timestamp (5) "
        "is not set', 'Protocol message had invalid UTF-8.'), CAST(id AS INT) + 1) AS reason FROM range(3))"
    )


def test_each_dead_letter_is_stored_with_its_headers_and_counted_by_kind(spark, kafka_broker):
    kafka_broker.create_topic("dl-ok", partitions=1)
    writer = _register(spark, "__dl_ok", "dl-ok", bootstrap_servers=kafka_broker.bootstrap_servers)
    assert [r[0] for r in spark.sql(_send_sql("__dl_ok", 10)).collect()] == [False] * 3
    records = sorted(consume_all(kafka_broker, "dl-ok", expected=3, timeout_s=60), key=lambda r: r.key)
    assert [(r.key, r.value) for r in records] == [(str(i).encode(), bytes(10)) for i in range(3)]
    assert [{k: v.decode() for k, v in r.headers} for r in records][1] == {
        "dagger.errors.topic": "src",
        "dagger.errors.partition": "1",
        "dagger.errors.offset": "1",
        "dagger.errors.timestamp": "1700000000000",
        "dagger.errors.kind": "no_event_time",
        "dagger.errors.reason": "event time field event_timestamp (5) is not set",
        "dagger.errors.job": "job-a",
    }
    assert writer.counts() == {("t", "tombstone"): 1, ("t", "no_event_time"): 1, ("t", "unparsable"): 1}
    writer.close()


def test_a_dead_letter_the_broker_refuses_fails_the_task_that_sent_it(spark, kafka_broker):
    kafka_broker.create_topic("dl-refused", partitions=1)
    # the producer refuses a record over max.request.size; the refusal arrives in the send's
    # callback, and the task's completion listener turns it into the task's failure
    writer = _register(
        spark, "__dl_refused", "dl-refused", bootstrap_servers=kafka_broker.bootstrap_servers, max_request_size=500
    )
    with pytest.raises(Exception) as failed:
        spark.sql(_send_sql("__dl_refused", 2000, key="CAST(NULL AS BINARY)")).collect()
    assert "could not store dead letters on dl-refused" in str(failed.value)
    assert "RecordTooLargeException" in str(failed.value)
    writer.close()
