"""Flink's window table-valued functions, as the group windows they aggregate like.

Flink 1.20 recommends window TVFs over group window functions:

    SELECT window_start, window_end, city, COUNT(*)
    FROM TABLE(TUMBLE(TABLE bookings, DESCRIPTOR(rowtime), INTERVAL '1' MINUTE))
    GROUP BY window_start, window_end, city

is a window aggregation with exactly the meaning of

    SELECT TUMBLE_START(rowtime, INTERVAL '1' MINUTE) AS window_start,
           TUMBLE_END(rowtime, INTERVAL '1' MINUTE) AS window_end, city, COUNT(*)
    FROM bookings
    GROUP BY TUMBLE(rowtime, INTERVAL '1' MINUTE), city

(the same for HOP, whose TVF also takes the slide before the size), so a query of that shape is
rewritten into the group-window form, which dagger_runtime.sql.windows turns into Spark's windows.
window_time is the window's rowtime (TUMBLE_ROWTIME: its end less a millisecond).

GROUPING SETS, ROLLUP and CUBE beside window_start, window_end work as in Flink. Refused, each by
name: CUMULATE (Spark has no cumulating window), a TVF whose result is not grouped by
window_start and window_end (Flink's windowing TVF alone gives each row its window: a HOP's row
in several), a TVF over anything but one stream table, and window joins. SESSION's
TVF takes `TABLE t PARTITION BY k`, which the parser does not read: flink.explain_unparsable
names it.
"""

from __future__ import annotations

from sqlglot import exp

from ..errors import QueryError
from .dialect import TABLE_ARGUMENT
from .positions import locate

_TVFS = {"TUMBLE": 1, "HOP": 2}  # interval arguments after TABLE t and DESCRIPTOR(time)
_COLUMNS = {"window_start": "START", "window_end": "END", "window_time": "ROWTIME"}


def _tvf_call(node: exp.Expression) -> exp.Anonymous | None:
    """The TUMBLE(...) inside FROM TABLE(TUMBLE(...)), or None."""
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Anonymous):
        return None
    outer = node.this
    if str(outer.this).upper() != "TABLE" or len(outer.expressions) != 1:
        return None
    inner = outer.expressions[0]
    return inner if isinstance(inner, exp.Anonymous) else None


def _error(sql: str, node: exp.Expression, what: str) -> QueryError:
    line, col = locate(sql, node)
    return QueryError(f"refused: {what}", line=line, col=col, sql=sql)


def rewrite(sql: str, tree: exp.Expression) -> None:
    """Rewrites, in place, every SELECT that reads a window TVF into its group-window form."""
    for table in list(tree.find_all(exp.Table)):
        call = _tvf_call(table)
        if call is None:
            continue
        select = table.find_ancestor(exp.Select)
        _rewrite_one(sql, select, table, call)
    # the dialect reads `TABLE name` wherever an argument starts; anywhere else than a window TVF's
    # input it would print as a bare name, which Spark reads as a column or even a function
    # (`current_user`): a table stands in FROM or JOIN, nowhere else
    for table in tree.find_all(exp.Table):
        if table.meta.get(TABLE_ARGUMENT):
            raise _error(
                sql,
                table,
                f"TABLE {table.sql()} is only the input of a window table-valued function: "
                "TABLE(TUMBLE(TABLE name, DESCRIPTOR(rowtime), INTERVAL ...))",
            )


def _rewrite_one(sql: str, select: exp.Select | None, table: exp.Table, call: exp.Anonymous) -> None:
    kind = str(call.this).upper()
    written = f"TABLE({kind}(...))"
    if kind == "CUMULATE":
        raise _error(
            sql,
            call,
            "the window table-valued function TABLE(CUMULATE(...)) has no Spark equivalent; "
            "aggregate per HOP or TUMBLE window instead",
        )
    if kind not in _TVFS:
        raise _error(
            sql,
            call,
            f"{written} is not a window table-valued function a dagger can run; use "
            "TABLE(TUMBLE(...)) or TABLE(HOP(...))",
        )
    args = list(call.expressions)
    want = 2 + _TVFS[kind]
    if len(args) != want:
        shape = (
            "TABLE t, DESCRIPTOR(rowtime), INTERVAL slide, INTERVAL size"
            if kind == "HOP"
            else "TABLE t, DESCRIPTOR(rowtime), INTERVAL size"
        )
        raise _error(sql, call, f"{written} takes {want} arguments ({shape}), got {len(args)}")
    data, descriptor, *intervals = args
    if not isinstance(data, exp.Table) or not isinstance(data.this, exp.Identifier) or data.args.get("db"):
        raise _error(sql, data, f"{written} reads one of the job's stream tables, written TABLE name")
    if not (
        isinstance(descriptor, exp.Anonymous)
        and str(descriptor.this).upper() == "DESCRIPTOR"
        and len(descriptor.expressions) == 1
        and isinstance(descriptor.expressions[0], exp.Column)
    ):
        raise _error(sql, descriptor, f"{written} takes the time attribute as DESCRIPTOR(rowtime)")
    time_col = descriptor.expressions[0]
    parent = table.parent
    if select is None or not isinstance(parent, exp.From) or select.args.get("joins"):
        raise _error(
            sql,
            call,
            f"{written} must be the only table of its SELECT (window joins are not supported); "
            "join the streams with an interval join, then GROUP BY TUMBLE(rowtime, ...)",
        )
    alias = table.alias
    group = select.args.get("group")
    keys = list(group.expressions) if group else []
    bounds = [k for k in keys if _window_column(k, alias)]
    grouped = {_window_column(k, alias) for k in bounds}
    if not {"window_start", "window_end"} <= grouped:
        raise _error(
            sql,
            call,
            f"{written} is supported as a window aggregation only: GROUP BY window_start, "
            "window_end and the keys (a windowing TVF's rows alone are not)",
        )

    def window(name: str) -> exp.Anonymous:
        return exp.Anonymous(this=name, expressions=[exp.column(time_col.name), *(i.copy() for i in intervals)])

    # GROUP BY window_start, window_end, k  ->  GROUP BY TUMBLE(rowtime, size), k
    for k in bounds:
        group.expressions.remove(k)
    group.set("expressions", [window(kind), *group.expressions])
    # window_start / window_end / window_time anywhere in this SELECT -> TUMBLE_START(...) ...
    for key in ("expressions", "where", "having", "order", "qualify"):
        value = select.args.get(key)
        for root in value if isinstance(value, list) else [value]:
            if root is None:
                continue
            for node in list(root.find_all(exp.Column)):
                name = _window_column(node, alias)
                if name is None:
                    continue
                if key == "where":
                    raise _error(sql, node, f"{name} is known only once rows are grouped: filter on it in HAVING")
                if name not in grouped:  # as Flink: every window column selected is grouped by
                    raise _error(sql, node, f"{name} is not being grouped: add it to GROUP BY window_start, window_end")
                replacement = window(f"{kind}_{_COLUMNS[name]}")
                if node.parent is select and key == "expressions":
                    replacement = exp.alias_(replacement, name)
                node.replace(replacement)
    table.replace(exp.Table(this=data.this.copy(), alias=table.args.get("alias")))


def _window_column(node: exp.Expression, alias: str) -> str | None:
    """window_start, window_end or window_time when node is that column (bare or as alias.column)."""
    if not isinstance(node, exp.Column) or node.name.lower() not in _COLUMNS:
        return None
    if node.table and node.table.lower() != (alias or "").lower():
        return None
    return node.name.lower()
