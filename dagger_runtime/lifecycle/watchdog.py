"""Automatic failover: watch what each dagger depends on, and move it when that is lost.

    dagger watchdog surge-demand surge-supply --kafka-to mirror --spark-to green

Every `interval_s` the watchdog asks, per dagger: does any broker of the Kafka cluster its spec
reads accept a connection? does its Spark cluster's master answer ALIVE? After `confirm`
consecutive failed checks of the same kind (one failed check is a blip, not a loss) it runs the
same failover as the command (`failover_kafka`, `failover_spark`), once per dagger. For Spark the
old driver must be gone before the checkpoint is taken over (`failover_spark` refuses while the
dagger's /metrics still answers): the watchdog tries again each interval until `fence_timeout_s`.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import yaml

from ..errors import DaggerError

INTERVAL_S = 1.0
CONFIRM = 3
FENCE_TIMEOUT_S = 120.0


@dataclass
class Loss:
    """Consecutive failed checks of one kind for one dagger. Pure: fed the checks' results."""

    confirm: int = CONFIRM
    failed: int = 0
    since: float | None = None

    def observe(self, lost: bool, at: float) -> bool:
        """True once `confirm` checks in a row found it lost (then it stays true until a good check)."""
        if not lost:
            self.failed, self.since = 0, None
            return False
        self.failed += 1
        self.since = self.since if self.since is not None else at
        return self.failed >= self.confirm


def kafka_target(reading: str, clusters: dict) -> str | None:
    """Where a dagger reading Kafka cluster `reading` goes when it is lost: its mirror, or (when it
    reads a mirror) the cluster that mirror copies. Pure."""
    here = clusters.get(reading)
    if here is not None and here.mirror_of is not None:
        return here.mirror_of.cluster
    return next((n for n, c in sorted(clusters.items()) if c.mirror_of and c.mirror_of.cluster == reading), None)


def spark_target(current: str, clusters: list[str]) -> str | None:
    """The other Spark cluster, when there is exactly one other. Pure."""
    others = [c for c in clusters if c != current]
    return others[0] if len(others) == 1 else None


def _accepts(address: str, timeout_s: float = 1.0) -> bool:
    host, _, port = address.strip().rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


@dataclass
class Watched:
    name: str
    kafka: Loss = field(default_factory=Loss)
    spark: Loss = field(default_factory=Loss)
    detected_at: float | None = None
    started_at: float | None = None
    done_at: float | None = None
    version: int | None = None
    error: str | None = None
    kind: str | None = None  # what was lost: kafka or spark
    to: str | None = None
    timings: dict = field(default_factory=dict)  # the failover's steps (operations' timings)
    crash_loop: str | None = None  # why its driver is in a crash loop, while it is


class Watchdog(threading.Thread):
    def __init__(
        self,
        names: list[str],
        *,
        registry_url: str,
        clusters_dir: str | None = None,
        kafka_to: str | None = None,
        spark_to: str | None = None,
        interval_s: float = INTERVAL_S,
        confirm: int = CONFIRM,
        fence_timeout_s: float = FENCE_TIMEOUT_S,
        actor: str = "watchdog",
        on_event: Callable[[str, str, str, float], None] | None = None,
    ):
        super().__init__(name="dagger-watchdog", daemon=True)
        self.watched = {n: Watched(n, Loss(confirm), Loss(confirm)) for n in names}
        self.registry_url, self.clusters_dir = registry_url, clusters_dir
        self.kafka_to, self.spark_to = kafka_to, spark_to
        self.interval_s, self.fence_timeout_s, self.actor = interval_s, fence_timeout_s, actor
        self.on_event = on_event
        self.events: list[dict] = []
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout=30)

    def _say(self, kind: str, name: str, text: str) -> None:
        at = time.time()
        self.events.append({"at": at, "kind": kind, "dagger": name, "text": text})
        if self.on_event is not None:
            self.on_event(kind, name, text, at)

    def run(self) -> None:
        from .registry import Registry

        registry = Registry(self.registry_url)
        try:
            while not self._stopping.is_set():
                started = time.monotonic()
                for w in self.watched.values():
                    if w.done_at is None and w.error is None:
                        try:
                            self.check(registry, w)
                        except Exception as e:  # noqa: BLE001 - said, and that dagger is no longer acted on
                            w.error = f"{type(e).__name__}: {e}"
                            self._say("failed", w.name, w.error)
                self._stopping.wait(max(0.05, self.interval_s - (time.monotonic() - started)))
        finally:
            registry.close()

    def check(self, registry, w: Watched) -> None:

        from . import spark as spark_api
        from .clusters import load_clusters
        from .failover import kafka_clusters

        dagger = registry.get(w.name)
        if dagger is None or not dagger.running:
            return
        now = time.time()
        if w.started_at is None:
            spec = yaml.safe_load(registry.version(w.name).spec) or {}
            addresses = [
                a
                for s in spec.get("streams", [])
                for a in str((s.get("kafka") or {}).get("bootstrap_servers", "")).split(",")
                if a.strip()
            ]
            kafka_lost = w.kafka.observe(bool(addresses) and not any(_accepts(a) for a in addresses), now)
            clusters = load_clusters(self.clusters_dir, team=dagger.team)
            try:
                alive = spark_api.master_state(clusters[dagger.cluster], timeout=2.0).status == "ALIVE"
            except (DaggerError, KeyError):
                alive = False
            spark_lost = w.spark.observe(not alive, now)
            if not (kafka_lost or spark_lost):
                self.check_crash_loop(registry, w, dagger)
                return
            w.detected_at = min(x for x in (w.kafka.since, w.spark.since) if x is not None)
            if spark_lost:
                kind, to = "spark", self.spark_to or spark_target(dagger.cluster, list(clusters))
            else:
                catalogue = kafka_clusters(self.clusters_dir)
                reading = next((n for n, c in catalogue.items() if set(addresses) <= c.addresses), None)
                kind, to = "kafka", self.kafka_to or (kafka_target(reading, catalogue) if reading else None)
            if to is None:
                w.error = f"{kind} lost, but there is no cluster to move it to"
                self._say("failed", w.name, w.error)
                return
            w.started_at, w.kind, w.to = time.time(), kind, to
            self._say(
                "detected",
                w.name,
                f"{kind} cluster lost ({w.kafka.failed or w.spark.failed} failed checks "
                f"since {time.strftime('%H:%M:%S', time.gmtime(w.detected_at))}Z); "
                f"moving to {to}",
            )
        self.fail_over(registry, w)

    def check_crash_loop(self, registry, w: Watched, dagger) -> None:
        """A driver that --supervise keeps restarting with its clusters alive: said once per loop and
        recorded, not moved (another cluster would not help); still watched for a loss."""
        from .state import crash_loop

        looping = crash_loop(dagger.checkpoint)
        if looping and not w.crash_loop:
            if dagger.status != "CRASH_LOOP":
                registry.record_status(
                    w.name, "CRASH_LOOP", actor=self.actor, detail=looping, submission_id=dagger.submission_id
                )
            self._say("failed", w.name, f"crash loop on {dagger.cluster}: {looping}")
        w.crash_loop = looping

    def fail_over(self, registry, w: Watched) -> None:
        from .operations import DriverStillAnswers, failover_kafka, failover_spark

        try:
            if w.kind == "kafka":
                out = failover_kafka(registry, w.name, w.to, actor=self.actor, clusters_dir=self.clusters_dir)
            else:
                out = failover_spark(registry, w.name, w.to, actor=self.actor, clusters_dir=self.clusters_dir)
        except DaggerError as e:
            fenced = isinstance(e, DriverStillAnswers)
            if fenced and time.time() - w.started_at < self.fence_timeout_s:
                return  # the old driver still answers: try again next interval
            w.error = str(e)
            self._say("failed", w.name, w.error)
            return
        w.done_at, w.version, w.timings = time.time(), out.data.get("version"), out.data.get("timings") or {}
        self._say("done", w.name, f"version {w.version} on {w.to}: " + (out.lines[0] if out.lines else ""))
