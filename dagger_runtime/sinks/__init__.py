"""Where a dagger's results go. Each sink writes one micro-batch's rows and is idempotent by
window and tags, so a batch Spark replays after a failure overwrites what it wrote before."""

from __future__ import annotations

from .base import Sink, SinkError, retrying
from .influx import InfluxSink
from .kafka import KafkaSink
from .log import LogSink
from .postgres import PostgresSink


def check_sink(plan, columns: list[dict]) -> None:
    """Refuse, before anything runs, a sink that cannot take the query's output columns."""
    sink_class(plan.job.sink.type).check(plan, columns)


def sink_class(kind: str):
    return {"influx": InfluxSink, "kafka": KafkaSink, "log": LogSink, "postgres": PostgresSink}[kind]


def create_sink(plan, columns: list[dict], **kwargs) -> Sink:
    cls = sink_class(plan.job.sink.type)
    cls.check(plan, columns)
    return cls(plan, columns, **kwargs)


__all__ = ["Sink", "SinkError", "check_sink", "create_sink", "retrying"]
