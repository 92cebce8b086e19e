"""The native job format: one YAML file per dagger, written by people.

A complete example (every key; only ``streams``, ``sql`` and ``sink`` are
required)::

    name: completed-bookings-by-s2      # default: the file name without .yaml
    team: allocations                   # a DNS label; the team that owns the job
    description: Completed bookings per S2 cell, every 30 seconds

    streams:                            # one or two
      - table: data_stream              # the SQL table name
        proto: gojek.esb.booking.BookingLogMessage
        topics: [GO_RIDE-booking-log, GO_CAR-booking-log]
        # topic_pattern: 'GO_.*-booking-log'   # instead of topics: a regex over topic names
        event_time: event_timestamp     # a field name, or its protobuf field number (5),
                                        # or {field_name: ..., field_number: ...}
        data_type: PROTO                # or JSON (then json_schema, or proto to derive it from)
        kafka:
          cluster: mainstream           # a logical name for the Kafka cluster
          bootstrap_servers: 127.0.0.1:9092        # or a list of host:port
          group_id: dagger-completed-bookings
          auto_offset_reset: latest     # or earliest
          auto_commit: false
          max_messages_per_batch: 200000  # default: everything new at each micro-batch
          client:                       # any further consumer setting, in Kafka's names
            security.protocol: SASL_SSL
            sasl.mechanism: SCRAM-SHA-512
            sasl.jaas.config: >-
              org.apache.kafka.common.security.scram.ScramLoginModule required
              username="dagger" password="${KAFKA_PASSWORD}";
            ssl.truststore.location: /etc/kafka/truststore.jks
            ssl.truststore.password: ${TRUSTSTORE_PASSWORD}

    sql: |
      SELECT s2id, COUNT(1) AS completed,
             TUMBLE_END(rowtime, INTERVAL '30' SECOND) AS window_timestamp
      FROM data_stream
      WHERE status = 'COMPLETED'
      GROUP BY TUMBLE(rowtime, INTERVAL '30' SECOND), s2id

    rowtime_attribute: rowtime          # the name of the event-time column
    watermark_delay: 60s                # durations: 500ms, 60s, 5m, 1h30m, 1d (or watermark_delay_ms: 60000)
    idle_timeout: 5m                    # a job of several streams: an idle one stops holding the watermark (default 0: never)
    parallelism: 2
    checkpoint_location: gs://team-checkpoints/completed-bookings   # or a local path
    dead_letter_topic: completed-bookings-dlq   # default: <name>-dlq

    schema:
      version: 4957b56c57da625e         # pin a descriptor set of protos/descriptors (>= 8 hex digits)
      # or fetch descriptors as raystack/dagger does:
      # stencil_urls: [http://stencil.local/v1/namespaces/gojek/descriptors/latest]
      # fetch_timeout: 10s
      # auto_refresh: false
      # refresh_strategy: LONG_POLLING  # or VERSION_BASED_REFRESH
      # cache_ttl: 15m

    sink:
      type: influx                      # influx, kafka, postgres or log; exactly its section
      influx:
        url: http://127.0.0.1:8086
        username: dagger
        password: ${INFLUX_PASSWORD}
        db_name: daggers
        measurement_name: completed_bookings
        retention_policy: autogen       # default: the database's default policy
        api: v1                         # v1 (/write, InfluxDB 1.x) or v2 (the v2 write API)
        # org: my-org                   # v2 only
        batch_size: 0
        flush_duration: 0ms
      # kafka:    {brokers: 127.0.0.1:9092, topic: completed-bookings, data_type: PROTO,
      #            proto_key: gojek.esb.aggregate.Key, proto_message: gojek.esb.aggregate.Count,
      #            linger: 5ms, client: {compression.type: snappy}}
      # postgres: {url: postgresql://127.0.0.1:5432/daggers, table: completed_bookings,
      #            user: dagger, password: '${PG_PASSWORD}', key_columns: [s2id, window_timestamp]}

Secrets (``password``, and Kafka client settings whose name contains
``password`` or ``secret``, ``sasl.jaas.config``, ``ssl.keystore.key``)
should be written as ``${ENV_VAR}`` references, resolved when the job is
loaded, so no secret sits in a committed file (``$${`` is a literal ``${``).
Unknown keys are errors (with a suggestion when a known key is close).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from dagger_runtime.config import _checks
from dagger_runtime.config._draft import Draft, Loc, render_loc
from dagger_runtime.config.model import IGNORED_SETTINGS
from dagger_runtime.source import CONSUMER_DEFAULTS
from dagger_runtime.yaml_lines import yaml_hint  # one table of YAML fixes, for team specs and jobs

_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class _Key:
    """How one YAML key maps into the model, and what it means (docs/reference/job-keys.md and the
    job files' JSON Schema are generated from these: dagger_runtime/config/reference.py)."""

    field: str
    # plain | list | duration_ms | section:<name> | list:<name> | event_time | client
    kind: str = "plain"
    twin: str | None = None  # the other spelling of the same field (watermark_delay / watermark_delay_ms)
    doc: str = ""


def _durations(base: str, field: str, doc: str) -> dict[str, _Key]:
    return {
        base: _Key(field, "duration_ms", twin=field, doc=doc),
        field: _Key(field, twin=base, doc=f"{base} in milliseconds"),
    }


_SECTIONS: dict[str, dict[str, _Key]] = {
    "job": {
        "name": _Key("name", doc="The dagger's name: a DNS label. Default: the file's name without its extension."),
        "team": _Key(
            "team", doc="The team that owns the dagger (a DNS label); `deploy` runs it on that team's clusters."
        ),
        "description": _Key("description", doc="Free text about the dagger, for the people who read its file."),
        "streams": _Key("streams", "list:stream", doc="The input streams: one or two, each a table of the query."),
        "sql": _Key("sql", doc="One query in Flink's SQL dialect over the streams' tables (docs/analyst/sql.md)."),
        "rowtime_attribute": _Key("rowtime_attribute", doc="The name of the event-time column each table gets."),
        **_durations(
            "watermark_delay",
            "watermark_delay_ms",
            "How late a message may be: a window closes once event time has passed its end by this much.",
        ),
        **_durations(
            "idle_timeout",
            "idle_timeout_ms",
            "With several streams: one that reads nothing for this long stops holding the watermark "
            "back (Flink's table.exec.source.idle-timeout; 0: never).",
        ),
        "parallelism": _Key("parallelism", doc="Spark's shuffle partitions and the executors' cores the job asks for."),
        "state_rows": _Key(
            "state_rows",
            doc="The most rows the job's windows hold in state at once (distinct keys times open windows), "
            "when that is over a few hundred thousand: `dagger deploy` gives its executor the memory for them "
            "(300 MB and about 1.2 KB a row, from the state bench; 1 GB when unset).",
        ),
        "checkpoint_location": _Key(
            "checkpoint_location",
            doc="Where `run` keeps its progress (Kafka offsets, open windows): a local "
            "path or gs://...; `run --checkpoint` overrides it.",
        ),
        "dead_letter_topic": _Key(
            "dead_letter_topic",
            doc="Messages that cannot become rows go here, on their stream's own Kafka cluster. Default: `<name>-dlq`.",
        ),
        "schema": _Key("schema", "section:schema", doc="Where the messages' protobuf descriptors come from."),
        "sink": _Key("sink", "section:sink", doc="Where the results go."),
    },
    "stream": {
        "table": _Key("table", doc="The table name the query reads this stream as."),
        "proto": _Key(
            "proto_class",
            doc="The protobuf message on the topics (its full name, or a Java class name "
            "as raystack configs give it). Required for PROTO input.",
        ),
        "topics": _Key("topics", "list", doc="The Kafka topics (a list, or one comma-separated string)."),
        "topic_pattern": _Key("topic_pattern", doc="A regular expression over topic names, instead of `topics`."),
        "event_time": _Key(
            "event_time",
            "event_time",
            doc="The Timestamp field that is the event time: a field name, its protobuf field "
            "number, or {field_name, field_number}.",
        ),
        "data_type": _Key("data_type", doc="PROTO, or JSON (then `json_schema`, or `proto` to derive it from)."),
        "json_schema": _Key("json_schema", doc="JSON input: the messages' JSON Schema, when no `proto` is given."),
        "kafka": _Key("kafka", "section:kafka_source", doc="The Kafka cluster the topics are on."),
    },
    "event_time": {
        "field_name": _Key("field_name", doc="The event-time field by name."),
        "field_number": _Key("field_number", doc="The event-time field by protobuf field number."),
    },
    "kafka_source": {
        "cluster": _Key(
            "name",
            doc="A logical name for the Kafka cluster (dagger's SOURCE_KAFKA_NAME); "
            "`dagger failover --kafka` moves streams by it.",
        ),
        "bootstrap_servers": _Key(
            "bootstrap_servers", doc="host:port of the brokers: a comma-separated string or a list."
        ),
        "group_id": _Key("group_id", doc="The consumer group the job's offsets are reported under."),
        "auto_offset_reset": _Key("auto_offset_reset", doc="Where a new job starts: latest or earliest."),
        "auto_commit": _Key(
            "auto_commit",
            doc="Accepted for raystack configs and changes nothing: a dagger's offsets are in its checkpoint.",
        ),
        "max_messages_per_batch": _Key(
            "max_messages_per_batch",
            doc="At most this many messages per micro-batch over all of the stream's "
            "partitions (Spark's maxOffsetsPerTrigger). Default: everything new.",
        ),
        "client": _Key(
            "client",
            "client",
            doc="Any further consumer setting under Kafka's own names (security.protocol, sasl.*, "
            "ssl.*); secrets as ${ENV_VAR} references. Unless set here, the reader uses "
            + ", ".join(f"{k}={v}" for k, v in CONSUMER_DEFAULTS.items())
            + " (2.3x the speed of Kafka's own defaults in `make bench`).",
        ),
    },
    "schema": {
        "version": _Key(
            "version", doc="Pin a descriptor set of `protos/descriptors` (its digest, at least 8 hex digits)."
        ),
        "stencil_urls": _Key(
            "stencil_urls", "list", doc="Fetch FileDescriptorSets from a Stencil server, as dagger does."
        ),
        "enabled": _Key("enabled", doc="Use `stencil_urls` (set for you when they are given)."),
        **_durations("fetch_timeout", "fetch_timeout_ms", "How long a Stencil fetch may take."),
        "auto_refresh": _Key("auto_refresh", doc="Fetch the descriptors again while the job runs."),
        "refresh_strategy": _Key("refresh_strategy", doc="LONG_POLLING or VERSION_BASED_REFRESH."),
        **_durations("cache_ttl", "cache_ttl_ms", "How long fetched descriptors are kept."),
    },
    "sink": {
        "type": _Key(
            "type", doc="influx, kafka, postgres or log; exactly the section it names is given (log has none)."
        ),
        "influx": _Key(
            "influx",
            "section:influx",
            doc="InfluxDB: the window is the point's time, tag_*/label_* columns tags, the rest fields.",
        ),
        "kafka": _Key("kafka", "section:kafka_sink", doc="Kafka: a message per result row."),
        "postgres": _Key(
            "postgres",
            "section:postgres",
            doc="PostgreSQL: rows upserted on `key_columns`, so a replayed window overwrites itself.",
        ),
    },
    "influx": {
        "url": _Key("url", doc="http(s)://host:port of the InfluxDB server."),
        "username": _Key("username", doc="The user the sink writes as."),
        "password": _Key("password", doc="Its password, as a ${ENV_VAR} reference."),
        "db_name": _Key("db_name", doc="The database (v1) or the bucket's database part (v2)."),
        "measurement_name": _Key("measurement_name", doc="The measurement the rows are written to."),
        "retention_policy": _Key("retention_policy", doc="Default: the database's default policy."),
        "api": _Key(
            "api",
            doc="v1: line protocol on /write (InfluxDB 1.x, as dagger); v2: the v2 write API "
            "(InfluxDB 2.x, 1.8+, VictoriaMetrics).",
        ),
        "org": _Key("org", doc="The organisation (v2 only)."),
        "batch_size": _Key(
            "batch_size",
            doc="At most this many points per write request; 0: a micro-batch's "
            "rows in one request (dagger's default).",
        ),
        **_durations(
            "flush_duration",
            "flush_duration_ms",
            "Accepted for raystack configs and changes nothing: each micro-batch is written when it completes.",
        ),
    },
    "kafka_sink": {
        "cluster": _Key("name", doc="A logical name for the cluster (dagger's SINK_KAFKA_STREAM)."),
        "brokers": _Key("brokers", doc="host:port of the brokers: a comma-separated string or a list."),
        "topic": _Key("topic", doc="The topic results are written to."),
        "data_type": _Key("data_type", doc="PROTO (the columns are the output message's fields) or JSON."),
        "proto_key": _Key("proto_key", doc="The protobuf message of the key (PROTO)."),
        "proto_message": _Key("proto_message", doc="The protobuf message of the value; required for PROTO."),
        "json_schema": _Key("json_schema", doc="JSON output: the JSON Schema of the messages."),
        **_durations("linger", "linger_ms", "The producer's linger.ms."),
        "client": _Key("client", "client", doc="Any further producer setting under Kafka's own names."),
    },
    "postgres": {
        "url": _Key("url", doc="postgresql://host:port/database, with no password in it."),
        "table": _Key("table", doc="The table (optionally schema.table)."),
        "user": _Key("user", doc="The role the sink writes as."),
        "password": _Key("password", doc="Its password, as a ${ENV_VAR} reference."),
        "key_columns": _Key(
            "key_columns", "list", doc="The upsert key. Default: window_timestamp and the tag_*/label_* columns."
        ),
    },
}

# The YAML spelling of model fields that are spelled differently, for fields never written.
_DEFAULT_SPELLING = {"proto_class": "proto", "client_secrets": "client"}


class _Tree:
    """YAML parsed by hand from the node graph, to keep line numbers and catch duplicate keys."""

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.constructor = SafeConstructor()

    def build(self, node: Any, path: Loc) -> Any:
        if isinstance(node, ScalarNode):
            return self.constructor.construct_object(node, deep=True)
        if isinstance(node, SequenceNode):
            for i, child in enumerate(node.value):
                self.draft.lines.setdefault(render_loc((*path, i)), child.start_mark.line + 1)
            return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self._mapping(node, path)
        return None  # pragma: no cover - PyYAML has no other node kinds

    def _mapping(self, node: MappingNode, path: Loc) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        merged: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    value = self.build(source, path)
                    if isinstance(value, dict):
                        merged = {**value, **merged}
                continue
            key = self.build(key_node, path)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                where = render_loc(path) or "(top level)"
                self.draft.problem(where, f"a key must be plain text, got {_checks.show(key)}")
                continue
            key = str(key) if not isinstance(key, str) else key
            here = render_loc((*path, key))
            if key in result:
                lines = f"lines {self.draft.lines.get(here)} and {key_node.start_mark.line + 1}"
                self.draft.problem(here, f"given twice ({lines})")
            self.draft.lines.setdefault(here, key_node.start_mark.line + 1)
            result[key] = self.build(value_node, (*path, key))
        return {**merged, **result}


def parse(text: str, *, default_name: str) -> Draft:
    """YAML text -> a Draft of the job (see the module docstring for the format)."""
    aliases: dict[Loc, str] = {}

    def namer(loc: Loc) -> str:
        native: list[Any] = []
        for k, part in enumerate(loc):
            if part == "[key]":
                continue
            if isinstance(part, int):
                native.append(part)
            else:
                name = aliases.get(tuple(loc[: k + 1]), _DEFAULT_SPELLING.get(part, part))
                if name:  # "" folds a field into its parent (event_time: 5)
                    native.append(name)
        return render_loc(tuple(native))

    draft = Draft(data={}, origin="yaml", namer=namer)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        reason = " ".join(x for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x) or str(exc)
        draft.problem("(file)", f"not valid YAML: {reason}{where}: {yaml_hint(reason)}")
        return draft
    value = _Tree(draft).build(root, ()) if root is not None else None
    if not isinstance(value, dict):
        draft.problem("(file)", f"expected a mapping of job settings at the top level, got {_describe(value)}")
        return draft
    converter = _Converter(draft, aliases)
    draft.data = converter.section("job", value, (), ())
    if "name" not in draft.data:
        draft.data["name"] = default_name
        aliases[("name",)] = "name (taken from the file name)"
    return draft


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, list):
        return "a list"
    return _checks.show(value)


class _Converter:
    def __init__(self, draft: Draft, aliases: dict[Loc, str]) -> None:
        self.draft = draft
        self.aliases = aliases

    def section(self, name: str, value: Any, native: Loc, loc: Loc) -> Any:
        if not isinstance(value, dict):
            if value is None:
                return {}
            self.draft.issue(loc, f"expected a mapping of settings, got {_describe(value)}")
            return {}
        keys = _SECTIONS[name]
        out: dict[str, Any] = {}
        written: dict[str, str] = {}
        for key, item in value.items():
            here = (*native, key)
            spec = keys.get(key)
            ignored = IGNORED_SETTINGS.get(key.removesuffix("_ms").removesuffix("_minutes")) if name == "job" else None
            if spec is None and ignored:
                self.draft.note(render_loc(here), ignored)
                continue
            if spec is None:
                hint = _checks.did_you_mean(key, keys)
                self.draft.problem(render_loc(here), f"unknown field{hint}")
                continue
            field_loc = (*loc, spec.field)
            if spec.field in written:
                self.draft.problem(render_loc(here), f"give either {written[spec.field]} or {key}, not both")
                continue
            written[spec.field] = key
            if key != spec.field:
                self.aliases[field_loc] = key
            if spec.kind == "client":
                self.aliases[(*loc, "client_secrets")] = key
                plain, secret = self.client(item, here, field_loc)
                out["client"] = plain
                if secret:
                    out["client_secrets"] = secret
                continue
            out[spec.field] = self.convert(spec, item, here, field_loc)
        if name == "schema" and out.get("stencil_urls") and "enabled" not in out:
            out["enabled"] = True  # giving stencil URLs asks for them to be used
        return out

    def convert(self, spec: _Key, value: Any, native: Loc, loc: Loc) -> Any:
        kind = spec.kind
        if kind == "plain":
            return value
        if kind.startswith("section:"):
            return self.section(kind.split(":", 1)[1], value, native, loc)
        if kind.startswith("list:"):
            if not isinstance(value, list):
                self.draft.issue(loc, f"expected a list, got {_describe(value)}")
                return []
            return [self.section(kind.split(":", 1)[1], item, (*native, i), (*loc, i)) for i, item in enumerate(value)]
        if kind == "list":
            if isinstance(value, str):
                return [part.strip() for part in value.split(",")] if "," in value else [value]
            return value
        if kind == "duration_ms":
            try:
                return _checks.parse_duration_ms(value)
            except ValueError as exc:
                self.draft.issue(loc, str(exc))
                return None
        if kind == "event_time":
            return self.event_time(value, native, loc)
        raise AssertionError(kind)  # pragma: no cover

    def event_time(self, value: Any, native: Loc, loc: Loc) -> Any:
        if isinstance(value, dict):
            return self.section("event_time", value, native, loc)
        self.aliases[(*loc, "field_name")] = ""
        self.aliases[(*loc, "field_number")] = ""
        if isinstance(value, int) and not isinstance(value, bool):
            return {"field_number": value}
        if isinstance(value, str) and value.strip().isdigit():
            return {"field_number": int(value)}
        if isinstance(value, str):
            return {"field_name": value.strip()}
        self.draft.issue(loc, f"expected a field name or a protobuf field number, got {_describe(value)}")
        return None

    def client(self, value: Any, native: Loc, loc: Loc) -> tuple[dict[str, str], dict[str, str]]:
        """Kafka client settings split into (plain, secret); nested mappings are flattened
        (``security: {protocol: X}`` is ``security.protocol: X``)."""
        if value is None:
            return {}, {}
        if not isinstance(value, dict):
            self.draft.issue(loc, f"expected a mapping of Kafka client settings, got {_describe(value)}")
            return {}, {}
        flat: dict[str, Any] = {}

        def walk(prefix: str, node: dict[Any, Any]) -> None:
            for key, item in node.items():
                name = f"{prefix}.{key}" if prefix else str(key)
                if isinstance(item, dict):
                    walk(name, item)
                else:
                    flat[name] = item

        walk("", value)
        plain: dict[str, str] = {}
        secret: dict[str, str] = {}
        for key, item in flat.items():
            if isinstance(item, bool):
                item = "true" if item else "false"
            elif isinstance(item, (int, float)):
                item = str(item)
            elif item is None:
                item = ""
            elif not isinstance(item, str):
                self.draft.problem(render_loc((*native, key)), f"expected a single value, got {_describe(item)}")
                continue
            (secret if _checks.is_secret_client_key(key) else plain)[key] = item
        return plain, secret
