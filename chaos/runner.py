"""`drill run`: a playbook carried out on the lab, step by step as its plan says (chaos/plan.py),
ending in a report that judges it.

    run = DrillRun(book, LabAccess.of(lab_dir, port_base), out_root=RUNS_DIR, seed=7)
    report_json = run.execute()          # <out_root>/<drill>-<UTC time>-<id>/report.json

What a run does, in order: it checks the lab answers; deploys the playbook's daggers under names of
their own (`<name>-<run id>`, so nothing of an earlier run is resumed or overwritten), each
reading the feeders' topics from the drill's start; starts the feeders (every acknowledged
message in one ledger) and the sampler; injects each fault at its time, journalled so it is
undone whatever happens; fails the daggers over (at once for `mode: command`, by the watchdog
for `auto`); undoes the faults that recover; stops the traffic; waits for the daggers to write
what the feeders' messages close; and compares every window in the sink with the same window
computed from the ledger. The daggers are stopped at the end; the faults are rolled back even
when the run fails or is interrupted.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Callable

from lab import access

from .drill_run.common import (
    Abort,
    Deployed,
    LabAccess,
    _utc,
    lab_spec,
    produced_rate,
)
from .drill_run.failover import Failover
from .drill_run.preflight import Preflight
from .drill_run.report import Report
from .drill_run.steps import Steps
from .drill_run.verdict import Verdict
from .plan import Step, plan
from .playbook import Playbook
from .probes import Sampler

__all__ = ["Abort", "Deployed", "DrillRun", "LabAccess", "lab_spec", "produced_rate"]


class DrillRun(Preflight, Steps, Failover, Verdict, Report):
    """One run of a playbook on the lab (its parts: chaos/drill_run/)."""

    def __init__(
        self,
        book: Playbook,
        lab: LabAccess,
        *,
        out_root: str | Path,
        seed: int | None = None,
        progress: Callable[[str], None] | None = None,
        run_id: str | None = None,
        stop_others: bool = False,
    ):
        self.book, self.lab = book, lab
        self.stop_others = stop_others  # stop the daggers that hold the room the drill needs
        self._lab_lock = None  # the open lock file while this run holds the lab
        self.seed = seed if seed is not None else secrets.randbelow(2**31)
        self.run_id = run_id or secrets.token_hex(3)
        self.started = time.time()
        self.t0 = self.started  # the plan's clock: set again once the daggers run
        stamp = dt.datetime.fromtimestamp(self.started, dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.dir = Path(out_root) / f"{book.name}-{stamp}-{self.run_id}"
        self.progress = progress or (lambda line: None)
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self.steps: list[Step] = plan(book)
        self.deployed: dict[str, Deployed] = {}
        self.feeders: list = []
        self.stop_feeding = threading.Event()
        self.sampler = None
        self.watchdog = None
        self.faults_ctx = None
        self.injected: dict[str, Any] = {}  # fault name -> Fault
        self.fault_times: dict[str, float] = {}
        self.fault_began: dict[str, float] = {}  # when each fault's injection started
        self.rpo: dict[str, dict] = {}
        self.ledger = None
        self.abort_reason: str | None = None
        self.notes: list[str] = []
        self._threads: list[threading.Thread] = []  # failovers and fail-backs under way
        self._recovery_awaited = False
        self.late = 0.0  # how much later than planned the after phase started

    def registry(self):
        from dagger_runtime.lifecycle.registry import Registry

        return Registry(self.lab.registry_url)

    def _influx_login(self, influx: dict) -> tuple[str, str] | None:
        """The dagger's team's InfluxDB login, to read back what it wrote (the lab refuses anonymous reads)."""
        user = influx.get("username")
        return (user, access.influx_password(user, lab=self.lab.dir)) if user else None

    def _ensure_topic(self, bootstrap: str, topic: str) -> None:
        """A topic on the drill's cluster (the lab's defaults: 2 partitions, 3 replicas)."""
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.errors import TopicAlreadyExistsError

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="daggers-drill", **self.lab.login())
        try:
            if topic not in set(admin.list_topics()):
                try:
                    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3)])
                    self.event("note", f"created topic {topic}")
                except TopicAlreadyExistsError:
                    pass
        finally:
            admin.close()

    # -- the run's log ------------------------------------------------------------------------------
    def event(self, kind: str, text: str, at: float | None = None) -> None:
        at = time.time() if at is None else at
        with self._lock:
            self.events.append({"at": _utc(at), "kind": kind, "text": text})
        self.progress(f"{at - self.started:7.1f}s  {kind:<11} {text}")

    # -- the whole drill ----------------------------------------------------------------------------
    def execute(self) -> Path:
        from .faults import Faults

        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        (self.dir / "plan.json").write_text(json.dumps([s.to_dict() for s in self.steps], indent=1))
        self.progress(f"drill {self.book.name}: run {self.dir.name} (seed {self.seed})")
        try:
            self.preflight()
            with Faults(self.dir / "faults.json", self.lab.faults_lab()) as faults:
                self.faults_ctx = faults
                try:
                    self.follow_plan()
                except Abort as e:
                    self.abort_reason = str(e)
                    self.event("abort", str(e))
                finally:
                    self.stop_traffic()
            self.faults_ctx = None
        except Abort as e:
            self.abort_reason = self.abort_reason or str(e)
            self.event("abort", str(e))
        except BaseException as e:
            self.abort_reason = self.abort_reason or f"{type(e).__name__}: {e}"
            self.event("abort", self.abort_reason)
            self.write_report()
            self.cleanup()
            raise
        cases = self.verify() if self.abort_reason is None else []
        self.cleanup()
        return self.write_report(cases)

    # -- measurements -------------------------------------------------------------------------------
    def start_sampler(self) -> None:
        kafka = self.lab.kafka()
        mirror = next((n for n, c in kafka.items() if c.mirror_of and c.mirror_of.cluster == self.book.cluster), None)
        self.sampler = Sampler(
            registry_url=self.lab.registry_url,
            clusters_dir=self.lab.clusters_dir,
            kafka=kafka,
            primary=self.book.cluster,
            mirror=mirror,
            logins={n: self.lab.login(cluster=n) for n in kafka},
            topics=sorted({f.topic for f in self.book.feeders}),
            safeguards=self.book.safeguards,
            disk_path=str(self.lab.dir),
        )
        self.sampler.start()

    # -- the end ------------------------------------------------------------------------------------
    def stop_traffic(self) -> None:
        if self.stop_feeding.is_set():
            return
        self.stop_feeding.set()
        for t in self.feeders:
            t.join(timeout=180)
        if self.feeders:
            self.event("note", f"traffic stopped: {self.ledger.acked} acknowledged, {self.ledger.failed} failed")
            self.ledger.save(self.dir / "ledger.parquet")

    def cleanup(self) -> None:
        from dagger_runtime.lifecycle import operations

        for part in (self.watchdog, self.sampler):
            if part is not None:
                try:
                    part.stop()
                except Exception as e:  # noqa: BLE001 - the daggers are still stopped below
                    self.notes.append(f"{type(part).__name__} did not stop cleanly: {e}")
        registry = None
        try:
            registry = self.registry()
            for d in self.deployed.values():
                try:
                    operations.stop(registry, d.name, actor=f"drill {self.run_id}", clusters_dir=self.lab.clusters_dir)
                except Exception as e:  # noqa: BLE001 - a dagger left running is said, not hidden
                    self.notes.append(f"{d.name} not stopped: {e}")
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"daggers not stopped: {e}")
        finally:
            if registry is not None:
                registry.close()
            if self._lab_lock is not None:  # closing the file releases the flock
                self._lab_lock.close()
                self._lab_lock = None
