"""YAML documents read with the line of every field, for problems reported as `file:line: field: message`.

Shared by the team specs (infra/spec.py) and the drill playbooks (chaos/playbook/). Only plain
YAML is taken: strings, numbers, booleans, lists and mappings. Tags, aliases, merge keys and keys
given twice are refused, so that what a reviewer reads is what the program gets.

    raw, lines = read_yaml(text, "infra/teams/fraud.yaml", doc=Document(...))
    problems = Problems("infra/teams/fraud.yaml", lines)
    problems.add("network.cidr", "...")        # "infra/teams/fraud.yaml:12: network.cidr: ..."

Pure: imports nothing of the project, so cheap to import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

# -- text from the file, in a message ------------------------------------------------------------
# A message is one line of a CI log and of a pull request's comment: text taken from the file (a
# field name, a value, a tag) goes in through shown(), which quotes it as ascii() does, so a
# newline, ESC, a surrogate, a bidirectional override or a look-alike letter reads as its escape
# (\n, \x1b, \ud800, \u202e, \u0430) and never prints as itself.

SHOWN_MAX = 120


def shown(value: object, limit: int = SHOWN_MAX) -> str:
    """`value` quoted for a message, ASCII only: ascii(value), cut to `limit` characters."""
    text = ascii(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def printable(line: object, ascii_only: bool = True) -> str:
    """A line as it may be printed: every character that is not printable ASCII (control
    characters, ESC, line breaks, surrogates, any other non-ASCII) as its backslash escape; with
    ascii_only=False, printable non-ASCII (a '·' of the program's own) stays. The last guard of a
    command that prints problems: a message that let text through unquoted still prints as one
    line, without terminal sequences, on any stdout encoding."""
    text = str(line)
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        ch if (" " <= ch <= "~" or (not ascii_only and ch.isprintable())) else ascii(ch)[1:-1] for ch in text
    )


# -- where a field is -------------------------------------------------------------------------

# a field name shown as it is: what no message can be forged with ('.' and '[' would read as nesting),
# and YAML's merge key
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+|<<")
# a YAML tag shown as it is (`!!python/object/apply:os.system`); any other is quoted
_PLAIN_TAG = re.compile(r"[A-Za-z0-9!/:._-]+")
_PART = re.compile(r"""\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]|([^.\[\]]+)""")


def field_path(name: str) -> tuple:
    """ "kafka[0].topics[1]" -> ("kafka", 0, "topics", 1); "labels['a.b']" -> ("labels", "a.b")."""
    out = []
    for index, quoted, key in _PART.findall(name):
        if index:
            out.append(int(index))
        elif quoted:
            try:
                out.append(ast.literal_eval(quoted))
            except (ValueError, SyntaxError):
                out.append(quoted)
        else:
            out.append(key)
    return tuple(out)


def field_name(path) -> str:
    """("kafka", 0, "topics", 1) -> "kafka[0].topics[1]"; () -> "(top level)". A name that is not
    plain (letters, digits, '_', '-') is quoted: ("labels", "a.b\n") -> "labels['a.b\\n']"."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        elif isinstance(part, str) and _PLAIN_KEY.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{ascii(part)}]"
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

    def add(self, name: str | tuple, message: str, line: int | None = None) -> None:
        """name: a field's name ("kafka[0].cluster") or its path (("kafka", 0, "cluster"))."""
        if isinstance(name, tuple):
            name = field_name(name)
        self.append(f"{self.source}:{line or line_of(self.lines, name)}: {name}: {message}")


# -- what kind of document is read ------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """The words the messages use for one kind of document, and the error raised with the problems
    (called with the list of problem strings)."""

    error: type
    holds: str = "a team spec"  # "<holds> holds plain strings, ..."
    gets: str = "the platform gets"  # "what reviewers read is what <gets>"
    needs: str = "a spec needs team, owners, tier and network"  # said of an empty file


# -- reading the YAML ----------------------------------------------------------------------------

_YAML_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_YAML_HINTS = (
    ("found character '\\t'", "YAML indents with spaces only: replace the tab by spaces"),
    (
        "mapping values are not allowed",
        "a ':' where YAML did not expect a field: is the line indented more than "
        "the field above it, or is a value with ': ' in it missing its quotes?",
    ),
    (
        "expected <block end>",
        "a line is indented less or more than the fields around it: line up fields of the "
        "same mapping (two spaces a level), list items under their field",
    ),
    (
        "did not find expected key",
        "a line is indented less or more than the fields around it: line up fields of "
        "the same mapping (two spaces a level)",
    ),
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
    # PyYAML quotes what it found with repr(): printable non-ASCII would pass as itself
    return f"{source}:{line}: (yaml): not valid YAML: {printable(what)}; {yaml_hint(what)}"


def walk(node, path: tuple, lines: dict, problems: Problems, seen: set, doc: Document) -> None:
    """Record the line of every field under `node`; refuse aliases, tags, merge keys and duplicates."""
    if id(node) in seen:
        # the composer hands back the anchored node for an alias: the same object twice
        problems.add(
            field_name(path),
            "an alias (*name) repeats another part of the file: write the value out, "
            f"so that what reviewers read is what {doc.gets}",
        )
        return
    seen.add(id(node))
    if node.tag not in _YAML_TAGS:
        tag = node.tag.replace("tag:yaml.org,2002:", "!!")
        tag = tag if _PLAIN_TAG.fullmatch(tag) else shown(tag)  # a %-escape in a tag is decoded: %1B is ESC
        problems.add(
            field_name(path),
            f"the YAML tag {tag} is not allowed: {doc.holds} holds plain strings, "
            "numbers, booleans, lists and mappings (quote a value to keep it a string)",
        )
        return
    if isinstance(node, yaml.MappingNode):
        keys: dict = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in (
                "tag:yaml.org,2002:str",
                "tag:yaml.org,2002:merge",
            ):
                problems.add(field_name(path), f"line {line}: a field name must be plain text")
                continue
            key = key_node.value
            if key_node.tag.endswith(":merge"):
                lines[path + ("<<",)] = line
                problems.add(field_name(path + ("<<",)), "merge keys (<<) are not allowed: write the fields out")
                continue
            if key in keys:
                problems.add(
                    field_name(path + (key,)),
                    f"given twice (lines {keys[key]} and {line}): keep one; YAML would silently keep the last",
                    line,
                )
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
    except yaml.YAMLError as e:  # composed cleanly, so unlikely: a value YAML cannot construct
        raise doc.error([yaml_error(source, e)]) from None
