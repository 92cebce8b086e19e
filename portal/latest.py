"""A bounded read of a topic's latest messages, as a team's principal: the preview's input.

No consumer group (nothing committed, no group ACL needed): the partitions are assigned, each read
from `count / partitions` before its end up to the end it had when the read began, so the read ends
even while producers keep writing."""

from __future__ import annotations

import math
import time

from dagger_runtime.errors import DaggerError

DEFAULT_COUNT = 500
TIMEOUT_S = 15.0


def latest(
    bootstrap: str, topic: str, login: dict, *, count: int = DEFAULT_COUNT, timeout_s: float = TIMEOUT_S
) -> list[bytes]:
    """The values of about the `count` latest messages of `topic` (fewer when it holds fewer)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    consumer = None
    try:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=None,
            enable_auto_commit=False,
            client_id="dagger-portal-preview",
            request_timeout_ms=int(timeout_s * 1000) + 1000,
            **login,
        )
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise DaggerError(f"topic {topic} does not exist, or your team may not read it")
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        per = math.ceil(count / len(tps))
        left = {}
        for tp in tps:
            start = max(begin[tp], end[tp] - per)
            consumer.seek(tp, start)
            if end[tp] > start:
                left[tp] = end[tp]
        values: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=500).items():
                for record in records:
                    # a tombstone (no value) is no message to decode
                    if tp in left and record.offset < left[tp] and record.value is not None:
                        values.append(record.value)
                    if tp in left and record.offset >= left[tp] - 1:
                        del left[tp]
        return values
    except KafkaError as e:
        raise DaggerError(f"reading {topic}'s latest messages failed: {type(e).__name__}") from None
    finally:
        if consumer is not None:
            consumer.close()


def delimited(values: list[bytes]) -> bytes:
    """The values as a length-delimited protobuf file (writeDelimitedTo), preview's input format."""
    out = bytearray()
    for value in values:
        n = len(value)
        while True:
            byte = n & 0x7F
            n >>= 7
            out.append(byte | 0x80 if n else byte)
            if not n:
                break
        out += value
    return bytes(out)
