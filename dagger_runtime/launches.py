"""Every launch of a dagger's driver on its checkpoint, kept in the checkpoint: a crash loop is a
driver that keeps starting without committing a batch.

Spark's `--supervise` restarts a driver that fails, as often as it fails: the master says RUNNING
throughout and the last batch never moves. The driver appends a line per launch to
`dagger-launches.jsonl` (when, and the last batch the checkpoint had committed), and another once
the launch has settled (its query ran a trigger through); a launch that saw the same committed
batch as the one before it, and did not settle, ended without a commit. `run` exports the count
as a metric (an alert), and the deploy tooling reads the same file for `dagger status` and the
registry (CRASH_LOOP).

Lines are only appended (one write each, O_APPEND), so two drivers on one checkpoint cannot drop
each other's lines; the file is cut to its last launches now and then. The ledger never stops a
driver: a write that fails is said and skipped.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
import time
from pathlib import Path

LAUNCHES_FILE = "dagger-launches.jsonl"
# launches in a row without a committed batch (the one running included) that make a crash loop:
# the current launch may still be starting, two before it failed
CRASH_LOOP_LAUNCHES = 3
_KEPT = 50  # launches kept when the file is cut
_CUT_AT = 4 * _KEPT  # lines that make it cut
_MAX_MS = 253_402_300_800_000  # epoch milliseconds a line may carry: before the year 10000


def local_root(checkpoint: str) -> Path | None:
    """The checkpoint's folder on this machine (None for a remote store, where no ledger is kept)."""
    local = checkpoint.removeprefix("file://")
    return None if "://" in local else Path(local)


def read_regular(path: Path, limit: int) -> str | None:
    """A regular file's text, read without following a link at its name and without blocking
    (a FIFO or device is not read): None when it is anything else or missing; a DaggerError-free
    OSError only for what cannot be opened otherwise. More than `limit` bytes is refused (None)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, OSError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return os.read(fd, limit + 1)[:limit].decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def last_committed_batch(root: Path) -> int:
    """The highest batch id in Spark's commit log (-1 before the first commit)."""
    try:
        return max(
            (int(p.name) for p in (root / "commits").iterdir() if p.name.isdigit() and len(p.name) < 19), default=-1
        )
    except (FileNotFoundError, NotADirectoryError):
        return -1


def commit_times(root: Path) -> list[float]:
    """When each batch in Spark's commit log was committed (its file's time), oldest first.
    Raises OSError when the checkpoint has no commit log."""
    return sorted(p.stat().st_mtime for p in (root / "commits").iterdir() if p.name.isdigit())


def _millis(value) -> bool:
    return type(value) is int and 0 <= value < _MAX_MS


def parse(text: str) -> list[dict]:
    """The ledger's launches, oldest first, each {"at_ms", "committed"} and "settled" when a later
    line says so; a line that is neither (a torn write, anything else) is skipped."""
    launches, by_id = [], {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if _millis(entry.get("at_ms")) and type(entry.get("committed")) is int and entry["committed"] >= -1:
            launch = {"at_ms": entry["at_ms"], "committed": entry["committed"], "settled": False}
            launches.append(launch)
            by_id[launch["at_ms"]] = launch
        elif _millis(entry.get("settled")) and entry["settled"] in by_id:
            by_id[entry["settled"]]["settled"] = True
    return launches


def launches_without_commit(launches: list[dict], committed: int) -> int:
    """How many of the latest launches (the current one included) have seen `committed` as the
    last committed batch and neither committed one since nor settled (ran a trigger through, see
    `settle`): 1 for a driver still starting, more when launches before it ended that way. A launch
    that settled is no crash: an idle dagger moved twice has committed nothing. Pure."""
    count = 0
    for entry in reversed(launches):
        if entry["committed"] != committed or entry["settled"]:
            break
        count += 1
    return count


def crash_loop(launches: list[dict], committed: int) -> bool:
    return launches_without_commit(launches, committed) >= CRASH_LOOP_LAUNCHES


def _append(path: Path, entry: dict) -> None:
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        size = os.fstat(fd).st_size
        # a line a killed driver left unfinished is ended first, so it does not swallow this one
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        os.write(fd, (("\n" if torn else "") + json.dumps(entry, sort_keys=True) + "\n").encode())
    finally:
        os.close(fd)


def _cut(path: Path, text: str) -> None:
    """The file rewritten with its last launches (and their settle lines), through a temporary file
    of its own: another driver's line written meanwhile may be lost, never the file."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if '"at_ms"' in line]
    if len(lines) < _CUT_AT or len(starts) <= _KEPT:
        return
    fd, temp = tempfile.mkstemp(prefix=".launches-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines[starts[-_KEPT] :]) + "\n")
    os.replace(temp, path)


def record(checkpoint: str, now_ms: int | None = None, out=sys.stderr) -> tuple[int, int] | None:
    """The driver's launch, added to its checkpoint's ledger: returns when it was recorded (its id,
    for `settle`) and the launches in a row without a commit, this one included (None for a remote
    checkpoint, or when the ledger cannot be written: said on `out`)."""
    root = local_root(checkpoint)
    if root is None:
        return None
    path = root / LAUNCHES_FILE
    at_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    try:
        root.mkdir(parents=True, exist_ok=True)
        committed = last_committed_batch(root)
        _append(path, {"at_ms": at_ms, "committed": committed})
        text = path.read_text(encoding="utf-8", errors="replace")
        _cut(path, text)
    except OSError as e:
        print(
            f"run: the launch ledger {path} cannot be written ({e.strerror}): a crash loop will not be seen", file=out
        )
        return None
    return at_ms, launches_without_commit(parse(text), committed)


def settle(checkpoint: str, at_ms: int, out=sys.stderr) -> bool:
    """Mark the launch recorded at `at_ms` as settled: its query ran a trigger through (found no
    data to process, or completed a batch)."""
    root = local_root(checkpoint)
    if root is None:
        return False
    try:
        _append(root / LAUNCHES_FILE, {"settled": at_ms})
    except OSError as e:
        print(f"run: the launch ledger in {root} cannot be written ({e.strerror})", file=out)
        return False
    return True
