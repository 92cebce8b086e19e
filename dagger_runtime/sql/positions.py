"""Line and column of an AST node in the analyst's SQL, for error messages."""

from __future__ import annotations

from sqlglot import exp


def offset_to_line_col(sql: str, offset: int) -> tuple[int, int]:
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return line, col


def locate(sql: str, node: exp.Expression) -> tuple[int | None, int | None]:
    """Where a node starts: from sqlglot's token metadata on it or its first identifier."""
    for candidate in (node, *node.find_all(exp.Identifier, exp.Anonymous, exp.Literal)):
        start = (getattr(candidate, "meta", None) or {}).get("start")
        if start is not None:
            return offset_to_line_col(sql, start)
    return None, None
