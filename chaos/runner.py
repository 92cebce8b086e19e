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
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from .plan import Step, plan
from .playbook import REPO, Playbook

# how long the verdict waits for the sink to hold every window the fed messages close
VERIFY_WAIT_S = 150.0
# a dagger's first batch after a deploy, at most
FIRST_BATCH_WAIT_S = 240.0
STANDBY_WARM_WAIT_S = 240.0  # how long the drill waits for its standbys to be warm before its clock starts
RECOVERY_GRACE_S = 240.0  # how long past the settle time the after phase waits for a failover


class Abort(Exception):
    """The drill stops before it can judge: the report's verdict is `aborted`, with this reason."""


def _utc(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LabAccess:
    """What the runner reaches on a lab: its folder, ports, Spark and Kafka clusters, registry."""

    dir: Path
    port_base: int

    @classmethod
    def of(cls, lab_dir: str | Path, port_base: int | None = None) -> "LabAccess":
        base = port_base if port_base is not None else int(os.environ.get("DAGGER_LAB_PORT_BASE") or 19000)
        return cls(Path(lab_dir).resolve(), base)

    @property
    def clusters_dir(self) -> str:
        return str(self.dir / "clusters")

    @property
    def registry_url(self) -> str:
        path = self.dir / "secrets" / "registry.url"
        if not path.is_file():
            raise Abort(f"the lab at {self.dir} has no registry ({path}): is it up? (python -m lab up)")
        return path.read_text().strip()

    def faults_lab(self):
        from .faults import Lab

        return Lab(self.dir, self.port_base)

    def kafka(self) -> dict:
        from dagger_runtime.lifecycle.failover import kafka_clusters

        return kafka_clusters(self.clusters_dir)

    def login(self, principal: str = "admin", cluster: str = "primary") -> dict:
        from lab import access

        return access.kafka_python(principal, cluster, lab=self.dir)

    def sink_address(self, kind: str) -> str:
        """host:port of the lab's influxdb or postgresql."""
        for c in self.faults_lab().components():
            if c.kind == kind:
                return c.address
        raise Abort(f"the lab has no {kind}")


# -- the daggers, pointed at the lab ------------------------------------------------------------


def lab_spec(deployment, *, name: str, lab: LabAccess, kafka_cluster: str) -> dict:
    """The deployment's spec (a YAML dagger spec), renamed and pointed at the lab: its streams read
    `kafka_cluster` as the spec's team, its sink writes to the lab's servers under the run's name.
    Built as data and written with a YAML writer."""
    from lab import access

    job = yaml.safe_load(Path(deployment.spec).read_text())
    if not isinstance(job, dict):
        raise Abort(f"{deployment.spec}: the runner deploys YAML dagger specs only")
    team = job.get("team")
    if not team:
        raise Abort(f"{deployment.spec}: a drill's dagger needs a team (its Kafka login on the lab)")
    bootstrap = lab.kafka()[kafka_cluster].bootstrap_servers
    job["name"] = name
    job["dead_letter_topic"] = f"{team}-{name}-dlq"
    if getattr(deployment, "watermark_delay", None):
        job["watermark_delay"] = f"{int(deployment.watermark_delay)}s"
    for stream in job["streams"]:
        stream.setdefault("kafka", {}).update(
            bootstrap_servers=bootstrap,
            auto_offset_reset="latest",
            group_id=access.consumer_group(team, name),
            client=access.team_client(team),
        )
    sink = job.get("sink", {}).get("type")
    if sink == "influx":  # the team's own database, as the team's own InfluxDB user
        job["sink"] = {
            "type": "influx",
            "influx": access.team_influx_sink(team, f"http://{lab.sink_address('influxdb')}", name.replace("-", "_")),
        }
    elif sink == "kafka":
        job["sink"]["kafka"].update(brokers=bootstrap, topic=f"{team}-{name}", client=access.team_client(team))
    elif sink != "log":
        raise Abort(f"{deployment.spec}: the runner verifies influx and kafka sinks; {sink} is not supported yet")
    return job


@dataclass
class Deployed:
    """One of the drill's daggers, as deployed: the playbook's name and the registry's."""

    playbook_name: str
    name: str
    team: str
    cluster: str  # where it was deployed (a failover's target is in the registry)
    spec_path: Path
    job: dict
    failover_started: float | None = None
    failover_done: float | None = None
    failover_error: str | None = None
    failover_version: int | None = None
    failover_timings: dict = field(default_factory=dict)  # check, stop, submit (seconds)
    first_batch_after: float | None = None
    first_batch_seconds: float | None = None  # how long that batch itself took
    outcome: list[str] = field(default_factory=list)
    # the move back (failover.fail_back): started, the first batch of the version it submitted
    fail_back_started: float | None = None
    fail_back_version: int | None = None
    fail_back_first_batch: float | None = None
    fail_back_error: str | None = None


class DrillRun:
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
        from lab import access

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

    def preflight(self) -> None:
        """The lab must answer before anything is touched."""
        from .faults import FaultError

        try:
            components = self.lab.faults_lab().components()
        except FaultError as e:
            raise Abort(str(e)) from None
        down = [c.name for c in components if not c.answers(2.0)]
        if down:
            raise Abort(
                f"the lab is not healthy before the drill ({', '.join(down)} not answering): python -m lab status"
            )
        self.hold_the_lab()
        self.lab.registry_url  # noqa: B018 - raises Abort when the lab has none
        kafka = self.lab.kafka()
        if self.book.cluster not in kafka:
            raise Abort(
                f"Kafka cluster {self.book.cluster} is not in the lab's catalogue ({self.lab.clusters_dir}/kafka)"
            )
        # the daggers look their topics up when they start: the feeders' must exist by then, and so
        # must the others a dagger reads (surge-demand reads GO_CAR-booking-log too, fed or not: a
        # missing one fails its start)
        topics = {f.topic for f in self.book.feeders} | {t for d in self.book.deployments for t in d.reads}
        for topic in sorted(topics):
            self._ensure_topic(kafka[self.book.cluster].bootstrap_servers, topic)
        self.check_room()

    def hold_the_lab(self) -> None:
        """One drill at a time on a lab: two would take each other's cores, feed each other's topics
        and stop each other's daggers. The lock goes with the process (flock), a crashed run leaves
        none behind."""
        import fcntl

        path = self.lab.dir / ".drill.lock"
        try:
            lock = open(path, "a+")  # noqa: SIM115 - held until cleanup()
        except OSError as e:
            raise Abort(f"the lab at {self.lab.dir} cannot be held for the drill: {e.strerror}") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            holder = lock.read().strip()[:200] or "another run"
            lock.close()
            raise Abort(f"the lab is held by another drill ({holder}); wait for it to end") from None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{self.book.name} run {self.run_id}, pid {os.getpid()}\n")
        lock.flush()
        self._lab_lock = lock

    def check_room(self) -> None:
        """Each Spark cluster the drill uses (where its daggers start, and where a Spark failover
        moves them) has the cores and memory for all of them now, or the drill refuses at once,
        naming the daggers that hold it (--stop-others stops them first)."""
        from dagger_runtime.errors import DaggerError
        from dagger_runtime.lifecycle import operations
        from dagger_runtime.lifecycle import spark as spark_api
        from dagger_runtime.lifecycle.clusters import get_cluster

        needs: dict[tuple[str, str | None], tuple[object, list[tuple[str, int]]]] = {}
        for d in self.book.deployments:
            job = yaml.safe_load(Path(d.spec).read_text())
            names = {d.cluster} | (
                {self.target()} if self.book.failover is not None and self.book.failover.kind == "spark" else set()
            )
            for name in sorted(names):
                try:
                    cluster = get_cluster(name, self.lab.clusters_dir, team=job["team"])
                except DaggerError as e:
                    raise Abort(str(e)) from None
                # a cluster every team shares holds the daggers of all of them
                needs.setdefault((cluster.name, cluster.team), (cluster, []))[1].append(
                    (d.name, int(job.get("parallelism") or 1))
                )
        for (name, team), (cluster, daggers) in sorted(needs.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            state = spark_api.master_state(cluster)
            left = spark_api.unplaced(list(state.workers_free), [p for _, p in daggers])
            if not left:
                continue
            registry = self.registry()
            try:
                holders = [x.name for x in registry.list(name) if x.running and (team is None or x.team == team)]
                if self.stop_others and holders:
                    for holder in holders:
                        operations.stop(
                            registry, holder, actor=f"drill {self.run_id}", clusters_dir=self.lab.clusters_dir
                        )
                        self.event("note", f"stopped {holder} on {name} for room (--stop-others)")
                    # the master frees a stopped application's cores a moment later
                    deadline = time.monotonic() + 30
                    while left and time.monotonic() < deadline:
                        time.sleep(1)
                        state = spark_api.master_state(cluster)
                        left = spark_api.unplaced(list(state.workers_free), [p for _, p in daggers])
                    if not left:
                        continue
            finally:
                registry.close()
            free = spark_api.describe_free(state.workers_free)
            short = ", ".join(f"{daggers[i][0]} (parallelism {daggers[i][1]})" for i in left)
            whose = f" of team {team}" if team else ""
            held = (
                ""
                if not holders
                else f" (stopped: {', '.join(holders)})"
                if self.stop_others
                else f"; held by {', '.join(holders)}: `dagger stop {' '.join(holders)}`, or run the drill with "
                "--stop-others"
            )
            raise Abort(
                f"Spark cluster {name}{whose} has no room for the drill's {short} now (each needs a core "
                f"and {spark_api.DRIVER_MEMORY_MB} MB for its driver, its parallelism in cores and "
                f"{spark_api.EXECUTOR_MEMORY_MB} MB for its executor; the workers have {free} free)"
                + (held or "; nothing of the registry runs there")
            )

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

    def current_metrics(self, registry, name: str, version: int | None = None) -> dict | None:
        """The dagger's current version's /metrics (of `version` only, when given)."""
        from dagger_runtime.lifecycle.clusters import get_cluster
        from dagger_runtime.lifecycle.operations import scrape

        current = registry.get(name)
        if not current or not current.metrics_port or (version is not None and current.version != version):
            return None
        cluster = get_cluster(current.cluster, self.lab.clusters_dir, team=current.team)
        return scrape(cluster.metrics_host, current.metrics_port, timeout=2.0)

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
        from dagger_runtime.lease import ready_standby

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

    # -- steps --------------------------------------------------------------------------------------
    def do_deploy(self, step: Step) -> None:
        from dagger_runtime.lifecycle import operations
        from dagger_runtime.lifecycle.state import Start
        from lab import access

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
                from dagger_runtime.lifecycle.clusters import cluster_names

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

        from .feeders import FeederThread
        from .verify import ledger_fields

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
        from .faults import make_fault

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
        from dagger_runtime.lifecycle.clusters import cluster_names

        trigger = self.book.failover_fault
        return next(n for n in cluster_names(self.lab.clusters_dir) if n != trigger.cluster)

    def affected(self) -> list[Deployed]:
        fo, trigger = self.book.failover, self.book.failover_fault
        if fo is None or trigger is None:
            return []
        if fo.kind == "kafka":
            return list(self.deployed.values())  # every dagger reads the drill's Kafka cluster
        return [d for d in self.deployed.values() if d.cluster == trigger.cluster]

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
        committed = self.first_commit_at(
            registry, d.name, d.failover_version, began if began is not None else d.failover_started
        )
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
        registry, name: str, version: int | None, since: float | None
    ) -> tuple[float | None, float | None]:
        """When the first driver launched at or after `since` took the version's checkpoint (its
        launch ledger) and when that checkpoint's first commit after it was made (the commit
        files); (None, None) when the checkpoint is not local or has neither. A failover's
        version often shares the old one's checkpoint, and the old driver may still commit the
        batch it had finished as the fault struck: that commit is not the recovery's, so a commit
        counts only after a launch since the fault. Without a ledger, any commit since `since`."""
        from dagger_runtime import launches

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
        return taken, next((t for t in times if taken is None or t >= taken), None)

    def first_commit_at(self, registry, name: str, version: int | None, since: float | None) -> float | None:
        """The time of the version's first commit by a driver launched since `since` (None: not
        local, or none yet)."""
        return self.launch_and_commit(registry, name, version, since)[1]

    def start_watchdog(self) -> None:
        from dagger_runtime.lifecycle.watchdog import Watchdog

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

    # -- measurements -------------------------------------------------------------------------------
    def start_sampler(self) -> None:
        from .probes import Sampler

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

    def measure_rpo(self, fault) -> None:
        """What the mirror lacks when a Kafka cluster it copies is lost: the messages (and seconds)
        at risk, each recovered or lost as the data verdict then shows."""
        if fault.system != "kafka":
            return
        from .probes import behind, end_offsets, mirror_lag_seconds

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

    def verify(self) -> list[dict]:
        """Every verify entry's windows: the sink against the ledger, once the fed messages' last
        windows had time to close."""
        from .verify import compare, expected, read_influx

        for t in self._threads:
            t.join(timeout=FIRST_BATCH_WAIT_S)
        cases = []
        frame = self.ledger.frame() if self.ledger is not None else None
        for v in self.book.verify:
            d = self.deployed.get(v.dagger)
            dep = next(x for x in self.book.deployments if x.name == v.dagger)
            if d is None or frame is None:
                continue
            topics = [t for t in dep.reads]
            fed = frame[frame["topic"].isin(topics)]
            if fed.empty:
                self.notes.append(f"{v.dagger}: nothing was fed to the topics it reads")
                continue
            if d.job["sink"]["type"] != "influx":
                self.notes.append(
                    f"{v.dagger}: its {d.job['sink']['type']} sink is not read back by the runner yet "
                    "(influx is); no data verdict"
                )
                continue
            delay_ms = _watermark_delay_ms(d.spec_path)
            closed_by = int(fed["event_time_ms"].max()) - delay_ms
            since = int(fed["event_time_ms"].min())
            want = expected(fed, v, closed_by_ms=closed_by)
            influx = d.job["sink"]["influx"]
            deadline = time.time() + VERIFY_WAIT_S
            self.event("note", f"verifying {v.dagger}: {len(want)} window(s) expected")
            while True:
                got = read_influx(
                    influx["url"],
                    influx["db_name"],
                    influx["measurement_name"],
                    v,
                    since_ms=since - int(v.window * 1000),
                    until_ms=closed_by,
                    auth=self._influx_login(influx),
                )
                result = compare(want, got, v, since_ms=since - int(v.window * 1000), until_ms=closed_by)
                if (result.windows_missing == 0 and result.windows_wrong == 0) or time.time() > deadline:
                    break
                time.sleep(3.0)
            if result.windows_missing or result.windows_wrong:
                self.explain_late(d, v, fed, closed_by, result)
            cases.append(self.case(v, d, result))
        return cases

    def explain_late(self, d: Deployed, v, fed, closed_by: int, result) -> None:
        """Which of the missing or wrong windows late messages fell in: the dagger set them aside
        on its dead-letter topic (on each Kafka cluster it read), matched to the ledger by key."""
        from .probes import late_letters
        from .verify import expected

        keys: set[bytes] = set()
        for name, cluster in self.lab.kafka().items():
            keys |= late_letters(cluster.bootstrap_servers, self.lab.login(cluster=name), d.job["dead_letter_topic"])
        if not keys:
            # none read back: none set aside, or none reachable (unknown, not 0)
            result.windows_late = (
                0 if not (d.job and self.sampler and self.sampler.late_rows(d.playbook_name, "late_messages")) else None
            )
            return
        late = fed[fed["key"].isin(list(keys))]
        result.explain_late(expected(late, v, closed_by_ms=closed_by), v)
        self.event(
            "note",
            f"{v.dagger}: {len(late)} fed message(s) were set aside as late; "
            f"{result.windows_late} of the missing or wrong windows hold some",
        )

    def case(self, v, d: Deployed, result) -> dict:
        fo, trigger = self.book.failover, self.book.failover_fault
        case = {"name": v.dagger, "dagger": d.name, **result.as_case_fields()}
        late = self.sampler.late_rows(d.playbook_name) if self.sampler is not None else None
        if late is not None:
            case["late_rows_dropped"] = late
        late = self.sampler.late_rows(d.playbook_name, "late_messages") if self.sampler is not None else None
        if late is not None:
            case["late_messages"] = late  # set aside to the dead letters, behind the watermark
        if fo is not None and trigger is not None and d in self.affected():
            t_fault = self.fault_times.get(trigger.name)
            case["failover"] = fo.kind
            case["rto_target_seconds"] = fo.rto_target
            if t_fault is not None and d.first_batch_after is not None:
                case["rto_seconds"] = round(d.first_batch_after - t_fault, 2)
                steps = []
                taken = (
                    self.standby_steps(d, t_fault) if {"takeover", "handoff"} & set(d.failover_timings or {}) else None
                )
                if taken is not None:
                    case["rto_seconds"], steps = taken
                    case["standby"] = True
                elif d.failover_started is not None:
                    steps.append({"step": "detect", "seconds": round(max(0.0, d.failover_started - t_fault), 2)})
                if taken is None and d.failover_started is not None and d.failover_done is not None:
                    steps += self.move_steps(d.failover_done - d.failover_started, d.failover_timings)
                if taken is None and d.failover_done is not None:
                    # the driver's start (JVM, Python, Spark session, executors, the query's plan)
                    # and its first batch, as far as the batch's own duration tells them apart
                    batch = min(d.first_batch_seconds or 0.0, d.first_batch_after - d.failover_done)
                    steps.append(
                        {"step": "driver start", "seconds": round(d.first_batch_after - d.failover_done - batch, 2)}
                    )
                    steps.append({"step": "first batch", "seconds": round(batch, 2)})
                case["rto_steps"] = steps
            rpo = self.rpo.get(trigger.name)
            if rpo:
                case["rpo_messages"] = rpo["messages"]
                if rpo["seconds"] is not None:
                    case["rpo_seconds"] = round(rpo["seconds"], 2)
            if fo.fail_back is not None:
                case["fail_back_to"] = trigger.cluster
                if d.fail_back_started is not None and d.fail_back_first_batch is not None:
                    case["fail_back_seconds"] = round(d.fail_back_first_batch - d.fail_back_started, 2)
        lost = case["windows_missing"] or case["windows_wrong"]
        rto_ok = case.get("rto_seconds") is not None or "failover" not in case
        if "rto_seconds" in case and case.get("rto_target_seconds") is not None:
            rto_ok = case["rto_seconds"] <= case["rto_target_seconds"]
        back_ok = "fail_back_to" not in case or "fail_back_seconds" in case
        case["verdict"] = "pass" if not lost and rto_ok and back_ok and not d.failover_error else "fail"
        return case

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
            taken, first = self.launch_and_commit(registry, d.name, version, began)
        finally:
            registry.close()
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

    def write_report(self, cases: list[dict] | None = None) -> Path:
        from . import history
        from .probes import evaluate
        from .report_html import write_html
        from .report_model import dump_report, parse_report

        cases = cases or []
        ended = time.time()
        t = self.book.timeline
        t0 = self.t0
        phases = {
            "before": (t0 + t.warmup, t0 + t.first_fault),
            "during": (t0 + t.first_fault, t0 + t.last_end),
            "after": (t0 + self.late + t.after, min(ended, t0 + self.late + t.end)),
        }
        hypotheses = evaluate(self.book.steady_state, self.sampler, phases) if self.sampler is not None else []
        faults = []
        for name, made in self.injected.items():
            faults.append(
                {
                    "name": name,
                    "kind": made.kind,
                    "target": made.label,
                    "injected_at": _utc(made.injected_at or made.started_at or self.fault_times[name]),
                    "undone_at": _utc(made.undone_at) if made.undone_at else None,
                    "undo_ok": made.state == "undone" and not made.unhealthy,
                    "error": "; ".join(made.errors + made.unhealthy) or None,
                }
            )
        reasons = []
        if self.abort_reason:
            reasons.append(self.abort_reason)
        for c in cases:
            if c["verdict"] != "pass":
                reasons.append(
                    f"{c['name']}: {c['windows_missing']} window(s) missing, {c['windows_wrong']} wrong"
                    + (
                        f" (the dagger dropped at least {c['late_rows_dropped']} row(s) that came behind "
                        f"its watermark: its watermark delay did not hold the backlog)"
                        if c.get("late_rows_dropped") and c["windows_missing"]
                        else ""
                    )
                    + (
                        f" ({c.get('windows_late', '?')} of them hold messages that came behind its "
                        f"watermark and were set aside to its dead-letter topic as late ({c['late_messages']} "
                        f"in all): its watermark delay did not hold the backlog)"
                        if c.get("late_messages") and (c["windows_missing"] or c["windows_wrong"])
                        else ""
                    )
                    + (
                        f", rto {c['rto_seconds']:g} s over {c['rto_target_seconds']:g} s"
                        if c.get("rto_seconds") is not None
                        and c.get("rto_target_seconds") is not None
                        and c["rto_seconds"] > c["rto_target_seconds"]
                        else ""
                    )
                    + (
                        f", failover: {self.deployed[c['name']].failover_error}"
                        if self.deployed[c["name"]].failover_error
                        else ""
                    )
                    + (
                        ""
                        if c.get("rto_seconds") is not None or not c.get("failover")
                        else ", no first batch after the failover"
                    )
                    + (
                        ""
                        if not c.get("fail_back_to") or c.get("fail_back_seconds") is not None
                        else f", not back on {c['fail_back_to']}: "
                        f"{self.deployed[c['name']].fail_back_error or 'no first batch there'}"
                    )
                )
        reasons += [
            f"hypothesis {h['name']} ({h['phase']}): {'not measured' if h['value'] is None else h['value']}"
            for h in hypotheses
            if h["ok"] is not True
        ]
        if self.sampler is not None:  # in a crash loop once the faults are undone and the daggers moved
            reasons += [
                f"{name}: crash loop: {why}" for name, why in sorted(self.sampler.crash_loops(*phases["after"]).items())
            ]
        reasons += [f"fault {f['name']} not undone: {f['error'] or 'unknown'}" for f in faults if not f["undo_ok"]]
        if not cases and not self.abort_reason:
            reasons.append("no case was verified")
        verdict = "aborted" if self.abort_reason else ("pass" if not reasons else "fail")
        produced = {
            "messages": self.ledger.acked if self.ledger else 0,
            "by_topic": self.ledger.counts_by_topic() if self.ledger else {},
            "failed": self.ledger.failed if self.ledger else 0,
        }
        timeline = self.sampler.timeline() if self.sampler is not None else {}
        if timeline.get("t") and self.ledger is not None:
            timeline["throughput"] = produced_rate(self.ledger.frame(), timeline["t"])
        data = {
            "schema": 1,
            "drill": {
                "name": self.book.name,
                "description": self.book.description,
                "playbook": self.book.source,
                "type": self.book.type or (self.book.faults[0].system if self.book.faults else "none"),
                "blast_radius": self.book.blast_radius or self.book.cluster,
            },
            "run": {
                "id": self.run_id,
                "started_at": _utc(self.started),
                "ended_at": _utc(max(ended, time.time())),
                "host": socket.gethostname(),
                "git_commit": _git_commit(),
                "seed": self.seed,
            },
            "verdict": verdict,
            "verdict_reasons": reasons + self.notes if verdict != "pass" else self.notes,
            "hypotheses": hypotheses,
            "faults": faults,
            "events": self.events,
            "timeline": timeline,
            "cases": cases,
            "produced": produced,
        }
        path = self.dir / "report.json"
        report = parse_report(json.loads(json.dumps(data)), path)
        path.write_text(json.dumps(dump_report(report), indent=1))
        write_html(report, self.dir / "report.html")
        history.append(self.dir.parent, report, path)
        return path


def produced_rate(frame, times: list[float]) -> list[float | None]:
    """Messages a second the feeders had acknowledged, per sample interval (by their Kafka
    time, i.e. when they were sent: a message buffered through an outage counts when it was sent)."""
    import numpy as np

    sent = np.sort(frame["timestamp_ms"].dropna().to_numpy(dtype="float64") / 1000.0)
    out: list[float | None] = [None]
    for a, b in zip(times, times[1:]):
        n = np.searchsorted(sent, b, side="right") - np.searchsorted(sent, a, side="right")
        out.append(round(float(n) / (b - a), 3))
    return out


def _watermark_delay_ms(spec_path: Path) -> int:
    from dagger_runtime.config import load_job

    return int(load_job(spec_path).watermark_delay_ms)


def _git_commit() -> str | None:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        return None
