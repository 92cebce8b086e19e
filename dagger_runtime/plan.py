"""A job's plan: everything checked and resolved before anything runs (config -> plan -> execution)."""

from __future__ import annotations

from dataclasses import dataclass

from . import enum_literals
from .errors import DaggerError
from .sql import Translation, translate
from .streams import StreamPlan, plan_streams


@dataclass(frozen=True)
class JobPlan:
    job: object
    descriptor_set: object
    streams: tuple[StreamPlan, ...]
    query: Translation

    def warnings(self) -> list[str]:
        """What the plan found worth saying that does not stop the job."""
        schema = self.job.schema
        said = []
        if not schema.version and not schema.stencil_urls:
            said.append(
                f"schema: the job does not pin a descriptor version, so it decodes with whatever is "
                f"latest when it starts (now {self.descriptor_set.digest}); pin it with "
                f"schema.version: {self.descriptor_set.digest} (DAGGER_SCHEMA_VERSION in a .properties "
                f"job) so a newer release cannot change what it reads"
            )
        if self.job.idle_timeout_ms and len(self.streams) == 1:
            said.append(
                "idle_timeout: changes nothing in a job of one stream: its watermark is the latest "
                "event time over all its partitions, so an idle partition never holds it back"
            )
        return said

    def stream(self, table: str) -> StreamPlan:
        for s in self.streams:
            if s.table.lower() == table.lower():
                return s
        raise DaggerError(f"unknown table {table!r}: this job's streams are {', '.join(s.table for s in self.streams)}")


def load_descriptor_set(job):
    from protos import registry

    urls = ",".join(job.schema.stencil_urls) if job.schema.stencil_urls else None
    try:
        return registry.load(urls, job.schema.version)
    except Exception as e:  # noqa: BLE001 - a set that cannot be fetched or read, whatever the cause, refuses the job
        raise DaggerError(f"schema: {e}") from None


def plan_job(job, descriptor_set=None) -> JobPlan:
    """Resolve schema, event-time fields and the SQL translation. Pure apart from loading the
    descriptor set; raises DaggerError naming the first problem."""
    dset = descriptor_set if descriptor_set is not None else load_descriptor_set(job)
    streams = tuple(plan_streams(job, dset))
    query = translate(job.sql, [s.table for s in streams], job.rowtime_attribute)
    enum_literals.check(query, {s.table: dset.message_descriptor(s.proto_class) for s in streams})
    _check_sink_messages(job, dset)
    return JobPlan(job, dset, streams, query)


def _check_sink_messages(job, dset) -> None:
    """The messages a Kafka sink names exist (their fields are matched to the query's columns once
    Spark has analysed it)."""
    kafka = job.sink.kafka if job.sink.type == "kafka" else None
    if kafka is None or kafka.data_type != "PROTO":
        return
    for key in ("proto_message", "proto_key"):
        name = getattr(kafka, key)
        if name:
            try:
                dset.message_descriptor(name)
            except Exception as e:  # noqa: BLE001 - SchemaError names the message and close matches
                raise DaggerError(f"sink kafka {key}: {e}") from None
