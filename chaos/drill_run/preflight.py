"""The checks before a drill touches anything: the lab answers, no other run holds it, the
clusters have room for the drill's daggers (and where a failover moves them)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import yaml

from dagger_runtime.errors import DaggerError
from dagger_runtime.lifecycle import spark as spark_api
from dagger_runtime.lifecycle.clusters import get_cluster

from .common import (
    Abort,
)


class Preflight:
    """The checks before a drill acts (a part of DrillRun)."""

    def preflight(self) -> None:
        """The lab must answer before anything is touched."""
        from ..faults import FaultError

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
        from dagger_runtime.lifecycle import operations

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
                    (
                        d.name,
                        int(job.get("parallelism") or 1),
                        spark_api.executor_memory_mb(int(job.get("state_rows") or 0)),
                    )
                )
        for (name, team), (cluster, daggers) in sorted(needs.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            state = spark_api.master_state(cluster)
            left = spark_api.unplaced(list(state.workers_free), [p for _, p, _ in daggers], [m for _, _, m in daggers])
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
                        left = spark_api.unplaced(
                            list(state.workers_free), [p for _, p, _ in daggers], [m for _, _, m in daggers]
                        )
                    if not left:
                        continue
            finally:
                registry.close()
            free = spark_api.describe_free(state.workers_free)
            short = ", ".join(
                f"{daggers[i][0]} (parallelism {daggers[i][1]}"
                + (f", an executor of {daggers[i][2]} MB)" if daggers[i][2] != spark_api.EXECUTOR_MEMORY_MB else ")")
                for i in left
            )
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
                f"{spark_api.EXECUTOR_MEMORY_MB} MB for its executor, more with state_rows; the workers have "
                f"{free} free)" + (held or "; nothing of the registry runs there")
            )
