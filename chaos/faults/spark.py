"""Spark standalone faults: a master or workers killed, a dagger's driver killed, a cluster down.

Health after undo is the master's own view (its `/json/`): the master ALIVE, each target worker
listed ALIVE (by its web UI address: a restarted worker registers under a new id, and the master
lists the old one DEAD), a killed driver RUNNING again in a new process.
"""

from __future__ import annotations

import signal
import time

from dagger_runtime.errors import DaggerError

from . import procs
from .base import Fault, kill_programs, start_programs, stop_programs
from .errors import FaultError
from .targets import Component, Lab, SparkPart, choose, spark_parts

DRIVER_MAIN = "org.apache.spark.deploy.worker.DriverWrapper"


def master_status(part: SparkPart, timeout_s: float = 5.0) -> dict | None:
    """The master's /json/, or None when it does not answer (or answers without JSON: a UI still
    starting). The UI takes the platform's token (the cluster's UI key), as `dagger status` sends."""
    from dagger_runtime.lifecycle.spark import master_json

    try:
        return master_json(part.definition, timeout_s)
    except (OSError, ValueError, DaggerError):  # http_client.Error is an OSError
        return None


def worker_states(status: dict, worker: Component) -> list[str]:
    """The states the master lists for the worker serving its UI at `worker.address`, newest last."""
    return [
        w.get("state", "?")
        for w in status.get("workers", [])
        if w.get("webuiaddress", "").rstrip("/").removeprefix("http://") == worker.address
    ]


def cluster_health(part: SparkPart, workers: list[Component]) -> list[str]:
    status = master_status(part)
    if status is None:
        return [f"the master of {part.label} does not answer at {part.definition.web_ui}/json/"]
    problems = []
    if status.get("status") != "ALIVE":
        problems.append(f"the master of {part.label} is {status.get('status')}, not ALIVE")
    for worker in workers:
        states = worker_states(status, worker)
        if "ALIVE" not in states:
            problems.append(
                f"the master of {part.label} lists worker {worker.address} as "
                f"{'/'.join(states) or 'unknown'}, not ALIVE"
            )
    return problems


def active_drivers(lab: Lab, cluster: str) -> list[str] | None:
    """Every active driver of the name's clusters (None when no master answers)."""
    statuses = [master_status(part) for part in spark_parts(lab, cluster)]
    if all(status is None for status in statuses):
        return None
    return sorted(d["id"] for status in statuses if status for d in status.get("activedrivers", []))


class SparkFault(Fault):
    def inject(self) -> "SparkFault":
        # what the daggers went through is part of the fault's record: the lab's masters keep no
        # recovery state, so a restarted master has its workers kill the drivers it never knew
        self.params["drivers_before"] = active_drivers(self.lab, self.params["cluster"])
        return super().inject()

    def health(self) -> list[str]:
        cluster = self.params["cluster"]
        chosen = self.params.get("workers")
        problems = [
            problem
            for part in spark_parts(self.lab, cluster)
            for problem in cluster_health(part, [w for w in part.workers if chosen is None or w.program in chosen])
        ]
        if not problems:
            self.params["drivers_after"] = active_drivers(self.lab, cluster)
        return problems

    def describe(self) -> str:
        text = super().describe()
        before, after = self.params.get("drivers_before"), self.params.get("drivers_after")
        if before is not None:
            text += f"\n  drivers on {self.params['cluster']}: before {', '.join(before) or 'none'}; after " + (
                "-" if after is None else ", ".join(after) or "none"
            )
        return text

    def _restore(self) -> None:
        masters = {part.master.program for part in spark_parts(self.lab, self.params["cluster"])}
        first = [p for p in self.affected if p in masters]
        start_programs(self, [first, [p for p in self.affected if p not in first]])


def _cluster(target: str | None, kind: str) -> str:
    if not target:
        raise FaultError(f"{kind}: name the Spark cluster (target), e.g. blue")
    return target


class MasterKill(SparkFault):
    kind = "master-kill"

    @classmethod
    def prepare(cls, lab: Lab, *, target, ids, failure_percentage, seed, **settings) -> "MasterKill":
        if ids or failure_percentage is not None:
            raise FaultError(
                "master-kill hits the cluster's masters (one per team's cluster in it): no ids, no failure_percentage"
            )
        cluster = _cluster(target, cls.kind)
        masters = [part.master.program for part in spark_parts(lab, cluster)]
        # healthy again means each master with all its workers registered
        return cls(
            lab,
            programs=masters,
            label=f"Spark {cluster} master{'s' if len(masters) > 1 else ''}",
            params={"cluster": cluster},
            **settings,
        )

    def _inject(self) -> None:
        kill_programs(self, self.programs, whole_group=False)


class WorkerKill(SparkFault):
    kind = "worker-kill"

    @classmethod
    def prepare(cls, lab: Lab, *, target, ids, failure_percentage, seed, **settings) -> "WorkerKill":
        cluster = _cluster(target, cls.kind)
        workers = [w for part in spark_parts(lab, cluster) for w in part.workers]
        by_program = {w.program: w for w in workers}
        if ids and failure_percentage is not None:
            raise FaultError("name the workers or give a failure_percentage, not both")
        if ids:
            # a worker by its program or its address
            named = {w.address: w.program for w in workers} | {p: p for p in by_program}
            unknown = [i for i in ids if str(i) not in named]
            if unknown:
                raise FaultError(f"{cluster} has no worker {unknown[0]}; its workers: {', '.join(by_program)}")
            chosen = sorted({named[str(i)] for i in ids})
            selection = {"ids": chosen}
        elif failure_percentage is not None:
            chosen = choose(sorted(by_program), failure_percentage, seed)
            selection = {"failure_percentage": failure_percentage, "seed": seed, "of": sorted(by_program)}
        else:  # every worker of the name (the lab: one per team's cluster)
            chosen, selection = sorted(by_program), {"all": True}
        return cls(
            lab,
            programs=chosen,
            label=f"Spark {cluster} worker{'s' if len(chosen) > 1 else ''} "
            + ", ".join(by_program[p].address for p in chosen),
            params={"cluster": cluster, "workers": chosen},
            selection=selection,
            **settings,
        )

    def _inject(self) -> None:
        # the worker's process group holds its executors and the drivers it runs: they die with it,
        # as on a lost machine (alone they would exit anyway, on losing their worker)
        kill_programs(self, self.programs, whole_group=True)


class SparkClusterDown(SparkFault):
    kind = "spark-cluster-down"

    @classmethod
    def prepare(cls, lab: Lab, *, target, ids, failure_percentage, seed, **settings) -> "SparkClusterDown":
        if ids or failure_percentage is not None:
            raise FaultError("spark-cluster-down takes the master and every worker: no ids, no failure_percentage")
        cluster = _cluster(target, cls.kind)
        parts = spark_parts(lab, cluster)
        return cls(
            lab,
            programs=[w.program for part in parts for w in part.workers] + [part.master.program for part in parts],
            label=f"Spark cluster {cluster}",
            params={"cluster": cluster},
            **settings,
        )

    def _inject(self) -> None:
        stop_programs(self, self.programs)


class DriverKill(Fault):
    """SIGKILL a dagger's driver JVM (DriverWrapper, on a worker). Submitted with --supervise, it is
    started again, in a new process under the same driver id, by the worker that ran it; undo has
    nothing to start and only checks that it came back."""

    kind = "driver-kill"

    @classmethod
    def prepare(cls, lab: Lab, *, target, ids, failure_percentage, seed, **settings) -> "DriverKill":
        cluster = _cluster(target, cls.kind)
        running = []
        for part in spark_parts(lab, cluster):
            status = master_status(part)
            if status is None:
                raise FaultError(f"the master of {part.label} does not answer: cannot find its drivers")
            running += [d["id"] for d in status.get("activedrivers", []) if d.get("state") == "RUNNING"]
        running.sort()
        if ids and failure_percentage is not None:
            raise FaultError("name the drivers or give a failure_percentage, not both")
        if ids:
            chosen = sorted({_driver_id(lab, cluster, str(i)) for i in ids})
            selection = {"ids": [str(i) for i in ids]}
        elif failure_percentage is not None:
            if not running:
                raise FaultError(f"{cluster} runs no driver")
            chosen = choose(running, failure_percentage, seed)
            selection = {"failure_percentage": failure_percentage, "seed": seed, "of": running}
        else:
            raise FaultError("driver-kill: name the drivers (driver ids or dagger names) or a failure_percentage")
        not_running = [d for d in chosen if d not in running]
        if not_running:
            raise FaultError(
                f"driver {not_running[0]} is not RUNNING on {cluster}; running: {', '.join(running) or 'none'}"
            )
        return cls(
            lab,
            programs=[],
            label=f"{cluster} driver{'s' if len(chosen) > 1 else ''} {', '.join(chosen)}",
            params={"cluster": cluster, "drivers": chosen},
            selection=selection,
            **settings,
        )

    def _driver(self, driver_id: str) -> tuple[SparkPart | None, dict | None, dict | None]:
        """The cluster whose master lists the driver, that master's /json/, and the driver's entry."""
        for part in spark_parts(self.lab, self.params["cluster"]):
            status = master_status(part)
            driver = next((d for d in (status or {}).get("activedrivers", []) if d["id"] == driver_id), None)
            if driver is not None:
                return part, status, driver
        return None, None, None

    def _processes(self, driver_id: str) -> list[procs.Proc]:
        """The driver's JVM: a DriverWrapper under the worker the master placed it on, working in
        the driver's own folder of that worker."""
        part, status, driver = self._driver(driver_id)
        if driver is None:
            return []
        worker_ui = next(
            (w.get("webuiaddress", "") for w in status.get("workers", []) if w["id"] == driver.get("worker")), ""
        )
        worker = next((w for w in part.workers if worker_ui.rstrip("/").removeprefix("http://") == w.address), None)
        if worker is None:
            raise FaultError(f"driver {driver_id} runs on {driver.get('worker')}, which is no worker of this lab")
        pid = self._supervisor().pid(worker.program)
        if pid is None:
            return []
        return [
            p
            for p in procs.descendants(pid)
            if DRIVER_MAIN in procs.cmdline(p.pid) and (procs.cwd(p.pid) or "").endswith("/" + driver_id)
        ]

    def _inject(self) -> None:
        for driver_id in self.params["drivers"]:
            found = self._processes(driver_id)
            if len(found) != 1:
                raise FaultError(f"driver {driver_id}: {len(found)} DriverWrapper processes found, not one")
            self._affect([driver_id])
            if procs.send(found[0], signal.SIGKILL):
                self.injected_at = self.injected_at or time.time()
                self._touch(driver_id, found, signal.SIGKILL)
            if procs.wait_gone(found, 15):
                raise FaultError(f"driver {driver_id} (pid {found[0].pid}) outlived SIGKILL")

    def _restore(self) -> None:
        pass  # --supervise restarts it; health() says whether it did

    def health(self) -> list[str]:
        killed = {(t["pid"], t["starttime"]) for t in self.touched}
        problems = []
        for driver_id in self.affected:
            _, _, driver = self._driver(driver_id)
            if driver is None or driver.get("state") != "RUNNING":
                state = driver.get("state") if driver else "no longer active (or its master does not answer)"
                problems.append(f"driver {driver_id} did not come back: it is {state} at the master")
                continue
            again = [p for p in self._processes(driver_id) if (p.pid, p.starttime) not in killed]
            if not again:
                problems.append(f"driver {driver_id} did not come back: no new DriverWrapper process on its worker")
        return problems


def _driver_id(lab: Lab, cluster: str, name: str) -> str:
    """A driver id as it is, or a dagger's current driver from the lab's registry."""
    from dagger_runtime.lifecycle.spark import DRIVER_ID

    if DRIVER_ID.fullmatch(name):
        return name
    from dagger_runtime.lifecycle.registry import Registry

    url_file = lab.dir / "secrets" / "registry.url"
    if not url_file.is_file():
        raise FaultError(f"{name!r} is no driver id, and the lab has no registry ({url_file}) to look a dagger up in")

    try:
        registry = Registry(url_file.read_text().strip())
        try:
            dagger = registry.get(name)
        finally:
            registry.close()
    except DaggerError as e:
        raise FaultError(f"cannot look dagger {name!r} up: {e}") from None
    if dagger is None or not dagger.submission_id:
        raise FaultError(f"{name!r} is neither a driver id nor a deployed dagger")
    if dagger.cluster != cluster:
        raise FaultError(f"dagger {name} runs on {dagger.cluster}, not {cluster}")
    return dagger.submission_id
