"""The one way a length of time is written, everywhere: job files (watermark_delay: 60s), drill
playbooks (downtime: 2m), the faults' command line (--downtime 1m30s).

Go's and LOKI's form: one or more parts, each a number with its unit (d, h, m, s, ms), in any
order, spaces between them allowed: 90s, 1m30s, 1.5h, 500ms. A bare number is refused (which
unit?) unless the caller names the unit it stands for (a command-line option in seconds).
"""

from __future__ import annotations

import re
from typing import Any

UNITS_S = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_PART = r"(\d+(?:\.\d+)?)\s*(ms|d|h|m|s)"
# the same grammar for a JSON Schema (job.schema.json) and for editors
PATTERN = r"^\s*(\d+(\.\d+)?\s*(ms|s|m|h|d)\s*)+$"
_WHOLE = re.compile(PATTERN)
_PARTS = re.compile(_PART)
_NUMBER = re.compile(r"\s*\d+(?:\.\d+)?\s*")


def seconds(value: Any, *, bare_unit: str | None = None) -> float:
    """Seconds from a duration; ValueError saying what is wrong with it.
    bare_unit: the unit a bare number is in ("s"), or None to refuse one."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a duration such as 90s, 5m or 1h30m, got {type(value).__name__} {value!r}")
    if isinstance(value, (int, float)) or _NUMBER.fullmatch(value):
        number = float(value)
        if bare_unit is None:
            shown = value.strip() if isinstance(value, str) else f"{value:g}"
            raise ValueError(f"{shown} has no unit: write {shown}s, {shown}m or {shown}h")
        if number < 0:
            raise ValueError(f"{value!r} is negative: a duration is a length of time (90s, 20m, 1h30m)")
        return number * UNITS_S[bare_unit]
    text = value.strip()
    if text.startswith("-"):
        raise ValueError(f"{value!r} is negative: a duration is a length of time (90s, 20m, 1h30m)")
    if not _WHOLE.fullmatch(text):
        raise ValueError(
            f"{value!r} is not a duration: write numbers each with its unit, d, h, m, s or ms (90s, 20m, 1h30m)"
        )
    return sum(float(n) * UNITS_S[unit] for n, unit in _PARTS.findall(text))


def milliseconds(value: Any) -> int:
    """Whole milliseconds from a duration (job files keep their times in ms)."""
    return round(seconds(value) * 1000)


def text(secs: float) -> str:
    """Seconds as a job file or playbook writes them: 1200 -> 20m, 5400 -> 1h30m, 0.5 -> 500ms."""
    if secs and secs < 1:
        return f"{round(secs * 1000)}ms"
    whole = int(round(secs))
    h, rest = divmod(whole, 3600)
    m, s = divmod(rest, 60)
    return ((f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s else "")) or "0s"
