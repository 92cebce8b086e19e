"""The plan's steps carried out at their times: deploy, feed, inject, undo, the failover commands,
the checks; and what they read (the daggers' metrics, the RPO of a fault)."""

from __future__ import annotations

import os
import threading
import time

import yaml

from dagger_runtime.lease import ready_standby
from dagger_runtime.lifecycle.clusters import cluster_names, get_cluster
from dagger_runtime.lifecycle.state import Start
from lab import access

from ..plan import Step
from ..probes import behind, end_offsets, mirror_lag_seconds
from ..verify import ledger_fields
from .common import (
    FIRST_BATCH_WAIT_S,
    STANDBY_WARM_WAIT_S,
    Abort,
    Deployed,
    lab_spec,
)


class Steps:
    """The plan's steps carried out (a part of DrillRun)."""

    def follow_plan(self) -> None:
        # the daggers first: the plan's clock starts once each has committed a batch, so a fault
        # at 50s meets daggers that have been running, not ones still starting
        for step in self.steps:
            if step.action == "deploy":
                self.do_deploy(step)
        self.wait_ready()
        self.t0 = time.time()
        self.event("note", "the daggers run: the drill's clock starts")
        after = self.book.timeline.after
        for step in self.steps:
            if step.action == "deploy":
                continue
            if step.at >= after and not self._recovery_awaited:
                self.await_recovery()
            self.wait_until(self.t0 + self.late + step.at)
            getattr(self, "do_" + step.action.replace("-", "_"))(step)

    def wait_until(self, when: float) -> None:
        """Sleep to `when`, checking the safeguards every second."""
        while True:
            left = when - time.time()
            if left <= 0:
                return
            breach = self.sampler.breach() if self.sampler is not None else None
            if breach:
                raise Abort(f"safeguard: {breach}")
            time.sleep(min(1.0, left))

    def wait_ready(self) -> None:
        registry = self.registry()
        try:
            for d in self.deployed.values():
                deadline = time.time() + FIRST_BATCH_WAIT_S
                while True:
                    metrics = self.current_metrics(registry, d.name)
                    if metrics and metrics.get("dagger_batches_total", 0) > 0:
                        break
                    if time.time() > deadline:
                        raise Abort(
                            f"{d.playbook_name} committed no batch within {FIRST_BATCH_WAIT_S:.0f} s of "
                            f"its deploy; its driver's log: python -m dagger_runtime logs {d.name} "
                            f"--registry @{self.lab.dir / 'secrets' / 'registry.url'} "
                            f"--clusters {self.lab.clusters_dir} --stream stderr"
                        )
                    time.sleep(1.0)
            self.wait_standbys_warm(registry)
        finally:
            registry.close()

    def wait_standbys_warm(self, registry) -> None:
        """The drill's standbys, once their rehearsal has warmed their JVMs (a standby still
        rehearsing when the fault comes recovers like a cold driver): the wait is said, and one
        that does not get warm is noted, not waited for."""
        for d in self.deployed.values():
            standby, current = registry.standby(d.name), registry.get(d.name)
            if standby is None or current is None:
                continue
            since, deadline = time.time(), time.time() + STANDBY_WARM_WAIT_S
            said = ready_standby(current.checkpoint) or {}
            while said.get("version") != standby.version or said.get("warm") is False:
                if time.time() > deadline:
                    self.event(
                        "note",
                        f"{d.playbook_name}: its standby on {standby.cluster} was not warm within "
                        f"{STANDBY_WARM_WAIT_S:.0f} s; the drill goes on",
                    )
                    break
                time.sleep(1.0)
                said = ready_standby(current.checkpoint) or {}
            else:
                self.event(
                    "note",
                    f"{d.playbook_name}: its standby on {standby.cluster} is warm (rehearsed"
                    + (
                        f", {time.time() - since:.0f} s after its dagger's first batch)"
                        if said.get("warm")
                        else ": no rehearsal could run)"
                    ),
                )

    def current_metrics(self, registry, name: str, version: int | None = None) -> dict | None:
        """The dagger's current version's /metrics (of `version` only, when given)."""
        from dagger_runtime.lifecycle.operations import scrape

        current = registry.get(name)
        if not current or not current.metrics_port or (version is not None and current.version != version):
            return None
        cluster = get_cluster(current.cluster, self.lab.clusters_dir, team=current.team)
        return scrape(cluster.metrics_host, current.metrics_port, timeout=2.0)

    # -- steps --------------------------------------------------------------------------------------
    def do_deploy(self, step: Step) -> None:
        from dagger_runtime.lifecycle import operations

        d = next(d for d in self.book.deployments if step.what.startswith(d.name + " "))
        name = f"{d.name[:23]}-{self.run_id}"
        job = lab_spec(d, name=name, lab=self.lab, kafka_cluster=self.book.cluster)
        path = self.dir / "specs" / f"{name}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(job, sort_keys=False))
        os.environ.update(access.team_env(job["team"], lab=self.lab.dir))
        if job["sink"]["type"] == "influx":
            os.environ.update(access.team_sink_env(job["team"], lab=self.lab.dir, postgres=False))
        fo, trigger = self.book.failover, self.book.failover_fault
        standby = None
        if fo is not None and fo.standby and trigger is not None:
            if fo.kind == "spark" and d.cluster == trigger.cluster:
                standby = self.target()
            elif fo.kind == "kafka":  # the lab's other Spark cluster: the handoff's
                standby = next((n for n in cluster_names(self.lab.clusters_dir) if n != d.cluster), None)
        registry = self.registry()
        try:
            out = operations.deploy(
                registry,
                str(path),
                d.cluster,
                actor=f"drill {self.run_id}",
                clusters_dir=self.lab.clusters_dir,
                start=Start("timestamp", int(self.started * 1000)),
                standby=standby,
            )
        except Exception as e:  # noqa: BLE001 - DaggerError and what spark-submit raised
            raise Abort(f"deploying {d.name}: {e}") from None
        finally:
            registry.close()
        self.deployed[d.name] = Deployed(d.name, name, job["team"], d.cluster, path, job)
        self.event(
            "deploy",
            f"{d.name} as {name} on {d.cluster} ({out.data.get('submission_id')})"
            + (f", standby on {standby} ({out.data['standby']['submission_id']})" if standby else ""),
        )
        if self.sampler is None:
            self.start_sampler()
        self.sampler.watch(name, alias=d.name)

    def do_feed(self, step: Step) -> None:
        from loadtest.ledger import Ledger
        from protos import registry as protos

        from ..feeders import FeederThread

        if self.ledger is None:
            keys = [f.key for f in self.book.feeders if f.key]
            self.ledger = Ledger(
                [*ledger_fields(self.book.verify), *keys], meta={"drill": self.book.name, "run": self.run_id}
            )
        f = next(f for f in self.book.feeders if step.what.startswith(f.name + ":"))
        bootstrap = self.lab.kafka()[self.book.cluster].bootstrap_servers
        n = len(self.feeders)
        thread = FeederThread(
            f,
            protos.load(),
            bootstrap=bootstrap,
            login=self.lab.login(),
            ledger=self.ledger,
            t0=self.t0,
            seed=self.seed + n,
            index_base=n * 1_000_000_000,
            stop=self.stop_feeding,
        )
        thread.start()
        self.feeders.append(thread)
        self.event("note", f"feeder {f.name} started: {step.what.split(': ', 1)[1]}")

    def do_consume(self, step: Step) -> None:
        self.notes.append(f"consumers are not run by this runner yet ({step.what})")
        self.event("note", f"consumers not run: {step.what}")

    def do_safeguard(self, step: Step) -> None:
        pass  # the sampler checks them; wait_until aborts on a breach

    def do_check_before(self, step: Step) -> None:
        pass  # hypotheses are judged over their phase's samples at the end

    do_check_during = do_check_after = do_check_before

    def do_inject(self, step: Step) -> None:
        from ..faults import make_fault

        fault = next(f for f in self.book.faults if step.what.startswith(f.name + ":"))
        self.measure_rpo(fault)
        made = make_fault(
            fault.kind,
            self.lab.faults_lab(),
            target=fault.cluster,
            ids=list(fault.instances) or None,
            failure_percentage=fault.percentage if not fault.instances else None,
            seed=self.seed,
            downtime=fault.downtime,
            instance_recovery=fault.recovers,
        )
        try:
            self.faults_ctx.inject(made)
        except Exception as e:  # noqa: BLE001
            raise Abort(f"injecting {fault.name}: {e}") from None
        self.injected[fault.name] = made
        self.fault_times[fault.name] = made.injected_at or time.time()
        self.fault_began[fault.name] = made.started_at or self.fault_times[fault.name]
        self.event("fault", f"{fault.name}: {made.label}", at=self.fault_times[fault.name])
        fo = self.book.failover
        if fo is not None and fo.mode == "auto" and self.book.failover_fault is fault and self.watchdog is None:
            self.start_watchdog()

    def do_failover_command(self, step: Step) -> None:
        fo = self.book.failover
        for d in self.affected():
            thread = threading.Thread(
                target=self.fail_over, args=(d, fo.kind, self.target()), daemon=True, name=f"failover-{d.name}"
            )
            thread.start()
            self._threads.append(thread)

    def do_fail_back(self, step: Step) -> None:
        fo, trigger = self.book.failover, self.book.failover_fault
        for d in self.affected():
            thread = threading.Thread(
                target=self.fail_back, args=(d, fo.kind, trigger.cluster), daemon=True, name=f"fail-back-{d.name}"
            )
            thread.start()
            self._threads.append(thread)

    def do_expect_failover(self, step: Step) -> None:
        # the target counts from the fault in effect, as the RTO does; stopping every broker can
        # take seconds past the fault's planned time
        trigger = self.book.failover_fault
        in_effect = self.fault_times.get(trigger.name) if trigger is not None else None
        if in_effect is not None:
            self.wait_until(in_effect + self.book.failover.rto_target)
        late = [
            d.playbook_name
            for d in self.affected()
            if d.first_batch_after is None and not self.committed_since_fault(d)
        ]
        if late:
            self.event("note", f"rto target passed with no first batch yet from {', '.join(late)}")

    def do_undo(self, step: Step) -> None:
        fault = next(f for f in self.book.faults if step.what.startswith(f.name + ":"))
        made = self.injected.get(fault.name)
        if made is None:
            return
        problems = self.faults_ctx.undo(made)
        self.event(
            "undo", f"{fault.name}: {made.label}" + (f" ({'; '.join(problems)})" if problems else ""), at=made.undone_at
        )

    do_rollback = do_undo

    def do_stop_traffic(self, step: Step) -> None:
        self.stop_traffic()

    def do_verify(self, step: Step) -> None:
        pass  # after the faults' rollback: execute() calls verify()

    # -- failover -----------------------------------------------------------------------------------
    def target(self) -> str:
        fo = self.book.failover
        if fo.to:
            return fo.to
        if fo.kind == "kafka":
            kafka = self.lab.kafka()
            return next(n for n, c in kafka.items() if c.mirror_of and c.mirror_of.cluster == self.book.cluster)

        trigger = self.book.failover_fault
        return next(n for n in cluster_names(self.lab.clusters_dir) if n != trigger.cluster)

    def affected(self) -> list[Deployed]:
        fo, trigger = self.book.failover, self.book.failover_fault
        if fo is None or trigger is None:
            return []
        if fo.kind == "kafka":
            return list(self.deployed.values())  # every dagger reads the drill's Kafka cluster
        return [d for d in self.deployed.values() if d.cluster == trigger.cluster]

    def measure_rpo(self, fault) -> None:
        """What the mirror lacks when a Kafka cluster it copies is lost: the messages (and seconds)
        at risk, each recovered or lost as the data verdict then shows."""
        if fault.system != "kafka":
            return

        kafka = self.lab.kafka()
        mirror = next((n for n, c in kafka.items() if c.mirror_of and c.mirror_of.cluster == fault.cluster), None)
        if mirror is None:
            return
        prefix = kafka[mirror].mirror_of.topic_prefix
        topics = sorted({f.topic for f in self.book.feeders})
        try:
            primary = end_offsets(kafka[fault.cluster].bootstrap_servers, self.lab.login(cluster=fault.cluster), topics)
            copied = end_offsets(
                kafka[mirror].bootstrap_servers, self.lab.login(cluster=mirror), [prefix + t for t in topics]
            )
            seconds = mirror_lag_seconds(
                kafka[fault.cluster].bootstrap_servers,
                self.lab.login(cluster=fault.cluster),
                kafka[mirror].bootstrap_servers,
                self.lab.login(cluster=mirror),
                topics,
                prefix,
            )
        except Exception as e:  # noqa: BLE001
            self.notes.append(f"rpo not measured: {e}")
            return
        if primary is None or copied is None:
            return
        lacking = behind(primary, copied, prefix)
        self.rpo[fault.name] = {"messages": lacking, "seconds": seconds}
        self.event(
            "note",
            f"at {fault.name}: {lacking} message(s) on {fault.cluster} not yet on {mirror}"
            + (f" ({seconds:.1f} s behind)" if seconds is not None else ""),
        )
