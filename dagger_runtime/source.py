"""A stream's Kafka topics as Spark's Kafka source: the job's settings under Spark's option names."""

from __future__ import annotations

from .errors import DaggerError

# Consumer settings under a job's own (`kafka.client` wins). The client's default of 500 records a
# poll leaves Spark's reader waiting on the consumer: on the bench's topic, 20,000 records a poll
# with 8 MB a partition and a 1 MB socket buffer read 2.3x faster (440k -> 1.04M msg/s on 2 cores,
# bench/results/). A poll holds at most 20,000 records, a few MB, per task.
CONSUMER_DEFAULTS = {
    "max.poll.records": "20000",
    "max.partition.fetch.bytes": str(8 << 20),
    "receive.buffer.bytes": str(1 << 20),
}


def kafka_source_options(stream) -> dict[str, str]:
    """Spark Kafka source options for a StreamSpec (pure; secrets revealed, never log the result).

    Spark tracks offsets in the checkpoint and commits nothing to Kafka, so the job's consumer
    group becomes the prefix of the group ids Spark generates (it names the job on the broker's
    group list), and auto_offset_reset only decides where a job with no checkpoint starts.
    """
    kafka = stream.kafka
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "startingOffsets": kafka.auto_offset_reset}
    if stream.topic_pattern:
        options["subscribePattern"] = stream.topic_pattern
    else:
        options["subscribe"] = ",".join(stream.topics)
    if kafka.group_id:
        options["groupIdPrefix"] = kafka.group_id
    if kafka.max_messages_per_batch:
        options["maxOffsetsPerTrigger"] = str(kafka.max_messages_per_batch)
    client = {**CONSUMER_DEFAULTS, **kafka.client}
    client.update({k: v.get_secret_value() for k, v in kafka.client_secrets.items()})
    for key, value in client.items():
        options[f"kafka.{key}"] = value
    return options


def describe(stream) -> str:
    """Where a stream reads from, for people (no secrets)."""
    what = f"pattern {stream.topic_pattern}" if stream.topic_pattern else ", ".join(stream.topics)
    return f"{what} on {stream.kafka.bootstrap_servers}"


# where a query with a new checkpoint starts reading (`run --starting`); a checkpoint's own offsets
# always win over these
STARTING_OPTIONS = ("startingOffsets", "startingTimestamp", "startingOffsetsByTimestampStrategy")


def checked_starting(value, plan, where: str) -> dict:
    """Starting options by table, {"<table>": {"startingOffsets"|...: "<value>"}}, as a deploy
    passes them (--starting, a standby's handoff), checked against the job's streams."""
    tables = {s.table for s in plan.streams}
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise DaggerError(f'{where} must be {{"<table>": {{"startingOffsets": ...}}}}')
    for table, options in value.items():
        if table not in tables:
            raise DaggerError(f"{where}: {table!r} is not one of the job's streams ({', '.join(sorted(tables))})")
        for key, option in options.items():
            if key not in STARTING_OPTIONS or not isinstance(option, str):
                raise DaggerError(
                    f"{where}: {table}.{key} is not one of {', '.join(STARTING_OPTIONS)} with a string value"
                )
    return value


def read_kafka(spark, stream, starting: dict[str, str] | None = None):
    """The stream's raw Kafka records (key, value, topic, partition, offset, timestamp) as a
    streaming DataFrame. Nothing connects to Kafka until a query starts."""
    from pyspark.errors import IllegalArgumentException

    if not stream.topics and not stream.topic_pattern:
        raise DaggerError(f"stream {stream.table}: no topics to read (set topics or topic_pattern)")
    reader = spark.readStream.format("kafka")
    options = kafka_source_options(stream)
    if starting:
        options.pop("startingOffsets", None)
        options.update(starting)
    for key, value in options.items():
        reader = reader.option(key, value)
    try:
        return reader.load()
    except IllegalArgumentException as e:  # Spark refuses some consumer settings by name
        raise DaggerError(
            f"stream {stream.table}: Spark's Kafka source refused a setting: {str(e).splitlines()[0]}"
        ) from None
