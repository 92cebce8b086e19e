"""Rules that relate several fields of a job.

They take plain, possibly still invalid, data (dicts as the file formats
produce them, or a model's ``model_dump()``), so the loader can check them
even when some single field is already known to be wrong and report every
problem at once. Each returns ``(location, message)`` pairs; a location is a
tuple of field names and list indices relative to the node checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dagger_runtime.config import _checks

Issue = tuple[tuple[Any, ...], str]
SINK_SECTIONS = ("influx", "kafka", "postgres")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _upper(value: Any, default: str) -> str:
    return value.strip().upper() if isinstance(value, str) and value.strip() else default


def event_time_rules(node: Any) -> list[Issue]:
    node = _map(node)
    if node.get("field_number") is None and node.get("field_name") is None:
        return [((), "give the event-time field's name or its protobuf field number")]
    return []


def _client_rules(node: Mapping[str, Any], reserved: Mapping[str, str | None], allowed: frozenset[str]) -> list[Issue]:
    settings: dict[str, str] = {}
    where: dict[str, str] = {}
    for section in ("client", "client_secrets"):
        for key, value in _map(node.get(section)).items():
            if isinstance(key, str):
                settings[key] = value if isinstance(value, str) else ""
                where[key] = section
    return [((where[key], key), msg) for key, msg in _checks.check_client_settings(settings, reserved, allowed)]


def kafka_source_rules(node: Any) -> list[Issue]:
    return _client_rules(_map(node), _checks.RESERVED_CONSUMER_KEYS, _checks.CONSUMER_SETTINGS)


def stream_rules(node: Any) -> list[Issue]:
    node = _map(node)
    issues: list[Issue] = []
    topics = node.get("topics") or ()
    pattern = node.get("topic_pattern")
    if not topics and not pattern:
        issues.append((("topics",), "at least one topic is required"))
    elif topics and pattern:
        issues.append((("topic_pattern",), "give either topics or topic_pattern, not both"))
    if isinstance(topics, (list, tuple)):
        seen: set[Any] = set()
        for topic in topics:
            if isinstance(topic, str) and topic in seen:
                issues.append((("topics",), f"topic {topic!r} is listed more than once"))
            seen.add(topic)
    data_type = _upper(node.get("data_type"), "PROTO")
    has_proto = bool(node.get("proto_class"))
    event_time = _map(node.get("event_time"))
    if data_type == "PROTO" and not has_proto:
        issues.append((("proto_class",), "is required for PROTO input"))
    if data_type == "JSON" and not has_proto:
        if not node.get("json_schema"):
            issues.append((("json_schema",), "JSON input needs a json_schema, or a proto_class to derive it from"))
        if event_time.get("field_number") is not None and event_time.get("field_name") is None:
            issues.append(
                (("event_time",), "JSON input has no protobuf field numbers; give the event-time field's name")
            )
    return issues


def schema_rules(node: Any) -> list[Issue]:
    node = _map(node)
    issues: list[Issue] = []
    urls = node.get("stencil_urls") or ()
    if node.get("enabled") is True and not urls:
        issues.append((("stencil_urls",), "at least one URL is required when the stencil schema registry is enabled"))
    if node.get("version") and node.get("auto_refresh") is True:
        why = "a pinned schema version cannot be refreshed; remove version or auto_refresh"
        issues.append((("auto_refresh",), why))
    if _upper(node.get("refresh_strategy"), "") == "VERSION_BASED_REFRESH" and isinstance(urls, (list, tuple)):
        for i, url in enumerate(urls):
            if isinstance(url, str) and re.search(r"/versions/[^/]+/?$", url):
                issues.append(
                    (("stencil_urls", i), "VERSION_BASED_REFRESH needs an unversioned URL (without /versions/N)")
                )
    return issues


def influx_rules(node: Any) -> list[Issue]:
    node = _map(node)
    v2 = str(node.get("api") or "v1").strip().lower() == "v2"
    if node.get("password") is not None and not node.get("username") and not v2:
        return [(("password",), "a password is given but no username (with api: v2 it may be a token alone)")]
    if node.get("org") is not None and not v2:
        return [(("org",), "is for api: v2 only")]
    return []


def kafka_sink_rules(node: Any) -> list[Issue]:
    node = _map(node)
    issues: list[Issue] = []
    if _upper(node.get("data_type"), "PROTO") == "PROTO" and not node.get("proto_message"):
        issues.append((("proto_message",), "is required when data_type is PROTO"))
    issues += _client_rules(node, _checks.RESERVED_PRODUCER_KEYS, _checks.PRODUCER_SETTINGS)
    return issues


def postgres_rules(node: Any) -> list[Issue]:
    node = _map(node)
    if node.get("password") is not None and not node.get("user"):
        return [(("password",), "a password is given but no user")]
    return []


_SECTION_RULES = {"influx": influx_rules, "kafka": kafka_sink_rules, "postgres": postgres_rules}


def sink_rules(node: Any) -> list[Issue]:
    node = _map(node)
    issues: list[Issue] = []
    sink_type = node.get("type")
    sink_type = sink_type.strip().lower() if isinstance(sink_type, str) else None
    if sink_type in ("influx", "kafka", "postgres", "log"):
        for section in SINK_SECTIONS:
            present = node.get(section) is not None
            if section == sink_type and not present:
                issues.append(((section,), f"is required when the sink type is {sink_type!r}"))
            elif section != sink_type and present:
                issues.append(((section,), f"must be absent when the sink type is {sink_type!r}"))
    return issues


def job_rules(node: Any) -> list[Issue]:
    node = _map(node)
    issues: list[Issue] = []
    streams = node.get("streams")
    if isinstance(streams, (list, tuple)):
        first_use: dict[str, int] = {}
        for i, stream in enumerate(streams):
            table = _map(stream).get("table")
            if not isinstance(table, str):
                continue
            if table in first_use:
                why = f"table name {table!r} is already used by the stream at index {first_use[table]}"
                issues.append((("streams", i, "table"), why))
            else:
                first_use[table] = i
    return issues


def _nested(loc: tuple[Any, ...], issues: list[Issue]) -> list[Issue]:
    return [((*loc, *sub), msg) for sub, msg in issues]


def all_rules(job: Any) -> list[Issue]:
    """Every cross-field rule of a whole job, nested nodes included."""
    job = _map(job)
    issues = job_rules(job)
    streams = job.get("streams")
    if isinstance(streams, (list, tuple)):
        for i, stream in enumerate(streams):
            stream = _map(stream)
            issues += _nested(("streams", i), stream_rules(stream))
            if "event_time" in stream:
                issues += _nested(("streams", i, "event_time"), event_time_rules(stream["event_time"]))
            if "kafka" in stream:
                issues += _nested(("streams", i, "kafka"), kafka_source_rules(stream["kafka"]))
    if "schema" in job:
        issues += _nested(("schema",), schema_rules(job["schema"]))
    sink = _map(job.get("sink"))
    issues += _nested(("sink",), sink_rules(sink))
    for section, rules in _SECTION_RULES.items():
        if sink.get(section) is not None:
            issues += _nested(("sink", section), rules(sink[section]))
    return issues
