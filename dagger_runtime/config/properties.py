"""Java ``.properties`` syntax, as ``java.util.Properties.load`` reads it.

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

_BLANKS = " \t\f"
_NEWLINES = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


@dataclass(frozen=True)
class Entry:
    key: str
    value: str
    line: int  # 1-based line where the entry starts
    continued: bool  # the value spans several lines
    raw_value: str = ""  # the value before unescaping


class PropertiesSyntaxError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(f"line {line}: {message}")


def _odd_trailing_backslashes(text: str) -> bool:
    count = len(text) - len(text.rstrip("\\"))
    return count % 2 == 1


def _logical_lines(text: str):
    natural = _NEWLINES.split(text)
    i = 0
    while i < len(natural):
        start = i + 1
        line = natural[i].lstrip(_BLANKS)
        i += 1
        if not line or line[0] in "#!":
            continue
        continued = False
        while _odd_trailing_backslashes(line):
            line = line[:-1]
            if i >= len(natural):
                break
            line += natural[i].lstrip(_BLANKS)
            i += 1
            continued = True
        yield start, line, continued


def _unescape(text: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            i += 1  # a lone trailing backslash (only at the end of the file) is dropped
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise PropertiesSyntaxError(line, f"malformed \\uxxxx escape {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Raw (still escaped) key and value of a logical line."""
    i, n = 0, len(line)
    escaped = False
    while i < n:
        c = line[i]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:" or c in _BLANKS:
            break
        i += 1
    key = line[:i]
    j = i
    while j < n and line[j] in _BLANKS:
        j += 1
    if j < n and line[j] in "=:":
        j += 1
        while j < n and line[j] in _BLANKS:
            j += 1
    return key, line[j:]


def parse_entries(text: str) -> list[Entry]:
    """Every entry in file order (duplicates included); raises PropertiesSyntaxError."""
    if text.startswith("\ufeff"):
        text = text[1:]
    entries = []
    for line_no, line, continued in _logical_lines(text):
        raw_key, raw_value = _split(line)
        entries.append(Entry(_unescape(raw_key, line_no), _unescape(raw_value, line_no), line_no, continued, raw_value))
    return entries


def looks_like_properties(text: str) -> bool:
    """True when every entry is an UPPER_SNAKE key with a separator (dagger's style)."""
    try:
        entries = parse_entries(text)
    except PropertiesSyntaxError:
        return False
    if not entries:
        return False
    for _, line, _ in _logical_lines(text):
        if not re.match(r"[A-Z][A-Z0-9_.]*\s*[=:]", line):
            return False
    return True
