"""A running dagger's metrics for Prometheus: read at scrape time from the runtime's counters, the
sink's statistics and the last batch's progress, every series labelled with the dagger's name."""

from __future__ import annotations

import datetime as dt

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry


def epoch_seconds(iso: str | None) -> float | None:
    """Spark's ISO-8601 progress times ('...Z') as epoch seconds."""
    if not iso:
        return None
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


class DaggerCollector(Collector):
    def __init__(self, job: str, counters, sink, listener):
        self.job = job
        self.counters = counters
        self.sink = sink
        self.listener = listener

    def collect(self):
        job = self.job
        c, stats, last = self.counters, self.sink.stats, self.listener.last or {}

        def counter(name, doc, value, labels=None):
            m = CounterMetricFamily(name, doc, labels=["dagger", *(labels or {})])
            m.add_metric([job, *(labels or {}).values()], value)
            return m

        def gauge(name, doc, value):
            m = GaugeMetricFamily(name, doc, labels=["dagger"])
            m.add_metric([job], value)
            return m

        yield counter("dagger_batches", "Micro-batches completed (results and dead letters stored)", c.batches)
        yield gauge(
            "dagger_launches_without_commit",
            "Driver launches in a row on this checkpoint without a committed batch, this one included "
            "(0 once this launch completes a batch; 3 or more is a crash loop)",
            0 if c.batches else c.launches_without_commit,
        )
        yield counter("dagger_input_messages", "Kafka records read", c.messages_read)
        yield counter("dagger_result_rows_written", "Result rows the sink accepted", c.rows_written)
        dead = CounterMetricFamily(
            "dagger_dead_letters", "Messages set aside to the dead-letter topic", labels=["dagger", "table", "kind"]
        )
        for (table, kind), n in sorted(c.dead_letters.items()):
            dead.add_metric([job, table, kind], n)
        yield dead
        yield counter("dagger_sink_errors", "Failed sink write attempts", stats.errors)
        yield counter("dagger_sink_retries", "Sink writes retried after a failure", stats.retries)
        yield counter(
            "dagger_late_rows_dropped", "Rows dropped because they came after the watermark", c.late_rows_dropped
        )
        yield gauge(
            "dagger_input_messages_per_second", "Input rate of the last batch", last.get("input_rows_per_s", 0.0)
        )
        yield gauge(
            "dagger_processed_messages_per_second",
            "Processing rate of the last batch",
            last.get("processed_rows_per_s", 0.0),
        )
        duration = last.get("batch_duration_ms")
        yield gauge(
            "dagger_batch_duration_seconds",
            "Duration of the last batch",
            duration / 1000 if duration is not None else 0.0,
        )
        watermark = epoch_seconds(last.get("watermark"))
        yield gauge("dagger_watermark_timestamp_seconds", "Event-time watermark (epoch seconds)", watermark or 0.0)
        yield gauge("dagger_state_rows", "Rows held in state (open windows, join buffers)", last.get("state_rows", 0))
        lag = GaugeMetricFamily(
            "dagger_consumer_lag_messages", "Records behind the latest offset", labels=["dagger", "topic", "partition"]
        )
        for where, n in sorted((last.get("lag_by_partition") or {}).items()):
            topic, _, partition = where.rpartition("-")
            lag.add_metric([job, topic, partition], n)
        yield lag


def serve(port: int, job: str, counters, sink, listener, addr: str = "127.0.0.1"):
    """Serve /metrics on addr:port (loopback by default: put a scraper or proxy beside it)."""
    registry = CollectorRegistry()
    registry.register(DaggerCollector(job, counters, sink, listener))
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return server
