"""Errors of the job configuration layer.

``DaggerError`` is meant to become the root of the runtime's error tree (it
will move to ``dagger_runtime/errors.py``); import it from
``dagger_runtime.config`` until then.
"""

from __future__ import annotations

from collections.abc import Iterable


class DaggerError(Exception):
    """Base class of every error the dagger runtime raises on purpose."""


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
