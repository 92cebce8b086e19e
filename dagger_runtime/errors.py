"""The runtime's error tree: every refusal names what is wrong and where."""

from __future__ import annotations


class DaggerError(Exception):
    """Base of every error the runtime reports to a user (exit code 2 on the CLI)."""


class SetupError(DaggerError):
    """The machine lacks something the runtime needs (jars, Java)."""


class QueryError(DaggerError):
    """The analyst's SQL is invalid or refused. Carries the position when known."""

    def __init__(self, message: str, *, line: int | None = None, col: int | None = None, sql: str | None = None):
        self.reason = message
        self.line = line
        self.col = col
        where = f"line {line}, column {col}: " if line is not None and col is not None else ""
        text = f"SQL {where}{message}"
        if sql is not None and line is not None and col is not None:
            lines = sql.splitlines()
            if 0 < line <= len(lines):
                text += f"\n    {lines[line - 1]}\n    {' ' * max(col - 1, 0)}^"
        super().__init__(text)
