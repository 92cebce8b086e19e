"""Load a job file into a validated ``JobSpec``, reporting every problem at once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from dagger_runtime.config import _checks, dagger_properties, native, rules
from dagger_runtime.config._draft import Draft, Loc, line_of
from dagger_runtime.config.errors import ConfigError
from dagger_runtime.config.model import JobSpec, rules_checked_context
from dagger_runtime.config.properties import looks_like_properties

from ..errors import QueryError

Format = Literal["yaml", "properties"]
_YAML_SUFFIXES = (".yaml", ".yml", ".json")
_PROPERTIES_SUFFIXES = (".properties",)


def detect_format(path: str | Path, text: str) -> Format:
    """``.yaml``/``.yml``/``.json`` are YAML, ``.properties`` is a dagger file; otherwise
    the content decides: dagger's ``KEY=VALUE`` lines, or else YAML."""
    suffix = Path(path).suffix.lower()
    if suffix in _YAML_SUFFIXES:
        return "yaml"
    if suffix in _PROPERTIES_SUFFIXES:
        return "properties"
    return "properties" if looks_like_properties(text) else "yaml"


def load_job(path: str | Path, *, env: Mapping[str, str] | None = None) -> JobSpec:
    """Read and validate one job file (YAML, or raystack/dagger properties).

    ``${VAR}`` references in secrets are resolved from ``env`` (default:
    ``os.environ``). Raises ``ConfigError`` listing every problem found.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        problem = f"{path.name}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ConfigError([problem], source=str(path)) from None
    except OSError as exc:
        raise ConfigError([f"{path.name}: cannot read the file: {exc.strerror or exc}"], source=str(path)) from None
    return loads_job(text, fmt=detect_format(path, text), source=str(path), env=env)


def loads_job(
    text: str,
    *,
    fmt: Format,
    source: str = "job",
    name: str | None = None,
    env: Mapping[str, str] | None = None,
) -> JobSpec:
    """Like ``load_job`` for text already read; ``source`` names it in messages
    and its stem is the default job name (unless ``name`` is given)."""
    label = Path(source).name
    default_name = name or Path(source).stem
    front = native if fmt == "yaml" else dagger_properties
    draft = front.parse(text, default_name=default_name)
    _resolve_secrets(draft, os.environ if env is None else env)
    return _validate(draft, label=label, source=source)


# --- secrets ---------------------------------------------------------------------------------


def _secret_slots(data: Mapping[str, Any]):
    """(loc, container, key) of every secret value in the draft data."""
    sink = data.get("sink")
    if isinstance(sink, dict):
        for section, field in (("influx", "password"), ("postgres", "password")):
            node = sink.get(section)
            if isinstance(node, dict) and isinstance(node.get(field), str):
                yield ("sink", section, field), node, field
        node = sink.get("kafka")
        if isinstance(node, dict) and isinstance(node.get("client_secrets"), dict):
            for key in node["client_secrets"]:
                yield ("sink", "kafka", "client_secrets", key), node["client_secrets"], key
    streams = data.get("streams")
    if isinstance(streams, list):
        for i, stream in enumerate(streams):
            kafka = stream.get("kafka") if isinstance(stream, dict) else None
            secrets = kafka.get("client_secrets") if isinstance(kafka, dict) else None
            if isinstance(secrets, dict):
                for key in secrets:
                    yield ("streams", i, "kafka", "client_secrets", key), secrets, key


def secret_references(text: str, fmt: Format) -> tuple[str, ...]:
    """The ${VAR} names the job's secret values name once parsed, so after YAML's and the
    properties format's own escapes (a `\x24{VAR}` in a YAML string is a reference too): what
    the loader will resolve from the environment."""
    front = native if fmt == "yaml" else dagger_properties
    try:
        draft = front.parse(text, default_name="job")
    except Exception:  # noqa: BLE001 - a spec that does not parse resolves nothing; load reports why
        return ()
    names: set[str] = set()
    for _, container, key in _secret_slots(draft.data):
        value = container[key]
        if isinstance(value, str):
            names.update(m.group(1) for m in _checks.ENV_REF_RE.finditer(value.replace("$${", "")))
    return tuple(sorted(names))


def _resolve_secrets(draft: Draft, env: Mapping[str, str]) -> None:
    for loc, container, key in list(_secret_slots(draft.data)):
        value = container[key]
        if not isinstance(value, str) or not value.strip():
            continue
        if "${" not in value.replace("$${", ""):
            draft.note(draft.namer(loc), "a secret is written in the file; prefer an ${ENV_VAR} reference")
            continue
        resolved, errors = _checks.resolve_env(value, env)
        for error in errors:
            draft.issue(loc, error)
        container[key] = resolved


# --- validation ------------------------------------------------------------------------------


def _is_secret_loc(loc: Loc) -> bool:
    return "client_secrets" in loc or (bool(loc) and loc[-1] == "password")


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return _checks.show(value)


def _message(error: Mapping[str, Any], loc: Loc) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    shown = "a value (hidden: it is a secret)" if _is_secret_loc(loc) else _describe(error.get("input"))
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"])
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {shown}"
    if kind == "string_type":
        return f"expected text, got {shown}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {shown}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {shown}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of settings, got {shown}"
    if kind in ("tuple_type", "list_type", "iterable_type"):
        return f"expected a list, got {shown}"
    return str(error.get("msg", kind))


def _under(loc: Loc, prefixes: set[Loc]) -> bool:
    return any(loc[: len(prefix)] == prefix for prefix in prefixes)


def _validate(draft: Draft, *, label: str, source: str) -> JobSpec:
    found: list[tuple[str, str]] = list(draft.problems)
    claimed = {loc for loc, _ in draft.issues}
    found += [(draft.namer(loc), message) for loc, message in draft.issues]

    job: JobSpec | None = None
    notes = sorted(draft.notes, key=lambda item: line_of(item[0], draft.lines) or float("inf"))
    warnings = tuple(_render(label, path, message, draft.lines) for path, message in notes)
    if not draft.problems or draft.data:
        data = {**draft.data, "origin": draft.origin, "source_path": source, "warnings": warnings}
        try:
            job = JobSpec.model_validate(data, context=rules_checked_context())
        except ValidationError as exc:
            for error in exc.errors():
                loc = tuple(part for part in error["loc"] if part != "[key]")
                if not _under(loc, claimed):
                    found.append((draft.namer(loc), _message(error, loc)))
        for loc, message in rules.all_rules(draft.data):
            if not _under(loc, claimed):
                found.append((draft.namer(loc), message))

    if found or job is None:
        found = _with_misspellings(found, draft)
        # the query's own refusals beside the config's problems: both fixed in one go
        if not _under(("sql",), claimed):
            found += [(draft.namer(("sql",)), m) for m in _sql_problems(draft.data)]
        unique = list(dict.fromkeys(found))
        ordered = sorted(unique, key=lambda item: line_of(item[0], draft.lines) or float("inf"))
        raise ConfigError([_render(label, path, message, draft.lines) for path, message in ordered], source=source)
    return job


def _with_misspellings(found: list[tuple[str, str]], draft: Draft) -> list[tuple[str, str]]:
    """A required key that is missing while an unknown one close to it is there (a properties file's
    unknown keys are only notes): the missing key's problem names the one that was meant."""
    unknown = {path: path.rpartition(".")[2] for path, message in draft.notes if message.startswith("unknown key")}
    out = []
    for path, message in found:
        if message == "is required" and unknown:
            name = path.rpartition(".")[2]
            close = _checks.closest(name, unknown.values())
            if close:
                written = next(p for p, n in unknown.items() if n == close)
                line = line_of(written, draft.lines)
                message += f"; {written}{f' (line {line})' if line else ''} is not a key: a misspelling of {name}?"
        out.append((path, message))
    return out


def _sql_problems(data: Mapping[str, Any]) -> list[str]:
    """What translating the query refuses, when the job's config is invalid but its query and its
    tables' names can be read (a valid config has its query checked by the plan, in full)."""
    sql, streams = data.get("sql"), data.get("streams")
    if not isinstance(sql, str) or not sql.strip() or not isinstance(streams, list):
        return []
    tables = [s["table"] for s in streams if isinstance(s, Mapping) and isinstance(s.get("table"), str)]
    if not tables:
        return []
    from ..sql import translate

    rowtime = data.get("rowtime_attribute")
    try:
        translate(sql, tables, rowtime if isinstance(rowtime, str) and rowtime else "rowtime")
    except QueryError as e:
        return [str(e)]
    except Exception:  # noqa: BLE001 - a query this broken is refused by the plan once the config is fixed
        return []
    return []


def _render(label: str, path: str, message: str, lines: dict[str, int]) -> str:
    line = line_of(path, lines)
    where = f" (line {line})" if line else ""
    first, newline, rest = message.partition("\n")  # an SQL refusal's quoted line and caret follow it
    if path == "(file)":
        return f"{label}: {first}{where}{newline}{rest}"
    return f"{label}: {path}: {first}{where}{newline}{rest}"


__all__ = ["detect_format", "load_job", "loads_job"]
