"""Generated messages to Kafka at a steady rate, each delivery accounted for in a Ledger.

    dagger load produce -b 127.0.0.1:9092 GO_RIDE-booking-log --message BookingLogMessage \\
        --rate 500 --duration 60 --key driver_id --hints hints.json --ledger run.parquet

The producer is kafka-python's with acks=all and idempotence (no duplicates from its own
retries); a message counts as sent once Kafka acknowledged it, from the future's callback. A send
that fails (at send() or later) is kept in the ledger with its error, never dropped. The pace
comes from a token bucket on a monotonic clock, so late wake-ups do not add up to a slower run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from dagger_runtime.suggest import closest

from .generator import MessageGenerator, fact, now_ms
from .ledger import Ledger
from .settings import (
    SettingsError,
    add_bootstrap_argument,
    add_client_arguments,
    add_schema_arguments,
    client_kwargs,
    descriptor_set,
    load_json_or_file,
)

__all__ = [
    "TokenBucket",
    "DeliveryTracker",
    "ProduceResult",
    "producer_settings",
    "make_producer",
    "produce",
    "default_fields",
    "key_bytes",
    "close_quietly",
    "warm_up",
    "stop_on_interrupt",
]


class TokenBucket:
    """`rate` tokens a second, at most `burst` of them banked.

    Tokens accrue from a monotonic clock, not from the sleeps: a wake-up that comes late finds
    the tokens of the time it overslept (up to `burst`), so the long-run rate stays `rate`."""

    def __init__(
        self,
        rate: float,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not rate or rate <= 0:
            raise ValueError(f"rate must be > 0 messages a second, not {rate!r}")
        self.rate = float(rate)
        # 50 ms of traffic: enough to absorb the sleep granularity, small enough not to be a burst
        self.burst = float(burst) if burst is not None else max(1.0, self.rate / 20)
        self._clock, self._sleep = clock, sleep
        self._tokens = 1.0  # the first message goes at once, without a burst behind it
        self._last = clock()

    def acquire(self, deadline: float | None = None) -> bool:
        """Take a token, waiting for it; False (and nothing taken) if it would come after `deadline`."""
        while True:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= 1.0 - 1e-9:  # the float sum of a wait's accrual can end just short of 1
                self._tokens = max(0.0, self._tokens - 1.0)
                return True
            wait = (1.0 - self._tokens) / self.rate
            if deadline is not None and now + wait > deadline:
                return False
            self._sleep(wait)


def key_bytes(value: Any) -> bytes | None:
    """A message key from a fact: bytes as they are, anything else as its text."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return str(value).encode()


class DeliveryTracker:
    """Sends through a KafkaProducer and writes each outcome to a Ledger: acknowledged from the
    future's callback (on kafka-python's IO thread), failed from its errback or from send() itself.

    `on_result(topic, latency_s, size, error)` is called for every outcome (locust's statistics)."""

    def __init__(
        self, ledger: Ledger, on_result: Callable[[str, float, int, BaseException | None], None] | None = None
    ):
        self.ledger = ledger
        self.on_result = on_result
        self._lock = threading.Lock()
        self._inflight: dict[int, tuple] = {}
        self._next = 0
        self.sent = 0
        self.late = 0  # reports that came after close_out had written the message off

    @property
    def inflight(self) -> int:
        with self._lock:
            return len(self._inflight)

    def send(
        self,
        producer,
        topic: str,
        value: bytes,
        *,
        key: bytes | None = None,
        index: int | None = None,
        facts: dict | None = None,
        event_time_ms: int | None = None,
        partition: int | None = None,
        headers: list | None = None,
    ) -> None:
        started = time.perf_counter()
        with self._lock:
            token = self._next
            self._next += 1
            self.sent += 1
            self._inflight[token] = (index, topic, key, event_time_ms, facts, started, len(value))
        try:
            future = producer.send(topic, value=value, key=key, partition=partition, headers=headers)
        except Exception as e:  # noqa: BLE001 - any refusal is a failed send, kept with its error
            self._failed(token, e)
            return
        future.add_callback(self._acked, token)
        future.add_errback(self._failed, token)

    def _take(self, token: int):
        with self._lock:
            entry = self._inflight.pop(token, None)
            if entry is None:
                self.late += 1
            return entry

    def _acked(self, token: int, md) -> None:
        entry = self._take(token)
        if entry is None:
            return
        index, topic, key, event_ms, facts, started, size = entry
        ts = md.timestamp if md.timestamp is not None and md.timestamp >= 0 else None
        self.ledger.record(
            index=index,
            topic=md.topic,
            partition=md.partition,
            offset=md.offset,
            timestamp_ms=ts,
            key=key,
            event_time_ms=event_ms,
            facts=facts,
        )
        if self.on_result is not None:
            self.on_result(md.topic, time.perf_counter() - started, size, None)

    def _failed(self, token: int, error: BaseException) -> None:
        entry = self._take(token)
        if entry is None:
            return
        index, topic, key, event_ms, facts, started, size = entry
        self.ledger.record_failure(index=index, topic=topic, key=key, event_time_ms=event_ms, error=error, facts=facts)
        if self.on_result is not None:
            self.on_result(topic, time.perf_counter() - started, size, error)

    def drain(self, producer, timeout_s: float) -> int:
        """Flush until every send has its report, then write off what still has none after
        `timeout_s`; how many were written off. A failed flush is tried again: kafka-python's
        flush raises spuriously while it splits an oversized batch whose records are still on
        their way (to a report, good or bad)."""
        deadline = time.monotonic() + timeout_s
        last: BaseException | None = None
        while self.inflight and time.monotonic() < deadline:
            try:
                producer.flush(timeout=max(0.0, deadline - time.monotonic()))
            except Exception as e:  # noqa: BLE001 - KafkaTimeoutError, UnknownError('Future not done')...
                last = e
                time.sleep(0.05)
        if not self.inflight:
            return 0
        return self.close_out(
            f"no delivery report within {timeout_s:g} s of the last send"
            + (f" (last flush: {type(last).__name__}: {last})" if last else "")
        )

    def close_out(self, reason: str) -> int:
        """Write off every message still without a report as failed with `reason`; how many."""
        with self._lock:
            tokens = list(self._inflight)
        for token in tokens:
            self._failed(token, RuntimeError(reason))
        return len(tokens)


def producer_settings(bootstrap_servers: str | list[str], **client: Any) -> dict[str, Any]:
    """kafka-python producer settings: acks=all and idempotence unless `client` says otherwise."""
    from kafka import KafkaProducer

    settings: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers,
        "acks": "all",
        "linger_ms": 5,
        "client_id": "daggers-loadtest",
    }
    # idempotence: no duplicates from the producer's own retries. Asked for explicitly only when
    # nothing the caller set conflicts with it (kafka-python then raises instead of warning).
    conflicts = (
        client.get("acks", "all") not in ("all", -1)
        or client.get("retries", 1) == 0
        or client.get("max_in_flight_requests_per_connection", 5) > 5
    )
    if "enable_idempotence" in KafkaProducer.DEFAULT_CONFIG and not conflicts:
        settings["enable_idempotence"] = True
    settings.update(client)
    return settings


def make_producer(bootstrap_servers: str | list[str], **client: Any):
    from kafka import KafkaProducer

    return KafkaProducer(**producer_settings(bootstrap_servers, **client))


def warm_up(producer, topics: Sequence[str]) -> None:
    """Fetch the topics' metadata now: the first send() to a topic waits for it, and a run that
    begins with that stall starts behind its schedule."""
    for topic in topics:
        try:
            producer.partitions_for(topic)
        except Exception:  # noqa: BLE001 - the sends will fail too, each recorded with the reason
            pass


@contextlib.contextmanager
def stop_on_interrupt():
    """An Event that the first Ctrl-C sets (the run then ends as if its time were up: reports
    waited for, ledger written); a second Ctrl-C interrupts as usual."""
    stop = threading.Event()

    def handler(signum, frame):
        stop.set()
        signal.signal(signal.SIGINT, previous)
        print("\nstopping: waiting for the last delivery reports (Ctrl-C again to abort)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def close_quietly(producer, timeout_s: float = 10.0) -> None:
    """Close a producer whose deliveries are accounted for already; a failure here is only logged
    (it must not hide the run's own outcome or error)."""
    try:
        producer.close(timeout=timeout_s)
    except Exception as e:  # noqa: BLE001
        logging.getLogger(__name__).warning("closing the Kafka producer: %s: %s", type(e).__name__, e)


def default_fields(generator: MessageGenerator, key_field: str | None = None) -> list[str]:
    """The facts a ledger keeps by default: the hinted scalar fields and the key's field."""
    scalars = set(generator.scalar_paths())
    return [p for p in generator.hints if p in scalars] + ([key_field] if key_field else [])


@dataclass
class ProduceResult:
    ledger: Ledger
    sent: int
    acked: int
    failed: int
    seconds: float
    late: int = 0

    @property
    def per_second(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0


@dataclass
class Progress:
    sent: int
    acked: int
    failed: int
    elapsed_s: float

    @property
    def per_second(self) -> float:
        return self.sent / self.elapsed_s if self.elapsed_s else 0.0


def produce(
    generator: MessageGenerator,
    topics: str | Sequence[str],
    producer,
    *,
    rate: float | None = None,
    count: int | None = None,
    duration_s: float | None = None,
    key_field: str | None = None,
    ledger: Ledger | None = None,
    start_index: int = 0,
    stop: threading.Event | None = None,
    progress: Callable[[Progress], None] | None = None,
    progress_every_s: float = 0.25,
    flush_timeout_s: float = 60.0,
) -> ProduceResult:
    """Send generated messages (indices start_index, start_index+1, ...) round-robin over `topics`
    until `count` are sent, `duration_s` has passed or `stop` is set; then wait for every report.

    `producer` is the caller's KafkaProducer (make_producer), flushed here but not closed. Messages
    still unreported `flush_timeout_s` after the last send are written off as failed."""
    topics = [topics] if isinstance(topics, str) else list(topics)
    if not topics:
        raise ValueError("no topic to produce to")
    if count is None and duration_s is None and stop is None:
        raise ValueError("give a count, a duration or a stop event: the run would never end")
    if key_field is not None and key_field not in generator.scalar_paths():
        close = closest(key_field, generator.scalar_paths())
        raise ValueError(
            f"key field {key_field!r} is not a singular field of {generator.message_name}"
            + (f"; did you mean {' or '.join(close)}?" if close else "")
        )
    ledger = ledger if ledger is not None else Ledger(default_fields(generator, key_field))
    tracker = DeliveryTracker(ledger)
    warm_up(producer, topics)
    # waiting on `stop` rather than sleeping: a stop ends even a long wait for the next token
    bucket = TokenBucket(rate, sleep=stop.wait if stop is not None else time.sleep) if rate else None
    event_field = generator.event_time_field
    started = time.monotonic()
    deadline = started + duration_s if duration_s is not None else None
    next_report = started
    index, n, ntopics = start_index, 0, len(topics)

    def report() -> None:
        progress(Progress(tracker.sent, ledger.acked, ledger.failed, time.monotonic() - started))

    while True:
        if count is not None and n >= count:
            break
        if stop is not None and stop.is_set():
            break
        if bucket is not None:
            if not bucket.acquire(deadline):
                break
        elif deadline is not None and time.monotonic() >= deadline:
            break
        value, facts = generator.make(index, now_ms())
        key = key_bytes(fact(facts, key_field)) if key_field else None
        tracker.send(
            producer,
            topics[n % ntopics],
            value,
            key=key,
            index=index,
            facts=facts,
            event_time_ms=facts.get(event_field) if event_field else None,
        )
        index += 1
        n += 1
        if progress is not None and time.monotonic() >= next_report:
            report()
            next_report += progress_every_s
    sending_s = time.monotonic() - started
    tracker.drain(producer, flush_timeout_s)
    if progress is not None:
        report()
    return ProduceResult(ledger, tracker.sent, ledger.acked, ledger.failed, sending_s, tracker.late)


# ----------------------------------------------------------------------------- command line


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    p.add_argument("topics", nargs="+", metavar="TOPIC", help="topic(s) to write, round-robin")
    p.add_argument(
        "-m",
        "--message",
        required=True,
        help="protobuf message name, full or simple (gojek.esb.booking.BookingLogMessage, BookingLogMessage)",
    )
    p.add_argument("--hints", help="per-field hints: inline JSON or a .json/.yaml file (see loadtest/generator.py)")
    p.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    p.add_argument("--start-index", type=int, default=0, help="first message index (default 0)")
    p.add_argument("--rate", type=float, help="messages a second (default: as fast as it goes)")
    p.add_argument("-n", "--count", type=int, help="stop after this many messages")
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--key", metavar="FIELD", help="fact path whose value is the message key (default: no key)")
    p.add_argument(
        "--fact",
        action="append",
        default=[],
        metavar="FIELD",
        help="a fact path to keep in the ledger, repeatable (default: the hinted fields and the key)",
    )
    p.add_argument(
        "--ledger",
        metavar="PATH",
        help="where to write the ledger (Parquet; default ledger-<topic>-<UTC time>.parquet)",
    )
    p.add_argument(
        "--flush-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for the last reports before writing messages off (default 60)",
    )
    add_client_arguments(p)
    add_schema_arguments(p)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    if args.count is None and args.duration is None:
        raise SettingsError("give --count or --duration (or both)")
    dset = descriptor_set(args)
    message = dset.resolve(args.message)  # a full, Java or unique simple name
    generator = MessageGenerator(dset, message, load_json_or_file(args.hints, "--hints"), seed=args.seed)
    scalars = generator.scalar_paths()
    for option, path in [("--key", args.key), *(("--fact", f) for f in args.fact)]:
        if path is not None and path not in scalars:
            close = closest(path, scalars)
            raise SettingsError(
                f"{option} {path!r} is not a singular field of {message}"
                + (f"; did you mean {' or '.join(close)}?" if close else "")
            )
    fields = list(dict.fromkeys([*default_fields(generator, args.key), *args.fact]))
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    ledger_path = Path(args.ledger or f"ledger-{args.topics[0]}-{stamp}.parquet")
    ledger = Ledger(
        fields,
        meta={
            "message": message,
            "seed": args.seed,
            "hints": generator.hints,
            "topics": args.topics,
            "rate": args.rate,
            "schema": dset.digest,
            "key": args.key,
            "start_index": args.start_index,
        },
    )
    console = Console(stderr=True, highlight=False)
    total = args.count if args.count is not None else args.duration
    bar = Bar(
        TextColumn("[bold]produce"),
        BarColumn(),
        TextColumn("{task.fields[line]}"),
        TimeElapsedColumn(),
        console=console,
    )
    task = bar.add_task("produce", total=total, line="")

    def show(p: Progress) -> None:
        done = p.sent if args.count is not None else min(p.elapsed_s, args.duration)
        bar.update(
            task,
            completed=done,
            line=f"{p.per_second:8,.0f}/s  sent {p.sent:,}  acked {p.acked:,}  failed {p.failed:,}",
        )

    producer = make_producer(args.bootstrap_servers, **client_kwargs(args, "producer"))
    try:
        with bar, stop_on_interrupt() as stop:
            result = produce(
                generator,
                args.topics,
                producer,
                rate=args.rate,
                count=args.count,
                duration_s=args.duration,
                key_field=args.key,
                ledger=ledger,
                stop=stop,
                start_index=args.start_index,
                progress=show,
                flush_timeout_s=args.flush_timeout,
            )
    finally:
        close_quietly(producer)
    ledger.save(ledger_path)
    by_topic = ", ".join(f"{t} {n:,}" for t, n in sorted(ledger.counts_by_topic().items()))
    console.print(
        f"sent {result.sent:,} {message} in {result.seconds:.1f}s ({result.per_second:,.0f}/s): "
        f"acked {result.acked:,} ({by_topic or 'none'}), failed {result.failed:,}"
    )
    for failure in ledger.failures[:5]:
        console.print(f"  failed #{failure['index']} to {failure['topic']}: {failure['error']}")
    console.print(f"ledger: {ledger_path}")
    return 0 if result.failed == 0 else 1
