"""`kafka`: result rows as Kafka messages, written by Spark's Kafka writer in the JVM.

PROTO: the output columns map to the fields of `proto_message` by name (raystack/dagger's
SINK_KAFKA_PROTO_MESSAGE), checked before the job starts; `proto_key` does the same for the key.
JSON: each row as a JSON object, timestamps in ISO-8601 UTC. Without `proto_key` the key is the
JSON object of the window and tag columns, so a compacted topic keeps the latest row of each.
A replayed batch writes its rows again (Kafka's writer is at-least-once); with the key a
compacted topic, or a reader keeping the latest per key, sees each window once.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor as FD

from dagger_runtime.suggest import closest

from ..errors import DaggerError
from .base import Sink, window_and_tags

TIMESTAMP = "google.protobuf.Timestamp"
TS_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
_INTEGRAL = {"tinyint", "smallint", "int", "bigint"}
_NUMERIC_FIELDS = {
    FD.TYPE_INT32,
    FD.TYPE_INT64,
    FD.TYPE_UINT32,
    FD.TYPE_UINT64,
    FD.TYPE_SINT32,
    FD.TYPE_SINT64,
    FD.TYPE_FIXED32,
    FD.TYPE_FIXED64,
    FD.TYPE_SFIXED32,
    FD.TYPE_SFIXED64,
}
_FLOAT_FIELDS = {FD.TYPE_FLOAT, FD.TYPE_DOUBLE}


def type_problem(spark_type: str, field) -> str | None:
    """Why a Spark column type cannot be written to a protobuf field, or None (pure)."""
    repeated = field.label == FD.LABEL_REPEATED
    is_map = repeated and field.message_type is not None and field.message_type.GetOptions().map_entry
    if is_map:
        return None if spark_type.startswith(("map<", "array<struct<key:")) else "a map field needs a map"
    if repeated:
        if not spark_type.startswith("array<"):
            return "a repeated field needs an array"
        spark_type = spark_type[len("array<") : -1]
    t = field.type
    if t in _NUMERIC_FIELDS:
        return None if spark_type in _INTEGRAL else f"a {_type_name(field)} field needs an integer"
    if t in _FLOAT_FIELDS:
        ok = spark_type in _INTEGRAL or spark_type in ("float", "double") or spark_type.startswith("decimal")
        return None if ok else f"a {_type_name(field)} field needs a number"
    if t == FD.TYPE_BOOL:
        return None if spark_type == "boolean" else "a bool field needs a boolean"
    if t == FD.TYPE_STRING:
        return None if spark_type == "string" else "a string field needs a string (CAST it)"
    if t == FD.TYPE_BYTES:
        return None if spark_type == "binary" else "a bytes field needs binary"
    if t == FD.TYPE_ENUM:
        return None if spark_type == "string" or spark_type in _INTEGRAL else "an enum field needs a name or a number"
    if field.message_type.full_name == TIMESTAMP:
        ok = spark_type.startswith(("timestamp", "struct<seconds:"))
        return None if ok else "a google.protobuf.Timestamp field needs a timestamp"
    return None if spark_type.startswith("struct<") else f"a {field.message_type.full_name} field needs a struct"


def _type_name(field) -> str:
    return {v: k for k, v in vars(FD).items() if k.startswith("TYPE_")}[field.type][5:].lower()


def check_columns(descriptor, columns: list[dict], what: str) -> None:
    """Every column must be a field of the message, of a type that fits (pure)."""
    fields = descriptor.fields_by_name
    problems = []
    for column in columns:
        field = fields.get(column["name"])
        if field is None:
            close = closest(column["name"], fields, n=1)
            problems.append(
                f"column {column['name']} is not a field of {descriptor.full_name}"
                + (f" (did you mean {close[0]}?)" if close else f" (its fields: {', '.join(fields)})")
            )
            continue
        problem = type_problem(column["type"], field)
        if problem:
            problems.append(
                f"column {column['name']} ({column['type']}) cannot be written to field {field.name}: {problem}"
            )
    if problems:
        raise DaggerError(f"sink kafka {what}: " + "; ".join(problems))


class KafkaSink(Sink):
    kind = "kafka"

    def __init__(self, plan, columns, **kwargs):
        super().__init__(plan, columns, **kwargs)
        self.spec = plan.job.sink.kafka
        self.names = [c["name"] for c in columns]
        self._registered = False

    @classmethod
    def check(cls, plan, columns):
        spec = plan.job.sink.kafka
        if spec.data_type != "PROTO":
            return
        dset = plan.descriptor_set
        try:
            message = dset.message_descriptor(spec.proto_message)
        except Exception as e:  # noqa: BLE001 - SchemaError names the message and close matches
            raise DaggerError(f"sink kafka proto_message: {e}") from None
        check_columns(message, columns, f"proto_message {spec.proto_message}")
        if spec.proto_key:
            try:
                key = dset.message_descriptor(spec.proto_key)
            except Exception as e:  # noqa: BLE001
                raise DaggerError(f"sink kafka proto_key: {e}") from None
            names = {c["name"] for c in columns}
            missing = [f for f in key.fields_by_name if f not in names]
            if missing:
                raise DaggerError(
                    f"sink kafka proto_key {spec.proto_key}: its fields {', '.join(missing)} "
                    f"are not output columns of the query"
                )
            check_columns(key, [c for c in columns if c["name"] in key.fields_by_name], f"proto_key {spec.proto_key}")

    def describe(self) -> str:
        what = self.spec.proto_message if self.spec.data_type == "PROTO" else "JSON"
        return f"kafka {self.spec.topic} on {self.spec.brokers} ({what})"

    def _register(self, spark) -> None:
        functions = spark._jvm.dev.daggers.runtime.Functions
        data = bytearray(self.plan.descriptor_set.data)
        if self.spec.data_type == "PROTO":
            # by proto name: the spec may give raystack's Java class name
            proto = self.plan.descriptor_set.message_descriptor
            functions.registerEncoder(
                spark._jsparkSession, "__dagger_encode_value", data, proto(self.spec.proto_message).full_name
            )
            if self.spec.proto_key:
                functions.registerEncoder(
                    spark._jsparkSession, "__dagger_encode_key", data, proto(self.spec.proto_key).full_name
                )
        self._registered = True

    def records(self, dataframe):
        """(key, value) binary columns for the rows (in the JVM: no Python per row)."""
        from pyspark.sql import functions as F

        if not self._registered:
            self._register(dataframe.sparkSession)

        def struct(names):
            return F.struct(*[F.col(f"`{n}`") for n in names])

        def as_json(names):
            return F.to_json(struct(names), {"timestampFormat": TS_FORMAT}).cast("binary")

        if self.spec.data_type == "PROTO":
            value = F.call_udf("__dagger_encode_value", struct(self.names))
        else:
            value = as_json(self.names)
        if self.spec.proto_key:
            key_names = [
                n
                for n in self.names
                if n in self.plan.descriptor_set.message_descriptor(self.spec.proto_key).fields_by_name
            ]
            key = F.call_udf("__dagger_encode_key", struct(key_names))
        else:
            names = window_and_tags(self.names)
            key = as_json(names) if names else F.lit(None).cast("binary")
        return dataframe.select(key.alias("key"), value.alias("value"))

    def write(self, dataframe, batch_id: int) -> int:
        records = self.records(dataframe)
        count = records.count()
        if count:
            writer = records.write.format("kafka").option("topic", self.spec.topic)
            for key, value in self.spec.kafka_options().items():
                writer = writer.option(f"kafka.{key}", value)
            self._retry(f"batch {batch_id}", writer.save)
        self.stats.rows += count
        self.stats.batches += 1
        return count
