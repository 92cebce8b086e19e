"""Flink-dialect dagger SQL -> Spark SQL, with a real parser (sqlglot), never regular expressions.

The pipeline is pure: parse -> refuse what a dagger may not do (sandbox.guard) -> rewrite group
windows and dagger functions -> print Spark SQL. Column resolution and types are left to Spark's
analyzer, which `validate` runs against the streams' schemas, after the JVM's own check of the
translated query (dagger_runtime.sandbox).
"""

from __future__ import annotations

import dataclasses
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, SqlglotError, TokenError

from ..errors import QueryError
from ..sandbox import guard
from . import flink, flink_types, functions, window_tvf, windows
from .dialect import FlinkSQL
from .positions import locate, offset_to_line_col


@dataclass(frozen=True)
class Translation:
    source: str
    spark_sql: str
    tables: tuple[str, ...]  # stream tables the query reads, as the job names them
    windows: tuple[windows.GroupWindow, ...]
    udfs: tuple[str, ...]  # vectorised UDFs the session must register
    output_columns: tuple[str, ...] = field(default=())
    # the analyst's query as parsed, before any rewrite: for messages and checks that point
    # into the analyst's SQL (nobody parses it again)
    tree: exp.Expression | None = field(default=None, compare=False, repr=False)
    # the rewritten tree spark_sql was written from (sqlglot cannot read Spark's window() back)
    spark_tree: exp.Expression | None = field(default=None, compare=False, repr=False)

    @property
    def ordered(self) -> bool:
        """The query has its own ORDER BY (preview then keeps its order)."""
        return self.tree is not None and self.tree.args.get("order") is not None

    def with_window_end(self, column: str) -> Translation:
        """The same query with one more output column: the end of its group window.

        A dagger restarted on a new checkpoint replays its input from before its open windows so
        that they are rebuilt whole; windows that ended by then were written by the previous
        version, and the replay sees only their tail. `run` keeps those from being overwritten with
        partial counts by filtering on this column, then drops it: the aggregates and the state
        layout stay as they were.
        """
        if self.spark_tree is None:
            raise QueryError("this query was not translated here, so its windows cannot be told apart")
        if column.lower() in (c.lower() for c in self.output_columns):
            raise QueryError(f"the query already has a column named {column}")
        tree = self.spark_tree.copy()
        select = tree if isinstance(tree, exp.Select) else None
        group = select.args.get("group") if select is not None else None
        # window() only: a session's end moves while it is open, so no boundary says it was written
        calls = [
            g
            for g in (group.expressions if group else [])
            if isinstance(g, exp.Anonymous) and str(g.this).lower() == "window"
        ]
        if not calls:
            raise QueryError(
                "the query's outermost SELECT has no TUMBLE or HOP window, so a replay cannot tell "
                "which results the previous version already wrote"
            )
        ended = exp.Dot(this=calls[0].copy(), expression=exp.to_identifier("end"))
        select.select(exp.alias_(ended, column), append=True, copy=False)
        return dataclasses.replace(
            self,
            spark_sql=tree.sql(dialect="spark", comments=False),
            spark_tree=tree,
            output_columns=self.output_columns + (column,),
        )


def parse(sql: str) -> exp.Expression:
    text = sql.strip().rstrip(";")
    if not text:
        raise QueryError("the query is empty")
    too_long = guard.query_too_long(text)
    if too_long:
        raise QueryError(f"refused: {too_long}")
    try:
        with _quiet_parser():
            statements = [s for s in sqlglot.parse(text, read=FlinkSQL) if s is not None]
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        reason = first.get("description") or str(e).splitlines()[0]
        if "<class" in reason or "<Token" in reason:  # sqlglot's internals are no help to an analyst
            reason = "unexpected syntax"
        near = first.get("highlight")
        _refuse_unparsable(text)
        raise QueryError(
            f"syntax error: {reason}" + (f" near '{near}'" if near else ""),
            line=first.get("line"),
            col=first.get("col"),
            sql=text,
        ) from None
    except TokenError as e:
        raise QueryError(f"syntax error: {e}") from None
    except (SqlglotError, ValueError, IndexError, KeyError, AttributeError, TypeError) as e:
        # the parser's own failures on odd input: still the analyst's syntax, never a traceback
        _refuse_unparsable(text)
        raise QueryError(f"syntax error: the query cannot be parsed ({type(e).__name__})") from None
    except RecursionError:
        _refuse_unparsable(text)  # says how deep, and the limit
        raise QueryError("syntax error: the query is nested too deeply") from None
    if len(statements) != 1:
        raise QueryError(f"a dagger runs exactly one SELECT query; found {len(statements)} statements")
    return statements[0]


def _refuse_unparsable(text: str) -> None:
    """A query sqlglot cannot parse but Spark would run is refused by name, not as a syntax error."""
    flink_syntax = flink.explain_unparsable(text)
    if flink_syntax:
        what, offset = flink_syntax
        line, col = offset_to_line_col(text, offset)
        raise QueryError(f"refused: {what}", line=line, col=col, sql=text) from None
    refusal = guard.explain_unparsable(text)
    if refusal:
        raise QueryError(f"refused: {refusal.what}", line=refusal.line, col=refusal.col, sql=text) from None


@contextmanager
def _quiet_parser():
    """sqlglot logs a warning when it falls back to an opaque command; the refusal says it better."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def translate(sql: str, tables: set[str] | list[str] | tuple[str, ...], rowtime: str = "rowtime") -> Translation:
    """Translate the analyst's query for the job whose stream tables are `tables`."""
    text = sql.strip().rstrip(";")
    tree = parse(text)
    parsed = tree.copy()
    # Flink constructs sqlglot reads as typed nodes, in their Spark form before the check, so that
    # the check sees what will run
    window_tvf.rewrite(text, tree)
    flink_types.mark(tree)  # the analyst's own divisions, AVGs, TYPEOFs and casts
    flink.normalise(text, tree)
    refusals = guard.check(text, tree, tables)
    if refusals:
        first = refusals[0]
        more = "".join(f"\n  also refused: {r}" for r in dict.fromkeys(refusals[1:]) if r != first)
        raise QueryError(f"refused: {first.what}{more}", line=first.line, col=first.col, sql=text)
    found = windows.rewrite(text, tree, rowtime)
    # after the checks: the runtime's own __dagger_ functions, which Spark builds by type
    flink_types.rewrite(tree)
    used_udfs = functions.rewrite(text, tree)
    by_name = {t.lower(): t for t in tables}
    read = sorted({by_name[t.name.lower()] for t in parsed.find_all(exp.Table) if t.name.lower() in by_name})
    outputs = tuple(_output_names(parsed))
    # comments are dropped: Spark runs exactly the tree that was checked, nothing hidden in them
    return Translation(
        text,
        tree.sql(dialect="spark", comments=False),
        tuple(read),
        tuple(found),
        tuple(sorted(used_udfs)),
        outputs,
        parsed,
        tree,
    )


def _output_names(tree: exp.Expression) -> list[str]:
    select = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    return [e.alias_or_name for e in select.expressions] if select is not None else []


__all__ = ["Translation", "translate", "parse", "locate"]
