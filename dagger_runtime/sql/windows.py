"""Flink's group windows (TUMBLE, HOP, SESSION and their _START/_END/_ROWTIME) as Spark windows.

Flink:  GROUP BY TUMBLE(rowtime, INTERVAL '60' SECOND)      SELECT TUMBLE_END(rowtime, INTERVAL '60' SECOND)
Spark:  GROUP BY window(rowtime, '60 seconds')              SELECT window(rowtime, '60 seconds').end

Both engines' windows are [start, end): an event at exactly `end` belongs to the next window.
HOP takes (time, slide, size) in Flink and window(time, size, slide) in Spark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from ..errors import QueryError
from .positions import locate

_UNITS_MS = {"MILLISECOND": 1, "SECOND": 1_000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
_SPARK_UNIT = {"MILLISECOND": "milliseconds", "SECOND": "seconds", "MINUTE": "minutes", "HOUR": "hours", "DAY": "days"}
GROUP_FUNCS = {"TUMBLE": 1, "HOP": 2, "SESSION": 1}  # number of interval arguments
AUX_FUNCTION = re.compile(r"^(TUMBLE|HOP|SESSION)_(START|END|ROWTIME|PROCTIME)$")


@dataclass(frozen=True)
class Duration:
    millis: int

    def spark(self) -> str:
        for unit in ("DAY", "HOUR", "MINUTE", "SECOND"):
            if self.millis % _UNITS_MS[unit] == 0:
                return f"{self.millis // _UNITS_MS[unit]} {_SPARK_UNIT[unit]}"
        return f"{self.millis} milliseconds"

    def human(self) -> str:
        """ "1 minute", "90 seconds": for messages."""
        count, unit = self.spark().split(" ", 1)
        return f"{count} {unit.removesuffix('s') if count == '1' else unit}"


@dataclass(frozen=True)
class GroupWindow:
    """One group window: what the job's watermark and the sinks need to know about it."""

    kind: str  # TUMBLE | HOP | SESSION
    time_column: str  # the time attribute's name (rowtime)
    intervals: tuple[Duration, ...]

    @property
    def size(self) -> Duration:
        return self.intervals[-1] if self.kind == "HOP" else self.intervals[0]


def _name(node: exp.Expression) -> str | None:
    return str(node.this).upper() if isinstance(node, exp.Anonymous) else None


def parse_interval(sql: str, node: exp.Expression, what: str) -> Duration:
    line, col = locate(sql, node)
    if isinstance(node, exp.Interval):
        value = node.this.name if isinstance(node.this, exp.Literal) else node.this.sql()
        unit = node.unit.name.upper() if node.unit is not None else ""
        if not unit:  # INTERVAL '60 seconds'
            match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]+?)s?\s*", value)
            if match:
                value, unit = match.group(1), match.group(2).upper()
        unit = unit.rstrip("S") if unit.endswith("S") and unit[:-1] in _UNITS_MS else unit
        if unit in _UNITS_MS and re.fullmatch(r"\s*\d+\s*", value):
            millis = int(value) * _UNITS_MS[unit]
            if millis <= 0:
                raise QueryError(
                    f"{what}: the interval must be positive, got {node.sql()}", line=line, col=col, sql=sql
                )
            return Duration(millis)
    raise QueryError(
        f"{what}: expected an interval such as INTERVAL '60' SECOND "
        f"(units SECOND, MINUTE, HOUR, DAY), got {node.sql()}",
        line=line,
        col=col,
        sql=sql,
    )


def _window_of(sql: str, call: exp.Anonymous, kind: str, rowtime: str) -> tuple[GroupWindow, exp.Expression]:
    args = list(call.expressions)
    want = GROUP_FUNCS[kind] + 1
    line, col = locate(sql, call)
    if len(args) != want:
        raise QueryError(
            f"{kind} takes {want} arguments (the time attribute and "
            f"{'slide and size' if kind == 'HOP' else 'an interval'}), got {len(args)}",
            line=line,
            col=col,
            sql=sql,
        )
    time_col = args[0]
    if not isinstance(time_col, exp.Column) or time_col.name.lower() != rowtime.lower():
        raise QueryError(
            f"{kind} needs the time attribute `{rowtime}` as its first argument, got {time_col.sql()}",
            line=line,
            col=col,
            sql=sql,
        )
    durations = tuple(parse_interval(sql, a, kind) for a in args[1:])
    if kind == "HOP" and durations[0].millis > durations[1].millis:
        slide, size = args[1].sql(), args[2].sql()
        raise QueryError(
            f"HOP takes the slide, then the size (Flink's order): a slide of {durations[0].human()} is "
            f"longer than the size of {durations[1].human()}, so the rows between two windows would "
            f"fall in none; if you meant windows of {durations[0].human()} every "
            f"{durations[1].human()}, write HOP({time_col.sql()}, {size}, {slide})",
            line=line,
            col=col,
            sql=sql,
        )
    return GroupWindow(kind, time_col.name, durations), time_col


def _spark_window(window: GroupWindow, time_col: exp.Expression) -> exp.Expression:
    if window.kind == "TUMBLE":
        args = [exp.Literal.string(window.intervals[0].spark())]
        fn = "window"
    elif window.kind == "HOP":
        slide, size = window.intervals
        args = [exp.Literal.string(size.spark()), exp.Literal.string(slide.spark())]
        fn = "window"
    else:
        args = [exp.Literal.string(window.intervals[0].spark())]
        fn = "session_window"
    return exp.Anonymous(this=fn, expressions=[time_col.copy(), *args])


def _own_nodes(select: exp.Select):
    """Nodes of this SELECT, not of the subqueries nested in it."""
    for key in ("expressions", "where", "having", "order", "qualify"):
        value = select.args.get(key)
        for root in value if isinstance(value, list) else [value]:
            if root is None:
                continue
            for node in root.walk(prune=lambda n: isinstance(n, exp.Query) and n is not root):  # noqa: B023 - walk calls it before the loop moves on
                if isinstance(node, exp.Query) and node is not root:
                    continue
                yield node


def rewrite(sql: str, tree: exp.Expression, rowtime: str) -> list[GroupWindow]:
    """Rewrites every group window in place and returns them (innermost query first)."""
    found: list[GroupWindow] = []
    for select in reversed(list(tree.find_all(exp.Select))):
        group = select.args.get("group")
        window = spark_call = None
        for g in list(group.expressions) if group else []:
            kind = _name(g)
            if kind in GROUP_FUNCS:
                if window is not None:
                    line, col = locate(sql, g)
                    raise QueryError(
                        "only one group window (TUMBLE, HOP or SESSION) per GROUP BY", line=line, col=col, sql=sql
                    )
                window, time_col = _window_of(sql, g, kind, rowtime)
                spark_call = _spark_window(window, time_col)
                g.replace(spark_call)
        for node in list(_own_nodes(select)):
            name = _name(node)
            if name in GROUP_FUNCS:
                line, col = locate(sql, node)
                raise QueryError(
                    f"{name}(...) belongs in GROUP BY; select its bounds with {name}_START or {name}_END",
                    line=line,
                    col=col,
                    sql=sql,
                )
            match = AUX_FUNCTION.match(name or "")
            if not match:
                continue
            kind, part = match.groups()
            line, col = locate(sql, node)
            if part == "PROCTIME":
                raise QueryError(
                    f"{name} is not supported: daggers run on event time (rowtime)", line=line, col=col, sql=sql
                )
            aux, _ = _window_of(sql, node, kind, rowtime)
            if window is None:
                raise QueryError(f"{name} needs GROUP BY {kind}(...) in the same query", line=line, col=col, sql=sql)
            if aux != window:
                raise QueryError(
                    f"{name}{_args(node)} does not match the GROUP BY window {window.kind}{_args_of(window)}",
                    line=line,
                    col=col,
                    sql=sql,
                )
            bound = exp.Dot(
                this=spark_call.copy(), expression=exp.to_identifier("end" if part in ("END", "ROWTIME") else "start")
            )
            if part == "ROWTIME":  # Flink: the last millisecond that belongs to the window
                bound = exp.Sub(
                    this=bound, expression=exp.Interval(this=exp.Literal.string("1"), unit=exp.Var(this="MILLISECOND"))
                )
            node.replace(bound)
        if window is not None:
            found.append(window)
    return found


def _args(node: exp.Anonymous) -> str:
    return "(" + ", ".join(a.sql() for a in node.expressions) + ")"


def _args_of(window: GroupWindow) -> str:
    parts = [window.time_column] + [f"{d.spark()}" for d in window.intervals]
    return "(" + ", ".join(parts) + ")"
