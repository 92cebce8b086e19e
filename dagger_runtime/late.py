"""Late messages: those the job's window aggregation would drop because the window they fall in
has closed (its end is behind the watermark). They go to the dead-letter topic with a reason
`late: ...` and are counted as the kind `late` (dagger_dead_letters_total{kind="late"}), so an
outage's backlog that arrives after its windows were written is kept and seen, not lost.

The JVM function (dev.daggers.runtime.LateRows) follows Spark's own rule, with the watermark Spark
drops rows by in each micro-batch, read from the query's checkpoint; it is applied where a message
is decoded, in the filter that sets bad messages aside, so the topic is still read once.
"""

from __future__ import annotations

NAME = "__dagger_late_{table}"


def window_of(plan) -> tuple[int, int] | None:
    """(size, slide) in ms of the query's window when Spark's late rule is the one LateRows
    follows: one TUMBLE or HOP window over the streams' watermark, and no join (a join of streams
    and a session window drop rows by rules of their own; their late rows are only counted)."""
    from sqlglot import exp

    windows = plan.query.windows
    if len(windows) != 1 or windows[0].kind not in ("TUMBLE", "HOP"):
        return None
    tree = plan.query.spark_tree if plan.query.spark_tree is not None else plan.query.tree
    if tree is None or next(tree.find_all(exp.Join), None) is not None:
        return None
    window = windows[0]
    size = window.size.millis
    return size, (window.intervals[0].millis if window.kind == "HOP" else size)


def register(spark, table: str, checkpoint: str, window: tuple[int, int]) -> str:
    """Register the table's late-message function for the query writing `checkpoint`."""
    name = NAME.format(table=table)
    spark._jvm.dev.daggers.runtime.Functions.registerLateRows(spark._jsparkSession, name, checkpoint, *window)
    return name
