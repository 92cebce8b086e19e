"""The checkpoint's lease and fence (dagger_runtime/lease.py): one writer per checkpoint, a standby
that takes over the moment the writer's process dies, and drivers of a replaced version that never
write. Real processes and real flock: the holder is another Python process, killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dagger_runtime import lease
from dagger_runtime.errors import DaggerError

ROOT = Path(__file__).resolve().parents[1]

HOLD = """
import sys, time
from dagger_runtime import lease
held = lease.take(sys.argv[1], version=int(sys.argv[2]), master="spark://blue:7077")
print("held", flush=True)
time.sleep(600)
"""


def _holder_process(checkpoint: Path, version: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(checkpoint), str(version)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_the_first_driver_takes_the_lease_at_once_and_says_who_it_is(tmp_path):
    checkpoint = tmp_path / "cp"
    taken = lease.take(str(checkpoint), version=3, master="spark://blue:7077")
    try:
        assert taken.waited_s < 1.0
        assert lease.held(str(checkpoint)) is True
        found = lease.holder(str(checkpoint))
        assert found["pid"] == os.getpid() and found["version"] == 3 and found["master"] == "spark://blue:7077"
        assert (checkpoint / lease.LEASE_FILE).stat().st_mode & 0o777 == 0o600
    finally:
        taken.release()
    assert lease.held(str(checkpoint)) is False


def test_a_standby_waits_warm_while_the_driver_lives_and_takes_over_when_it_is_killed(tmp_path):
    checkpoint = tmp_path / "cp"
    proc = _holder_process(checkpoint)
    warmed, result = [], {}

    def standby():
        result["lease"] = lease.take(
            str(checkpoint),
            version=1,
            master="spark://green:7077",
            warm=lambda: warmed.append(time.monotonic()),
            out=open(os.devnull, "w"),
        )
        result["at"] = time.monotonic()

    thread = threading.Thread(target=standby, daemon=True)
    try:
        thread.start()
        time.sleep(1.5)
        assert "lease" not in result, "the standby took a lease a live driver holds"
        assert len(warmed) == 1, "a standby gets ready (its Spark session) before it waits"
        ready = lease.ready_standby(str(checkpoint))
        assert ready["master"] == "spark://green:7077" and ready["pid"] == os.getpid(), ready
        assert lease.holder(str(checkpoint))["master"] == "spark://blue:7077"
        killed = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        thread.join(timeout=5)
        assert "lease" in result, "the standby did not take over after the driver was killed"
        assert result["at"] - killed < 1.5
        assert lease.holder(str(checkpoint))["master"] == "spark://green:7077"
        assert lease.held(str(checkpoint)) is True
    finally:
        proc.kill()
        if "lease" in result:
            result["lease"].release()


def test_a_fenced_version_never_runs_and_a_running_one_learns_it_is_fenced(tmp_path):
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    running = lease.take(str(checkpoint), version=1, master="a")
    assert running.fenced() is None
    assert lease.fence(str(checkpoint), 2)
    assert running.fenced() == 2
    running.release()
    with pytest.raises(lease.Fenced, match="version 1 .* takes version 2 or later"):
        lease.take(str(checkpoint), version=1, master="a")
    assert lease.held(str(checkpoint)) is False, "a fenced driver keeps no lease"
    later = lease.take(str(checkpoint), version=2, master="b")
    assert later.fenced() is None
    later.release()


def test_the_fence_replaces_a_planted_link_and_never_writes_through_it(tmp_path):
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (checkpoint / lease.FENCE_FILE).symlink_to(victim)
    assert lease.fence(str(checkpoint), 7)
    assert victim.read_text() == "keep\n"
    assert not (checkpoint / lease.FENCE_FILE).is_symlink()
    assert lease.read_fence(checkpoint) == 7
    # a planted lease link is refused, not followed
    (checkpoint / lease.LEASE_FILE).symlink_to(victim)
    with pytest.raises(DaggerError, match="must be a regular file .*not a link"):
        lease.take(str(checkpoint), version=7, master="a")
    assert victim.read_text() == "keep\n"
    assert lease.holder(str(checkpoint)) is None


def test_a_standby_lets_its_versions_first_driver_take_the_lease_first(tmp_path):
    checkpoint = tmp_path / "cp"
    started = time.monotonic()
    waiting = lease.take(str(checkpoint), version=4, master="green", standby=True, first_wait_s=1.0)
    assert time.monotonic() - started >= 1.0, "with no first driver, a standby waits first_wait_s before it competes"
    waiting.release()
    # an older version's holder line does not count as this version's first driver
    (checkpoint / lease.LEASE_FILE).write_text(json.dumps({"version": 3}))
    started = time.monotonic()
    lease.take(str(checkpoint), version=4, master="green", standby=True, first_wait_s=1.0).release()
    assert time.monotonic() - started >= 1.0
    (checkpoint / lease.LEASE_FILE).write_text(json.dumps({"version": 4, "master": "blue"}))
    started = time.monotonic()
    lease.take(str(checkpoint), version=4, master="green", standby=True, first_wait_s=30.0).release()
    assert time.monotonic() - started < 1.0


def test_remote_checkpoints_have_no_lease_and_cannot_be_fenced():
    assert lease.take("gs://bucket/daggers/x/v1", version=1, master="a") is None
    assert lease.fence("gs://bucket/daggers/x/v1", 2) is False
    assert lease.held("gs://bucket/daggers/x/v1") is None


def test_the_tooling_fences_no_other_teams_checkpoint_through_a_link_in_the_teams_own_folders(tmp_path):
    """The deploy tooling may run as root; a team owns its folders below the cluster's checkpoint
    root and could make its dagger's checkpoint a link to another team's: a stop there would
    then fence (end) the other team's drivers."""
    root, other = tmp_path / "checkpoints" / "allocations", tmp_path / "checkpoints" / "api-health" / "x" / "v1"
    mine = root / "surge" / "v1"
    mine.mkdir(parents=True)
    other.mkdir(parents=True)
    assert lease.fence(str(mine), 2, within=str(root))
    assert lease.read_fence(mine) == 2
    # the dagger's folder made a link to the other dagger's, or its version's to the other version
    for planted, target in ((root / "surge", other.parent), (mine, other)):
        backup = planted.with_name(planted.name + ".real")
        planted.rename(backup)
        planted.symlink_to(target)
        with pytest.raises(DaggerError, match="is not a folder .*a link in the team's part of the path"):
            lease.fence(str(mine), 3, within=str(root))
        assert lease.read_fence(other) is None, "the other team's checkpoint was fenced"
        planted.unlink()
        backup.rename(planted)
    assert lease.read_fence(mine) == 2
    # drivers not started yet: the folders are made (the team's, 0700) and fenced before they run
    fresh = root / "queued" / "v1"
    assert lease.fence(str(fresh), 4, within=str(root))
    assert lease.read_fence(fresh) == 4 and fresh.stat().st_mode & 0o777 == 0o700
    assert fresh.stat().st_uid == root.stat().st_uid
    # a fence never goes down: an operation that finishes late cannot let an old version back
    assert lease.fence(str(fresh), 3, within=str(root)) and lease.read_fence(fresh) == 4
    with pytest.raises(DaggerError, match="is not below"):
        lease.fence(str(tmp_path / "elsewhere" / "v1"), 9, within=str(root))


ORDER = {
    "version": 2,
    "spec": "/specs/surge.v2.yaml",
    "checkpoint": "/cp/surge/v2",
    "starting": {"data_stream": {"startingTimestamp": "1700000000000"}},
    "emit_after_ms": 1700000060000,
}


def test_a_fenced_standby_never_takes_the_old_checkpoint_and_follows_the_handoff(tmp_path, monkeypatch):
    """A Kafka failover: the old driver is fenced and lets the lease go; its standby must not take
    it (the tooling waits for the lease to be free), and runs what the handoff says instead."""
    checkpoint = tmp_path / "cp"
    proc = _holder_process(checkpoint)
    result = {}

    def standby():
        try:
            lease.take(
                str(checkpoint),
                version=1,
                master="green",
                standby=True,
                warm=lambda: None,
                out=open(os.devnull, "w"),
                poll_s=0.05,
            )
        except BaseException as e:  # noqa: BLE001 - the thread's outcome is the test's
            result["raised"] = e

    thread = threading.Thread(target=standby)
    thread.start()
    try:
        time.sleep(0.5)
        assert lease.fence(str(checkpoint), 2)
        proc.kill()
        proc.wait()
        for _ in range(20):  # the old driver is gone; the standby, fenced, keeps off
            time.sleep(0.05)
            assert lease.held(str(checkpoint)) is False
        assert thread.is_alive() and "raised" not in result
        # an order for its own version or older is no handoff
        assert lease.hand_off(str(checkpoint), {**ORDER, "version": 1})
        time.sleep(0.3)
        assert thread.is_alive()
        assert lease.hand_off(str(checkpoint), ORDER)
        thread.join(5)
        assert not thread.is_alive()
        assert isinstance(result["raised"], lease.HandedOff) and result["raised"].order == ORDER
        assert lease.held(str(checkpoint)) is False
    finally:
        proc.kill()
        thread.join(5)


def test_a_promoted_standby_started_again_follows_the_handoff_before_warming(tmp_path):
    """--supervise starts a promoted standby with its first command line (a standby of the old
    version): it goes straight to the version it was handed, without warming the old one."""
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    lease.fence(str(checkpoint), 2)
    lease.hand_off(str(checkpoint), ORDER)
    warmed = []
    with pytest.raises(lease.HandedOff) as raised:
        lease.take(str(checkpoint), version=1, master="green", standby=True, warm=lambda: warmed.append(1))
    assert raised.value.order == ORDER and warmed == []
    # a driver that is no standby is fenced, as before
    with pytest.raises(lease.Fenced):
        lease.take(str(checkpoint), version=1, master="blue")


def test_a_fenced_standby_without_a_handoff_ends(tmp_path, monkeypatch):
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    lease.fence(str(checkpoint), 2)
    monkeypatch.setattr(lease, "HANDOFF_WAIT_S", 0.5)
    started = time.monotonic()
    with pytest.raises(lease.Fenced, match="no handoff came"):
        lease.take(str(checkpoint), version=1, master="green", standby=True, poll_s=0.05)
    assert 0.5 <= time.monotonic() - started < 3


def test_the_handoff_is_written_like_the_fence_and_read_only_as_a_small_regular_file(tmp_path):
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (checkpoint / lease.HANDOFF_FILE).symlink_to(victim)
    assert lease.hand_off(str(checkpoint), ORDER)
    assert victim.read_text() == "keep\n" and not (checkpoint / lease.HANDOFF_FILE).is_symlink()
    assert lease.read_handoff(checkpoint, 1) == ORDER
    assert lease.read_handoff(checkpoint, 2) is None  # not later than the reader's version
    (checkpoint / lease.HANDOFF_FILE).write_text(json.dumps({**ORDER, "pad": "x" * 10000}))
    assert lease.read_handoff(checkpoint, 1) is None  # too big to be the tooling's
    (checkpoint / lease.HANDOFF_FILE).unlink()
    (checkpoint / lease.HANDOFF_FILE).symlink_to(victim)
    assert lease.read_handoff(checkpoint, 1) is None
    with pytest.raises(DaggerError, match="too long"):
        lease.hand_off(str(checkpoint), {**ORDER, "spec": "x" * 5000})


def test_a_cancelled_handoff_ends_the_standby_that_follows_it_late(tmp_path):
    """A failover that gave up on its standby cancels the order before it submits a new driver:
    a standby that comes to it late ends instead of running beside that driver."""
    checkpoint = tmp_path / "cp"
    checkpoint.mkdir()
    lease.fence(str(checkpoint), 2)
    lease.hand_off(str(checkpoint), {"version": 2, "cancelled": True})
    with pytest.raises(lease.Fenced, match="cancelled"):
        lease.take(str(checkpoint), version=1, master="green", standby=True, poll_s=0.05)
