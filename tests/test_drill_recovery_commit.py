"""Which commit ends a failover's recovery (chaos/runner.py: DrillRun.launch_and_commit). A
failover's version shares the old version's checkpoint, and the old driver may still commit the
batch it had finished as the fault struck: a drill once put its "first batch" event at that
commit, 2.5 s after the fault, while its RTO (from the standby's lease) said 4.4 s. The recovery's
commit is the first one after a launch since the fault, read from the checkpoint's launch ledger
(written by dagger_runtime.launches.record, as every driver does) and its commit files."""

from __future__ import annotations

import os
import threading
import time
import types

from chaos.runner import DrillRun
from dagger_runtime import launches


class Versions:
    """The registry's one answer the method needs: a version's checkpoint."""

    def __init__(self, checkpoint):
        self.checkpoint = checkpoint

    def version(self, name, version):
        return types.SimpleNamespace(checkpoint=self.checkpoint, version=version)


def commit(root, batch: int, at: float) -> None:
    path = root / "commits" / str(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("v1\n{}\n")
    os.utime(path, (at, at))


def test_the_old_drivers_last_commit_is_not_the_recovery(tmp_path):
    fault = 1_800_000_000.0
    launches.record(str(tmp_path), now_ms=int((fault - 600) * 1000))  # the old driver
    commit(tmp_path, 0, fault - 30)
    commit(tmp_path, 1, fault + 2.5)  # the old driver's batch, finished as the fault struck
    launches.record(str(tmp_path), now_ms=int((fault + 3.0) * 1000))  # the standby takes the lease
    commit(tmp_path, 2, fault + 4.4)
    commit(tmp_path, 3, fault + 9.0)
    taken, first = DrillRun.launch_and_commit(Versions(str(tmp_path)), "d", 2, fault)
    assert (taken, first) == (fault + 3.0, fault + 4.4)


def test_no_launch_since_the_fault_is_no_recovery_yet(tmp_path):
    fault = 1_800_000_000.0
    launches.record(str(tmp_path), now_ms=int((fault - 600) * 1000))
    commit(tmp_path, 0, fault + 1.0)
    assert DrillRun.launch_and_commit(Versions(str(tmp_path)), "d", 2, fault) == (None, None)


def test_a_launch_that_has_not_committed_yet(tmp_path):
    fault = 1_800_000_000.0
    commit(tmp_path, 0, fault - 5)
    launches.record(str(tmp_path), now_ms=int((fault + 1.0) * 1000))
    assert DrillRun.launch_and_commit(Versions(str(tmp_path)), "d", 2, fault) == (fault + 1.0, None)


def test_without_a_ledger_any_commit_since(tmp_path):
    fault = 1_800_000_000.0
    commit(tmp_path, 0, fault - 5)
    commit(tmp_path, 1, fault + 7)
    assert DrillRun.launch_and_commit(Versions(str(tmp_path)), "d", 2, fault) == (fault, fault + 7)


def test_a_remote_checkpoint_is_not_read(tmp_path):
    assert DrillRun.launch_and_commit(Versions("gs://bucket/ck"), "d", 2, 0.0) == (None, None)


def test_a_commit_before_the_fault_was_in_effect_is_not_the_recovery(tmp_path):
    # a standby took the lease while the fault was still being injected (it began at F-20 and was
    # in effect at F) and committed at F-3: the recovery from the fault is its next commit, never
    # a negative time
    fault = 1_800_000_000.0
    launches.record(str(tmp_path), now_ms=int((fault - 600) * 1000))
    launches.record(str(tmp_path), now_ms=int((fault - 15) * 1000))
    commit(tmp_path, 0, fault - 3)
    commit(tmp_path, 1, fault + 2)
    found = DrillRun.launch_and_commit(Versions(str(tmp_path)), "d", 2, fault - 20, not_before=fault)
    assert found == (fault - 15, fault + 2)
    # without the floor, the commit during the injection is the one found
    assert DrillRun.launch_and_commit(Versions(str(tmp_path)), "d", 2, fault - 20) == (fault - 15, fault - 3)


def test_the_rto_target_note_waits_for_the_target_from_the_fault_in_effect():
    """A Kafka cluster's stop takes seconds (every broker, one by one): a run noted "rto target
    passed with no first batch yet" 16 s after the fault was in effect (target 30 s), then
    committed the first batch 17.5 s after it. The note waits for the target, counted as the RTO
    is."""
    in_effect = 1_800_000_000.0
    waited: list[float] = []
    notes: list[str] = []
    trigger = types.SimpleNamespace(name="primary lost")
    d = types.SimpleNamespace(playbook_name="surge-demand", first_batch_after=None)
    run = types.SimpleNamespace(
        book=types.SimpleNamespace(failover_fault=trigger, failover=types.SimpleNamespace(rto_target=30.0)),
        fault_times={"primary lost": in_effect},
        wait_until=waited.append,
        affected=lambda: [d],
        committed_since_fault=lambda d: False,
        event=lambda kind, text, at=None: notes.append(text),
    )
    DrillRun.do_expect_failover(run, step=None)
    assert waited == [in_effect + 30.0]
    assert notes == ["rto target passed with no first batch yet from surge-demand"]
    notes.clear()
    d.first_batch_after = in_effect + 17.5
    DrillRun.do_expect_failover(run, step=None)
    assert notes == []


def test_the_first_batch_waits_for_the_new_drivers_commit_not_its_counters(tmp_path):
    # a standby that took the lease shows the checkpoint's batches in its counters before its query
    # commits one of its own (a loaded CI lab: 44 s); the event is the commit, not the counters
    fault = time.time() - 5
    launches.record(str(tmp_path), now_ms=int((fault - 600) * 1000))
    commit(tmp_path, 0, fault - 30)
    launches.record(str(tmp_path), now_ms=int((fault + 0.5) * 1000))  # the standby takes the lease
    events = []
    run = types.SimpleNamespace(
        first_batch_of=lambda registry, name, version: (time.time(), 1.0),  # the counters say a batch
        book=types.SimpleNamespace(failover_fault=None),
        fault_began={},
        fault_times={},
        launch_and_commit=DrillRun.launch_and_commit,
        event=lambda kind, text, at: events.append((kind, at)),
    )
    d = types.SimpleNamespace(name="d", failover_version=2, failover_started=fault, playbook_name="p")
    committed_at = time.time() + 1.0
    later = threading.Timer(1.2, lambda: commit(tmp_path, 1, committed_at))
    later.start()
    DrillRun.wait_first_batch(run, d, Versions(str(tmp_path)))
    later.join()
    assert d.first_batch_after == events[0][1] == committed_at
