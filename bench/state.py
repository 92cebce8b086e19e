"""The state bench of `make bench`: a dagger grouped by about a million distinct keys per window,
on Spark's default state store and on RocksDB, over the bench's Kafka topic.

Its query counts messages per (order, second) in 100-minute windows: the bench topic's 2,000,000
bookings are 20 copies of a 100,000-booking pool ten minutes apart, so a window holds a million
distinct keys, all in state until the window closes. Each run is `run --available-now` from a new
checkpoint, its result rows counted and dropped. Measured: messages a second, the most rows the
state held after a batch and the memory Spark reported for it (stateOperators), the checkpoint's
state files on disk, the keys of the largest window written, and the peak resident memory of the JVM (Spark's
driver and executor in one process, local[2]; RocksDB's memory is native, outside the heap).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

from dagger_runtime.plan import plan_job
from dagger_runtime.sinks.base import Sink

STATE_SQL = """
SELECT order_number, event_timestamp.seconds AS at_second, count(1) AS bookings,
       TUMBLE_END(rowtime, INTERVAL '100' MINUTE) AS window_timestamp
FROM data_stream
GROUP BY TUMBLE(rowtime, INTERVAL '100' MINUTE), order_number, event_timestamp.seconds
"""

PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
PROVIDERS = {
    "default": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


class CountSink(Sink):
    """Counts the result rows by window (a million and more a window here) and keeps none."""

    kind = "count"
    windows: dict = {}

    def write(self, dataframe, batch_id):
        counts = dataframe.groupBy("window_timestamp").count().collect()
        for row in counts:
            CountSink.windows[row[0]] = CountSink.windows.get(row[0], 0) + row[1]
        n = sum(row[1] for row in counts)
        self.stats.rows += n
        return n


class PeakState(StreamingQueryListener):
    """The most rows, and memory, the state held at the end of any batch of the run."""

    def __init__(self):
        self.rows = 0
        self.memory = 0

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        operators = json.loads(event.progress.json).get("stateOperators") or []
        self.rows = max(self.rows, sum(op.get("numRowsTotal", 0) for op in operators))
        self.memory = max(self.memory, sum(op.get("memoryUsedBytes", 0) for op in operators))

    def onQueryIdle(self, event):
        pass

    def onQueryTerminated(self, event):
        pass


def _status(spark) -> Path:
    return Path(f"/proc/{spark._jvm.java.lang.ProcessHandle.current().pid()}/status")


def _peak_rss(spark) -> int:
    """The JVM's peak resident set since the last reset, in bytes: heap, and RocksDB's native memory."""
    lines = _status(spark).read_text().splitlines()
    return int(next(line.split()[1] for line in lines if line.startswith("VmHWM:"))) * 1024


def _reset_peak(spark) -> None:
    spark._jvm.java.lang.System.gc()
    _status(spark).with_name("clear_refs").write_text("5")  # resets VmHWM (Linux 4.0+)


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def state_rows(spark, kplan, messages: int, work: Path, dagger_once) -> tuple[list[dict], dict]:
    """The state bench's result rows and its summary figures, by state store."""
    plan = plan_job(kplan.job.model_copy(update={"sql": STATE_SQL, "name": "bench-state"}), kplan.descriptor_set)
    listener = PeakState()
    spark.streams.addListener(listener)
    results, summary = [], {}
    try:
        for name, provider in PROVIDERS.items():
            spark.conf.set(PROVIDER_CONF, provider)
            checkpoint = work / f"ck-state-{name}"
            _reset_peak(spark)
            CountSink.windows = {}
            listener.rows = listener.memory = 0
            seconds = dagger_once(spark, plan, checkpoint, CountSink)
            time.sleep(1)  # the last progress event reaches Python's listener after the query ends
            summary[name] = {
                "msgs_per_s": round(messages / seconds),
                "keys_in_largest_window": max(CountSink.windows.values(), default=0),
                "state_rows_peak": listener.rows,
                "state_memory_peak_mb": round(listener.memory / 2**20, 1),
                "state_on_disk_mb": round(_disk_bytes(checkpoint / "state") / 2**20, 1),
                "jvm_peak_rss_mb": round(_peak_rss(spark) / 2**20),
            }
            print(f"[bench] state, {name}: {seconds:.1f}s {summary[name]}", file=sys.stderr, flush=True)
            results.append(
                {
                    "path": f"Kafka: a million keys a window, {name} state store",
                    "items": messages,
                    "best_seconds": round(seconds, 3),
                    "per_second": summary[name]["msgs_per_s"],
                }
            )
            shutil.rmtree(checkpoint, ignore_errors=True)
    finally:
        spark.conf.unset(PROVIDER_CONF)
        spark.streams.removeListener(listener)
    summary["jvm_max_heap_mb"] = round(spark._jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20)
    summary["cores"] = os.cpu_count()
    return results, summary
