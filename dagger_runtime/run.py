"""RUN: a dagger as a Spark Structured Streaming query on Kafka, until stopped.

Each micro-batch reads its topics once. The tasks that decode the messages send the ones that
cannot become rows to the dead-letter topic and flush them before they complete
(dead_letters); `foreachBatch` then stores the analyst's results (append mode: a window is
written once, when the watermark passes its end) and returns only when they are stored; only
then does Spark commit the batch in the checkpoint. A batch that fails half-way is replayed with
the same id from the same offsets, and the sinks overwrite by window and tags, so nothing is
lost and nothing is counted twice.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from . import launches
from . import lease as leases
from .callbacks import authenticate_callbacks
from .errors import DaggerError
from .plan import JobPlan, plan_job
from .query import BatchWriter, build_query
from .rehearsal import rehearse
from .session import build_session
from .source import checked_starting, describe


@dataclass(frozen=True)
class RunOptions:
    checkpoint: str | None = None  # overrides the job's checkpoint_location
    available_now: bool = False  # read what the topics hold now, then stop
    master: str | None = None  # spark://host:port; default local[parallelism]
    log_path: str | None = None  # one JSON line per batch
    metrics_port: int | None = None  # serve /metrics for Prometheus
    metrics_addr: str = "127.0.0.1"  # ... on this address
    starting: dict | None = None  # Kafka starting options by table, for a new checkpoint
    sink_retry_s: float = 600.0  # how long a sink write is retried before the job fails
    emit_after_ms: int | None = None  # write only windows ending after this (a replay, failover)
    version: int | None = None  # the registry's version this driver runs (lease.py's fence)
    standby: bool = False  # wait for this version's first driver to take the lease


def checkpoint_of(plan: JobPlan, options: RunOptions) -> str:
    location = options.checkpoint or plan.job.checkpoint_location
    if not location:
        raise DaggerError(
            "run needs a checkpoint location, where the job keeps its Kafka offsets and "
            "open windows: pass --checkpoint DIR or set checkpoint_location in the job"
        )
    return location


STARTING_FILE = "dagger-starting.json"


def remembered_start(
    checkpoint: str, starting: dict | None, emit_after_ms: int | None
) -> tuple[dict | None, int | None]:
    """How a checkpoint was begun, kept in it: a new checkpoint records its starting options and
    its --emit-windows-after; a run given neither (a redeploy on the same checkpoint) reads them
    back. Spark applies a source's starting options only while the checkpoint holds no offsets,
    so passing them again is harmless once it does, and essential when it does not yet: a dagger
    moved (failover) or restarted before its first offsets were written would otherwise start from
    its job's auto_offset_reset, silently skipping what lies between, or write a replay's partial
    windows. Local checkpoints only (file paths)."""
    path = _start_file(checkpoint)
    if path is None:
        return starting, emit_after_ms
    if starting is not None or emit_after_ms is not None:
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # a temporary name of its own: a standby may write the same file at the same moment
            fd, temp = tempfile.mkstemp(prefix=".starting-", dir=path.parent)
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps({"starting": starting, "emit_windows_after_ms": emit_after_ms}, sort_keys=True))
            os.replace(temp, path)
        return starting, emit_after_ms
    return read_start(checkpoint)


def _start_file(checkpoint: str):
    root = launches.local_root(checkpoint)
    return None if root is None else root / STARTING_FILE


def read_start(checkpoint: str) -> tuple[dict | None, int | None]:
    """What a checkpoint was begun with (remembered_start): its starting options and replay filter."""
    path = _start_file(checkpoint)
    # also read as root by the deploy tooling (a Kafka failover): no link, FIFO or huge file
    text = launches.read_regular(path, 1 << 20) if path is not None else None
    try:
        kept = json.loads(text) if text else {}
        return kept.get("starting"), kept.get("emit_windows_after_ms")
    except (ValueError, AttributeError):
        return None, None


FENCE_CHECK_S = 1.0  # how often a running driver reads its checkpoint's fence (lease.py): a stop's latency

# what Spark's StreamExecution says once a trigger has run through (no data found, or a batch done)
SETTLED_MESSAGES = ("Waiting for data to arrive", "Waiting for next trigger")


@dataclass
class Running:
    query: object
    sink: object
    counters: object
    listener: object
    writers: list
    heartbeats: object = None  # idle.Heartbeats, for a job that lets idle streams go
    launch: tuple | None = None  # (checkpoint, launch id) in the checkpoint's launch ledger
    lease: object = None  # lease.Lease: this driver is the checkpoint's one writer
    plan: object = None  # what it runs (a standby's handoff changes the version)
    options: object = None

    def settle_once_running(self) -> None:
        """Mark this launch settled in the ledger once its query has run a trigger through (it
        waits for data or has completed a batch): a later restart is then no crash loop's."""
        if self.launch is None or not self.query.isActive:
            return

        if self.counters.batches or self.query.status["message"] in SETTLED_MESSAGES:
            launches.settle(*self.launch)
            self.launch = None
            self.counters.launches_without_commit = 0

    def fenced(self) -> int | None:
        """The fence that now excludes this driver's version (a later one was deployed, or it was
        stopped while its master could not be reached), if any."""
        return self.lease.fenced() if self.lease is not None else None

    def listeners(self) -> list:
        return [self.listener] + ([self.heartbeats] if self.heartbeats is not None else [])


def start(
    plan: JobPlan, options: RunOptions, spark=None, *, sink_factory=None, out=sys.stderr, _handed_over: bool = False
) -> Running:
    """Start the job's streaming query, once this driver holds its checkpoint's lease. A standby
    waits for it with everything but the query ready: its Spark session and executors, the
    query analysed, the sink and dead-letter topics reached."""
    checkpoint = checkpoint_of(plan, options)
    ready: list = []

    def warm() -> None:
        ready.append(_prepare(plan, options, spark or _session(plan, options), checkpoint, sink_factory, out))

    def warm_and_rehearse() -> None:  # a standby's: it may wait long enough to warm its JVMs too
        warm()
        root = launches.local_root(checkpoint)
        if root is not None and not options.available_now:
            ready[0].rehearsal = rehearse(plan, ready[0].spark, root, out=out)
        rehearsal = ready[0].rehearsal

        def said_warm() -> None:  # for `dagger status` and the drills: READY, and warm
            nonlocal rehearsal
            warmed = None if rehearsal is None else rehearsal.wait()
            if warmed is None and rehearsal is not None and not taken.is_set():
                # nothing in the last minutes: the oldest records the topics keep warm it as well
                again = rehearse(plan, ready[0].spark, root, out=out, oldest=True)
                if again is not None and not taken.is_set():
                    rehearsal = ready[0].rehearsal = again
                    warmed = again.wait()
                elif again is not None:
                    again.stop()
            if warmed is not False and not taken.is_set():
                leases.say_warm(checkpoint, options.version, options.master, warmed)
                print(
                    f"run: standby: {'warm' if warmed else 'no records to rehearse on'} after "
                    f"{time.monotonic() - rehearsal.started:.1f} s"
                    if rehearsal
                    else "run: standby: no rehearsal",
                    file=out,
                    flush=True,
                )

        threading.Thread(target=said_warm, name="dagger-rehearsal-wait", daemon=True).start()

    taken = threading.Event()
    try:
        # (a handed-over driver is the version's one driver: no rehearsal, no standby's line)
        lease = leases.take(
            checkpoint,
            version=options.version,
            master=options.master,
            out=out,
            warm=warm if _handed_over else warm_and_rehearse,
            standby=options.standby,
        )
        taken.set()
    except leases.HandedOff as handed:
        taken.set()
        # a Kafka failover's: this warm driver runs the next version, in a fresh session of its JVMs
        if ready and ready[0].rehearsal is not None:
            ready[0].rehearsal.stop()
        base = ready[0].spark if ready else spark
        plan, options = _handed(plan, options, handed.order, out)
        return start(
            plan,
            options,
            base.newSession() if base is not None else None,
            sink_factory=sink_factory,
            out=out,
            _handed_over=True,
        )
    if ready and ready[0].rehearsal is not None:
        ready[0].rehearsal.stop()
    try:
        # first: a launch that fails anywhere later (Spark, Kafka, the sink) is still counted (a
        # standby's is counted from its takeover: waiting is no launch)
        launch = launches.record(checkpoint, out=out)
        if launch and launch[1] > 1:
            print(
                f"run: launch {launch[1]} in a row on {checkpoint} without a committed batch"
                + (
                    " (a crash loop: see this log's earlier launches)"
                    if launch[1] >= launches.CRASH_LOOP_LAUNCHES
                    else ""
                ),
                file=out,
                flush=True,
            )
        if not ready:
            warm()
        return _launch(ready[0], options, checkpoint, lease, launch, out=out)
    except BaseException:
        if lease is not None:
            lease.release()
        raise


def _handed(plan: JobPlan, options: RunOptions, order: dict, out) -> tuple[JobPlan, RunOptions]:
    """The version a standby was handed (lease.HandedOff), checked as a deploy's: the same dagger
    and team, its spec loaded and planned, its starting options those of the job's streams."""

    from .config import load_job

    spec, checkpoint, emit_after = order.get("spec"), order.get("checkpoint"), order.get("emit_after_ms")
    version = order.get("version")
    if (
        not isinstance(spec, str)
        or not isinstance(checkpoint, str)
        or not (emit_after is None or (isinstance(emit_after, int) and not isinstance(emit_after, bool)))
    ):
        raise DaggerError(
            f"the handoff to version {version} is not one the tooling writes (spec, checkpoint and emit_after_ms)"
        )
    _check_handed_paths(plan, options, spec, checkpoint, version)
    handed = plan_job(load_job(spec))
    if (handed.job.name, handed.job.team) != (plan.job.name, plan.job.team):
        raise DaggerError(
            f"the handoff names {handed.job.name} of team {handed.job.team}; this standby runs "
            f"{plan.job.name} of team {plan.job.team}"
        )
    starting = order.get("starting")
    starting = None if starting is None else checked_starting(starting, handed, "the handoff's starting")
    print(f"run: standby: handed version {order['version']} ({spec}), on {checkpoint}", file=out, flush=True)
    return handed, replace(
        options,
        version=order["version"],
        checkpoint=checkpoint,
        starting=starting,
        emit_after_ms=emit_after,
        standby=False,
    )


def _check_handed_paths(plan: JobPlan, options: RunOptions, spec: str, checkpoint: str, version: int) -> None:
    """The handoff file lies in the team's own folder, so the team could write one: its spec must
    be one the tooling stored beside this driver's own (<specs>/<team>/<name>/v<version>/, owned
    like this driver's spec, not a link), refer to no secret but the team's, and its checkpoint
    be this dagger's next folder beside the current one."""

    from .lifecycle.spark import referenced_env

    own = Path(plan.job.source_path) if plan.job.source_path else None
    path = Path(spec)
    if own is None or path.parent.parent != own.parent.parent or path.parent.name != f"v{version}":
        raise DaggerError(
            f"the handoff names the spec {spec}, which is not where the tooling stores version {version} "
            f"of {plan.job.name} (beside {own}): refused"
        )
    found = os.lstat(path)
    if not stat.S_ISREG(found.st_mode) or found.st_uid != os.stat(own).st_uid:
        raise DaggerError(f"the handoff's spec {spec} is not a regular file owned like this driver's spec: refused")
    beside = checkpoint_of(plan, options).rstrip("/").rsplit("/", 1)[0] + f"/v{version}"
    if checkpoint != beside:
        raise DaggerError(f"the handoff's checkpoint {checkpoint} is not {beside}: refused")
    fmt = "properties" if path.suffix == ".properties" else "yaml"
    referenced_env(path.read_text(), plan.job.team, fmt)  # only the team's own secrets, as deploy checks


def _session(plan: JobPlan, options: RunOptions):
    return build_session(f"dagger-{plan.job.name}", master=options.master, parallelism=plan.job.parallelism)


@dataclass
class _Prepared:
    plan: JobPlan
    spark: object
    results: object
    sink: object
    writers: list
    counters: object
    listener: object
    writer: object
    heartbeats: object
    rehearsal: object = None  # rehearsal.Rehearsal: a standby's warm-up run, stopped at the takeover


def _prepare(plan: JobPlan, options: RunOptions, spark, checkpoint: str, sink_factory, out) -> _Prepared:
    """Everything before the query starts: nothing here writes results or commits a batch."""
    from . import dead_letters, idle
    from .progress import Counters, ProgressListener

    starting, emit_after_ms = remembered_start(checkpoint, options.starting, options.emit_after_ms)
    heartbeats = None
    if idle.applies(plan):
        heartbeats = idle.Heartbeats(spark, plan, idle.directories(checkpoint, plan), out=out)
        heartbeats.prepare()
    results, sink, writers = build_query(
        plan,
        spark,
        sink_factory,
        options.sink_retry_s,
        starting,
        emit_after_ms,
        heartbeats.directories if heartbeats else None,
        checkpoint=checkpoint,
    )
    for stream in plan.job.streams:
        done = dead_letters.ensure_topic(spark, stream, plan.job.dlq_topic)
        if done == "created":
            print(
                f"run: created the dead-letter topic {plan.job.dlq_topic} on {stream.kafka.bootstrap_servers}", file=out
            )
    if plan.job.sink.type == "kafka":
        # a missing topic would fail each batch's write for a minute, then retry for sink_retry_s
        kafka = plan.job.sink.kafka
        admin = {k: v for k, v in kafka.kafka_options().items() if k != "linger.ms"}  # a producer's only
        done = dead_letters.ensure_kafka_topic(
            spark, admin, kafka.topic, what="the sink topic", fix="create it, or name another in sink.kafka.topic"
        )
        if done == "created":
            print(f"run: created the sink topic {kafka.topic} on {kafka.brokers}", file=out)
    counters = Counters(plan.job.name, scans=_scans_per_source(results, len(plan.streams)))
    listener = ProgressListener(counters, out=out, log_path=options.log_path)
    authenticate_callbacks(spark)  # before the first callback object reaches the JVM
    spark.streams.addListener(listener)
    writer = (
        results.writeStream.queryName(_query_name(plan.job.name))
        .outputMode("append")
        .option("checkpointLocation", checkpoint)
        .foreachBatch(BatchWriter(sink, counters, writers))
    )
    writer = writer.trigger(availableNow=True) if options.available_now else writer
    if heartbeats is not None:
        spark.streams.addListener(heartbeats)
    return _Prepared(plan, spark, results, sink, writers, counters, listener, writer, heartbeats)


def _launch(ready: _Prepared, options: RunOptions, checkpoint: str, lease, launch, *, out) -> Running:
    plan, counters, sink, listener, writer, heartbeats = (
        ready.plan,
        ready.counters,
        ready.sink,
        ready.listener,
        ready.writer,
        ready.heartbeats,
    )
    counters.launches_without_commit = launch[1] if launch else 1
    if options.metrics_port:
        # before the query: a port that cannot be bound stops the run before any batch, not the
        # driver's Python under a running query (whose SparkContext would stop mid-batch)
        from .metrics import serve

        serve(options.metrics_port, plan.job.name, counters, sink, listener, addr=options.metrics_addr)
        print(f"run: metrics on http://{options.metrics_addr}:{options.metrics_port}/metrics", file=out)
    query = writer.start()
    counters.query_id = str(query.id)
    if heartbeats is not None:
        heartbeats.query_id = str(query.id)
    return Running(
        query,
        sink,
        counters,
        listener,
        ready.writers,
        heartbeats,
        launch=(checkpoint, launch[0]) if launch else None,
        lease=lease,
        plan=plan,
        options=options,
    )


def _scans_per_source(results, streams: int) -> float:
    leaves = results._jdf.queryExecution().analyzed().collectLeaves()
    kafka = sum(1 for i in range(leaves.size()) if leaves.apply(i).getClass().getSimpleName() == "StreamingRelationV2")
    return max(kafka / max(streams, 1), 1.0)


def _query_name(job_name: str) -> str:
    return "dagger_" + "".join(c if c.isalnum() else "_" for c in job_name)


def run(plan: JobPlan, options: RunOptions, *, out=sys.stderr, spark=None, sink_factory=None) -> int:
    """Run until stopped (SIGINT/SIGTERM: the current batch finishes, then the job stops), or with
    available_now until the topics' current content is processed. Returns the exit code."""
    running = start(plan, options, spark, sink_factory=sink_factory, out=out)
    plan, options = running.plan or plan, running.options or options  # a standby's handoff's
    query, sink, counters = running.query, running.sink, running.counters
    for stream, spec in zip(plan.streams, plan.job.streams):
        print(f"run: {stream.table} <- {describe(spec)}", file=out)
    print(
        f"run: sink {sink.describe()}; dead letters to {plan.job.dlq_topic}; checkpoint {checkpoint_of(plan, options)}",
        file=out,
        flush=True,
    )
    stop = threading.Event()

    def on_signal(signum, frame):  # noqa: ARG001
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    fenced, fence_checked = None, time.monotonic()
    try:
        while query.isActive and not stop.is_set():
            query.awaitTermination(0.5)
            running.settle_once_running()
            if time.monotonic() - fence_checked > FENCE_CHECK_S:
                fence_checked, fenced = time.monotonic(), running.fenced()
                if fenced is not None:
                    break
        if fenced is not None:
            # a later version owns the checkpoint: stop now, without finishing the batch's commit
            print(
                f"run: version {options.version} was replaced or stopped (the checkpoint takes version {fenced} "
                "or later): stopping without writing more",
                file=out,
                flush=True,
            )
            # (a driver on a cluster: its own process, which may end; in-process, the query just stops)
            _stop_or_end(query, out, may_end=(options.master or "").startswith("spark://"))
        elif stop.is_set() and query.isActive:
            print("run: stopping after the current batch", file=out, flush=True)
            query.stop()
        failure = query.exception()
        stopped_under = failure is not None and _context_stopped(query)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if running.lease is not None and not query.isActive:
            # the query has stopped: nothing writes the checkpoint now, so a standby or the next
            # version may take it while this driver closes its sink and producers (which can take
            # seconds against a lost Kafka)
            running.lease.release()
        _detach(running)
        sink.close()
        for writer in running.writers:
            writer.close()
        if running.lease is not None:
            running.lease.release()
    print(f"run: {counters.summary()}", file=out, flush=True)
    if fenced is not None:
        return 0
    if failure is not None:
        if stopped_under:
            # Spark then fails the batch being planned with an internal error (a null session):
            # the cause is whatever stopped the context, earlier in the driver's log
            raise DaggerError(
                "the job stopped because its SparkContext was stopped under the running query "
                "(the master removed the application, or the driver is shutting down; see the "
                f"lines before this in the driver's log); Spark's error: {_failure_text(failure)}"
            )
        raise DaggerError(f"the job stopped with an error: {_failure_text(failure)}")
    return 0


FENCED_STOP_S = 2.0  # how long a fenced driver's query has to stop before the driver ends anyway


def _stop_or_end(query, out, *, may_end: bool) -> None:
    """Stop a fenced driver's query; if it does not stop within FENCED_STOP_S, end this process.
    Spark fetches Kafka offsets uninterruptibly, so against a lost Kafka a stop waits out the
    client's timeouts (a Kafka failover measured 14 s of it). Ending is safe: every batch ends in
    this process's foreachBatch, so without it the JVM cannot write or commit another, and the
    kernel lets the lease go at once."""
    stopped = threading.Event()

    def stop() -> None:
        try:
            query.stop()
        except Exception:  # noqa: BLE001 - a query that fails while stopping has stopped
            pass
        finally:
            stopped.set()

    if not may_end:
        stop()
        return
    threading.Thread(target=stop, name="dagger-fenced-stop", daemon=True).start()
    if not stopped.wait(FENCED_STOP_S):
        print(
            f"run: the query did not stop within {FENCED_STOP_S:g} s (a batch waits on an unreachable Kafka?): "
            "this driver ends now, and with it every batch it could still write",
            file=out,
            flush=True,
        )
        os._exit(0)  # 0: --supervise does not start it again


def _context_stopped(query) -> bool:
    try:
        return bool(query._jsq.sparkSession().sparkContext().isStopped())
    except Exception:  # noqa: BLE001 - a JVM already gone cannot say; the error says the rest
        return False


def _detach(running: Running) -> None:
    """Stop listening before the driver goes away (Spark would call back into a closed Python
    process), and report the last batch, whose progress event may not have arrived yet."""
    query, listener = running.query, running.listener
    for each in running.listeners():
        try:
            query.sparkSession.streams.removeListener(each)
        except Exception:  # noqa: BLE001 - the session may already be gone
            pass
    # as JSON in one call: PySpark's lastProgress walks the progress's Java maps, ~80 ms
    last = query._jsq.lastProgress()
    if last is not None:
        listener.report(json.loads(last.json()))


def _failure_text(failure) -> str:
    text = str(failure.desc if hasattr(failure, "desc") else failure)
    lines = [line for line in text.splitlines() if line.strip()]
    # the Python error raised in foreachBatch is the useful part of Spark's long message
    for line in lines:
        if line.startswith(("dagger_runtime.", "SinkError", "DaggerError")) or "SinkError:" in line:
            return line.strip()
    return lines[0] if lines else "unknown error"
