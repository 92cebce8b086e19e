"""What a file format hands to the loader: the job as plain data in the
model's shape, plus how to name each location the way the file spells it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Loc = tuple[Any, ...]


def render_loc(loc: Loc) -> str:
    """('streams', 0, 'topics') -> 'streams[0].topics'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


_LAST_SEGMENT = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")


def line_of(path: str, lines: dict[str, int]) -> int | None:
    """The line of ``path`` or of its nearest ancestor that has one."""
    while path:
        if path in lines:
            return lines[path]
        shorter = _LAST_SEGMENT.sub("", path)
        if shorter == path:
            return None
        path = shorter
    return None


@dataclass
class Draft:
    """A parsed job file, not yet validated.

    ``issues`` are problems the format itself found, keyed by the model
    location they concern (the loader then ignores further complaints at or
    under that location, so a field is reported once); ``problems`` are about
    keys that have no place in the model. ``notes`` become ``JobSpec.warnings``.
    """

    data: dict[str, Any]
    origin: str
    namer: Callable[[Loc], str]
    lines: dict[str, int] = field(default_factory=dict)
    issues: list[tuple[Loc, str]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (path as written, message)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (path as written, message)

    def issue(self, loc: Loc, message: str) -> None:
        self.issues.append((tuple(loc), message))

    def problem(self, path: str, message: str) -> None:
        """A problem with something that has no place in the model (an unknown or unsupported key)."""
        self.problems.append((path, message))

    def note(self, path: str, message: str) -> None:
        self.notes.append((path, message))
