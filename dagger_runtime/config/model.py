"""The typed, validated model of a dagger job.

Both file formats (the native YAML and raystack/dagger's properties) load into
these frozen models; the rest of the runtime only ever sees a ``JobSpec``.
Models validate themselves when built directly too (``JobSpec(...)``,
``JobSpec.model_validate(dict)``), but the loader is what turns problems into
messages that name the file and the field as written there.

Secrets (sink passwords, Kafka ``*password*``/``sasl.jaas.config`` settings)
are ``pydantic.SecretStr``: ``repr``/``str`` show ``**********`` and
``JobSpec.redacted()`` shows ``***``; call ``.get_secret_value()`` (or
``kafka_options()``) only where the secret is handed to a client.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    model_validator,
)

from dagger_runtime.config import _checks, rules
from dagger_runtime.config._draft import render_loc

# Defaults are raystack/dagger's own (dagger-core .../utils/Constants.java and
# dagger-common .../core/Constants.java, where the code and the docs differ the code wins).
DEFAULT_ROWTIME_ATTRIBUTE = "rowtime"
DEFAULT_WATERMARK_DELAY_MS = 10_000  # FLINK_WATERMARK_DELAY_MS_DEFAULT
# Flink settings a dagger's Spark job has no use for, by the name a job file gives them: accepted
# (a job written for raystack/dagger loads unchanged), with a note saying why they change nothing
IGNORED_SETTINGS = {
    "watermark_interval": "ignored: Spark moves the watermark once per micro-batch, from every message the batch read",
    "checkpoint_interval": "ignored: Spark commits every micro-batch to the checkpoint; there is no separate interval",
    "idle_state_retention": "ignored: a dagger's state is its open windows and join buffers, which the "
    "watermark closes; nothing else is kept to expire",
}
DEFAULT_PARALLELISM = 1  # FLINK_PARALLELISM_DEFAULT
# a billion rows in state is about 1.2 TB of executor memory: past any worker (executor_memory_mb)
MAX_STATE_ROWS = 1_000_000_000
DEFAULT_STENCIL_FETCH_TIMEOUT_MS = 10_000  # SCHEMA_REGISTRY_STENCIL_FETCH_TIMEOUT_MS_DEFAULT (docs say 60000)
DEFAULT_STENCIL_CACHE_TTL_MS = 900_000  # SCHEMA_REGISTRY_STENCIL_CACHE_TTL_MS_DEFAULT (docs say 7200000)
DEFAULT_STENCIL_REFRESH_STRATEGY = "LONG_POLLING"
DEFAULT_AUTO_OFFSET_RESET = "latest"
MAX_STREAMS = 2

_RULES_CHECKED = "dagger_rules_checked"

# --- field types -------------------------------------------------------------------------

NonNegativeInt = Annotated[int, BeforeValidator(_checks.to_int), AfterValidator(_checks.at_least(0))]
PositiveInt = Annotated[int, BeforeValidator(_checks.to_int), AfterValidator(_checks.at_least(1))]
Bool = Annotated[bool, BeforeValidator(_checks.to_bool)]
Text = Annotated[str, AfterValidator(_checks.non_empty_text)]
OptionalText = Annotated[str | None, BeforeValidator(_checks.optional_text)]
SqlIdentifier = Annotated[str, AfterValidator(_checks.sql_identifier)]
Topic = Annotated[str, AfterValidator(_checks.kafka_topic)]
TopicPattern = Annotated[str, AfterValidator(_checks.topic_pattern)]
ProtoName = Annotated[str, AfterValidator(_checks.proto_name)]
BootstrapServers = Annotated[str, BeforeValidator(_checks.bootstrap_servers)]
ClientKey = Annotated[str, AfterValidator(_checks.client_key)]
OptionalSecret = Annotated[SecretStr | None, BeforeValidator(_checks.optional_text)]


def _field_number_before(value: Any) -> Any:
    try:
        return _checks.to_int(value)
    except ValueError:
        raise ValueError(f"expected a protobuf field number (an integer), got {_checks.show(value)}") from None


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


def _count_streams(streams: tuple[Any, ...]) -> tuple[Any, ...]:
    if not streams:
        raise ValueError("at least one stream is required")
    if len(streams) > MAX_STREAMS:
        raise ValueError(f"at most {MAX_STREAMS} streams are supported (as in raystack/dagger), got {len(streams)}")
    return streams


def _key_columns(values: tuple[Any, ...]) -> tuple[Any, ...]:
    if not values:
        raise ValueError("at least one key column is required, so a replayed window overwrites its row")
    if len(set(values)) != len(values):
        raise ValueError("a key column is listed more than once")
    return values


FieldNumber = Annotated[int, BeforeValidator(_field_number_before), AfterValidator(_checks.field_number)]
DataType = Annotated[Literal["PROTO", "JSON"], BeforeValidator(_upper)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    def _check_own_rules(self, info: ValidationInfo, found: list[rules.Issue]) -> None:
        if info.context and info.context.get(_RULES_CHECKED):
            return  # the loader checked these on the raw data already, with better locations
        if found:
            raise ValueError("; ".join(f"{render_loc(loc)}: {msg}" if loc else msg for loc, msg in found))


# --- streams -----------------------------------------------------------------------------


class EventTime(_Spec):
    """Which message field is the event time (it becomes the rowtime column).

    raystack/dagger names it by protobuf field number
    (``INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX``); JSON input and the YAML
    format may name it instead. At least one is set.
    """

    field_number: FieldNumber | None = None
    field_name: Annotated[str, AfterValidator(_checks.field_name)] | None = None

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> EventTime:
        self._check_own_rules(info, rules.event_time_rules(self.model_dump()))
        return self


class KafkaSourceSpec(_Spec):
    """Where a stream's messages come from."""

    name: OptionalText = None  # a logical cluster name (dagger's SOURCE_KAFKA_NAME)
    bootstrap_servers: BootstrapServers  # "host:port,host:port"
    group_id: OptionalText = None
    auto_offset_reset: Annotated[Literal["latest", "earliest"], BeforeValidator(_lower)] = DEFAULT_AUTO_OFFSET_RESET
    auto_commit: Bool = False
    # at most this many messages per micro-batch over all of the stream's partitions (Spark's
    # maxOffsetsPerTrigger); None reads everything new at each batch
    max_messages_per_batch: PositiveInt | None = None
    # Further consumer settings under Kafka's own names (security.protocol, sasl.mechanism, ssl.*);
    # the secret ones (passwords, sasl.jaas.config) live in client_secrets.
    client: dict[ClientKey, str] = Field(default_factory=dict)
    client_secrets: dict[ClientKey, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> KafkaSourceSpec:
        self._check_own_rules(info, rules.kafka_source_rules(self.model_dump()))
        return self

    def kafka_options(self) -> dict[str, str]:
        """Every setting for a Kafka client under Kafka's names, secrets revealed."""
        options = {"bootstrap.servers": self.bootstrap_servers}
        if self.group_id:
            options["group.id"] = self.group_id
        options.update(self.client)
        options.update({k: v.get_secret_value() for k, v in self.client_secrets.items()})
        return options


class StreamSpec(_Spec):
    """One input stream: Kafka topics of one message type, registered as an SQL table."""

    table: SqlIdentifier
    proto_class: ProtoName | None = None  # required for PROTO input
    topics: tuple[Topic, ...] = ()
    topic_pattern: TopicPattern | None = None  # a regex over topic names, instead of topics
    event_time: EventTime
    data_type: DataType = "PROTO"
    json_schema: OptionalText = None  # JSON input without proto_class
    kafka: KafkaSourceSpec

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> StreamSpec:
        self._check_own_rules(info, rules.stream_rules(self.model_dump()))
        return self


# --- schema ------------------------------------------------------------------------------


class SchemaSpec(_Spec):
    """Where message descriptors come from.

    ``version`` pins a descriptor set of the project's registry (its digest, or
    a prefix of at least 8 hex digits); ``enabled`` with ``stencil_urls``
    fetches FileDescriptorSets from a Stencil server instead, as dagger does.
    """

    enabled: Bool = False
    stencil_urls: tuple[Annotated[str, AfterValidator(_checks.stencil_url)], ...] = ()
    version: Annotated[str, BeforeValidator(_checks.schema_version)] | None = None
    fetch_timeout_ms: PositiveInt = DEFAULT_STENCIL_FETCH_TIMEOUT_MS
    auto_refresh: Bool = False
    refresh_strategy: Annotated[Literal["LONG_POLLING", "VERSION_BASED_REFRESH"], BeforeValidator(_upper)] = (
        DEFAULT_STENCIL_REFRESH_STRATEGY
    )
    cache_ttl_ms: PositiveInt = DEFAULT_STENCIL_CACHE_TTL_MS

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> SchemaSpec:
        self._check_own_rules(info, rules.schema_rules(self.model_dump()))
        return self


# --- sinks -------------------------------------------------------------------------------


class InfluxSinkSpec(_Spec):
    """InfluxDB 1.x: window_timestamp is the point's time, tag_*/label_* columns tags, the rest fields."""

    url: Annotated[str, AfterValidator(_checks.url_with_scheme(("http", "https")))]
    username: OptionalText = None
    password: OptionalSecret = None
    db_name: Text
    measurement_name: Annotated[str, AfterValidator(_checks.measurement)]
    retention_policy: OptionalText = None  # None: the database's default policy
    # v1: line protocol on /write (InfluxDB 1.x, as dagger); v2: the v2 write API (InfluxDB 2.x,
    # 1.8+, VictoriaMetrics), with db_name[/retention_policy] as the bucket
    api: Annotated[Literal["v1", "v2"], BeforeValidator(_lower)] = "v1"
    org: OptionalText = None  # v2 only
    batch_size: NonNegativeInt = 0  # dagger's default; 0 = no limit per write
    flush_duration_ms: NonNegativeInt = 0

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> InfluxSinkSpec:
        self._check_own_rules(info, rules.influx_rules(self.model_dump()))
        return self


class KafkaSinkSpec(_Spec):
    """Results as Kafka messages (PROTO: column names are the output message's field names)."""

    name: OptionalText = None  # dagger's SINK_KAFKA_STREAM
    brokers: BootstrapServers
    topic: Topic
    data_type: DataType = "PROTO"
    proto_key: ProtoName | None = None
    proto_message: ProtoName | None = None  # required for PROTO
    json_schema: OptionalText = None
    linger_ms: NonNegativeInt = 0  # SINK_KAFKA_LINGER_MS_DEFAULT
    client: dict[ClientKey, str] = Field(default_factory=dict)
    client_secrets: dict[ClientKey, SecretStr] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> KafkaSinkSpec:
        self._check_own_rules(info, rules.kafka_sink_rules(self.model_dump()))
        return self

    def kafka_options(self) -> dict[str, str]:
        """Every producer setting under Kafka's names, secrets revealed."""
        options = {"bootstrap.servers": self.brokers, "linger.ms": str(self.linger_ms)}
        options.update(self.client)
        options.update({k: v.get_secret_value() for k, v in self.client_secrets.items()})
        return options


class PostgresSinkSpec(_Spec):
    """Rows upserted into a table on key_columns, so a replayed window overwrites itself."""

    url: Annotated[str, AfterValidator(_checks.postgres_url)]  # no password in it
    table: Annotated[str, AfterValidator(_checks.qualified_identifier)]
    user: OptionalText = None
    password: OptionalSecret = None
    # the upsert key; default: window_timestamp and the tag_*/label_* columns
    key_columns: Annotated[tuple[SqlIdentifier, ...], AfterValidator(_key_columns)] | None = None

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> PostgresSinkSpec:
        self._check_own_rules(info, rules.postgres_rules(self.model_dump()))
        return self


class SinkSpec(_Spec):
    """Where results go; exactly the section named by ``type`` is present ('log' has none)."""

    type: Annotated[Literal["influx", "kafka", "postgres", "log"], BeforeValidator(_lower)]
    influx: InfluxSinkSpec | None = None
    kafka: KafkaSinkSpec | None = None
    postgres: PostgresSinkSpec | None = None

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> SinkSpec:
        self._check_own_rules(info, rules.sink_rules(self.model_dump()))
        return self


# --- the job -----------------------------------------------------------------------------

with warnings.catch_warnings():
    # `schema` is the natural name; it shadows BaseModel's deprecated `schema()` classmethod.
    warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)

    class JobSpec(_Spec):
        """A whole dagger job: streams in, one SQL query, one sink."""

        name: Annotated[str, AfterValidator(_checks.job_name)]
        team: Annotated[str, AfterValidator(_checks.team_name)] | None = None
        description: str = ""
        streams: Annotated[tuple[StreamSpec, ...], AfterValidator(_count_streams)]
        sql: Text
        rowtime_attribute: SqlIdentifier = DEFAULT_ROWTIME_ATTRIBUTE
        watermark_delay_ms: NonNegativeInt = DEFAULT_WATERMARK_DELAY_MS
        # Flink's table.exec.source.idle-timeout: a stream of a job of several streams that reads
        # nothing for this long stops holding the job's watermark back (0: never)
        idle_timeout_ms: NonNegativeInt = 0
        parallelism: PositiveInt = DEFAULT_PARALLELISM
        # the most rows the job holds in state at once (keys x open windows): a deploy gives its
        # executor the memory for them (dagger_runtime/lifecycle/spark.executor_memory_mb)
        state_rows: Annotated[PositiveInt, AfterValidator(_checks.at_most(MAX_STATE_ROWS))] | None = None
        schema: SchemaSpec = SchemaSpec()
        sink: SinkSpec
        # where `run` keeps its progress (Kafka offsets, open windows): a local path or gs://...;
        # `run --checkpoint` overrides it
        checkpoint_location: Annotated[str, AfterValidator(_checks.checkpoint_location)] | None = None
        # messages that cannot become rows go here, on their stream's own Kafka cluster
        # (default: "<name>-dlq")
        dead_letter_topic: Topic | None = None
        origin: Literal["yaml", "dagger-properties"] = "yaml"
        source_path: str | None = None
        # Things worth knowing that did not stop the load (unknown or ignored keys, ...).
        warnings: tuple[str, ...] = ()

        @model_validator(mode="after")
        def _rules(self, info: ValidationInfo) -> JobSpec:
            self._check_own_rules(info, rules.job_rules(self.model_dump()))
            return self

        @property
        def dlq_topic(self) -> str:
            return self.dead_letter_topic or f"{self.name}-dlq"

        @property
        def tables(self) -> tuple[str, ...]:
            return tuple(stream.table for stream in self.streams)

        def redacted(self) -> dict[str, Any]:
            """The job as plain data (JSON-ready) for printing, every secret replaced by '***'."""
            return _redact(self.model_dump())


def _redact(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return "***"
    if isinstance(value, dict):
        return {k: _redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v) for v in value]
    return value


def rules_checked_context() -> dict[str, bool]:
    """Validation context for callers that ran ``rules.all_rules`` themselves."""
    return {_RULES_CHECKED: True}
