"""A drill's live measurements: the daggers' own metrics, Kafka's state, the mirror's delay, the
disk; sampled every few seconds into the report's timeline, and judged against the playbook's
hypotheses (per phase) and safeguards (at once).

    sampler = Sampler(registry_url=..., clusters_dir=..., kafka=catalogue, primary="primary",
                      mirror="mirror", logins={...}, topics=[...], safeguards=book.safeguards)
    sampler.start(); sampler.watch("bookings-3fa2c1", alias="bookings")
    ...
    sampler.breach()                    # a safeguard's sentence, or None
    sampler.stop(); sampler.timeline()  # report_model.Timeline's fields
    evaluate(book.steady_state, sampler, {"before": (t0, t1), ...})

Every probe that cannot answer (a cluster down is what a drill is for) gives None, within a few
seconds: the Kafka probes run on a thread of their own, so a hung broker never stalls the
daggers' samples, and a value older than STALE_S counts as not measured.

end_to_end_latency is the age of a dagger's watermark (now minus its watermark): a window's row
is written once the watermark passes the window's end, so a fed event lands in the sink this long,
give or take a batch, after its window closed.
"""

from __future__ import annotations

import shutil
import threading
import time
from typing import Any, Iterable

from dagger_runtime.lifecycle.state import crash_loop

INTERVAL_S = 2.0
KAFKA_INTERVAL_S = 5.0
STALE_S = 12.0
_TIMEOUTS = {"request_timeout_ms": 4000, "bootstrap_timeout_ms": 3000}


def disk_usage_percent(path: str) -> float:
    usage = shutil.disk_usage(path)
    return 100.0 * usage.used / usage.total if usage.total else 0.0


def _consumer(bootstrap: str, login: dict):
    from kafka import KafkaConsumer

    return KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        group_id=None,
        client_id="daggers-drill-probe",
        session_timeout_ms=6000,
        heartbeat_interval_ms=2000,
        request_timeout_ms=7000,
        bootstrap_timeout_ms=3000,
        **login,
    )


def late_letters(bootstrap: str, login: dict, topic: str, timeout_s: float = 20.0) -> set[bytes]:
    """The keys of the messages a dagger set aside as late (dead-letter kind `late`) on its
    dead-letter topic on one cluster, read from its start (empty: no such topic or no answer)."""
    from kafka import TopicPartition

    try:
        consumer = _consumer(bootstrap, login)
    except Exception:  # noqa: BLE001 - no broker answers
        return set()
    keys: set[bytes] = set()
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not tps:
            return keys
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(consumer.position(tp) < ends[tp] for tp in tps):
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    if dict(record.headers or []).get("dagger.errors.kind") == b"late" and record.key is not None:
                        keys.add(record.key)
    except Exception:  # noqa: BLE001 - what was read is what is known
        pass
    finally:
        consumer.close()
    return keys


def end_offsets(bootstrap: str, login: dict, topics: Iterable[str]) -> dict[tuple[str, int], int] | None:
    """Each partition's end offset (None when the cluster does not answer)."""
    from kafka import TopicPartition

    try:
        consumer = _consumer(bootstrap, login)
    except Exception:  # noqa: BLE001 - no broker answers
        return None
    try:
        tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        return {(tp.topic, tp.partition): end for tp, end in consumer.end_offsets(tps).items()}
    except Exception:  # noqa: BLE001
        return None
    finally:
        consumer.close()


def _last_timestamps(bootstrap: str, login: dict, topics: list[str]) -> dict[tuple[str, int], int | None]:
    """The Kafka timestamp of each partition's last record (None for an empty partition)."""
    from kafka import TopicPartition

    consumer = _consumer(bootstrap, login)
    try:
        tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        ends = consumer.end_offsets(tps)
        out: dict[tuple[str, int], int | None] = {(tp.topic, tp.partition): None for tp in tps}
        wanted = [tp for tp in tps if ends[tp] > 0]
        if not wanted:
            return out
        consumer.assign(wanted)
        for tp in wanted:
            consumer.seek(tp, ends[tp] - 1)
        deadline = time.monotonic() + 4.0
        while time.monotonic() < deadline and any(out[(tp.topic, tp.partition)] is None for tp in wanted):
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    if r.offset == ends[tp] - 1:
                        out[(tp.topic, tp.partition)] = r.timestamp
        return out
    finally:
        consumer.close()


def mirror_lag_seconds(
    primary_bootstrap: str,
    primary_login: dict,
    mirror_bootstrap: str,
    mirror_login: dict,
    topics: Iterable[str],
    prefix: str,
) -> float | None:
    """How far the mirror's copies trail the primary, in seconds: per partition, the Kafka time
    of the primary's last record less that of the copy's last record (MirrorMaker 2 keeps record
    timestamps); the worst partition. None when either cluster does not answer."""
    topics = list(topics)
    try:
        primary = _last_timestamps(primary_bootstrap, primary_login, topics)
        mirror = _last_timestamps(mirror_bootstrap, mirror_login, [prefix + t for t in topics])
    except Exception:  # noqa: BLE001
        return None
    worst = 0.0
    for (topic, partition), ts in primary.items():
        if ts is None:
            continue
        copied = mirror.get((prefix + topic, partition))
        worst = max(worst, (ts - copied) / 1000 if copied is not None else float("inf"))
    return None if worst == float("inf") else worst


def behind(primary: dict, copied: dict, prefix: str) -> int:
    """Messages on the primary's partitions that their mirror copies (prefix + topic) lack."""
    return sum(max(0, end - copied.get((prefix + t, p), 0)) for (t, p), end in primary.items())


def under_replicated_partitions(bootstrap: str, login: dict) -> int | None:
    """Partitions whose in-sync replicas are fewer than their replicas (None: no answer)."""
    from kafka.admin import KafkaAdminClient

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="daggers-drill-probe", **_TIMEOUTS, **login)
    except Exception:  # noqa: BLE001
        return None
    try:
        count = 0
        for topic in admin.describe_topics():
            for p in topic.get("partitions", []):
                if len(p.get("isr", [])) < len(p.get("replicas", [])):
                    count += 1
        return count
    except Exception:  # noqa: BLE001
        return None
    finally:
        admin.close()


class Sampler:
    def __init__(
        self,
        *,
        registry_url: str,
        clusters_dir: str,
        kafka: dict,
        primary: str,
        mirror: str | None,
        logins: dict[str, dict],
        topics: list[str],
        safeguards=(),
        disk_path: str = "/",
        interval_s: float = INTERVAL_S,
    ):
        self.registry_url, self.clusters_dir = registry_url, clusters_dir
        self.kafka, self.primary, self.mirror, self.logins = kafka, primary, mirror, logins
        self.topics, self.safeguards, self.disk_path = topics, tuple(safeguards), disk_path
        self.interval_s = interval_s
        self.samples: list[dict] = []
        self.aliases: dict[str, str] = {}  # registry name -> the playbook's name
        self._kafka_values: dict[str, tuple[float, Any]] = {}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._loop, name="drill-sampler", daemon=True),
            threading.Thread(target=self._kafka_loop, name="drill-kafka-probe", daemon=True),
        ]

    def watch(self, name: str, alias: str | None = None) -> None:
        with self._lock:
            self.aliases[name] = alias or name

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=15)

    # -- sampling -----------------------------------------------------------------------------------
    def _loop(self) -> None:
        from dagger_runtime.lifecycle.registry import Registry

        registry = Registry(self.registry_url)
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                try:
                    sample = self.sample(registry)
                    with self._lock:
                        self.samples.append(sample)
                except Exception:  # noqa: BLE001 - one lost sample, not a lost drill
                    pass
                self._stop.wait(max(0.1, self.interval_s - (time.monotonic() - started)))
        finally:
            registry.close()

    def _kafka_loop(self) -> None:
        prefix = self.kafka[self.mirror].mirror_of.topic_prefix if self.mirror else ""
        while not self._stop.is_set():
            for name, cluster in self.kafka.items():
                value = under_replicated_partitions(cluster.bootstrap_servers, self.logins.get(name, {}))
                self._kafka_values[f"urp:{name}"] = (time.time(), value)
            if self.mirror and self.topics:
                lag = mirror_lag_seconds(
                    self.kafka[self.primary].bootstrap_servers,
                    self.logins.get(self.primary, {}),
                    self.kafka[self.mirror].bootstrap_servers,
                    self.logins.get(self.mirror, {}),
                    self.topics,
                    prefix,
                )
                self._kafka_values["mirror_lag"] = (time.time(), lag)
                primary = end_offsets(
                    self.kafka[self.primary].bootstrap_servers, self.logins.get(self.primary, {}), self.topics
                )
                copied = end_offsets(
                    self.kafka[self.mirror].bootstrap_servers,
                    self.logins.get(self.mirror, {}),
                    [prefix + t for t in self.topics],
                )
                lacking = None if primary is None or copied is None else behind(primary, copied, prefix)
                self._kafka_values["mirror_behind"] = (time.time(), lacking)
            self._stop.wait(KAFKA_INTERVAL_S)

    def _fresh(self, key: str) -> Any:
        at, value = self._kafka_values.get(key, (0.0, None))
        return value if time.time() - at <= STALE_S else None

    def sample(self, registry) -> dict:
        from dagger_runtime.lifecycle.clusters import load_clusters
        from dagger_runtime.lifecycle.operations import scrape

        now = time.time()
        daggers: dict[str, dict | None] = {}
        with self._lock:
            aliases = dict(self.aliases)
        for name, alias in aliases.items():
            d = registry.get(name)
            metrics = None
            clusters = load_clusters(self.clusters_dir, team=d.team) if d is not None else {}
            if d is not None and d.running and d.metrics_port and d.cluster in clusters:
                metrics = scrape(clusters[d.cluster].metrics_host, d.metrics_port, timeout=1.5)
            # a driver that --supervise keeps restarting reads a batch now and then and stores
            # nothing: it reads nothing as far as the drill is concerned, answering or not
            looping = crash_loop(d.checkpoint) if d is not None and d.running else None
            if looping:
                lag = metrics.get("dagger_consumer_lag_messages") if metrics else None
                daggers[alias] = {
                    "version": d.version,
                    "cluster": d.cluster,
                    "input": 0.0,
                    "processed": 0.0,
                    "lag": lag,
                    "batches": 0.0,
                    "latency": None,
                    "crash_loop": looping,
                }
                continue
            if metrics is None:
                daggers[alias] = None
                continue
            watermark = metrics.get("dagger_watermark_timestamp_seconds") or None
            daggers[alias] = {
                "version": d.version,
                "cluster": d.cluster,
                "input": metrics.get("dagger_input_messages_per_second", 0.0),
                "processed": metrics.get("dagger_processed_messages_per_second", 0.0),
                "lag": metrics.get("dagger_consumer_lag_messages", 0.0),
                "batches": metrics.get("dagger_batches_total", 0.0),
                "late": metrics.get("dagger_late_rows_dropped_total", 0.0),
                "late_messages": metrics.get("dagger_dead_letters_total:late", 0.0),
                "latency": (now - watermark) if watermark else None,
            }
        return {
            "t": now,
            "daggers": daggers,
            "disk": disk_usage_percent(self.disk_path),
            "urp": {name: self._fresh(f"urp:{name}") for name in self.kafka},
            "mirror_lag": self._fresh("mirror_lag"),
            "mirror_behind": self._fresh("mirror_behind"),
        }

    # -- reading the samples ------------------------------------------------------------------------
    def value(self, sample: dict, probe: str, of: str | None = None) -> float | None:
        """One probe's value in one sample, in the probe's unit."""
        if probe == "disk_usage":
            return sample["disk"]
        if probe == "mirror_lag":
            return sample["mirror_lag"]
        if probe == "under_replicated_partitions":
            return sample["urp"].get(of or self.primary)
        field = {"consumer_lag": "lag", "throughput": "input", "end_to_end_latency": "latency"}[probe]
        rows = [v for k, v in sample["daggers"].items() if of is None or k == of]
        values = [v[field] for v in rows if v is not None]
        # a dagger that did not answer makes the total unknown, not smaller
        if not rows or len(values) < len(rows) or None in values:
            return None
        return max(values) if probe == "end_to_end_latency" else sum(values)

    def values(
        self, probe: str, of: str | None = None, start: float | None = None, end: float | None = None
    ) -> list[float]:
        with self._lock:
            samples = list(self.samples)
        out = []
        for s in samples:
            if (start is None or s["t"] >= start) and (end is None or s["t"] < end):
                v = self.value(s, probe, of)
                if v is not None:
                    out.append(v)
        return out

    def crash_loops(self, start: float, end: float) -> dict[str, str]:
        """The daggers (playbook names) seen in a crash loop between start and end, with why (the
        last time it was seen): a loop during a fault that the dagger left is not one at the end."""
        with self._lock:
            samples = [s for s in self.samples if start <= s["t"] < end]
        return {
            alias: d["crash_loop"]
            for s in samples
            for alias, d in s["daggers"].items()
            if d is not None and d.get("crash_loop")
        }

    def late_rows(self, alias: str, field: str = "late") -> int | None:
        """Rows the dagger dropped behind its watermark over the drill (None: never scraped); with
        field="late_messages", the late messages it set aside to its dead letters. Each driver
        counts from its own start, so the last count of each (version, cluster) is summed: a
        driver killed between two samples takes its last few to the grave, so this is a floor."""
        with self._lock:
            samples = list(self.samples)
        last: dict[tuple, float] = {}
        for s in samples:
            d = s["daggers"].get(alias)
            if d is not None and d.get(field) is not None:
                key = (d["version"], d["cluster"])
                # a counter that went down is a new driver of the same version and cluster
                if d[field] < last.get(key, 0.0):
                    last[(*key, s["t"])] = last.pop(key)
                last[key] = d[field]
        return int(sum(last.values())) if last else None

    def breach(self) -> str | None:
        with self._lock:
            last = self.samples[-1] if self.samples else None
        return safeguard_breach(self.safeguards, last, self) if last else None

    def timeline(self) -> dict:
        with self._lock:
            samples = list(self.samples)

        def series(probe: str, scale: float = 1.0) -> list[float | None]:
            out = []
            for s in samples:
                v = self.value(s, probe)
                out.append(None if v is None else round(v * scale, 3))
            return out

        processed = []
        for s in samples:
            rows = [v for v in s["daggers"].values() if v is not None]
            processed.append(round(sum(v["processed"] for v in rows), 3) if rows else None)
        # the report draws the mirror's lag in messages (what a loss would take), the hypotheses
        # judge it in seconds; `throughput` is what was produced, filled in by the runner
        return {
            "t": [round(s["t"], 3) for s in samples],
            "throughput": None,
            "processed": processed,
            "consumer_lag": series("consumer_lag"),
            "latency_ms": series("end_to_end_latency", 1000.0),
            "mirror_lag": [s.get("mirror_behind") for s in samples],
        }


def safeguard_breach(safeguards, sample: dict, sampler: Sampler) -> str | None:
    """The first safeguard past its threshold in `sample`, as a sentence."""
    for g in safeguards:
        value = sampler.value(sample, g.probe, g.of)
        if value is None:
            continue
        if (g.abort_above is not None and value > g.threshold) or (g.abort_below is not None and value < g.threshold):
            return f"{g.describe()} (it was {value:.4g} {g.unit})"
    return None


def evaluate(hypotheses, sampler: Sampler, phases: dict[str, tuple[float, float]]) -> list[dict]:
    """report_model.Hypothesis dicts: per hypothesis and phase, the worst sample of the phase
    (the highest against a max, the lowest against a min) and whether it is within tolerance."""
    out = []
    for h in hypotheses:
        low, high = h.bounds
        for phase in h.phases:
            start, end = phases[phase]
            values = sampler.values(h.probe, h.of, start, end)
            value = None if not values else round(max(values) if high is not None else min(values), 3)
            ok = None if value is None else ((low is None or value >= low) and (high is None or value <= high))
            out.append(
                {
                    "name": h.name or h.describe(),
                    "probe": h.probe,
                    "unit": h.unit,
                    "tolerance": {"max": high, "min": low},
                    "phase": phase,
                    "value": value,
                    "ok": ok,
                }
            )
    return out


__all__ = [
    "Sampler",
    "evaluate",
    "safeguard_breach",
    "end_offsets",
    "mirror_lag_seconds",
    "under_replicated_partitions",
    "disk_usage_percent",
]
