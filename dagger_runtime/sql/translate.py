"""Flink-dialect dagger SQL -> Spark SQL, with a real parser (sqlglot), never regular expressions.

The pipeline is pure: parse -> refuse what a dagger may not do -> rewrite group windows and
dagger functions -> print Spark SQL. Column resolution and types are left to Spark's analyzer,
which `validate` runs against the streams' schemas.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..errors import QueryError
from . import functions, guard, windows
from .dialect import FlinkSQL
from .positions import locate


@dataclass(frozen=True)
class Translation:
    source: str
    spark_sql: str
    tables: tuple[str, ...]                 # stream tables the query reads
    windows: tuple[windows.GroupWindow, ...]
    udfs: tuple[str, ...]                   # vectorised UDFs the session must register
    output_columns: tuple[str, ...] = field(default=())


def parse(sql: str) -> exp.Expression:
    text = sql.strip().rstrip(";")
    if not text:
        raise QueryError("the query is empty")
    try:
        statements = [s for s in sqlglot.parse(text, read=FlinkSQL) if s is not None]
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        reason = first.get("description") or str(e).splitlines()[0]
        near = first.get("highlight")
        raise QueryError(f"syntax error: {reason}" + (f" near '{near}'" if near else ""),
                         line=first.get("line"), col=first.get("col"), sql=text) from None
    except TokenError as e:
        raise QueryError(f"syntax error: {e}") from None
    if len(statements) != 1:
        raise QueryError(f"a dagger runs exactly one SELECT query; found {len(statements)} statements")
    return statements[0]


def translate(sql: str, tables: set[str] | list[str] | tuple[str, ...], rowtime: str = "rowtime") -> Translation:
    """Translate the analyst's query for the job whose stream tables are `tables`."""
    text = sql.strip().rstrip(";")
    tree = parse(text)
    refusals = guard.check(text, tree, set(tables))
    if refusals:
        first = refusals[0]
        more = "".join(f"\n  also refused: {r}" for r in refusals[1:])
        raise QueryError(f"refused: {first.what}{more}", line=first.line, col=first.col, sql=text)
    found = windows.rewrite(text, tree, rowtime)
    used_udfs = functions.rewrite(text, tree)
    read = sorted({t.name for t in tree.find_all(exp.Table)} & set(tables)
                  or {t.name for t in tree.find_all(exp.Table)})
    outputs = tuple(_output_names(tree))
    return Translation(text, tree.sql(dialect="spark"), tuple(read), tuple(found), tuple(sorted(used_udfs)),
                       outputs)


def _output_names(tree: exp.Expression) -> list[str]:
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    return [e.alias_or_name for e in select.expressions] if select is not None else []


__all__ = ["Translation", "translate", "parse", "locate"]
