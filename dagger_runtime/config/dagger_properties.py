"""raystack/dagger job files (``local.properties``), read as they are.

The keys and their defaults are raystack/dagger's own, taken from its code
(``dagger-core/.../utils/Constants.java``, ``dagger-common/.../core/Constants.java``,
``StreamConfig.java``, ``SinkOrchestrator.java``); where its docs disagree
with its code, the code wins:

=========================================  ==============================  ===============
key                                        model field                     dagger default
=========================================  ==============================  ===============
``DAGGER_NAME`` / ``FLINK_JOB_ID``         ``name``                        the file name
``FLINK_SQL_QUERY``                        ``sql``                         (required)
``FLINK_ROWTIME_ATTRIBUTE_NAME``           ``rowtime_attribute``           ``rowtime`` [1]
``FLINK_WATERMARK_DELAY_MS``               ``watermark_delay_ms``          10000
``FLINK_PARALLELISM``                      ``parallelism``                 1
``DAGGER_IDLE_TIMEOUT_MS``                 ``idle_timeout_ms``             0 (never) [2]
``SCHEMA_REGISTRY_STENCIL_ENABLE``         ``schema.enabled``              false
``SCHEMA_REGISTRY_STENCIL_URLS``           ``schema.stencil_urls``         (comma-separated)
``SCHEMA_REGISTRY_STENCIL_FETCH_TIMEOUT_MS`` ``schema.fetch_timeout_ms``   10000 (docs: 60000)
``SCHEMA_REGISTRY_STENCIL_CACHE_AUTO_REFRESH`` ``schema.auto_refresh``     false
``SCHEMA_REGISTRY_STENCIL_REFRESH_STRATEGY`` ``schema.refresh_strategy``   LONG_POLLING
``SCHEMA_REGISTRY_STENCIL_CACHE_TTL_MS``   ``schema.cache_ttl_ms``         900000 (docs: 7200000)
``SINK_TYPE``                              ``sink.type``                   influx
``SINK_INFLUX_*``                          ``sink.influx.*``               batch 0, flush 0
``SINK_KAFKA_*``                           ``sink.kafka.*``                PROTO, linger 0
=========================================  ==============================  ===============

[1] dagger's code default is the empty string (the job then fails); every
example sets ``rowtime``, so that is the default here.

[2] dagger has no key for Flink's ``table.exec.source.idle-timeout``; ours lets an idle
stream of a job of two streams stop holding the watermark (dagger_runtime.idle).

``STREAMS`` is a JSON list of at most two objects with ``SOURCE_KAFKA_TOPIC_NAMES``
(topics joined by ``|``; dagger compiles the value as a regex, so a value that
is not a plain list of topic names becomes ``topic_pattern``),
``INPUT_SCHEMA_TABLE``, ``INPUT_SCHEMA_PROTO_CLASS``,
``INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX`` (the protobuf field number),
``INPUT_DATATYPE`` (PROTO, or JSON with ``INPUT_SCHEMA_JSON_SCHEMA`` and
``INPUT_SCHEMA_JSON_EVENT_TIMESTAMP_FIELD_NAME``), ``SOURCE_KAFKA_NAME``,
``SOURCE_DETAILS`` (a Kafka source, unbounded) and
``SOURCE_KAFKA_CONSUMER_CONFIG_*``: BOOTSTRAP_SERVERS, GROUP_ID,
AUTO_OFFSET_RESET (default latest), AUTO_COMMIT_ENABLE, and every other one
(SECURITY_PROTOCOL, SASL_MECHANISM, SASL_JAAS_CONFIG, SSL_*) becomes a Kafka
client setting by lowercasing and turning ``_`` into ``.``, as dagger does.

Booleans must be ``true`` or ``false`` (dagger would read anything else as
false). Keys dagger knows that have no meaning here are accepted with a
warning; unknown keys too. Features this runtime does not have (pre/post
processors, Python UDFs, BigQuery and Parquet) are errors rather than
silently different results.
"""

from __future__ import annotations

import json
import re
from typing import Any

from dagger_runtime.config import _checks
from dagger_runtime.config._draft import Draft, Loc, render_loc
from dagger_runtime.config.model import IGNORED_SETTINGS
from dagger_runtime.config.properties import Entry, PropertiesSyntaxError, parse_entries

# --- key tables ------------------------------------------------------------------------------

_TOP: dict[str, Loc] = {
    "FLINK_SQL_QUERY": ("sql",),
    "FLINK_ROWTIME_ATTRIBUTE_NAME": ("rowtime_attribute",),
    "FLINK_WATERMARK_DELAY_MS": ("watermark_delay_ms",),
    "FLINK_PARALLELISM": ("parallelism",),
    "SCHEMA_REGISTRY_STENCIL_ENABLE": ("schema", "enabled"),
    "SCHEMA_REGISTRY_STENCIL_URLS": ("schema", "stencil_urls"),
    "SCHEMA_REGISTRY_STENCIL_FETCH_TIMEOUT_MS": ("schema", "fetch_timeout_ms"),
    "SCHEMA_REGISTRY_STENCIL_CACHE_AUTO_REFRESH": ("schema", "auto_refresh"),
    "SCHEMA_REGISTRY_STENCIL_REFRESH_STRATEGY": ("schema", "refresh_strategy"),
    "SCHEMA_REGISTRY_STENCIL_CACHE_TTL_MS": ("schema", "cache_ttl_ms"),
    "SINK_TYPE": ("sink", "type"),
    # this project's own keys (raystack/dagger has none for these): DAGGER_ marks them as ours
    "DAGGER_SCHEMA_VERSION": ("schema", "version"),
    "DAGGER_CHECKPOINT_LOCATION": ("checkpoint_location",),
    "DAGGER_DEAD_LETTER_TOPIC": ("dead_letter_topic",),
    "DAGGER_IDLE_TIMEOUT_MS": ("idle_timeout_ms",),  # Flink's table.exec.source.idle-timeout
}
_SINK_KEYS: dict[str, dict[str, Loc]] = {
    "influx": {
        "SINK_INFLUX_URL": ("sink", "influx", "url"),
        "SINK_INFLUX_USERNAME": ("sink", "influx", "username"),
        "SINK_INFLUX_PASSWORD": ("sink", "influx", "password"),
        "SINK_INFLUX_DB_NAME": ("sink", "influx", "db_name"),
        "SINK_INFLUX_MEASUREMENT_NAME": ("sink", "influx", "measurement_name"),
        "SINK_INFLUX_RETENTION_POLICY": ("sink", "influx", "retention_policy"),
        "SINK_INFLUX_BATCH_SIZE": ("sink", "influx", "batch_size"),
        "SINK_INFLUX_FLUSH_DURATION_MS": ("sink", "influx", "flush_duration_ms"),
    },
    "kafka": {
        "SINK_KAFKA_BROKERS": ("sink", "kafka", "brokers"),
        "SINK_KAFKA_TOPIC": ("sink", "kafka", "topic"),
        "SINK_KAFKA_PROTO_KEY": ("sink", "kafka", "proto_key"),
        "SINK_KAFKA_PROTO_MESSAGE": ("sink", "kafka", "proto_message"),
        "SINK_KAFKA_DATA_TYPE": ("sink", "kafka", "data_type"),
        "SINK_KAFKA_LINGER_MS": ("sink", "kafka", "linger_ms"),
        "SINK_KAFKA_STREAM": ("sink", "kafka", "name"),
        "SINK_KAFKA_JSON_SCHEMA": ("sink", "kafka", "json_schema"),
    },
}
_LARGE_MESSAGE_KEY = "SINK_KAFKA_PRODUCE_LARGE_MESSAGE_ENABLE"
# What dagger sets when SINK_KAFKA_PRODUCE_LARGE_MESSAGE_ENABLE is true.
_LARGE_MESSAGE_SETTINGS = {"compression.type": "snappy", "max.request.size": "20971520"}
_BOOLEAN_FIELDS = {("schema", "enabled"), ("schema", "auto_refresh")}
_CSV_FIELDS = {("schema", "stencil_urls")}

_CONSUMER_PREFIX = "SOURCE_KAFKA_CONSUMER_CONFIG_"
_STREAM: dict[str, Loc] = {
    "INPUT_SCHEMA_TABLE": ("table",),
    "INPUT_SCHEMA_PROTO_CLASS": ("proto_class",),
    "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX": ("event_time", "field_number"),
    "INPUT_SCHEMA_JSON_EVENT_TIMESTAMP_FIELD_NAME": ("event_time", "field_name"),
    "INPUT_SCHEMA_JSON_SCHEMA": ("json_schema",),
    "INPUT_DATATYPE": ("data_type",),
    "SOURCE_KAFKA_NAME": ("kafka", "name"),
    _CONSUMER_PREFIX + "BOOTSTRAP_SERVERS": ("kafka", "bootstrap_servers"),
    _CONSUMER_PREFIX + "GROUP_ID": ("kafka", "group_id"),
    _CONSUMER_PREFIX + "AUTO_OFFSET_RESET": ("kafka", "auto_offset_reset"),
    _CONSUMER_PREFIX + "AUTO_COMMIT_ENABLE": ("kafka", "auto_commit"),
}
_TOPICS_KEY = "SOURCE_KAFKA_TOPIC_NAMES"
_SOURCE_DETAILS_KEY = "SOURCE_DETAILS"
# The consumer settings dagger's StreamConfig declares (others it drops; we pass them on, with a note).
_DAGGER_CONSUMER_SETTINGS = {
    "SECURITY_PROTOCOL", "SASL_MECHANISM", "SASL_JAAS_CONFIG", "SSL_KEY_PASSWORD", "SSL_KEYSTORE_LOCATION",
    "SSL_KEYSTORE_PASSWORD", "SSL_KEYSTORE_TYPE", "SSL_TRUSTSTORE_LOCATION", "SSL_TRUSTSTORE_PASSWORD",
    "SSL_TRUSTSTORE_TYPE", "SSL_PROTOCOL",
}  # fmt: skip
_DAGGER_SSL_PROTOCOLS = ("TLS", "TLSv1.1", "TLSv1.2", "TLSv1.3", "SSL", "SSLv2", "SSLv3")
_PARQUET_STREAM_KEYS = (
    "SOURCE_PARQUET_FILE_PATHS", "SOURCE_PARQUET_READ_ORDER_STRATEGY",
    "SOURCE_PARQUET_SCHEMA_MATCH_STRATEGY", "SOURCE_PARQUET_FILE_DATE_RANGE",
)  # fmt: skip

# Keys dagger reads that change nothing here: accepted, with a note saying so.
_IGNORED = {
    "FLINK_WATERMARK_INTERVAL_MS": IGNORED_SETTINGS["watermark_interval"],
    "FLINK_CHECKPOINT_INTERVAL_MS": IGNORED_SETTINGS["checkpoint_interval"],
    "FLINK_RETENTION_IDLE_STATE_MINUTE": IGNORED_SETTINGS["idle_state_retention"],
    "FUNCTION_FACTORY_CLASSES": "ignored: every built-in UDF is always registered",
    "FLINK_CHECKPOINT_TIMEOUT_MS": "ignored: Flink checkpoint tuning has no Spark equivalent",
    "FLINK_CHECKPOINT_MIN_PAUSE_MS": "ignored: Flink checkpoint tuning has no Spark equivalent",
    "FLINK_CHECKPOINT_MAX_CONCURRENT": "ignored: Flink checkpoint tuning has no Spark equivalent",
    "FLINK_PARALLELISM_MAX": "ignored: Flink's maximum parallelism has no Spark equivalent",
    "FLINK_WATERMARK_PER_PARTITION_ENABLE": "ignored: Spark keeps one watermark per query",
    "SOURCE_KAFKA_CONSUME_LARGE_MESSAGE_ENABLE": "ignored: set max.partition.fetch.bytes as a consumer setting instead",
    "SCHEMA_REGISTRY_STENCIL_FETCH_HEADERS": "ignored: fetch headers are not supported",
    "SCHEMA_REGISTRY_STENCIL_FETCH_BACKOFF_MIN_MS": "ignored: the schema fetch retry policy is fixed",
    "SCHEMA_REGISTRY_STENCIL_FETCH_RETRIES": "ignored: the schema fetch retry policy is fixed",
}
# Keys accepted silently: telemetry is done differently, and disabled features' settings.
_QUIET = {"METRIC_TELEMETRY_ENABLE", "METRIC_TELEMETRY_SHUTDOWN_PERIOD_MS"}
# Feature switches: "false" is fine, "true" asks for something this runtime does not do.
_UNSUPPORTED_SWITCHES = {
    "PROCESSOR_PREPROCESSOR_ENABLE": ("PROCESSOR_PREPROCESSOR_CONFIG", "pre-processors are not supported"),
    "PROCESSOR_POSTPROCESSOR_ENABLE": ("PROCESSOR_POSTPROCESSOR_CONFIG", "post-processors are not supported"),
    "PYTHON_UDF_ENABLE": ("PYTHON_UDF_CONFIG", "Python UDFs from PYTHON_UDF_CONFIG are not supported"),
}
# Names from dagger's docs that its code never reads.
_DOC_ONLY = {
    "SQL_QUERY": "FLINK_SQL_QUERY",
    "FLINK_RETENTION_MIN_IDLE_STATE_HOUR": "FLINK_RETENTION_IDLE_STATE_MINUTE",
    "FLINK_RETENTION_MAX_IDLE_STATE_HOUR": "FLINK_RETENTION_IDLE_STATE_MINUTE",
}
_NAME_KEYS = ("DAGGER_NAME", "FLINK_JOB_ID")
_KNOWN_TOP = {
    *_TOP, *_NAME_KEYS, "STREAMS", _LARGE_MESSAGE_KEY, *_IGNORED, *_QUIET, *_UNSUPPORTED_SWITCHES,
    *(config for config, _ in _UNSUPPORTED_SWITCHES.values()), *(k for keys in _SINK_KEYS.values() for k in keys),
}  # fmt: skip


# --- naming locations as the file spells them ----------------------------------------------


def _reverse(table: dict[str, Loc]) -> dict[Loc, str]:
    return {loc: key for key, loc in table.items()}


_TOP_NAMES = {
    **_reverse(_TOP),
    **{loc: key for keys in _SINK_KEYS.values() for key, loc in keys.items()},
    ("name",): "FLINK_JOB_ID",
    ("streams",): "STREAMS",
    ("sink",): "SINK_TYPE",
    ("schema",): "SCHEMA_REGISTRY_STENCIL_*",
    ("sink", "influx"): "SINK_INFLUX_*",
    ("sink", "kafka"): "SINK_KAFKA_*",
    ("sink", "postgres"): "SINK_TYPE",
    ("sink", "kafka", "client"): _LARGE_MESSAGE_KEY,
}
_STREAM_NAMES = {
    **_reverse(_STREAM),
    ("event_time",): "INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX",
    ("topics",): _TOPICS_KEY,
    ("topic_pattern",): _TOPICS_KEY,
    ("kafka",): _CONSUMER_PREFIX + "*",
}


def _longest(names: dict[Loc, str], loc: Loc) -> str | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in names:
            return names[loc[:end]]
    return None


def _client_key_name(key: str) -> str:
    return _CONSUMER_PREFIX + key.upper().replace(".", "_")


class _Namer:
    def __init__(self) -> None:
        self.overrides: dict[Loc, str] = {}

    def __call__(self, loc: Loc) -> str:
        loc = tuple(part for part in loc if part != "[key]")
        if loc in self.overrides:
            return self.overrides[loc]
        if len(loc) >= 2 and loc[0] == "streams" and isinstance(loc[1], int):
            base, rest = f"STREAMS[{loc[1]}]", loc[2:]
            if len(rest) >= 3 and rest[0] == "kafka" and rest[1] in ("client", "client_secrets"):
                return f"{base}.{_client_key_name(str(rest[2]))}"
            name = _longest(_STREAM_NAMES, rest) if rest else None
            return f"{base}.{name}" if name else base
        return _longest(_TOP_NAMES, loc) or render_loc(loc)


# --- parsing ---------------------------------------------------------------------------------


def parse(text: str, *, default_name: str) -> Draft:
    """A dagger properties file -> a Draft of the job."""
    namer = _Namer()
    draft = Draft(data={}, origin="dagger-properties", namer=namer)
    try:
        entries = parse_entries(text)
    except PropertiesSyntaxError as exc:
        draft.lines["(file)"] = exc.line
        draft.problem("(file)", f"not a valid properties file: {exc}")
        return draft
    props: dict[str, Entry] = {}
    for entry in entries:
        if entry.key in props:
            lines = f"lines {props[entry.key].line} and {entry.line}"
            draft.note(entry.key, f"given twice ({lines}); the last value is used")
        props[entry.key] = entry
        draft.lines[entry.key] = entry.line
    _Reader(draft, namer, props).read(default_name)
    return draft


class _Reader:
    def __init__(self, draft: Draft, namer: _Namer, props: dict[str, Entry]) -> None:
        self.draft = draft
        self.namer = namer
        self.props = props
        self.used: set[str] = set()

    # -- helpers

    def value(self, key: str) -> str | None:
        """The stripped value of a key, or None when absent or blank (dagger's defaults are "")."""
        entry = self.props.get(key)
        self.used.add(key)
        if entry is None or not entry.value.strip():
            return None
        return entry.value.strip()

    def put(self, loc: Loc, value: Any) -> None:
        node = self.draft.data
        for part in loc[:-1]:
            node = node.setdefault(part, {})
        node[loc[-1]] = value

    def boolean(self, loc: Loc, text: str) -> bool | None:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        self.draft.issue(loc, f"expected true or false, got {text!r}")
        return None

    # -- the file

    def read(self, default_name: str) -> None:
        self.read_name(default_name)
        for key, loc in _TOP.items():
            text = self.value(key)
            if text is None:
                continue
            if loc in _BOOLEAN_FIELDS:
                self.put(loc, self.boolean(loc, text))
            elif loc in _CSV_FIELDS:
                self.put(loc, [part.strip() for part in text.split(",") if part.strip()])
            else:
                self.put(loc, text)
        self.read_sql()
        self.read_sink()
        self.read_streams()
        self.read_schema_defaults()
        self.read_other_keys()

    def read_name(self, default_name: str) -> None:
        given = [(key, self.value(key)) for key in _NAME_KEYS]
        given = [(key, text) for key, text in given if text is not None]
        if given:
            key, name = given[0]
            self.namer.overrides[("name",)] = key
            if len(given) > 1 and given[1][1] != name:
                self.draft.note(given[1][0], f"ignored: the job is named by {key} ({name!r})")
        else:
            name = default_name
            self.namer.overrides[("name",)] = "job name (taken from the file name)"
        self.put(("name",), name)

    def read_sql(self) -> None:
        entry = self.props.get("FLINK_SQL_QUERY")
        if entry is not None and entry.continued and "--" in entry.value:
            self.draft.note(
                "FLINK_SQL_QUERY",
                "contains '--': the continued lines are joined into one line, so an SQL comment there"
                " comments out the rest of the query",
            )

    def read_schema_defaults(self) -> None:
        # raystack/dagger reads a stencil URL only when the registry is enabled; so do we.
        schema = self.draft.data.get("schema", {})
        if schema.get("stencil_urls") and schema.get("enabled", False) is False:
            self.draft.note("SCHEMA_REGISTRY_STENCIL_URLS", "ignored: SCHEMA_REGISTRY_STENCIL_ENABLE is false")
            schema.pop("stencil_urls")

    def read_sink(self) -> None:
        sink_type = (self.value("SINK_TYPE") or "influx").lower()
        self.put(("sink", "type"), sink_type)
        if sink_type == "bigquery":
            self.draft.issue(("sink",), "the bigquery sink is not supported (use influx, kafka or log)")
        elif sink_type == "postgres":
            self.draft.issue(("sink",), "raystack/dagger has no postgres sink keys; write this job in the YAML format")
        for section, keys in _SINK_KEYS.items():
            present = [key for key in keys if key in self.props]
            if section != sink_type:
                for key in present:
                    self.used.add(key)
                    self.draft.note(key, f"ignored: SINK_TYPE is {sink_type!r}")
                continue
            self.put(("sink", section), {})
            for key, loc in keys.items():
                text = self.value(key)
                if text is not None:
                    self.put(loc, text)
        large = self.value(_LARGE_MESSAGE_KEY)
        if large is not None:
            if sink_type != "kafka":
                self.draft.note(_LARGE_MESSAGE_KEY, f"ignored: SINK_TYPE is {sink_type!r}")
            elif self.boolean(("sink", "kafka", "client"), large):
                self.put(("sink", "kafka", "client"), dict(_LARGE_MESSAGE_SETTINGS))

    def read_other_keys(self) -> None:
        for key, entry in self.props.items():
            if key in self.used:
                continue
            if key in _DOC_ONLY:
                instead = _DOC_ONLY[key]
                message = f"raystack/dagger's code does not read this key (its docs name it so); use {instead}"
                if key == "SQL_QUERY" and "FLINK_SQL_QUERY" not in self.props:
                    self.draft.problem(key, message)
                else:
                    self.draft.note(key, "ignored: " + message)
            elif key in _UNSUPPORTED_SWITCHES:
                _, reason = _UNSUPPORTED_SWITCHES[key]
                text = entry.value.strip()
                if text.lower() == "true":
                    self.draft.problem(key, reason)
                elif text.lower() not in ("false", ""):
                    self.draft.problem(key, f"expected true or false, got {text!r}")
            elif key in _IGNORED:
                self.draft.note(key, _IGNORED[key])
            elif key in _QUIET or key in {config for config, _ in _UNSUPPORTED_SWITCHES.values()}:
                continue
            elif key.startswith(_CONSUMER_PREFIX) or key in _STREAM or key == _TOPICS_KEY:
                self.draft.note(key, "ignored: stream settings belong inside STREAMS")
            else:
                self.draft.note(key, "unknown key, ignored" + _checks.did_you_mean(key, _KNOWN_TOP))

    # -- STREAMS

    def read_streams(self) -> None:
        text = self.value("STREAMS")
        if text is None:
            return  # the model reports STREAMS as required
        try:
            streams = json.loads(text)
        except json.JSONDecodeError as exc:
            hint = ""
            if '\\"' in self.props["STREAMS"].source:
                hint = ' (in a properties file \\" is just "; write \\\\" to keep a JSON escape)'
            self.draft.issue(("streams",), f"not valid JSON: {exc.msg} at character {exc.pos + 1}{hint}")
            self.put(("streams",), [])
            return
        if not isinstance(streams, list):
            hint = " (wrap the object in [ ])" if isinstance(streams, dict) else ""
            self.draft.issue(("streams",), f"expected a JSON list of stream objects, got {_checks.show(streams)}{hint}")
            self.put(("streams",), [])
            return
        self.put(("streams",), [self.read_stream(i, stream) for i, stream in enumerate(streams)])

    def read_stream(self, i: int, stream: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        where = ("streams", i)
        if not isinstance(stream, dict):
            self.draft.issue(where, f"expected a JSON object, got {_checks.show(stream)}")
            return out

        def put(loc: Loc, value: Any) -> None:
            node = out
            for part in loc[:-1]:
                node = node.setdefault(part, {})
            node[loc[-1]] = value

        client: dict[str, str] = {}
        secrets: dict[str, str] = {}
        out["kafka"] = {}
        for key, raw in stream.items():
            path = f"STREAMS[{i}].{key}"
            if key == _SOURCE_DETAILS_KEY:
                self.check_source_details(i, raw)
                continue
            if key in _PARQUET_STREAM_KEYS:
                self.draft.note(path, "ignored: Parquet sources are not supported")
                continue
            if raw is None:
                continue
            if isinstance(raw, bool):
                text = "true" if raw else "false"
            elif isinstance(raw, (int, float, str)):
                text = str(raw).strip()
            else:
                self.draft.problem(path, f"expected a single value, got {_checks.show(raw)}")
                continue
            if not text:
                continue
            if key == _TOPICS_KEY:
                self.read_topics(i, text, put)
            elif key in _STREAM:
                loc = _STREAM[key]
                if loc == ("kafka", "auto_commit"):
                    put(loc, self.boolean((*where, *loc), text))
                else:
                    put(loc, text)
            elif key.startswith(_CONSUMER_PREFIX):
                setting = key[len(_CONSUMER_PREFIX) :]
                name = setting.lower().replace("_", ".")
                if setting not in _DAGGER_CONSUMER_SETTINGS:
                    why = f"raystack/dagger does not read this key; passed to the Kafka consumer as {name!r}"
                    self.draft.note(path, why)
                if setting == "SSL_PROTOCOL" and text not in _DAGGER_SSL_PROTOCOLS:
                    allowed = ", ".join(_DAGGER_SSL_PROTOCOLS)
                    self.draft.issue((*where, "kafka", "client", name), f"must be one of {allowed}, got {text!r}")
                (secrets if _checks.is_secret_client_key(name) else client)[name] = text
            elif key.startswith("SOURCE_KAFKA_CONFIG_"):
                proper = _CONSUMER_PREFIX + key[len("SOURCE_KAFKA_CONFIG_") :]
                why = f"raystack/dagger's code does not read this key (its docs name it so); use {proper}"
                self.draft.problem(path, why)
            else:
                hint = _checks.did_you_mean(key, [*_STREAM, _TOPICS_KEY, _SOURCE_DETAILS_KEY])
                self.draft.note(path, "unknown stream key, ignored" + hint)
        if client:
            out["kafka"]["client"] = client
        if secrets:
            out["kafka"]["client_secrets"] = secrets
        return out

    def read_topics(self, i: int, text: str, put) -> None:
        names = [part.strip() for part in text.split("|")]
        if all(_checks.TOPIC_RE.fullmatch(name) and name not in (".", "..") for name in names):
            put(("topics",), names)
            return
        if re.search(r"[*+?()\[\]{}^$\\]", text):
            put(("topic_pattern",), text)
            self.draft.note(f"STREAMS[{i}].{_TOPICS_KEY}", f"read as a regular expression over topic names: {text!r}")
            return
        put(("topics",), names)  # the model names the bad topic

    def check_source_details(self, i: int, details: Any) -> None:
        path = f"STREAMS[{i}].{_SOURCE_DETAILS_KEY}"
        if not isinstance(details, list) or not details:
            self.draft.problem(
                path, 'expected a list of one {"SOURCE_TYPE": "UNBOUNDED", "SOURCE_NAME": "KAFKA_CONSUMER"}'
            )
            return
        if len(details) > 1:
            self.draft.problem(path, f"only one source per stream is supported, got {len(details)}")
        for detail in details:
            if not isinstance(detail, dict):
                got = _checks.show(detail)
                self.draft.problem(path, f"expected an object with SOURCE_TYPE and SOURCE_NAME, got {got}")
                continue
            name, kind = detail.get("SOURCE_NAME"), detail.get("SOURCE_TYPE")
            if name == "PARQUET_SOURCE":
                self.draft.problem(path, "Parquet sources are not supported; only KAFKA_SOURCE and KAFKA_CONSUMER")
            elif name not in ("KAFKA_SOURCE", "KAFKA_CONSUMER"):
                got = _checks.show(name)
                self.draft.problem(path, f"SOURCE_NAME must be KAFKA_SOURCE or KAFKA_CONSUMER, got {got}")
            if kind == "BOUNDED":
                self.draft.problem(path, "bounded sources are not supported; SOURCE_TYPE must be UNBOUNDED")
            elif kind != "UNBOUNDED":
                self.draft.problem(path, f"SOURCE_TYPE must be UNBOUNDED, got {_checks.show(kind)}")
