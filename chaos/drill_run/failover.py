"""A dagger moved to the other cluster and back, and the recovery timed from the checkpoint: which
commit ends it, a standby's lease, the RTO's steps."""

from __future__ import annotations

import threading
import time

from dagger_runtime import launches
from dagger_runtime.lifecycle.watchdog import Watchdog

from .common import (
    FIRST_BATCH_WAIT_S,
    RECOVERY_GRACE_S,
    Abort,
    Deployed,
)


class Failover:
    """The moves between clusters and the recovery they are timed by (a part of DrillRun)."""

    def await_recovery(self) -> None:
        """The "after" phase judges the steady state regained, so it starts once the failover (and
        fail-back) has run: a slow machine's recovery past the settle time moves it, and everything
        after it, later (said in the run's events) instead of judging a dagger still restarting."""
        self._recovery_awaited = True
        planned = self.t0 + self.book.timeline.after
        self.wait_until(planned)
        deadline = planned + RECOVERY_GRACE_S
        while (still := self.recovering()) and time.time() < deadline:
            breach = self.sampler.breach() if self.sampler is not None else None
            if breach:
                raise Abort(f"safeguard: {breach}")
            time.sleep(0.5)
        if still:
            self.event(
                "note",
                f"{', '.join(still)} still under way {RECOVERY_GRACE_S:.0f} s past the settle time: "
                "the after phase starts anyway",
            )
        self.late = max(0.0, time.time() - planned)
        if self.late >= 1.0:
            self.notes.append(
                f"the recovery ran {self.late:.0f} s past the settle time: the after phase and "
                "the verdict moved as much later"
            )
            self.event("note", f"recovery done {self.late:.0f} s past the settle time: the after phase starts now")

    def recovering(self) -> list[str]:
        """The failovers and fail-backs under way: the runner's threads, and a watchdog's failover
        that has started and has neither run (a first batch) nor failed."""
        busy = [t.name for t in self._threads if t.is_alive()]
        busy += [
            f"failover-{d.name}"
            for d in self.deployed.values()
            if d.failover_started is not None
            and d.first_batch_after is None
            and d.failover_error is None
            and f"failover-{d.name}" not in busy
        ]
        return busy

    def move(self, d: Deployed, kind: str, to: str, registry):
        """One `dagger failover` of `d` to `to`, retried while the old driver is still fenced."""
        from dagger_runtime.lifecycle import operations

        deadline = time.time() + 120
        while True:
            try:
                if kind == "kafka":
                    return operations.failover_kafka(
                        registry, d.name, to, actor=f"drill {self.run_id}", clusters_dir=self.lab.clusters_dir
                    )
                return operations.failover_spark(
                    registry, d.name, to, actor=f"drill {self.run_id}", clusters_dir=self.lab.clusters_dir
                )
            except operations.DriverStillAnswers:  # the fence clears when the old driver dies
                if time.time() > deadline:
                    raise
                time.sleep(1.0)

    def fail_over(self, d: Deployed, kind: str, to: str) -> None:
        d.failover_started = time.time()
        self.event("failover", f"{d.playbook_name}: to {kind} cluster {to}")
        registry = self.registry()
        try:
            out = self.move(d, kind, to, registry)
            d.failover_done, d.failover_version = time.time(), out.data.get("version")
            d.failover_timings = out.data.get("timings") or {}
            d.outcome = out.lines
            self.event(
                "failover",
                f"{d.playbook_name}: version {d.failover_version} submitted ({out.lines[0] if out.lines else ''})",
            )
            self.wait_first_batch(d, registry)
        except Exception as e:  # noqa: BLE001 - the report says it
            d.failover_error = f"{type(e).__name__}: {e}"
            self.event("failover", f"{d.playbook_name}: failed: {d.failover_error}")
        finally:
            registry.close()

    def fail_back(self, d: Deployed, kind: str, to: str) -> None:
        """Back to the cluster it lost, once the failover's version runs (its first batch)."""
        deadline = time.time() + FIRST_BATCH_WAIT_S
        while d.first_batch_after is None and d.failover_error is None and time.time() < deadline:
            time.sleep(0.5)
        if d.first_batch_after is None:
            d.fail_back_error = "the failover never ran, so there was nothing to move back"
            self.event("fail-back", f"{d.playbook_name}: not moved back: {d.fail_back_error}")
            return
        d.fail_back_started = time.time()
        self.event("fail-back", f"{d.playbook_name}: back to {kind} cluster {to}")
        registry = self.registry()
        try:
            out = self.move(d, kind, to, registry)
            d.fail_back_version = out.data.get("version")
            self.event(
                "fail-back",
                f"{d.playbook_name}: version {d.fail_back_version} submitted ({out.lines[0] if out.lines else ''})",
            )
            at, _ = self.first_batch_of(registry, d.name, d.fail_back_version)
            if at is None:
                raise TimeoutError(f"no batch within {FIRST_BATCH_WAIT_S:.0f} s of the fail-back")
            d.fail_back_first_batch = at
            self.event(
                "first-batch", f"{d.playbook_name}: version {d.fail_back_version} committed its first batch on {to}"
            )
        except Exception as e:  # noqa: BLE001 - the report says it
            d.fail_back_error = f"{type(e).__name__}: {e}"
            self.event("fail-back", f"{d.playbook_name}: failed: {d.fail_back_error}")
        finally:
            registry.close()

    def first_batch_of(self, registry, name: str, version: int | None) -> tuple[float | None, float | None]:
        """When `version` of the dagger committed its first batch, and how long that batch took."""
        deadline = time.time() + FIRST_BATCH_WAIT_S
        while time.time() < deadline:
            metrics = self.current_metrics(registry, name, version)
            if metrics and metrics.get("dagger_batches_total", 0) > 0:
                at = time.time()
                # the batch's progress (its duration) is reported just after its commit
                for _ in range(10):
                    if metrics and metrics.get("dagger_batch_duration_seconds"):
                        return at, metrics["dagger_batch_duration_seconds"]
                    time.sleep(0.3)
                    metrics = self.current_metrics(registry, name, version)
                return at, None
            time.sleep(0.5)
        return None, None

    def wait_first_batch(self, d: Deployed, registry) -> None:
        at, seconds = self.first_batch_of(registry, d.name, d.failover_version)
        if at is None:
            d.failover_error = d.failover_error or f"no batch within {FIRST_BATCH_WAIT_S:.0f} s of the failover"
            return
        # when it was committed (the commit file), not when it was seen: a failover command that
        # waits for it (a handoff) returns later
        # counted from the fault's start, as the RTO is: a standby may take the lease before the
        # watchdog sees the loss
        trigger = self.book.failover_fault
        began = self.fault_began.get(trigger.name, self.fault_times.get(trigger.name)) if trigger is not None else None
        in_effect = self.fault_times.get(trigger.name) if trigger is not None else None
        since = began if began is not None else d.failover_started
        taken, committed = self.launch_and_commit(registry, d.name, d.failover_version, since, in_effect)
        # the new driver's counters may show the checkpoint's batches before it commits one of its
        # own (a standby that took the lease and has yet to start its query): a driver launched
        # since the fault with no commit yet is waited for, its first commit is the recovery
        deadline = time.time() + FIRST_BATCH_WAIT_S
        while taken is not None and committed is None and time.time() < deadline:
            time.sleep(0.5)
            at = time.time()
            taken, committed = self.launch_and_commit(registry, d.name, d.failover_version, since, in_effect)
        at = committed if committed is not None and committed <= at else at
        d.first_batch_after, d.first_batch_seconds = at, seconds
        self.event("first-batch", f"{d.playbook_name}: version {d.failover_version} committed its first batch", at=at)

    def committed_since_fault(self, d: Deployed) -> bool:
        """Whether the dagger's latest version has committed a batch since the fault (a failover
        command still running, such as a handoff's, has not said so yet)."""
        trigger = self.book.failover_fault
        since = self.fault_times.get(trigger.name) if trigger is not None else None
        registry = self.registry()
        try:
            current = registry.get(d.name)
            return (
                since is not None
                and current is not None
                and self.first_commit_at(registry, d.name, current.version, since) is not None
            )
        finally:
            registry.close()

    @staticmethod
    def launch_and_commit(
        registry, name: str, version: int | None, since: float | None, not_before: float | None = None
    ) -> tuple[float | None, float | None]:
        """When the first driver launched at or after `since` took the version's checkpoint (its
        launch ledger) and when that checkpoint's first commit after it was made (the commit
        files); (None, None) when the checkpoint is not local or has neither. A failover's
        version often shares the old one's checkpoint, and the old driver may still commit the
        batch it had finished as the fault struck: that commit is not the recovery's, so a commit
        counts only after a launch since the fault. Without a ledger, any commit since `since`.
        A commit before `not_before` (the fault in effect) does not count either: a standby may
        take the lease while the fault is still being injected, and a recovery timed from the
        fault is never negative."""
        found = registry.version(name, version) if version is not None else None
        root = launches.local_root(found.checkpoint) if found is not None else None
        if root is None:
            return None, None
        try:
            times = launches.commit_times(root)
        except OSError:
            return None, None
        try:
            ledger = launches.parse((root / launches.LAUNCHES_FILE).read_text(errors="replace"))
        except OSError:
            ledger = None
        if ledger is None:
            taken = since
        else:
            taken = next((e["at_ms"] / 1000 for e in ledger if since is None or e["at_ms"] / 1000 >= since), None)
            if taken is None:
                return None, None
        floor = max((t for t in (taken, not_before) if t is not None), default=None)
        return taken, next((t for t in times if floor is None or t >= floor), None)

    def first_commit_at(
        self, registry, name: str, version: int | None, since: float | None, not_before: float | None = None
    ) -> float | None:
        """The time of the version's first commit by a driver launched since `since` (None: not
        local, or none yet)."""
        return self.launch_and_commit(registry, name, version, since, not_before)[1]

    def start_watchdog(self) -> None:
        fo = self.book.failover
        by_name = {d.name: d for d in self.affected()}

        def on_event(kind: str, name: str, text: str, at: float) -> None:
            d = by_name[name]
            if kind == "detected":
                d.failover_started = at
            elif kind == "done":
                d.failover_done = at
                d.failover_version = self.watchdog.watched[name].version
                d.failover_timings = self.watchdog.watched[name].timings
                thread = threading.Thread(target=self._first_batch, args=(d,), daemon=True)
                thread.start()
                self._threads.append(thread)
            elif kind == "failed":
                d.failover_error = text
            self.event("failover", f"{d.playbook_name}: watchdog: {text}", at=at)

        self.watchdog = Watchdog(
            list(by_name),
            registry_url=self.lab.registry_url,
            clusters_dir=self.lab.clusters_dir,
            kafka_to=self.target() if fo.kind == "kafka" else None,
            spark_to=self.target() if fo.kind == "spark" else None,
            actor=f"drill {self.run_id} watchdog",
            on_event=on_event,
        )
        self.watchdog.start()
        self.event("note", f"watchdog watching {', '.join(by_name)}")

    def _first_batch(self, d: Deployed) -> None:
        registry = self.registry()
        try:
            self.wait_first_batch(d, registry)
        finally:
            registry.close()

    def standby_steps(self, d: Deployed, t_fault: float) -> tuple[float, list[dict]] | None:
        """A standby's recovery, from its checkpoint: when it took the lease (its launch in the
        ledger) and when its first batch was committed (the commit file's time). The failover
        command only records the move in the registry, so it is not on the way."""
        registry = self.registry()
        try:
            # the failover's version (a fail-back may have replaced it since); from when the fault
            # began: a standby may take the lease while the fault's stop is still under way (its
            # driver died first); the recovery is counted from the fault in effect
            version = (
                d.failover_version if d.failover_version is not None else getattr(registry.get(d.name), "version", None)
            )
            began = self.fault_began.get(self.book.failover_fault.name, t_fault)
            taken, first = self.launch_and_commit(registry, d.name, version, began, not_before=t_fault)
        finally:
            registry.close()
        if taken is not None and d.first_batch_after is not None and d.first_batch_after >= max(taken, t_fault):
            # Spark keeps the last 100 commit files: a fast dagger's first batch after the failover
            # may be gone from the log by the report; the time read when it was made stands
            first = d.first_batch_after if first is None else min(first, d.first_batch_after)
        if taken is None or first is None:
            return None
        taken = max(taken, t_fault)
        if first < taken:
            return None
        batch = min(d.first_batch_seconds or 0.0, first - taken)
        timings = d.failover_timings or {}
        if "handoff" in timings and d.failover_started is not None:
            # a Kafka failover's: detected, the old driver stopped (the offsets it reached read),
            # then the standby handed the new version takes its new checkpoint
            detect = max(0.0, d.failover_started - t_fault)
            before = [
                {"step": "detect", "seconds": round(detect, 2)},
                *self.move_steps(
                    timings.get("check", 0.0) + timings.get("stop", 0.0),
                    {k: timings[k] for k in ("check", "stop") if k in timings},
                ),
            ]
            lead = [
                *before,
                {
                    "step": "standby takes the new checkpoint",
                    "seconds": round(max(0.0, taken - t_fault - sum(s["seconds"] for s in before)), 2),
                },
            ]
        else:
            lead = [{"step": "standby takes the lease", "seconds": round(taken - t_fault, 2)}]
        return round(first - t_fault, 2), [
            *lead,
            {"step": "query start", "seconds": round(first - taken - batch, 2)},
            {"step": "first batch", "seconds": round(batch, 2)},
        ]

    @staticmethod
    def move_steps(total: float, timings: dict) -> list[dict]:
        """The failover command's part of the recovery, split as the operation timed it: the spec
        and environment checked, the old driver stopped, the new one submitted; what it does not
        account for (retries while the old driver was fenced, the registry) as its own step."""
        names = {"check": "check", "stop": "stop the old driver", "submit": "submit"}
        steps = [{"step": names[k], "seconds": round(float(timings[k]), 2)} for k in names if k in timings]
        rest = round(total - sum(s["seconds"] for s in steps), 2)
        if not steps:
            return [{"step": "stop, check and submit", "seconds": round(total, 2)}]
        if rest >= 0.01:
            steps.append({"step": "retries and bookkeeping", "seconds": rest})
        elif rest < 0:  # rounding: the operation's own clock ran inside this one
            steps[-1]["seconds"] = round(max(0.0, steps[-1]["seconds"] + rest), 2)
        return steps
