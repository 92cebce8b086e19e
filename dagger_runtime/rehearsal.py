"""A standby's rehearsal: the job's query run once, before the takeover, so that the first real
batch after it finds its JVMs warm.

A standby driver has its Spark session, executors and analysed query up (run.start), but the
first batch after a takeover still pays for a cold JVM: the JIT, Spark's generated code compiled
on the driver and executors, the state store's classes, the Python workers of vectorised UDFs.
On the 2-core lab, right after `make demo`, that first batch took about 40 s where a warm one
takes 7 s. The rehearsal runs the same SQL in a second session of the same SparkContext (its own
functions and temporary views; the same JVMs, so the JIT and the code generator's cache, keyed by
the generated source, are shared) over the last REHEARSAL_S seconds of the job's topics, once
(availableNow), with a checkpoint of its own beside the real one, its dead letters counted and
not sent, and its results counted and not written. It is stopped the moment the lease is taken;
anything it fails at is said and costs only the warmth.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from .callbacks import authenticate_callbacks
from .query import build_query
from .sinks.base import Sink

LOOKBACK_S = 900  # it reads the topics from this long ago ...
MAX_OFFSETS = 2000  # ... at most this many records a batch ...
BATCHES = 2  # ... for this many batches with data (the second restores state)


class Rehearsal:
    def __init__(self, query, folder: Path, sink, writers: list, out):
        self.query, self.folder, self.sink, self.writers, self.out = query, folder, sink, writers, out
        self.started = time.monotonic()
        self.stopped = False  # by stop(): the takeover came first

    def wait(self, timeout_s: float = 600.0) -> bool | None:
        """Until it has run BATCHES batches with data (True: warm), or found nothing to read
        (None), or failed or was stopped (False); then it is stopped."""
        deadline = time.monotonic() + timeout_s
        try:
            while self.query.isActive and not self.stopped and time.monotonic() < deadline:
                progress = self.query.recentProgress
                batches = sum(1 for p in progress if p.get("numInputRows", 0) > 0)
                if batches >= BATCHES:
                    break
                if (
                    progress
                    and progress[-1].get("numInputRows", 0) == 0
                    and not self.query.status.get("isDataAvailable", True)
                ):
                    self.stop()  # caught up: what there was is read
                    return True if batches else None
                self.query.awaitTermination(1.0)
            warm = not self.stopped and self.query.isActive and self.query.exception() is None
        except Exception:  # noqa: BLE001 - stopped under it, or failed: not warm
            warm = False
        self.stop()
        return warm

    def stop(self) -> None:
        """Stop it without waiting (the real query starts meanwhile): its jobs are cancelled, its
        folder removed once it has stopped."""
        if self.stopped:
            return
        self.stopped = True

        def stop() -> None:
            try:
                done = not self.query.isActive
                self.query.stop()
                if done:
                    print(
                        f"run: standby: rehearsal done in {time.monotonic() - self.started:.1f} s",
                        file=self.out,
                        flush=True,
                    )
            except Exception as e:  # noqa: BLE001 - a rehearsal only warms
                print(f"run: standby: the rehearsal did not stop cleanly ({type(e).__name__})", file=self.out)
            finally:
                shutil.rmtree(self.folder, ignore_errors=True)

        threading.Thread(target=stop, name="dagger-rehearsal-stop", daemon=True).start()


def rehearse(plan, spark, checkpoint_root: Path, out=sys.stderr, *, oldest: bool = False) -> Rehearsal | None:
    """Start the rehearsal (None, said on `out`, when it cannot start); `oldest`: on the oldest
    records the topics keep (when the last minutes have none)."""

    class Counted(Sink):
        kind = "rehearsal"

        def describe(self) -> str:
            return "nothing (a rehearsal)"

        def write(self, dataframe, batch_id: int) -> int:
            count = dataframe.count()
            self.stats.rows += count
            self.stats.batches += 1
            return count

    # from LOOKBACK_S ago (a partition without records since then starts at its end), a bounded
    # number of records a batch: the same plan, on real records, in a few seconds of work
    since = str(int(time.time() * 1000) - LOOKBACK_S * 1000)
    start = (
        {"startingOffsets": "earliest"}
        if oldest
        else {"startingTimestamp": since, "startingOffsetsByTimestampStrategy": "latest"}
    )
    starting = {s.table: {**start, "maxOffsetsPerTrigger": str(MAX_OFFSETS)} for s in plan.job.streams}
    folder = None
    try:
        # beside the real checkpoint, in the dagger's folder: reachable from every executor
        # its foreachBatch function is served to the JVM like the job's: behind the driver's token
        authenticate_callbacks(spark)
        folder = Path(tempfile.mkdtemp(prefix=".rehearsal-", dir=checkpoint_root.parent))
        session = spark.newSession()
        results, sink, writers = build_query(
            plan, session, lambda p, c: Counted(p, c), starting=starting, dry_dead_letters=True, checkpoint=str(folder)
        )
        query = (
            results.writeStream.outputMode("append")
            .option("checkpointLocation", str(folder))
            .foreachBatch(lambda df, batch_id: sink.write(df, batch_id))
            .start()
        )
    except Exception as e:  # noqa: BLE001 - a rehearsal only warms
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        print(
            f"run: standby: no rehearsal ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
            "the first batch after a takeover will be cold",
            file=out,
            flush=True,
        )
        return None
    print(
        f"run: standby: rehearsing the query on up to {BATCHES} x {MAX_OFFSETS} records "
        + ("from the oldest its topics keep" if oldest else f"from the last {LOOKBACK_S // 60} minutes of its topics")
        + " (nothing written)",
        file=out,
        flush=True,
    )
    return Rehearsal(query, folder, sink, writers, out)
