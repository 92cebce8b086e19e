"""Idle streams, as Flink's `table.exec.source.idle-timeout`: a stream that has read nothing for
the job's idle_timeout stops holding the job's watermark back.

Spark takes a query's watermark as the smallest of its streams' (multipleWatermarkPolicy=min, as
Flink takes the smallest of its inputs'), and a stream with no new messages keeps its last one (or
none, 0) for ever: a job that joins or unions a busy stream with a quiet one writes nothing until
the quiet one speaks. Flink leaves an idle source out of that minimum. Spark has no such switch,
so the driver does it with data: when a stream has read nothing for the timeout while another
stream has, the driver writes a heartbeat into the idle stream's heartbeat source
(streams.heartbeat_rows), a row whose event time is the smallest latest event time among the
active streams. It moves the idle stream's watermark to where the active ones have it, and is
dropped right above the watermark, so the query never sees it. A heartbeat never goes past what
an active stream has shown, so it closes no window an active stream still holds open; a message of
the idle stream that arrives later behind the watermark is late, as it is in Flink.

Only jobs of two or more streams have a minimum to hold back: a single stream's watermark is the
largest event time over all its partitions, so an idle partition never holds it.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time

from pyspark.sql.streaming import StreamingQueryListener

from .metrics import epoch_seconds
from .streams import SOURCE_METRICS

HEARTBEATS = "heartbeats"  # under the checkpoint: one directory per stream


def applies(plan) -> bool:
    return bool(plan.job.idle_timeout_ms) and len(plan.streams) > 1


def directories(checkpoint: str, plan) -> dict[str, str]:
    """Each stream's heartbeat directory, kept with the checkpoint whose offsets of it Spark keeps."""
    base = checkpoint.rstrip("/")
    return {s.table: f"{base}/{HEARTBEATS}/{s.table}" for s in plan.streams}


class IdleStreams:
    """What the heartbeats should be, from each batch's observed metrics (pure but for the clock)."""

    def __init__(self, tables, timeout_ms: int, now: float):
        self.timeout_s = timeout_ms / 1000
        self.last_rows_at = {t: now for t in tables}  # when each stream last read a message
        self.latest: dict[str, int | None] = {t: None for t in tables}  # its latest event time, ms
        self.sent: dict[str, int | None] = {t: None for t in tables}  # its latest heartbeat, ms

    def observe(self, progress: dict, now: float) -> list[tuple[str, int]]:
        """Take one batch's progress; return the heartbeats due: (table, event time in ms)."""
        metrics = progress.get("observedMetrics") or {}
        for table in self.last_rows_at:
            seen = metrics.get(SOURCE_METRICS.format(table=table)) or {}
            if seen.get("rows"):
                self.last_rows_at[table] = now
                latest = _millis(seen.get("max_event_time"))
                if latest is not None and (self.latest[table] is None or latest > self.latest[table]):
                    self.latest[table] = latest
        return self.due(now)

    def due(self, now: float) -> list[tuple[str, int]]:
        idle = [t for t, at in self.last_rows_at.items() if now - at >= self.timeout_s]
        active = [self.latest[t] for t in self.last_rows_at if t not in idle and self.latest[t] is not None]
        if not idle or not active:
            return []  # all idle: Flink's watermark stands still too
        target = min(active)
        beats = [(t, target) for t in idle if max(self.latest[t] or 0, self.sent[t] or 0) < target]
        for table, at in beats:
            self.sent[table] = at
        return beats


def _millis(value) -> int | None:
    seconds = epoch_seconds(str(value)) if value else None
    return None if seconds is None else round(seconds * 1000)


class Heartbeats(StreamingQueryListener):
    """Writes the heartbeats IdleStreams asks for, after each batch of the job's query."""

    def __init__(self, spark, plan, directories_by_table: dict[str, str], out=None):
        self.spark = spark
        self.directories = directories_by_table
        self.idle = IdleStreams(list(directories_by_table), plan.job.idle_timeout_ms, time.monotonic())
        self.query_id: str | None = None
        self.out = out
        self.written = 0
        self.quiet: set[str] = set()  # idle tables already announced
        self.lock = threading.Lock()

    def prepare(self) -> None:
        """The directories exist before the query starts (the file source lists them)."""
        for directory in self.directories.values():
            self._fs(directory)[0].mkdirs(self._path(directory))

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = json.loads(event.progress.json)
        if self.query_id and progress.get("id") != self.query_id:
            return
        now = time.monotonic()
        with self.lock:
            for table, at in self.idle.observe(progress, now):
                self.write(table, at)
            # said once per idle spell, not once per heartbeat
            self.quiet -= {t for t in self.quiet if self.idle.last_rows_at[t] == now}

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass

    def write(self, table: str, event_ms: int) -> None:
        """One heartbeat file, written under a hidden name and renamed, so the file source never
        reads half of one."""
        directory = self.directories[table]
        fs, path = self._fs(directory)
        self.written += 1
        name = f"heartbeat-{event_ms}-{self.written}.json"
        temp = self._path(f"{directory}/.{name}.tmp")
        stream = fs.create(temp, True)
        try:
            stream.write(bytearray(json.dumps({"rowtime_ms": event_ms}).encode() + b"\n"))
        finally:
            stream.close()
        fs.rename(temp, self._path(f"{directory}/{name}"))
        if self.out is not None and table not in self.quiet:
            self.quiet.add(table)
            when = dt.datetime.fromtimestamp(event_ms / 1000, dt.timezone.utc).isoformat().replace("+00:00", "Z")
            print(
                f"run: {table} idle for {self.idle.timeout_s:g} s: its watermark follows the other streams' ({when})",
                file=self.out,
                flush=True,
            )

    def _path(self, text: str):
        return self.spark._jvm.org.apache.hadoop.fs.Path(text)

    def _fs(self, directory: str):
        path = self._path(directory)
        return path.getFileSystem(self.spark._jsc.hadoopConfiguration()), path
