"""The job file's reference, generated from the one list of its keys (native._SECTIONS: spelling,
kind, meaning) and the model they load into (types, defaults, required fields):

- a JSON Schema of the native YAML format, for editors (`# yaml-language-server: $schema=...`)
  and for checking job files without the runtime;
- the table of every key, for docs/reference/job-keys.md.

`python -m dagger_runtime.config.reference` writes both; `--check` says whether the committed
ones are current (tests/test_job_reference.py runs it). The loader stays the authority: it also
applies the rules a schema cannot say (one sink section, PROTO needs `proto`, ...).
"""

from __future__ import annotations

import json
import sys
import typing
from pathlib import Path
from typing import Any

from pydantic import BeforeValidator

from dagger_runtime import durations, generated_pages
from dagger_runtime.config import _checks
from dagger_runtime.config import model as m
from dagger_runtime.config.native import _SECTIONS, _Key

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "reference" / "job.schema.json"
KEYS_FILE = ROOT / "docs" / "reference" / "job-keys.md"
SCHEMA_ID = "https://daggers.dev/schemas/job.schema.json"

MODELS: dict[str, type] = {
    "job": m.JobSpec,
    "stream": m.StreamSpec,
    "event_time": m.EventTime,
    "kafka_source": m.KafkaSourceSpec,
    "schema": m.SchemaSpec,
    "sink": m.SinkSpec,
    "influx": m.InfluxSinkSpec,
    "kafka_sink": m.KafkaSinkSpec,
    "postgres": m.PostgresSinkSpec,
}
TITLES = {
    "job": "The job (top level)",
    "stream": "streams[]",
    "event_time": "streams[].event_time (a mapping)",
    "kafka_source": "streams[].kafka",
    "schema": "schema",
    "sink": "sink",
    "influx": "sink.influx",
    "kafka_sink": "sink.kafka",
    "postgres": "sink.postgres",
}
# in a YAML file the job's name may be left out: it is taken from the file's name
NOT_REQUIRED_IN_YAML = {("job", "name")}


def _field_schema(model: type, field: str, *, widened: bool = True) -> dict[str, Any]:
    """The model's own JSON Schema of a field, widened to what the loader accepts before the model
    sees it: enums in any case, host lists as lists, numbers written as text."""
    schema = dict(model.model_json_schema(mode="validation")["properties"][field])
    schema.pop("title", None)
    schema.pop("default", None)
    info = model.model_fields[field]
    before = [v.func for v in info.metadata if isinstance(v, BeforeValidator)]
    before += [
        v.func
        for arg in typing.get_args(info.annotation)
        for v in getattr(arg, "__metadata__", ())
        if isinstance(v, BeforeValidator)
    ]

    def widen(node: dict[str, Any]) -> dict[str, Any]:
        if "anyOf" in node:
            return {**node, "anyOf": [widen(n) for n in node["anyOf"]]}
        if "enum" in node:
            values = node["enum"]
            return {
                **node,
                "enum": list(dict.fromkeys([*values, *(v.lower() for v in values), *(v.upper() for v in values)])),
            }
        if node.get("type") == "string" and _checks.bootstrap_servers in before:
            return {"anyOf": [node, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}
        if node.get("type") == "integer" and _checks.to_int in before:
            return {"anyOf": [node, {"type": "string", "pattern": r"^\s*\d+\s*$"}]}
        if node.get("type") == "boolean" and _checks.to_bool in before:
            return {"anyOf": [node, {"type": "string", "enum": ["true", "false", "True", "False", "TRUE", "FALSE"]}]}
        return node

    return widen(schema) if widened else schema


def _key_schema(section: str, key: str, spec: _Key) -> dict[str, Any]:
    kind = spec.kind
    if kind.startswith("section:"):
        node: dict[str, Any] = {"$ref": f"#/$defs/{kind.split(':', 1)[1]}"}
    elif kind.startswith("list:"):
        node = {"type": "array", "items": {"$ref": f"#/$defs/{kind.split(':', 1)[1]}"}, "minItems": 1}
        if section == "job" and key == "streams":
            node["maxItems"] = m.MAX_STREAMS
    elif kind == "list":
        node = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}]}
    elif kind == "duration_ms":
        node = {"type": "string", "pattern": durations.PATTERN}
    elif kind == "event_time":
        node = {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "integer", "minimum": 1},
                {"$ref": "#/$defs/event_time"},
            ]
        }
    elif kind == "client":
        node = {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean", "object", "null"]}}
    else:
        node = _field_schema(MODELS[section], spec.field)
    default = _default(section, spec)
    if default is not None:
        node["default"] = default
    if spec.doc:
        node["description"] = spec.doc
    return node


def _default(section: str, spec: _Key) -> Any:
    info = MODELS[section].model_fields[spec.field]
    if info.is_required() or info.default_factory is not None or spec.kind.startswith(("section:", "list:")):
        return None
    value = info.default
    if value in (None, "", ()):
        return None
    if spec.kind == "duration_ms":
        return _duration_text(value)
    return list(value) if isinstance(value, tuple) else value


def _duration_text(ms: int) -> str:
    """Milliseconds as the largest whole unit a job file writes: 10000 -> '10s'."""
    for unit in ("d", "h", "m", "s"):
        size = round(durations.UNITS_S[unit] * 1000)
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _required(section: str) -> list[str]:
    model = MODELS[section]
    return [
        key
        for key, spec in _SECTIONS[section].items()
        if spec.twin is None
        and model.model_fields[spec.field].is_required()
        and (section, key) not in NOT_REQUIRED_IN_YAML
    ]


def job_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a native YAML job file."""
    defs = {}
    for section, keys in _SECTIONS.items():
        defs[section] = {
            "type": "object",
            "title": TITLES[section],
            "description": (MODELS[section].__doc__ or "").strip().split("\n\n")[0],
            "properties": {key: _key_schema(section, key, spec) for key, spec in keys.items()},
            "required": _required(section),
            "additionalProperties": False,
        }
    root = defs.pop("job")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "A dagger's job file",
        **{k: v for k, v in root.items() if k != "title"},
        "$defs": defs,
    }


def _type_text(section: str, key: str, spec: _Key) -> str:
    kind = spec.kind
    if kind.startswith("section:"):
        return f"mapping ({TITLES[kind.split(':', 1)[1]]})"
    if kind.startswith("list:"):
        return f"list of mappings ({TITLES[kind.split(':', 1)[1]]})"
    if kind == "list":
        return "list of text"
    if kind == "duration_ms":
        return "duration (500ms, 60s, 5m, 1h30m)"
    if kind == "event_time":
        return "field name, field number or mapping"
    if kind == "client":
        return "mapping of Kafka settings"
    node = _field_schema(MODELS[section], spec.field, widened=False)
    options = node.get("anyOf", [node])
    names = []
    for option in options:
        if "enum" in option:
            names.append(" \\| ".join(option["enum"]))
        elif option.get("type") == "null":
            continue
        elif option.get("format") == "password":
            names.append("secret text (${ENV_VAR})")
        elif option.get("type") == "array":
            names.append("list")
        elif option.get("type"):
            names.append(
                {"string": "text", "integer": "integer", "boolean": "true \\| false"}.get(
                    option["type"], option["type"]
                )
            )
    return " or ".join(dict.fromkeys(names))


def keys_markdown() -> str:
    """docs/reference/job-keys.md."""
    lines = [
        "# Job file keys",
        "",
        "Every key of a dagger's YAML job file, generated from the loader's own list of them",
        "(`dagger_runtime/config/native.py`) and the model they load into",
        "(`dagger_runtime/config/model.py`) by `python -m dagger_runtime.config.reference`.",
        "Unknown keys are errors, with a suggestion when a known key is close. Secrets are written as",
        "`${ENV_VAR}` references, resolved when the job is loaded. The same keys as a JSON Schema,",
        "for an editor: [job.schema.json](job.schema.json) (the first line of a job file:",
        "`# yaml-language-server: $schema=<path or URL of job.schema.json>`).",
        "raystack/dagger's `local.properties` files load too, under dagger's own key names.",
        "",
    ]
    for section, keys in _SECTIONS.items():
        required = set(_required(section))
        lines += [
            f"## {TITLES[section]}",
            "",
            (MODELS[section].__doc__ or "").strip().split("\n\n")[0],
            "",
            "| key | type | default | meaning |",
            "|---|---|---|---|",
        ]
        for key, spec in keys.items():
            default = _default(section, spec)
            shown = "required" if key in required else ("" if default is None else f"`{json.dumps(default)}`")
            if section == "job" and key == "name":
                shown = "the file's name"
            meaning = spec.doc.replace("|", "\\|")
            lines.append(f"| `{key}` | {_type_text(section, key, spec)} | {shown} | {meaning} |")
        lines.append("")
    return "\n".join(lines)


def render() -> dict[Path, str]:
    return {SCHEMA_FILE: json.dumps(job_schema(), indent=2) + "\n", KEYS_FILE: keys_markdown()}


def main(argv: list[str] | None = None) -> int:
    return generated_pages.main(
        argv,
        prog="python -m dagger_runtime.config.reference",
        description="Write the job file's JSON Schema and its keys' reference page.",
        render=render,
    )


if __name__ == "__main__":
    sys.exit(main())
