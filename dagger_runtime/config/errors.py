"""Errors of the job configuration layer.

``ConfigError`` is a ``DaggerError``, the root of the runtime's error tree
(``dagger_runtime.errors``), so whatever reports runtime errors to a user
(the CLI: exit code 2) reports a bad job file the same way. ``DaggerError``
is re-exported here for callers of this package.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagger_runtime.errors import DaggerError

__all__ = ["ConfigError", "DaggerError"]


class ConfigError(DaggerError):
    """A job file cannot be turned into a valid job.

    ``problems`` lists every problem found, not just the first, each a
    sentence that names the file, the field (as written in that file) and
    what is wrong with it, e.g.
    ``job.yaml: streams[0].topics: at least one topic is required``.
    ``str(error)`` is a readable multi-line message.
    """

    def __init__(self, problems: Iterable[str], *, source: str | None = None) -> None:
        self.problems: list[str] = list(problems) or ["invalid job configuration"]
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = f" in {self.source}" if self.source else ""
        count = len(self.problems)
        head = f"invalid job configuration{where} ({count} problem{'s' if count != 1 else ''}):"
        return "\n".join([head, *(f"  - {p}" for p in self.problems)])

    def __str__(self) -> str:
        return self._render()
