"""From raw Kafka values to the analyst's tables: decode in the JVM, add rowtime, set bad ones aside."""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.descriptor import FieldDescriptor

from dagger_runtime.suggest import closest

from .errors import DaggerError

TIMESTAMP = "google.protobuf.Timestamp"


@dataclass(frozen=True)
class StreamPlan:
    """What the runtime needs to turn one stream's bytes into its SQL table."""

    table: str
    proto_class: str
    data_type: str  # PROTO | JSON
    event_time_field: str  # the Timestamp field whose value becomes the rowtime column
    event_time_number: int  # ... and its protobuf field number
    rowtime: str
    proto_as_written: str = ""  # the job's name for the message: a raystack Java class name, say


def resolve_event_time(stream, descriptor, where: str):
    """The event-time field of a stream, named either by protobuf field number (raystack/dagger's
    INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX) or by name. It must be a google.protobuf.Timestamp."""
    et = stream.event_time
    number = getattr(et, "field_number", None)
    name = getattr(et, "field_name", None)
    if number is not None:
        field = descriptor.fields_by_number.get(int(number))
        if field is None:
            fields = ", ".join(f"{f.name}={f.number}" for f in descriptor.fields)
            raise DaggerError(f"{where}: {descriptor.full_name} has no field number {number} (its fields: {fields})")
    else:
        field = descriptor.fields_by_name.get(name)
        if field is None:
            timestamps = [
                f.name
                for f in descriptor.fields
                if f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.full_name == TIMESTAMP
            ]
            close = closest(name, descriptor.fields_by_name, n=1)
            raise DaggerError(
                f"{where}: {descriptor.full_name} has no field named {name!r}"
                + (f"; did you mean {close[0]}?" if close else "")
                + (f" Its timestamp fields: {', '.join(timestamps)}" if timestamps else "")
            )
    if field.type != FieldDescriptor.TYPE_MESSAGE or field.message_type.full_name != TIMESTAMP:
        timestamps = [
            f"{f.name} ({f.number})"
            for f in descriptor.fields
            if f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type.full_name == TIMESTAMP
        ]
        raise DaggerError(
            f"{where}: the event-time field {field.name} ({field.number}) of "
            f"{descriptor.full_name} is not a google.protobuf.Timestamp"
            + (f"; timestamp fields: {', '.join(timestamps)}" if timestamps else "")
        )
    return field


def plan_streams(job, descriptor_set) -> list[StreamPlan]:
    plans = []
    for i, stream in enumerate(job.streams):
        where = f"streams[{i}] ({stream.table})"
        if not stream.proto_class:
            raise DaggerError(
                f"{where}: JSON input needs `proto`, the message whose proto3 JSON the topic "
                "carries (it gives the table its columns); input described only by a JSON "
                "Schema is not supported yet"
            )
        try:
            descriptor = descriptor_set.message_descriptor(stream.proto_class)
        except Exception as e:  # noqa: BLE001 - SchemaError names the message and close matches
            raise DaggerError(f"{where}: {e}") from None
        field = resolve_event_time(stream, descriptor, where)
        if job.rowtime_attribute in descriptor.fields_by_name:
            raise DaggerError(
                f"{where}: {descriptor.full_name} already has a field named "
                f"{job.rowtime_attribute!r}; choose another rowtime attribute name"
            )
        # the proto name from here on (the JVM decoder, the state key), whatever the job called it
        plans.append(
            StreamPlan(
                stream.table,
                descriptor.full_name,
                stream.data_type,
                field.name,
                field.number,
                job.rowtime_attribute,
                stream.proto_class,
            )
        )
    return plans


def decode(spark, raw, plan: StreamPlan, descriptor_set, keep: tuple[str, ...] = ()):
    """Decode raw.value with the JVM decoder. Returns (table, rejected): the analyst's table and
    the messages set aside (those that do not parse, tombstones, and those without event time)
    with the reason, plus the `keep` columns of raw (positions, Kafka coordinates)."""
    from pyspark.sql import functions as F

    udf_name = f"__dagger_decode_{plan.table}"
    spark._jvm.dev.daggers.runtime.Functions.registerDecoder(
        spark._jsparkSession,
        udf_name,
        bytearray(descriptor_set.data),
        plan.proto_class,
        plan.data_type,
        plan.event_time_number,
    )
    decoded = raw.select(*keep, F.expr(f"{udf_name}(value)").alias("__d"))
    table = decoded.where(F.col("__d.error").isNull()).select("__d.message.*", F.col("__d.rowtime").alias(plan.rowtime))
    rejected = decoded.where(F.col("__d.error").isNotNull()).select(*keep, F.col("__d.error").alias("reason"))
    return table, rejected, decoded


# the Kafka record's own columns, which a dead-letter copy carries over exactly
KAFKA_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


def register_tables(
    spark, plan, raws: dict, set_aside: dict | None = None, heartbeats: dict | None = None, late: dict | None = None
) -> None:
    """Decode each stream's raw records into its SQL table, with the job's watermark on rowtime,
    and register it under the stream's table name.

    set_aside maps a table to its dead-letter function (dead_letters.register): each message that
    does not become a row is sent aside by the task that decoded it, in the same filter that drops
    it, so the topic is scanned once. Without it (validate, tests) such messages are just dropped.
    heartbeats maps a table to the directory its idle heartbeats are written to (dagger_runtime.idle).
    late maps a table to its late-message function (dagger_runtime.late): a decoded message whose
    window has closed is set aside the same way, with its reason."""
    from pyspark.sql import functions as F

    delay = f"{plan.job.watermark_delay_ms} milliseconds"
    for stream in plan.streams:
        raw = raws[stream.table]
        table, _, decoded = decode(spark, raw, stream, plan.descriptor_set, keep=KAFKA_COLUMNS if set_aside else ())
        if set_aside:
            reason = F.col("__d.error")
            if late and stream.table in late:  # (coalesce is lazy: only decoded rows are asked)
                reason = F.coalesce(reason, F.call_function(late[stream.table], F.unix_millis(F.col("__d.rowtime"))))
            decoded = decoded.withColumn(REASON, reason)
            # only a row set aside reaches the call (CASE is lazy), so good rows pay nothing for it
            send = F.call_function(
                set_aside[stream.table],
                F.col(REASON),
                *[
                    F.unix_millis(F.col(c)) if c == "timestamp" else F.col(c)
                    for c in ("key", "value", "topic", "partition", "offset", "timestamp")
                ],
            )
            table = decoded.where(F.when(F.col(REASON).isNull(), F.lit(True)).otherwise(send)).select(
                "__d.message.*", F.col("__d.rowtime").alias(stream.rowtime)
            )
        heartbeat = heartbeat_rows(spark, table, stream, heartbeats[stream.table]) if heartbeats else None
        source_watermark(table, stream, delay, heartbeat).createOrReplaceTempView(stream.table)


REASON = "__dagger_set_aside"  # why a message is set aside (null: it becomes a row)
# the name under which each stream's decoded rows are counted (progress's observedMetrics)
SOURCE_METRICS = "__dagger_source_{table}"
HEARTBEAT = "__dagger_heartbeat"


def source_watermark(table, stream: StreamPlan, delay: str, heartbeat=None):
    """The stream's watermark, taken from every decoded message, as Flink takes it at the source.

    Spark's optimizer moves a query's deterministic predicates that do not read the event time
    below EventTimeWatermark (PushPredicateThroughNonJoin), so a WHERE would decide which
    messages move the watermark: a dagger counting rare events would hold its windows open
    until the next rare one, and a backfill's last windows would never be written. An observe()
    (CollectMetrics) right above the watermark is a node no predicate is pushed through (that
    would change what it counts), and it costs one count per row; the count is each stream's
    decoded rows per batch, reported in the progress's observedMetrics.

    heartbeat: the stream's heartbeat rows (heartbeat_rows), which move its watermark while it is
    idle and are dropped right above it; the metrics then also carry the stream's latest event time.
    """
    from pyspark.sql import functions as F

    name = SOURCE_METRICS.format(table=stream.table)
    if heartbeat is None:
        return table.withWatermark(stream.rowtime, delay).observe(name, F.count(F.lit(1)).alias("rows"))
    message = F.col(HEARTBEAT).isNull()
    return (
        table.withColumn(HEARTBEAT, F.lit(None).cast("boolean"))
        .unionByName(heartbeat)
        .withWatermark(stream.rowtime, delay)
        .observe(
            name,
            F.count(F.when(message, 1)).alias("rows"),
            F.max(F.when(message, F.col(stream.rowtime))).alias("max_event_time"),
        )
        .where(message)
        .drop(HEARTBEAT)
    )


def heartbeat_rows(spark, table, stream: StreamPlan, directory: str):
    """Rows of the table's shape, all NULL but rowtime, from the JSON files the driver writes into
    `directory` ({"rowtime_ms": ...}): Spark's file source keeps its place in the checkpoint and
    deletes each file once a batch has read it (cleanSource), so an idle stream's heartbeats do not
    pile up for the source to list again every batch."""
    from pyspark.sql import functions as F

    source = spark.readStream.schema("rowtime_ms BIGINT").option("cleanSource", "delete").json(directory)
    columns = [
        F.timestamp_millis(F.col("rowtime_ms")).alias(f.name)
        if f.name == stream.rowtime
        else F.lit(None).cast(f.dataType).alias(f.name)
        for f in table.schema.fields
    ]
    return source.select(*columns, F.lit(True).alias(HEARTBEAT))
