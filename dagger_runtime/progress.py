"""What a running dagger says about itself: a compact line per batch for people, a JSON line per
batch for machines, from Spark's StreamingQueryProgress and the runtime's own counters."""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field

from pyspark.sql.streaming import StreamingQueryListener


@dataclass
class Counters:
    """The runtime's own counts, updated by the batch writer (driver side)."""

    job: str
    query_id: str | None = None
    scans: float = 1.0  # how many times the plan scans each source (see messages_read)
    batches: int = 0
    messages_read: int = 0
    late_rows_dropped: int = 0
    rows_written: int = 0
    dead_letters: Counter = field(default_factory=Counter)  # (table, kind) -> messages
    # launches in a row on this checkpoint without a committed batch, this one included (launches.py)
    launches_without_commit: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def batch_done(self, batch_id: int, rows: int, dead_so_far: dict) -> None:
        """dead_so_far: dead letters per (table, kind) since the run started."""
        with self.lock:
            self.batches += 1
            self.rows_written += rows
            self.dead_letters = Counter(dead_so_far)

    def progress(self, record: dict) -> None:
        with self.lock:
            self.messages_read += record["input_rows"]
            self.late_rows_dropped += record["late_rows_dropped"]

    def dead_total(self) -> int:
        return sum(self.dead_letters.values())

    def summary(self) -> str:
        kinds = Counter()
        for (_, kind), n in self.dead_letters.items():
            kinds[kind] += n
        dead = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        return f"{self.batches} batches, {self.rows_written} result rows written, dead letters: {dead}"


def lag_by_partition(sources: list[dict]) -> dict[str, int]:
    """Messages behind the latest offset per topic-partition, from progress sources (pure)."""
    lag: dict[str, int] = {}
    for source in sources:
        end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
        for topic, parts in latest.items():
            for part, offset in parts.items():
                done = end.get(topic, {}).get(part, offset)
                lag[f"{topic}-{part}"] = max(0, int(offset) - int(done))
    return lag


def _offsets(value) -> dict:
    if isinstance(value, str):
        try:
            return json.loads(value) or {}
        except ValueError:
            return {}
    return value or {}


def messages_read(sources: list[dict], scans: float = 1.0) -> int:
    """Kafka records a batch read (pure). Spark's numInputRows counts a source once per plan
    branch that scans it (a query that joins a table with itself scans its topic twice), so the
    offsets give the honest count. A first batch has no start offsets: then numInputRows / scans
    (the plan's scans per source)."""
    total = 0
    for source in sources:
        start, end = source.get("startOffset"), _offsets(source.get("endOffset"))
        if start is None:
            total += round((source.get("numInputRows") or 0) / scans)
            continue
        start = _offsets(start)
        for topic, parts in end.items():
            for part, offset in parts.items():
                total += max(0, int(offset) - int(start.get(topic, {}).get(part, offset)))
    return total


def batch_record(progress: dict, counters: Counters) -> dict:
    """One JSON-ready record per batch (pure)."""
    state = progress.get("stateOperators") or []
    # Kafka's only: a job that lets idle streams go also reads its heartbeat files (dagger_runtime.idle)
    sources = [s for s in progress.get("sources") or [] if str(s.get("description", "")).startswith("Kafka")]
    lag = lag_by_partition(sources)
    read = messages_read(sources, counters.scans)
    scanned = sum(s.get("numInputRows") or 0 for s in sources)
    scale = read / scanned if scanned else 0.0  # Spark's rates are per scanned row
    return {
        "job": counters.job,
        "batch": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "input_rows": read,
        "input_rows_per_s": round((progress.get("inputRowsPerSecond") or 0.0) * scale, 1),
        "processed_rows_per_s": round((progress.get("processedRowsPerSecond") or 0.0) * scale, 1),
        "batch_duration_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
        "watermark": (progress.get("eventTime") or {}).get("watermark"),
        "state_rows": sum(op.get("numRowsTotal", 0) for op in state),
        "late_rows_dropped": sum(op.get("numRowsDroppedByWatermark", 0) for op in state),
        "lag": sum(lag.values()),
        "lag_by_partition": lag,
        "rows_written_total": counters.rows_written,
        "dead_letters_total": counters.dead_total(),
    }


def compact(record: dict) -> str:
    wm = record["watermark"] if record["watermark"] and not record["watermark"].startswith("1970-") else "-"
    return (
        f"batch {record['batch']:>5} | in {record['input_rows_per_s']:>9,.0f}/s | done "
        f"{record['processed_rows_per_s']:>9,.0f}/s | watermark {wm} | lag {record['lag']:,} | "
        f"rows {record['rows_written_total']:,} | dead {record['dead_letters_total']:,}"
    )


class ProgressListener(StreamingQueryListener):
    """Prints the compact line (in place on a terminal), appends JSON lines to log_path, and passes
    each record to `on_record` (metrics)."""

    def __init__(self, counters: Counters, out=sys.stderr, log_path: str | None = None, on_record=None):
        self.counters = counters
        self.out = out
        self.log_path = log_path
        self.on_record = on_record
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.last: dict | None = None

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        if self.counters.query_id and str(event.progress.id) != self.counters.query_id:
            return
        self.report(json.loads(event.progress.json))

    def report(self, progress: dict) -> None:
        """Say one batch's progress (also called for the last batch, whose event may come late)."""
        if self.last is not None and self.last["batch"] == progress.get("batchId"):
            return
        record = batch_record(progress, self.counters)
        self.counters.progress(record)
        self.last = record
        if self.on_record:
            self.on_record(record)
        if self.log_path:
            with open(self.log_path, "a") as log:
                log.write(json.dumps(record) + "\n")
        if self.tty:
            self.out.write("\r" + compact(record) + "\033[K")
        elif not self.log_path:
            self.out.write(json.dumps(record) + "\n")
        else:
            self.out.write(compact(record) + "\n")
        self.out.flush()

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        if self.tty:
            self.out.write("\n")
            self.out.flush()
