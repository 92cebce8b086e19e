"""Loading a playbook: read the YAML or JSON, build the model, run the checks, and say every problem as
`file:line: field.path: message`."""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError

from dagger_runtime.yaml_lines import Problems, field_name, read_yaml

from .checks import _Checker
from .lab import Lab, lab_inventory
from .model import Playbook
from .values import _DOC, PLAYBOOKS_DIR, REPO, PlaybookError, _kind, did_you_mean

# -- loading ----------------------------------------------------------------------------------------


def load(path: str | Path, *, lab: Lab | None = None, descriptors=None, base: Path = REPO) -> Playbook:
    """The playbook at `path` (YAML, or JSON for a .json file), checked; PlaybookError lists every problem."""
    p = Path(path)
    label = _label(p)
    if not p.is_file():
        raise PlaybookError([f"{label}:1: (file): no such file"])
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PlaybookError([f"{label}:1: (file): not UTF-8 text ({e.reason} at byte {e.start})"]) from None
    return parse(
        text, source=label, json_format=p.suffix.lower() == ".json", lab=lab, descriptors=descriptors, base=base
    )


def parse(
    text: str,
    *,
    source: str = "<memory>",
    json_format: bool = False,
    lab: Lab | None = None,
    descriptors=None,
    base: Path = REPO,
) -> Playbook:
    raw, lines = _read(text, source, json_format)
    problems = Problems(source, lines)
    if not isinstance(raw, dict):
        problems.add("(top level)", f"expected a mapping of fields, got {_kind(raw)}")
        raise PlaybookError(problems)
    try:
        book = Playbook.model_validate(raw)
    except ValidationError as e:
        for error in e.errors():
            path = tuple(error["loc"])
            problems.add(field_name(path), _message(error, path))
        raise PlaybookError(_ordered(problems)) from None
    book._source, book._lines = source, lines
    book = _Checker(book, problems, lab or lab_inventory(), descriptors, Path(base)).run()
    if problems:
        raise PlaybookError(_ordered(problems))
    return book


def _ordered(problems: Problems) -> list[str]:
    """By line, each once."""

    def line(p: str) -> int:
        m = re.match(r".*?:(\d+): ", p)
        return int(m[1]) if m else 0

    return sorted(dict.fromkeys(problems), key=line)


def _read(text: str, source: str, json_format: bool) -> tuple[Any, dict]:
    if not json_format:
        return read_yaml(text, source, _DOC)
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        raise PlaybookError([f"{source}:{e.lineno}: (json): not valid JSON: {e.msg} (column {e.colno})"]) from None
    # JSON is YAML (tabs aside, which JSON only allows as blanks): read as YAML for the lines, and
    # keys given twice refused as in YAML
    return read_yaml(text.replace("\t", " "), source, _DOC)


def _label(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


# -- pydantic's errors as the playbook's problems --------------------------------------------------------


def _strip(tp):
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _model_at(path: tuple):
    """The model class at a field path of a playbook, or None."""
    tp: Any = Playbook
    for part in path:
        tp = _strip(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if isinstance(part, int):
                return None
            fields = {(f.alias or n): f for n, f in tp.model_fields.items()}
            if part not in fields:
                return None
            tp = fields[part].annotation
        elif typing.get_origin(tp) in (tuple, list) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
        else:
            return None
    tp = _strip(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _message(error: dict, path: tuple) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        model = _model_at(path[:-1])
        known = sorted((f.alias or n) for n, f in model.model_fields.items()) if model else []
        return f"unknown field{did_you_mean(str(path[-1]), known)}; the fields here are {', '.join(known)}"
    if kind == "missing":
        return "required"
    if kind == "value_error":
        return error["msg"].removeprefix("Value error, ")
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        choices = re.findall(r"'([^']*)'", expected)
        return f"{value!r} is not one of {', '.join(choices)}{did_you_mean(str(value), choices)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of fields, got {_kind(value)}"
    if kind in ("tuple_type", "list_type"):
        return f"expected a list, got {_kind(value)}"
    if kind == "string_type":
        return f"expected text, got {_kind(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{value!r} is not a whole number"
    if kind in ("float_type", "float_parsing"):
        return f"{value!r} is not a number"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return f"{value!r} is out of range: {error['msg'].lower()}"
    return error["msg"]


def playbook_files(directory: Path = PLAYBOOKS_DIR) -> list[Path]:
    return sorted([*directory.glob("*.yaml"), *directory.glob("*.yml"), *directory.glob("*.json")])
