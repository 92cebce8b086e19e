"""Whether an edited dagger can keep its checkpoint, and where a new checkpoint starts reading.

Spark's checkpoint holds the Kafka offsets of each source and the state of the query's stateful
operators (open windows, distinct sets, join buffers), laid out for the query that wrote it. A
change to anything that shapes that state (the query, its streams, their event time and
watermark) makes the old state unusable; a change to the sink, parallelism or description does
not. The state key is a digest of exactly the former: the query as translated to Spark SQL (so
whitespace, comments and letter case do not count) and each stream's reading of its topics.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .. import launches
from ..errors import DaggerError
from ..launches import local_root, read_regular


def state_key(plan) -> str:
    job = plan.job
    streams = [
        {
            "table": s.table.lower(),
            "proto": p.proto_class,
            "topics": sorted(s.topics or ()),
            "pattern": s.topic_pattern,
            "event_time": p.event_time_field,
            "bootstrap": s.kafka.bootstrap_servers,
        }
        for s, p in zip(job.streams, plan.streams)
    ]
    shaped = {
        "sql": plan.query.spark_sql,
        "streams": streams,
        "rowtime": job.rowtime_attribute,
        "watermark_delay_ms": job.watermark_delay_ms,
        "schema": plan.descriptor_set.digest,
    }
    if job.idle_timeout_ms and len(streams) > 1:
        # letting idle streams go adds a heartbeat source per stream, which a checkpoint records;
        # the timeout's length does not change that
        shaped["idle_streams"] = True
    return hashlib.sha256(json.dumps(shaped, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Start:
    """Where a dagger with a new checkpoint starts reading: `committed` (the previous checkpoint's
    last committed offsets), `earliest`, `latest`, or a time."""

    kind: str
    timestamp_ms: int | None = None

    def __str__(self) -> str:
        if self.kind == "timestamp":
            at = dt.datetime.fromtimestamp(self.timestamp_ms / 1000, dt.timezone.utc)
            return f"from {at.isoformat().replace('+00:00', 'Z')}"
        return {
            "committed": "from the previous version's committed offsets",
            "job": "from the job's auto_offset_reset",
            "checkpoint": "from its checkpoint",
        }.get(self.kind, f"from {self.kind}")


def parse_start(text: str) -> Start:
    """`committed`, `earliest`, `latest`, an ISO-8601 time (2026-11-23T10:00:00Z) or epoch
    milliseconds (13 digits)."""
    value = text.strip()
    if value.lower() in ("committed", "earliest", "latest"):
        return Start(value.lower())
    if re.fullmatch(r"\d{13}", value):
        return Start("timestamp", int(value))
    try:
        at = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise DaggerError(
            f"--from {text!r}: expected committed, earliest, latest, an ISO time such as "
            "2026-11-23T10:00:00Z, or epoch milliseconds"
        ) from None
    if at.tzinfo is None:
        raise DaggerError(f"--from {text!r}: give the time zone (2026-11-23T10:00:00Z for UTC)")
    return Start("timestamp", int(at.timestamp() * 1000))


def _unfollowed(path: Path) -> Path:
    """`path`, refused when it passes through a symbolic link that someone other than root could
    have made (in a folder not root's, or that others may write). The deploy tooling reads a
    checkpoint as root, and the checkpoint's folders are its team's user's: a link there could point
    it at any file, a secret or another team's checkpoint."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        parent, current = current, current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return path
        if stat.S_ISLNK(mode):
            folder = os.stat(parent)
            if folder.st_uid != 0 or folder.st_mode & 0o022:
                raise DaggerError(
                    f"{current} is a symbolic link in a folder others than root may write: a checkpoint "
                    "is read without following such links"
                )
            current = Path(os.path.realpath(current))
    return path


def _read_unfollowed(path: Path) -> str:
    """A checkpoint file's text, read as root: no link followed, no FIFO or device, at most 16 MB."""
    text = read_regular(_unfollowed(path), 16 << 20)
    if text is None:
        raise DaggerError(f"{path} is not a regular file of at most 16 MB; it is not read")
    return text


def _last_committed(checkpoint: str) -> tuple[Path, list[str]]:
    """The offset log of the last batch a checkpoint committed, as lines. Spark writes offsets/N
    before the batch runs and commits/N after its results are stored, so N is the highest with
    both."""
    if "://" in checkpoint and not checkpoint.startswith("file://"):
        raise DaggerError(
            f"cannot read the committed offsets of {checkpoint} from here; start from a time "
            "(--from 2026-11-23T10:00:00Z), earliest or latest instead"
        )
    root = Path(checkpoint.removeprefix("file://"))
    batches = sorted((int(p.name) for p in (root / "commits").glob("*") if p.name.isdigit()), reverse=True)
    for batch in batches:
        offsets = _unfollowed(root / "offsets" / str(batch))
        if offsets.is_file():
            lines = _read_unfollowed(offsets).splitlines()
            # v1, then the batch's metadata, then one line per source ("-": a source without offsets);
            # nothing of the file but a version number is shown
            if not lines or lines[0] != "v1" or len(lines) < 2:
                version = lines[0] if lines and re.fullmatch(r"v\d{1,3}", lines[0]) else "unknown"
                raise DaggerError(
                    f"{offsets}: an offset log of version {version}; this runtime "
                    "reads v1 (Spark 4.0): start from a time instead"
                )
            return offsets, lines
    raise DaggerError(
        f"the previous checkpoint {checkpoint} has no committed batch to start from; "
        "use --from earliest, latest or a time"
    )


def committed_offsets(checkpoint: str) -> list[dict[str, dict[str, int]]]:
    """The Kafka offsets of the last batch a checkpoint committed, one {topic: {partition: next
    offset}} per source, in the order Spark lists its sources."""
    _, lines = _last_committed(checkpoint)
    return [json.loads(line) for line in lines[2:] if line.strip() not in ("", "-")]


def first_start(checkpoint: str, streams, deployed_at_ms: int) -> Start:
    """Where a checkpoint's query began reading, as a position that means the same on a Kafka
    mirror (MirrorMaker keeps record timestamps): its starting time, or earliest; a start by
    offsets or at `latest` becomes the time its version was deployed. What `run` kept in the
    checkpoint (dagger-starting.json) says; without it, the streams' auto_offset_reset."""
    from ..run import STARTING_FILE, read_start

    if local_root(checkpoint) is not None:
        _unfollowed(local_root(checkpoint) / STARTING_FILE)
    starting, _ = read_start(checkpoint)
    options = list(starting.values()) if isinstance(starting, dict) else []
    times = {o.get("startingTimestamp") for o in options}
    if options and len(times) == 1 and None not in times:
        return Start("timestamp", int(times.pop()))
    resets = (
        {o.get("startingOffsets") for o in options}
        if options
        else {getattr(s.kafka, "auto_offset_reset", None) for s in streams}
    )
    if resets == {"earliest"}:
        return Start("earliest")
    return Start("timestamp", deployed_at_ms)


def committed_watermark(checkpoint: str) -> int:
    """The event-time watermark (epoch ms) of the last batch a checkpoint committed. In append
    mode that batch wrote every window ending at or before it, and no other."""
    path, lines = _last_committed(checkpoint)
    try:
        return int(json.loads(lines[1])["batchWatermarkMs"])
    except (ValueError, KeyError, TypeError):
        raise DaggerError(f"{path}: no batch watermark in its metadata line") from None


def starting_options(start: Start, streams, offsets: list[dict] | None = None) -> dict[str, dict[str, str]]:
    """Spark Kafka source options by stream table, for a query with a new checkpoint (`run
    --starting`)."""
    if start.kind in ("earliest", "latest"):
        return {s.table: {"startingOffsets": start.kind} for s in streams}
    if start.kind == "timestamp":
        # every partition from its first record at or after the time (Spark looks it up on the broker)
        # a partition with no record after the time starts at its end (Spark's default fails the query)
        return {
            s.table: {"startingTimestamp": str(start.timestamp_ms), "startingOffsetsByTimestampStrategy": "latest"}
            for s in streams
        }
    if start.kind != "committed":
        return {}
    options = {}
    for stream in streams:
        own = {}
        for source in offsets or []:
            for topic, partitions in source.items():
                if topic in (stream.topics or ()) or (
                    stream.topic_pattern and re.fullmatch(stream.topic_pattern, topic)
                ):
                    own[topic] = partitions
        if not own:
            raise DaggerError(
                f"stream {stream.table}: the previous checkpoint has no offsets for its topics "
                f"({', '.join(stream.topics or [stream.topic_pattern])}); use --from earliest, "
                "latest or a time"
            )
        # Spark needs an offset for every partition it reads: a topic the old version did not
        # read has none
        new = [t for t in stream.topics or () if t not in own]
        if new:
            raise DaggerError(
                f"stream {stream.table}: the previous version did not read {', '.join(new)}, so "
                "it has no committed offsets there; use --from earliest, latest or a time"
            )
        options[stream.table] = {"startingOffsets": json.dumps(own, sort_keys=True)}
    return options


_LEDGER_TAIL = 64 * 1024  # what is read of a launch ledger: its last launches, whatever its size


def _read_tail_unfollowed(path: Path, limit: int) -> str | None:
    """The last `limit` bytes of a regular file in a team's folder, read as root: no link followed,
    nothing but a regular file opened (a FIFO would block, a device would answer anything)."""
    fd = os.open(_unfollowed(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        os.lseek(fd, max(0, info.st_size - limit), os.SEEK_SET)
        return os.read(fd, limit).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def crash_loop(checkpoint: str) -> str | None:
    """What says a checkpoint's driver is in a crash loop (launches.py: launches in a row without a
    committed batch), read as root without following the team's links; None when it is not, or its
    ledger cannot be read here (a remote checkpoint, or anything but a regular file)."""
    root = launches.local_root(checkpoint)
    if root is None:
        return None
    try:
        text = _read_tail_unfollowed(root / launches.LAUNCHES_FILE, _LEDGER_TAIL)
        committed = launches.last_committed_batch(_unfollowed(root / "commits").parent)
    except (OSError, DaggerError):
        return None  # no ledger yet, one behind a team's link (not followed), or unreadable
    entries = launches.parse(text or "")
    count = launches.launches_without_commit(entries, committed)
    if count < launches.CRASH_LOOP_LAUNCHES:
        return None
    since = dt.datetime.fromtimestamp(entries[-count]["at_ms"] / 1000, dt.timezone.utc)
    last = "no batch committed yet" if committed < 0 else f"the last committed batch is {committed}"
    return (
        f"{count} driver launches in a row without a committed batch since "
        f"{since.strftime('%Y-%m-%dT%H:%M:%SZ')} ({last})"
    )
