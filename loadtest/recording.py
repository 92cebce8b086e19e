"""Record a topic to a file, and replay the file into Kafka with its timing, event time moved to now.

    dagger load record -b 127.0.0.1:9092 GO_RIDE-booking-log rides.rec
    dagger load replay -b 127.0.0.1:9092 rides.rec --topic drill-rides --speed 2 \\
        --message BookingLogMessage

A recording is length-delimited frames (a varint length, then the bytes: protobuf's
writeDelimitedTo) of one envelope message, `daggers.loadtest.RecordedMessage`: Kafka timestamp
(ms), key, value, topic, partition, offset, timestamp type and headers. Its descriptor is built
here with descriptor_pb2, so there is no .proto to compile. Frames are in Kafka-timestamp order:
each partition is recorded to its own temporary file, then the partitions are merged.

Replay sends frame i at  t0 + (ts_i - ts_0) / speed  on a monotonic clock (each due time is
computed from the start, so waits that overrun do not add up), and, given the message type,
moves the event-time Timestamp of every message with the same map:  event' = now0 + (event - ts_0)
/ speed  (now0: the wall clock when replay starts). Event time thus stays as close to the send
time as it was to the recorded Kafka timestamp, lateness included, scaled with the replay.
"""

from __future__ import annotations

import argparse
import heapq
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from .generator import TIMESTAMP
from .ledger import Ledger
from .producer import DeliveryTracker, close_quietly, make_producer, stop_on_interrupt, warm_up
from .settings import SettingsError, add_bootstrap_argument, add_client_arguments, client_kwargs

__all__ = [
    "Recorded",
    "RecordingError",
    "RecordingWriter",
    "read_recording",
    "record",
    "replay",
    "RecordResult",
    "ReplayResult",
    "envelope_class",
    "event_time_field",
]

ENVELOPE = "daggers.loadtest.RecordedMessage"


class RecordingError(ValueError):
    """A recording that cannot be read or replayed as asked."""


class Recorded(NamedTuple):
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp_type: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


@lru_cache(maxsize=1)
def envelope_class() -> type:
    """The envelope's message class, from a descriptor built in code (proto2: key and value have
    presence, so a null key and an empty one stay different)."""
    f = descriptor_pb2.FileDescriptorProto(
        name="daggers/loadtest/recording.proto", package="daggers.loadtest", syntax="proto2"
    )
    m = f.message_type.add(name="RecordedMessage")
    T, L = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
    header = m.nested_type.add(name="Header")
    header.field.add(name="key", number=1, type=T.TYPE_STRING, label=L.LABEL_OPTIONAL)
    header.field.add(name="value", number=2, type=T.TYPE_BYTES, label=L.LABEL_OPTIONAL)
    for number, (name, kind) in enumerate(
        [
            ("timestamp_ms", T.TYPE_INT64),
            ("key", T.TYPE_BYTES),
            ("value", T.TYPE_BYTES),
            ("topic", T.TYPE_STRING),
            ("partition", T.TYPE_INT32),
            ("offset", T.TYPE_INT64),
            ("timestamp_type", T.TYPE_INT32),
        ],
        start=1,
    ):
        m.field.add(name=name, number=number, type=kind, label=L.LABEL_OPTIONAL)
    m.field.add(
        name="headers",
        number=8,
        type=T.TYPE_MESSAGE,
        label=L.LABEL_REPEATED,
        type_name=".daggers.loadtest.RecordedMessage.Header",
    )
    pool = descriptor_pool.DescriptorPool()  # its own pool: nothing to clash with in the default one
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(ENVELOPE))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class RecordingWriter:
    """Appends frames to a recording file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._out = open(self.path, "wb")
        self._cls = envelope_class()
        self.frames = 0

    def write(self, r: Recorded) -> None:
        env = self._cls(
            timestamp_ms=r.timestamp_ms,
            topic=r.topic,
            partition=r.partition,
            offset=r.offset,
            timestamp_type=r.timestamp_type,
            headers=[{"key": k, "value": v} for k, v in r.headers],
        )
        if r.key is not None:
            env.key = r.key
        if r.value is not None:
            env.value = r.value
        body = env.SerializeToString()
        self._out.write(_varint(len(body)))
        self._out.write(body)
        self.frames += 1

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> "RecordingWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_recording(path: str | Path) -> Iterator[Recorded]:
    """The frames of a recording, in file order; RecordingError at the first one that is broken."""
    cls = envelope_class()
    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as e:
        raise RecordingError(f"cannot read recording {path}: {e.strerror}") from None
    with f:
        frame = 0
        while True:
            start = f.tell()
            length, shift = 0, 0
            while True:
                b = f.read(1)
                if not b:
                    if shift == 0:
                        return  # a clean end, between frames
                    raise RecordingError(f"{path}: frame {frame + 1} at byte {start}: the file ends inside its length")
                length |= (b[0] & 0x7F) << shift
                if not b[0] & 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise RecordingError(f"{path}: frame {frame + 1} at byte {start}: malformed length prefix")
            body = f.read(length)
            frame += 1
            if len(body) != length:
                raise RecordingError(
                    f"{path}: frame {frame} at byte {start} is truncated: {length} bytes announced, {len(body)} there"
                )
            try:
                env = cls.FromString(body)
            except DecodeError as e:
                raise RecordingError(f"{path}: frame {frame} at byte {start} is not a recorded message: {e}") from None
            if not env.HasField("timestamp_ms") or not env.HasField("topic"):
                raise RecordingError(
                    f"{path}: frame {frame} at byte {start} is not a recorded message "
                    "(no timestamp or topic): is this a recording?"
                )
            yield Recorded(
                env.timestamp_ms,
                env.key if env.HasField("key") else None,
                env.value if env.HasField("value") else None,
                env.topic,
                env.partition,
                env.offset,
                env.timestamp_type,
                tuple((h.key, h.value) for h in env.headers),
            )


# ----------------------------------------------------------------------------------- record


@dataclass
class RecordResult:
    path: Path
    messages: int
    per_partition: dict[int, int]
    first_ms: int | None
    last_ms: int | None
    seconds: float


def record(
    consumer_settings: dict,
    topic: str,
    path: str | Path,
    *,
    from_beginning: bool = True,
    until_end: bool = True,
    duration_s: float | None = None,
    max_messages: int | None = None,
    progress: Callable[[int], None] | None = None,
    poll_ms: int = 200,
) -> RecordResult:
    """Read `topic` into a recording at `path`.

    From the beginning (or, from_beginning=False, from the end: live traffic only) until the end
    offsets seen at the start (until_end), for `duration_s`, or `max_messages`, whichever first.
    `consumer_settings`: kafka-python KafkaConsumer arguments (bootstrap_servers, SASL...); no
    consumer group is joined or committed unless they name one."""
    from kafka import KafkaConsumer, TopicPartition

    if not until_end and duration_s is None and max_messages is None:
        raise ValueError("record needs until_end, a duration or a message limit: it would never end")
    if not from_beginning and until_end and duration_s is None and max_messages is None:
        raise ValueError("from the end, until the end is nothing: give a duration or a message limit")
    settings = {
        "group_id": None,
        "enable_auto_commit": False,
        "client_id": "daggers-loadtest-record",
        **consumer_settings,
    }
    path = Path(path)
    if not path.parent.is_dir():
        raise RecordingError(f"cannot write the recording {path}: {path.parent} is not a directory")
    started = time.monotonic()
    consumer = KafkaConsumer(**settings)
    # each partition to its own file next to the output, merged by timestamp at the end
    tmpdir = tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)
    writers: dict[int, RecordingWriter] = {}
    try:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            raise RecordingError(
                f"topic {topic!r} does not exist on {settings.get('bootstrap_servers')} (or has no partitions)"
            )
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(tps)
        if from_beginning:
            consumer.seek_to_beginning(*tps)
        else:
            consumer.seek_to_end(*tps)
        ends = consumer.end_offsets(tps) if until_end else {}
        writers = {tp.partition: RecordingWriter(Path(tmpdir) / f"{tp.partition}.part") for tp in tps}
        deadline = started + duration_s if duration_s is not None else None
        total = 0

        def caught_up() -> bool:
            return until_end and all(consumer.position(tp) >= ends[tp] for tp in tps)

        while not caught_up():
            if deadline is not None and time.monotonic() >= deadline:
                break
            if max_messages is not None and total >= max_messages:
                break
            for tp, batch in consumer.poll(timeout_ms=poll_ms).items():
                w = writers[tp.partition]
                for rec in batch:
                    if until_end and rec.offset >= ends[tp]:
                        continue  # arrived after the snapshot of the end: not part of this recording
                    if max_messages is not None and total >= max_messages:
                        break
                    w.write(
                        Recorded(
                            rec.timestamp,
                            rec.key,
                            rec.value,
                            rec.topic,
                            rec.partition,
                            rec.offset,
                            rec.timestamp_type or 0,
                            tuple((k, v) for k, v in (rec.headers or [])),
                        )
                    )
                    total += 1
            if progress is not None:
                progress(total)
        for w in writers.values():
            w.close()
        per_partition = {p: w.frames for p, w in writers.items()}
        first = last = None
        # merge the partitions by Kafka timestamp (each partition is in offset order already)
        streams = [read_recording(w.path) for w in writers.values()]
        merged = heapq.merge(*streams, key=lambda r: (r.timestamp_ms, r.partition, r.offset))
        tmp_out = path.with_name(path.name + ".tmp")
        with RecordingWriter(tmp_out) as out:
            for r in merged:
                out.write(r)
                first = r.timestamp_ms if first is None else first
                last = r.timestamp_ms
        tmp_out.replace(path)
        return RecordResult(path, total, per_partition, first, last, time.monotonic() - started)
    finally:
        consumer.close()
        for w in writers.values():
            w.close()
            w.path.unlink(missing_ok=True)
        try:
            os.rmdir(tmpdir)
        except OSError:
            pass


# ----------------------------------------------------------------------------------- replay


def event_time_field(descriptor, name: str | None = None) -> str:
    """The field replay moves: `name` (which must be a Timestamp), or the message's first Timestamp."""
    if name is not None:
        f = descriptor.fields_by_name.get(name)
        if f is None:
            raise RecordingError(f"{descriptor.full_name} has no field {name!r} to move the event time of")
        if f.message_type is None or f.message_type.full_name != TIMESTAMP or f.label == f.LABEL_REPEATED:
            raise RecordingError(f"{descriptor.full_name}.{name} is not a single google.protobuf.Timestamp")
        return name
    for f in descriptor.fields:
        if f.message_type is not None and f.message_type.full_name == TIMESTAMP and f.label != f.LABEL_REPEATED:
            return f.name
    raise RecordingError(
        f"{descriptor.full_name} has no google.protobuf.Timestamp field, so replay has no event "
        "time to move; replay without a message type to send the values as recorded"
    )


@dataclass
class ReplayResult:
    sent: int
    acked: int
    failed: int
    seconds: float
    max_lag_ms: float  # how far behind its due time the latest send was
    not_moved: int  # values left as recorded: undecodable, or without the event-time field
    ledger: Ledger


def replay(
    path: str | Path,
    producer,
    topic: str | None = None,
    *,
    speed: float = 1.0,
    message_name: str | None = None,
    event_time: str | None = None,
    descriptor_set=None,
    ledger: Ledger | None = None,
    keep_partitions: bool = False,
    stop=None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[int], None] | None = None,
    flush_timeout_s: float = 60.0,
) -> ReplayResult:
    """Send a recording's messages to `topic` (default: each to the topic it was recorded from)
    through `producer` (flushed, not closed), keeping their spacing scaled by 1/speed.

    With `message_name`, the event-time field (`event_time`, default the first Timestamp) of
    each value is moved to now (see the module doc); without it values go out byte for byte."""
    if not speed or speed <= 0:
        raise ValueError(f"speed must be > 0, not {speed!r}")
    cls = field = None
    if message_name is not None:
        if descriptor_set is None:
            from protos import registry

            descriptor_set = registry.load()
        desc = descriptor_set.message_descriptor(message_name)
        field = event_time_field(desc, event_time)
        cls = descriptor_set.message_class(message_name)
    ledger = ledger if ledger is not None else Ledger()
    tracker = DeliveryTracker(ledger)
    frames = iter(read_recording(path))
    first = next(frames, None)
    if first is None:
        return ReplayResult(0, 0, 0, 0.0, 0.0, 0, ledger)
    if hasattr(producer, "partitions_for"):
        warm_up(producer, [topic or first.topic])
    t0 = clock()
    wall0_ns = time.time_ns()
    ts0_ns = first.timestamp_ms * 1_000_000
    max_lag = 0.0
    not_moved = 0
    sent = 0
    for r in _chain(first, frames):
        if stop is not None and stop.is_set():
            break
        due = t0 + (r.timestamp_ms - first.timestamp_ms) / 1000.0 / speed
        now = clock()
        if due > now:
            sleep(due - now)
        else:
            max_lag = max(max_lag, (now - due) * 1000.0)
        value, event_ms = r.value, None
        if cls is not None and value is not None:
            value, event_ms = _move(cls, field, value, wall0_ns, ts0_ns, speed)
            if event_ms is None:
                not_moved += 1
        tracker.send(
            producer,
            topic or r.topic,
            value,
            key=r.key,
            index=sent,
            event_time_ms=event_ms,
            partition=r.partition if keep_partitions else None,
            headers=list(r.headers) or None,
        )
        sent += 1
        if progress is not None:
            progress(sent)
    seconds = clock() - t0
    tracker.drain(producer, flush_timeout_s)
    return ReplayResult(tracker.sent, ledger.acked, ledger.failed, seconds, max_lag, not_moved, ledger)


def _chain(first, rest):
    yield first
    yield from rest


def _move(cls, field: str, value: bytes, wall0_ns: int, ts0_ns: int, speed: float) -> tuple[bytes, int | None]:
    """The value with its event time moved (and the new event time in ms), or as it was (and None)."""
    try:
        msg = cls.FromString(value)
    except DecodeError:
        return value, None  # a poison message stays one: drills may want it as recorded
    if not msg.HasField(field):
        return value, None
    ts = getattr(msg, field)
    old = ts.seconds * 1_000_000_000 + ts.nanos
    new = wall0_ns + (old - ts0_ns if speed == 1.0 else round((old - ts0_ns) / speed))
    ts.FromNanoseconds(new)
    return msg.SerializeToString(), new // 1_000_000


# ----------------------------------------------------------------------------- command line


def add_record_arguments(p: argparse.ArgumentParser) -> None:
    add_bootstrap_argument(p)
    p.add_argument("topic", help="the topic to record")
    p.add_argument("output", help="the recording file to write")
    p.add_argument(
        "--from-end",
        action="store_true",
        help="record only what arrives from now on (needs --duration or --max-messages)",
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop after this long")
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N messages")
    p.add_argument(
        "--follow",
        action="store_true",
        help="do not stop at the end offsets seen at the start (needs --duration or --max-messages)",
    )
    add_client_arguments(p)


def run_record(args: argparse.Namespace) -> int:
    if (args.follow or args.from_end) and args.duration is None and args.max_messages is None:
        raise SettingsError(
            f"{'--follow' if args.follow else '--from-end'} needs --duration or --max-messages: "
            "the recording would never end"
        )
    settings = {"bootstrap_servers": args.bootstrap_servers, **client_kwargs(args, "consumer")}
    until_end = not (args.follow or args.from_end)
    result = record(
        settings,
        args.topic,
        args.output,
        from_beginning=not args.from_end,
        until_end=until_end,
        duration_s=args.duration,
        max_messages=args.max_messages,
    )
    parts = ", ".join(f"p{p} {n:,}" for p, n in sorted(result.per_partition.items()))
    print(
        f"recorded {result.messages:,} messages of {args.topic} ({parts}) to {result.path} in {result.seconds:.1f}s",
        file=sys.stderr,
    )
    return 0


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    from .settings import add_bootstrap_argument, add_client_arguments, add_schema_arguments

    add_bootstrap_argument(p)
    p.add_argument("recording", help="a file written by `dagger load record`")
    p.add_argument("--topic", help="write every message here (default: the topic each was recorded from)")
    p.add_argument("--speed", type=float, default=1.0, help="time scale: 2 replays twice as fast (default 1)")
    p.add_argument(
        "-m",
        "--message",
        help="protobuf message of the values: move their event time to now (default: values as recorded)",
    )
    p.add_argument(
        "--event-time",
        metavar="FIELD",
        help="the Timestamp field to move (default: the message's first Timestamp field)",
    )
    p.add_argument("--keep-partitions", action="store_true", help="write each message to its recorded partition")
    p.add_argument("--ledger", metavar="PATH", help="write a ledger of the deliveries (Parquet)")
    add_client_arguments(p)
    add_schema_arguments(p)


def run_replay(args: argparse.Namespace) -> int:
    from .settings import SettingsError, client_kwargs, descriptor_set

    if args.speed <= 0:
        raise SettingsError(f"--speed must be > 0, not {args.speed:g}")
    dset = message = None
    if args.message:
        dset = descriptor_set(args)
        message = dset.resolve(args.message)
        event_time_field(dset.message_descriptor(message), args.event_time)  # refused before connecting
    elif args.event_time:
        raise SettingsError("--event-time needs --message (the type of the values)")
    next(read_recording(args.recording), None)  # a missing or broken file, before connecting
    producer = make_producer(args.bootstrap_servers, **client_kwargs(args, "producer"))
    try:
        with stop_on_interrupt() as stop:
            result = replay(
                args.recording,
                producer,
                args.topic,
                speed=args.speed,
                message_name=message,
                event_time=args.event_time,
                descriptor_set=dset,
                keep_partitions=args.keep_partitions,
                stop=stop,
                sleep=stop.wait,
            )  # Ctrl-C ends even a long wait for the next frame
    finally:
        close_quietly(producer)
    if args.ledger:
        result.ledger.save(args.ledger)
    moved = f", {result.not_moved:,} values not moved (undecodable or no event time)" if result.not_moved else ""
    print(
        f"replayed {result.sent:,} messages in {result.seconds:.1f}s at speed {args.speed:g}: acked "
        f"{result.acked:,}, failed {result.failed:,}, latest send {result.max_lag_ms:.0f} ms behind schedule"
        f"{moved}",
        file=sys.stderr,
    )
    return 0 if result.failed == 0 else 1
