"""YAML documents read with the line of every field, for problems reported as `file:line: field: message`.

Shared by the team specs (infra/spec.py) and the drill playbooks (chaos/playbook.py). Only plain
YAML is taken: strings, numbers, booleans, lists and mappings. Tags, aliases, merge keys and keys
given twice are refused, so that what a reviewer reads is what the program gets.

    raw, lines = read_yaml(text, "infra/teams/fraud.yaml", doc=Document(...))
    problems = Problems("infra/teams/fraud.yaml", lines)
    problems.add("network.cidr", "...")        # "infra/teams/fraud.yaml:12: network.cidr: ..."

Pure: imports nothing of the project, so cheap to import.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

# -- where a field is -------------------------------------------------------------------------

_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def field_path(name: str) -> tuple:
    """"kafka[0].topics[1]" -> ("kafka", 0, "topics", 1)."""
    return tuple(int(i) if i else key for i, key in _PART.findall(name))


def field_name(path) -> str:
    """("kafka", 0, "topics", 1) -> "kafka[0].topics[1]"; () -> "(top level)"."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def line_of(lines: Mapping[tuple, int], name: str) -> int:
    """The line of a field, else of its nearest present parent, else 1."""
    path = field_path(name)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return 1


class Problems(list):
    """Problems of one file, each "<source>:<line>: <field>: <message>"."""

    def __init__(self, source: str, lines: Mapping[tuple, int]):
        super().__init__()
        self.source, self.lines = source, lines

    def add(self, name: str, message: str, line: int | None = None) -> None:
        self.append(f"{self.source}:{line or line_of(self.lines, name)}: {name}: {message}")


# -- what kind of document is read ------------------------------------------------------------------

@dataclass(frozen=True)
class Document:
    """The words the messages use for one kind of document, and the error raised with the problems
    (called with the list of problem strings)."""
    error: type
    holds: str = "a team spec"                              # "<holds> holds plain strings, ..."
    gets: str = "the platform gets"                         # "what reviewers read is what <gets>"
    needs: str = "a spec needs team, owners, tier and network"   # said of an empty file


# -- reading the YAML ----------------------------------------------------------------------------

_YAML_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_YAML_HINTS = (
    ("found character '\\t'", "YAML indents with spaces only: replace the tab by spaces"),
    ("mapping values are not allowed", "a ':' where YAML did not expect a field: is the line indented more than "
                                       "the field above it, or is a value with ': ' in it missing its quotes?"),
    ("expected <block end>", "a line is indented less or more than the fields around it: line up fields of the "
                             "same mapping (two spaces a level), list items under their field"),
    ("did not find expected key", "a line is indented less or more than the fields around it: line up fields of "
                                  "the same mapping (two spaces a level)"),
    ("did not find expected '-'", "list items must line up: every '- ' of one list at the same column"),
    ("could not find expected ':'", "a field needs 'name: value'; is a ':' or a closing quote missing?"),
    ("expected ',' or ']'", "a [list] is not closed: add the ']'"),
    ("expected ',' or '}'", "a {mapping} is not closed: add the '}'"),
    ("found undefined alias", "'*name' refers to no '&name' anchor: write the value out"),
)


def yaml_hint(what: str) -> str:
    """How to fix a YAML parser's complaint, in words (the job files use it too)."""
    return next((h for key, h in _YAML_HINTS if key in what), "check the indentation and the quotes on this line")


def yaml_error(source: str, e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    line = mark.line + 1 if mark else 1
    what = " ".join(x for x in (getattr(e, "context", None), getattr(e, "problem", None)) if x) or str(e)
    return f"{source}:{line}: (yaml): not valid YAML: {what}; {yaml_hint(what)}"


def walk(node, path: tuple, lines: dict, problems: Problems, seen: set, doc: Document) -> None:
    """Record the line of every field under `node`; refuse aliases, tags, merge keys and duplicates."""
    if id(node) in seen:
        # the composer hands back the anchored node for an alias: the same object twice
        problems.add(field_name(path), "an alias (*name) repeats another part of the file: write the value out, "
                                       f"so that what reviewers read is what {doc.gets}")
        return
    seen.add(id(node))
    if node.tag not in _YAML_TAGS:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        problems.add(field_name(path), f"the YAML tag {tag} is not allowed: {doc.holds} holds plain strings, "
                                       "numbers, booleans, lists and mappings (quote a value to keep it a string)")
        return
    if isinstance(node, yaml.MappingNode):
        keys: dict = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in (
                    "tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"):
                problems.add(field_name(path), f"line {line}: a field name must be plain text")
                continue
            key = key_node.value
            if key_node.tag.endswith(":merge"):
                lines[path + ("<<",)] = line
                problems.add(field_name(path + ("<<",)), "merge keys (<<) are not allowed: write the fields out")
                continue
            if key in keys:
                problems.add(field_name(path + (key,)), f"given twice (lines {keys[key]} and {line}): keep one; "
                                                        "YAML would silently keep the last", line)
                continue
            keys[key] = line
            lines[path + (key,)] = line
            walk(value_node, path + (key,), lines, problems, seen, doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[path + (i,)] = item.start_mark.line + 1
            walk(item, path + (i,), lines, problems, seen, doc)


def read_yaml(text: str, source: str, doc: Document) -> tuple[object, dict[tuple, int]]:
    """(the document, the line of every field); doc.error(problems) on bad YAML, tags, aliases, merges,
    duplicate keys or an empty file."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise doc.error([yaml_error(source, e)]) from None
    if node is None:
        raise doc.error([f"{source}:1: (top level): the file is empty; {doc.needs}"])
    lines: dict[tuple, int] = {(): node.start_mark.line + 1}
    problems = Problems(source, lines)
    walk(node, (), lines, problems, set(), doc)
    if problems:
        raise doc.error(problems)
    try:
        return yaml.safe_load(text), lines
    except yaml.YAMLError as e:     # composed cleanly, so unlikely: a value YAML cannot construct
        raise doc.error([yaml_error(source, e)]) from None
