"""The one "did you mean": the known names closest to a misspelt one, for every refusal that
offers them (job keys and columns, SQL functions, enum values, messages, fields, playbook names,
command-line settings). One measure for all: difflib's ratio over the lower-cased names, at
least 0.6 (difflib's own default), the closest first."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.6


def closest(word: object, choices: Iterable[object], n: int = 3) -> list[str]:
    """Up to n of `choices` closest to `word`, in their own spelling; [] when none is close."""
    by_lower: dict[str, str] = {}
    for choice in sorted({str(c) for c in choices}):
        by_lower.setdefault(choice.lower(), choice)
    matches = difflib.get_close_matches(str(word).lower(), list(by_lower), n=n, cutoff=CUTOFF)
    return [by_lower[m] for m in matches]
