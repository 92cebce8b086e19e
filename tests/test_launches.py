"""The launch ledger a driver keeps in its checkpoint, and the crash loop it shows to the driver's
metrics, `dagger status`, the registry and the watchdog. Checkpoints are folders laid out as
Spark writes them (commits/N); the counts are worked out by hand from each test's launches."""

from __future__ import annotations

import io
import json
import os
import time

import pytest

from dagger_runtime import launches
from dagger_runtime.lifecycle.state import crash_loop


def commit(root, batch: int) -> None:
    (root / "commits").mkdir(parents=True, exist_ok=True)
    (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')


def test_launches_without_a_commit_add_up_and_a_commit_or_a_settled_launch_ends_the_count(tmp_path):
    checkpoint = str(tmp_path / "ck")
    assert launches.record(checkpoint, now_ms=1_000) == (1_000, 1)  # a first launch, starting
    assert launches.record(checkpoint, now_ms=2_000) == (2_000, 2)  # the first failed before a batch
    assert crash_loop(checkpoint) is None
    assert launches.record(checkpoint, now_ms=3_000) == (3_000, 3)
    looping = crash_loop(checkpoint)
    assert looping == (
        "3 driver launches in a row without a committed batch since 1970-01-01T00:00:01Z (no batch committed yet)"
    )
    # the third launch gets through: it commits batch 0; the next launch starts from there
    commit(tmp_path / "ck", 0)
    assert crash_loop(checkpoint) is None
    assert launches.record(checkpoint, now_ms=4_000) == (4_000, 1)
    assert launches.record(checkpoint, now_ms=5_000) == (5_000, 2)
    # that one settled (its query waited for data): a restart after it is no crash loop's
    assert launches.settle(checkpoint, 5_000)
    assert launches.record(checkpoint, now_ms=6_000) == (6_000, 1)
    assert launches.record(checkpoint, now_ms=7_000) == (7_000, 2)
    assert launches.record(checkpoint, now_ms=8_000) == (8_000, 3)
    assert crash_loop(checkpoint).endswith("since 1970-01-01T00:00:06Z (the last committed batch is 0)")
    launches.settle(checkpoint, 123)  # a launch the ledger does not hold: nothing settles
    assert launches.record(checkpoint, now_ms=9_000) == (9_000, 4)


def test_the_ledger_keeps_its_last_launches_and_skips_what_is_not_one(tmp_path):
    root = tmp_path / "ck"
    for i in range(1, 200):
        launches.record(str(root), now_ms=i)
        launches.settle(str(root), i)
    lines = (root / launches.LAUNCHES_FILE).read_text().splitlines()
    # cut once it reaches 200 lines, to its last 50 launches with their settle lines
    kept = [json.loads(line)["at_ms"] for line in lines if '"at_ms"' in line]
    assert len(lines) < 200 and kept == list(range(kept[0], 200)) and 50 <= len(kept) < 100
    assert json.loads(lines[0]) == {"at_ms": kept[0], "committed": -1}
    with open(root / launches.LAUNCHES_FILE, "a") as f:
        f.write(
            '{"at_ms": 1e17, "committed": -1}\n{"at_ms": true, "committed": -1}\n'
            '{"settled": 7}\n[1, 2]\n{"at_ms": 99, "comm'
        )  # not launches; a driver killed mid-write
    assert launches.record(str(root), now_ms=300) == (300, 1)  # the last launch before settled
    assert [e["at_ms"] for e in launches.parse((root / launches.LAUNCHES_FILE).read_text())][-2:] == [199, 300]


def test_a_ledger_that_cannot_be_written_is_said_and_never_stops_the_driver(tmp_path, capsys):
    blocked = tmp_path / "ck"
    blocked.mkdir()
    (blocked / launches.LAUNCHES_FILE).mkdir()  # where the file should be: a folder
    out = io.StringIO()
    assert launches.record(str(blocked), out=out) is None
    assert launches.settle(str(blocked), 1, out=out) is False
    assert "cannot be written" in out.getvalue()


@pytest.mark.parametrize("checkpoint", ["gs://bucket/ck/surge/v1", "s3a://b/ck"])
def test_a_remote_checkpoint_keeps_no_ledger(checkpoint):
    assert launches.record(checkpoint) is None
    assert crash_loop(checkpoint) is None


def test_a_ledger_behind_a_teams_link_is_not_read_as_root(tmp_path):
    """The deploy tooling reads it as root: a team's link to another file is not followed."""
    team = tmp_path / "team"
    team.mkdir()
    os.chown(team, 65534, 65534)
    secret = tmp_path / "secret"
    secret.write_text("".join(json.dumps({"at_ms": i, "committed": -1}) + "\n" for i in range(5)))
    (team / launches.LAUNCHES_FILE).symlink_to(secret)
    assert crash_loop(str(team)) is None
    # positive control: the same lines in the ledger itself are a crash loop
    (team / launches.LAUNCHES_FILE).unlink()
    (team / launches.LAUNCHES_FILE).write_text(secret.read_text())
    assert crash_loop(str(team)).startswith("5 driver launches in a row")


def test_a_ledger_a_team_made_hostile_neither_blocks_nor_breaks_the_tooling(tmp_path):
    """Root reads each dagger's ledger for `dagger status`, the watchdog and drills: a FIFO, a folder,
    a huge file or impossible times in the team's folder give no verdict, at once."""
    for kind in ("fifo", "folder", "huge", "times"):
        root = tmp_path / kind
        root.mkdir()
        ledger = root / launches.LAUNCHES_FILE
        if kind == "fifo":
            os.mkfifo(ledger)
        elif kind == "folder":
            ledger.mkdir()
        elif kind == "huge":  # 3 launches in its last lines, after 8 MB of anything
            ledger.write_text(
                "x" * 8_000_000 + "\n" + "".join(json.dumps({"at_ms": i, "committed": -1}) + "\n" for i in (1, 2, 3))
            )
        else:
            ledger.write_text(
                "".join(json.dumps({"at_ms": t, "committed": -1}) + "\n" for t in (10**17, 2**70, -5, 1.5, True))
            )
        started = time.monotonic()
        found = crash_loop(str(root))
        assert time.monotonic() - started < 2, kind
        # the huge file's last launches are read (its tail only); the others give nothing
        assert (found is not None) == (kind == "huge"), (kind, found)
