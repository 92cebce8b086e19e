"""Java ``.properties`` syntax, as ``java.util.Properties.load`` reads it (read here by javaproperties).

raystack/dagger loads its job file with ``Properties.load(FileReader)``, so a
file must mean here exactly what it means there:

- a line whose first non-blank character is ``#`` or ``!`` is a comment
  (a comment is never continued);
- a line ending in an odd number of backslashes continues on the next line,
  whose leading blanks are dropped (so ``SELECT a, \\`` + ``  b`` is ``SELECT a, b``);
- the key ends at the first unescaped ``=``, ``:`` or blank; blanks around
  the separator are dropped, the rest of the line is the value (trailing blanks kept);
- escapes: ``\\t \\n \\r \\f``, ``\\uXXXX``, and ``\\`` before any other
  character is that character;
- a key given twice keeps its last value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import javaproperties

_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
_LAST_BREAK = re.compile(r"(\r\n|\r|\n)\Z")


@dataclass(frozen=True)
class Entry:
    key: str
    value: str
    line: int  # 1-based line where the entry starts
    continued: bool  # the value spans several lines
    source: str = ""  # the entry as written (escapes and continuations included)


class PropertiesSyntaxError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}")


def _breaks(text: str) -> int:
    return len(_LINE_BREAKS.findall(text))


def parse_entries(text: str) -> list[Entry]:
    """Every entry in file order (duplicates included), read by javaproperties (the
    ``java.util.Properties`` rules above) with the line each starts on, which the element's own
    source text gives; raises PropertiesSyntaxError."""
    if text.startswith("\ufeff"):
        text = text[1:]
    entries, line = [], 1
    elements = javaproperties.parse(text)
    while True:
        try:
            element = next(elements)
        except StopIteration:
            return entries
        except javaproperties.InvalidUEscapeError as exc:
            raise PropertiesSyntaxError(line, f"malformed \\uxxxx escape {exc.escape!r}") from None
        if isinstance(element, javaproperties.KeyValue):
            source = element.source
            # leading blank lines before the key belong to no element of their own
            line += _breaks(source[: len(source) - len(source.lstrip())])
            body = _LAST_BREAK.sub("", source.lstrip())
            entries.append(Entry(element.key, element.value, line, _breaks(body) > 0, source))
            line += _breaks(source.lstrip())
        else:
            line += _breaks(element.source)


def looks_like_properties(text: str) -> bool:
    """True when every entry is an UPPER_SNAKE key with a separator (dagger's style)."""
    try:
        entries = parse_entries(text)
    except PropertiesSyntaxError:
        return False
    if not entries:
        return False
    return all(re.match(r"[ \t\f]*[A-Z][A-Z0-9_.]*\s*[=:]", entry.source.lstrip("\r\n")) for entry in entries)
