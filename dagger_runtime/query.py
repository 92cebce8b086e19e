"""The streaming query a dagger runs, built and checked: its stream tables with their dead-letter
functions, the analyst's query, the sink for its columns; and the foreachBatch that stores each
batch. `run` starts it; a standby's rehearsal (rehearsal.py) starts it once more, writing nothing."""

from __future__ import annotations

import dataclasses

from . import dead_letters, late
from .plan import JobPlan
from .sinks import create_sink
from .validate import stream_tables, streaming_query


class BatchWriter:
    """foreachBatch: the results to the sink; returns when they are stored. The batch's dead
    letters were stored by the tasks that computed it."""

    def __init__(self, sink, counters, writers):
        self.sink = sink
        self.counters = counters
        self.writers = writers

    def __call__(self, batch, batch_id: int) -> None:
        if self.sink.reads_batch_once:
            written = self.sink.write(batch, batch_id)
        else:
            # a sink that runs more than one action: the decoding tasks (and their dead letters)
            # still run once
            batch.persist()
            try:
                written = self.sink.write(batch, batch_id)
            finally:
                batch.unpersist()
        dead = {}
        for writer in self.writers:
            dead.update(writer.counts())
        self.counters.batch_done(batch_id, written, dead)


def build_query(
    plan: JobPlan,
    spark,
    sink_factory=None,
    sink_retry_s: float = 600.0,
    starting=None,
    emit_after_ms: int | None = None,
    heartbeats: dict | None = None,
    dry_dead_letters: bool = False,
    checkpoint: str | None = None,
):
    """Everything `run` starts, checked: the stream tables with their dead-letter functions (with
    the query's `checkpoint`, late messages are set aside too: late.py), the analyst's query (both
    sandbox checks, Spark's analysis and streaming checks), the sink against its output columns."""
    writers = [
        dead_letters.register(
            spark, s.table, plan.job.streams[i], plan.job.dlq_topic, plan.job.name, dry=dry_dead_letters
        )
        for i, s in enumerate(plan.streams)
    ]
    window = late.window_of(plan) if checkpoint is not None else None
    late_rows = {s.table: late.register(spark, s.table, checkpoint, window) for s in plan.streams} if window else None
    stream_tables(spark, plan, {w.table: w.sql_name for w in writers}, starting, heartbeats, late_rows)
    if emit_after_ms is not None:  # checked like any query: the column is part of what Spark runs
        plan = dataclasses.replace(plan, query=plan.query.with_window_end(WINDOW_END))
    results = streaming_query(spark, plan)
    if emit_after_ms is not None:
        results = only_windows_after(results, emit_after_ms)
    columns = [{"name": f.name, "type": f.dataType.simpleString()} for f in results.schema.fields]
    sink = sink_factory(plan, columns) if sink_factory else create_sink(plan, columns, retry_for_s=sink_retry_s)
    return results, sink, writers


WINDOW_END = "__dagger_window_end"


def only_windows_after(results, after_ms: int):
    """The rows of windows that end after `after_ms` (RunOptions.emit_after_ms), without the
    window-end column the query was given for it."""
    from pyspark.sql import functions as F

    return results.where(F.col(WINDOW_END) > F.timestamp_millis(F.lit(int(after_ms)))).drop(WINDOW_END)
