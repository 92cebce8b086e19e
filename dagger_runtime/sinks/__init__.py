"""Where a dagger's results go. Each sink writes one micro-batch's rows and is idempotent by
window and tags, so a batch Spark replays after a failure overwrites what it wrote before."""
from __future__ import annotations

from .base import Sink, SinkError, retrying


def check_sink(job, columns: list[dict]) -> None:
    """Refuse, before anything runs, a sink that cannot take the query's output columns."""
    sink_class(job.sink.type).check(job.sink, columns)


def sink_class(kind: str):
    from .influx import InfluxSink
    from .log import LogSink
    from .postgres import PostgresSink

    return {"influx": InfluxSink, "log": LogSink, "postgres": PostgresSink}.get(kind) or _unsupported(kind)


def _unsupported(kind: str):
    from ..errors import DaggerError

    raise DaggerError(f"sink type {kind!r} cannot run yet; influx, postgres and log can")


def create_sink(job, columns: list[dict], **kwargs) -> Sink:
    cls = sink_class(job.sink.type)
    cls.check(job.sink, columns)
    return cls(job, columns, **kwargs)


__all__ = ["Sink", "SinkError", "check_sink", "create_sink", "retrying"]
