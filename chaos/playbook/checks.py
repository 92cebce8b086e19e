"""The checks across fields, against the lab, the schemas and the dagger specs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from dagger_runtime.errors import DaggerError
from dagger_runtime.yaml_lines import Problems
from protos.errors import SchemaError

from ..catalog import BY_NAME, FAULT_KINDS
from ..verify import parse_key, parse_measure
from .lab import Lab, _descriptors
from .model import SHAPE_PARAMS, ChaosEntry, Consumer, Deployment, Fault, Feeder, Playbook, Shape
from .values import (
    BASELINE_S,
    MAX_DOWNTIME_S,
    MAX_DRILL_S,
    PROBES,
    SAFEGUARD_PROBES,
    Probe,
    _num,
    did_you_mean,
    duration,
    fmt_duration,
)

# -- the checks across fields, against the lab, the schemas and the dagger specs ---------------------------


_DISK = ("disk-break", "disk-fill")
# kinds that take instances out of service (a share of a cluster's brokers or workers, or all of it)
_TAKES_DOWN = {
    "cluster-down",
    "broker-stop",
    "broker-kill",
    "broker-pause",
    "network-cut",
    "disk-break",
    "disk-fill",
    "spark-cluster-down",
    "worker-kill",
}


class _Checker:
    def __init__(self, book: Playbook, problems: Problems, lab: Lab, descriptors, base: Path):
        self.book, self.problems, self.lab, self.base = book, problems, lab, base
        self._descriptors = descriptors
        self.as_written = book.chaos  # before defaults are filled in
        self.unloaded = 0  # dagger specs refused: checks naming daggers are moot

    def add(self, where: str, message: str) -> None:
        self.problems.add(where, message)

    def written(self, i: int, name: str) -> str:
        """Where chaos[i]'s `name` was written: the entry, else the top level it is inherited from."""
        if i >= 0 and getattr(self.as_written[i], name) is not None:
            return f"chaos[{i}].{name}"
        return name

    # the descriptor set
    @property
    def descriptors(self):
        if self._descriptors is None:
            self._descriptors = _descriptors()
        return self._descriptors

    def message(self, where: str, name: str) -> str | None:
        """The proto name of a message type (a proto name, or LOKI's Java class name), else a problem."""
        try:
            return self.descriptors.message_descriptor(name).full_name
        except SchemaError as e:
            self.add(where, str(e))
            return None

    def field_problem(self, message: str, dotted: str) -> str | None:
        descriptor = self.descriptors.message_descriptor(message)
        for i, part in enumerate(dotted.split(".")):
            if descriptor is None or part not in descriptor.fields_by_name:
                names = sorted(descriptor.fields_by_name) if descriptor is not None else []
                parent = ".".join(dotted.split(".")[:i]) or message
                return f"{dotted!r} is not a field of {message}: {parent} has no {part!r}" + (
                    did_you_mean(part, names) or f" (its fields: {', '.join(names)})"
                )
            descriptor = descriptor.fields_by_name[part].message_type
        return None

    def run(self) -> Playbook:
        book = self.book
        deployments = self.daggers()
        feeders = self.feeders(deployments)
        consumers = self.consumers()
        self.class_prefix()
        faults, entries = self.chaos(deployments)
        book = book.model_copy(update={"feeders": feeders, "consumers": consumers, "chaos": entries})
        book._faults, book._deployments = tuple(faults), tuple(deployments)
        self.book = book
        self.times()
        self.steady_state(deployments)
        self.safeguards(deployments)
        self.failover(deployments)
        self.verify(deployments)
        return book

    # -- daggers
    def daggers(self) -> list[Deployment]:
        from dagger_runtime.config import load_job
        from dagger_runtime.sql.translate import translate

        out: list[Deployment] = []
        names: dict[str, int] = {}
        for i, d in enumerate(self.book.daggers):
            if d.cluster not in self.lab.spark:
                self.add(
                    f"daggers[{i}].cluster",
                    f"{d.cluster!r} is not a Spark cluster of the lab"
                    f"{did_you_mean(d.cluster, self.lab.spark)} (it has "
                    f"{', '.join(self.lab.spark)})",
                )
            path = Path(d.spec) if Path(d.spec).is_absolute() else self.base / d.spec
            if not path.is_file():
                close = (
                    did_you_mean(Path(d.spec).name, [p.name for p in path.parent.glob("*")])
                    if path.parent.is_dir()
                    else ""
                )
                self.unloaded += 1
                self.add(
                    f"daggers[{i}].spec", f"no dagger spec at {d.spec} (paths are relative to the repository){close}"
                )
                continue
            try:
                job = load_job(path)
                translation = translate(job.sql, job.tables, job.rowtime_attribute)
            except DaggerError as e:
                first = str(e).splitlines()
                detail = first[1].strip(" -") if len(first) > 1 else first[0]
                self.unloaded += 1
                self.add(f"daggers[{i}].spec", f"{d.spec} is not a valid dagger: {detail}")
                continue
            name = d.name or job.name
            if name in names:
                self.add(
                    f"daggers[{i}]" + (".name" if d.name else ".spec"),
                    f"{name} is deployed already (daggers[{names[name]}]): give one a name of its own",
                )
            names.setdefault(name, i)
            reads = {t: s.proto_class or "JSON" for s in job.streams for t in s.topics}
            out.append(
                Deployment(
                    name,
                    path,
                    d.cluster,
                    job.name,
                    job.sink.type,
                    reads,
                    tuple(w.size.millis / 1000 for w in translation.windows),
                    tuple(translation.output_columns),
                    d.watermark_delay,
                )
            )
        return out

    # -- traffic
    def feeders(self, deployments: list[Deployment]) -> tuple[Feeder, ...]:
        book = self.book
        if book.cluster not in self.lab.kafka:
            self.add(
                "cluster",
                f"{book.cluster!r} is not a Kafka cluster of the lab"
                f"{did_you_mean(book.cluster, self.lab.kafka)} (it has {', '.join(self.lab.kafka)})",
            )
        elif book.topic is not None and (problem := self.lab.topic_problem(book.cluster, book.topic)):
            self.add("topic", problem)
        default_message = self.message("proto_schema", book.proto_schema) if book.proto_schema else None
        out = []
        names: dict[str, int] = {}
        for i, f in enumerate(book.feeders):
            at = f"feeders[{i}]"
            if f.name in names:
                self.add(f"{at}.name", f"{f.name} names feeders[{names[f.name]}] already")
            names.setdefault(f.name, i)
            topic = f.topic or book.topic
            if topic is None:
                self.add(f"{at}.topic", "required: the topic this feeder writes (or LOKI's topic at the top level)")
            elif (
                f.topic is not None
                and book.cluster in self.lab.kafka
                and (problem := self.lab.topic_problem(book.cluster, topic))
            ):
                self.add(f"{at}.topic", problem)
            if f.message is not None:
                message = self.message(f"{at}.message", f.message)
            elif book.proto_schema is not None:
                message = default_message
            else:
                message = None
                self.add(
                    f"{at}.message",
                    "required: the message type this feeder writes (or LOKI's proto_schema "
                    "at the top level), e.g. gojek.esb.booking.BookingLogMessage",
                )
            if f.rate is None and f.count is None:
                self.add(f"{at}.rate", "give rate (messages a second), count (messages in all, LOKI's), or both")
            self.shape(f"{at}.shape", f.shape, f.rate)
            if message is not None:
                if f.key is not None and (problem := self.field_problem(message, f.key)):
                    self.add(f"{at}.key", problem)
                bad = False
                for hint in f.hints:
                    if problem := self.field_problem(message, hint):
                        self.add(f"{at}.hints.{hint}", problem)
                        bad = True
                if f.hints and not bad:
                    self.hint_values(f"{at}.hints", message, f.hints)
                for d in deployments:
                    if topic in d.reads and d.reads[topic] != message:
                        self.add(
                            f"{at}.message",
                            f"{message} written to {topic}, but the dagger {d.name} reads {topic} as {d.reads[topic]}",
                        )
            out.append(f.model_copy(update={"topic": topic, "message": message}))
        return tuple(out)

    def hint_values(self, at: str, message: str, hints: dict) -> None:
        """The values fit their fields (an enum's names, a number for a number): the generator is
        built here, as the run builds it, so a bad value is refused before anything is touched."""
        from loadtest.generator import HintError, MessageGenerator

        from ..feeders import generator_hints

        try:
            MessageGenerator(self.descriptors, message, hints=generator_hints(hints))
        except (HintError, ValueError, TypeError) as e:
            text = str(e)
            path = next((h for h in hints if f"{h!r}" in text), None)
            self.add(f"{at}.{path}" if path else at, text)

    def shape(self, at: str, shape: Shape, rate: float | None) -> None:
        needed, optional = SHAPE_PARAMS[shape.kind]
        for param in ("every", "by", "max", "to", "over", "at", "peak", "lasting"):
            given = getattr(shape, param) is not None
            if given and param not in needed + optional:
                takes = f"takes {' and '.join(needed + optional)}" if needed else "takes no parameters"
                self.add(f"{at}.{param}", f"a {shape.kind} shape {takes}, not {param}")
            elif not given and param in needed:
                self.add(
                    f"{at}.{param}" if len(needed) == 1 else at,
                    f"a {shape.kind} shape needs {' and '.join(needed)}; {param} is missing",
                )
        if shape.kind != "constant" and rate is None:
            self.add(at, f"a {shape.kind} shape starts from the feeder's rate: give rate")
        if shape.kind == "steps" and shape.max is not None and rate is not None and shape.max <= rate:
            self.add(f"{at}.max", f"{_num(shape.max)} is not above the starting rate {_num(rate)}")

    def consumers(self) -> tuple[Consumer, ...]:
        book = self.book
        out = []
        for i, c in enumerate(book.consumers):
            at = f"consumers[{i}]"
            topic = c.topic or book.topic
            if topic is None:
                self.add(f"{at}.topic", "required: the topic these consumers read (or LOKI's topic at the top level)")
            elif (
                c.topic is not None
                and book.cluster in self.lab.kafka
                and (problem := self.lab.topic_problem(book.cluster, topic))
            ):
                self.add(f"{at}.topic", problem)
            schema = None
            if c.schema_ is not None:
                schema = self.message(f"{at}.schema", c.schema_)
            elif book.proto_schema is not None:
                schema = self.descriptors.java_names.get(book.proto_schema, book.proto_schema)
            out.append(c.model_copy(update={"topic": topic, "schema_": schema}))
        return tuple(out)

    def class_prefix(self) -> None:
        prefix = self.book.proto_class_prefix
        if prefix is None:
            return
        names = [*self.descriptors.messages(), *self.descriptors.java_names]
        if not any(n.startswith(prefix) for n in names):
            self.add(
                "proto_class_prefix",
                f"{prefix!r} starts no message's name (proto or Java) in the descriptor "
                f"set{did_you_mean(prefix, names)}",
            )

    # -- faults
    def chaos(self, deployments: list[Deployment]) -> tuple[list[Fault], tuple[ChaosEntry, ...]]:
        book = self.book
        entries = list(book.chaos)
        top_level = not entries and (book.type is not None or book.downtime is not None)
        if top_level:
            entries = [ChaosEntry()]  # LOKI's one case written at the top level
        faults, resolved = [], []
        previous_end = book.timing.warmup + BASELINE_S
        for i, entry in enumerate(entries):
            fault = self.fault(-1 if top_level else i, entry, deployments, previous_end)
            if fault is None:
                resolved.append(entry)
                continue
            previous_end = fault.end
            faults.append(fault)
            resolved.append(
                entry.model_copy(
                    update={
                        "name": fault.name,
                        "blast_radius": fault.cluster,
                        "type": fault.system,
                        "failure_percentage": fault.percentage,
                        "data_disk_failure": fault.kind == "disk-break"
                        or bool(
                            entry.data_disk_failure if entry.data_disk_failure is not None else book.data_disk_failure
                        ),
                        "instance_recovery": fault.recovers,
                        "downtime": fault.downtime,
                        "fault": fault.kind,
                        "target": entry.target or fault.cluster,
                        "at": fault.at,
                    }
                )
            )
        names: dict[str, int] = {}
        for f in faults:
            if f.name in names and book.chaos and book.chaos[f.index].name is not None:
                self.add(f"chaos[{f.index}].name", f"{f.name!r} names chaos[{names[f.name]}] already")
            names.setdefault(f.name, f.index)
        return faults, tuple(resolved)

    def fault(self, i: int, e: ChaosEntry, deployments: list[Deployment], default_at: float) -> Fault | None:
        book = self.book
        at = f"chaos[{i}]" if i >= 0 else "(top level)"

        def pick(name: str):
            value = getattr(e, name)
            return value if value is not None else getattr(book, name)

        kind, system, pct = e.fault, pick("type"), pick("failure_percentage")
        disk, recovers, downtime = pick("data_disk_failure"), pick("instance_recovery"), pick("downtime")
        blast = pick("blast_radius")
        ok = True
        if downtime is None:
            self.add(
                f"chaos[{i}].downtime" if i >= 0 else "downtime",
                'required: how long the fault lasts, as LOKI writes it ("20m"), here or at the top level',
            )
            ok = False
        elif downtime > MAX_DOWNTIME_S:
            self.add(
                self.written(i, "downtime"),
                f"{fmt_duration(downtime)} is above the ceiling of "
                f"{fmt_duration(MAX_DOWNTIME_S)} (LOKI's longest scenarios are 90m)",
            )
            ok = False
        if kind is not None and system is not None and BY_NAME[kind].system != system:
            k = BY_NAME[kind]
            self.add(
                f"{at}.fault",
                f"{kind} breaks {k.system} (a {k.target}), but the type here is {system}: "
                f"the {system} kinds are "
                f"{', '.join(x.name for x in FAULT_KINDS if x.system == system)}",
            )
            return None
        system = BY_NAME[kind].system if kind is not None else system
        if system is None:
            self.add(
                f"{at}.type" if i >= 0 else "type",
                "required: give type (kafka, spark or sink), as LOKI does, or fault (a kind of chaos/catalog.py)",
            )
            return None
        # the cluster: target's, blast_radius, or the default
        target_cluster, target_instances = None, ()
        if e.target is not None:
            head, _, tail = e.target.partition("/")
            target_cluster = head
            target_instances = tuple(x.strip() for x in tail.split(",")) if tail else ()
            if "/" in e.target and not tail:
                self.add(f"{at}.target", f"{e.target!r} names no instance after '/'")
                return None
        driver = kind == "driver-kill"
        dagger_names = [d.name for d in deployments]
        if driver and target_cluster in dagger_names and not target_instances:
            # driver-kill's target may be a dagger: its cluster is where it runs
            target_instances = (target_cluster,)
            target_cluster = next(d.cluster for d in deployments if d.name == target_instances[0])
        known = {"kafka": self.lab.kafka, "spark": self.lab.spark, "sink": self.lab.sinks}[system]
        cluster = target_cluster or blast
        if target_cluster is not None and blast is not None and target_cluster != blast:
            self.add(
                f"{at}.target",
                f"names {target_cluster}, but blast_radius is {blast}: the cluster a fault "
                "hits is one; drop one of them or make them agree",
            )
            return None
        if cluster is None:
            if system == "kafka":
                cluster = book.cluster
            elif system == "spark":
                cluster = deployments[0].cluster if deployments else next(iter(self.lab.spark), None)
            else:
                servers = sorted({d.sink_server for d in deployments if d.sink_server})
                if len(servers) != 1:
                    self.add(f"{at}.target", f"required: which sink goes down ({', '.join(self.lab.sinks)})")
                    return None
                cluster = servers[0]
        if cluster not in known:
            noun = {"kafka": "Kafka cluster", "spark": "Spark cluster", "sink": "sink"}[system]
            where = f"{at}.target" if target_cluster is not None else self.written(i, "blast_radius")
            self.add(
                where,
                f"{cluster!r} is not a {noun} of the lab{did_you_mean(cluster, known)} (it has {', '.join(known)})",
            )
            return None
        # the kind, from LOKI's fields when not named
        derived = kind is None
        if disk and system != "kafka":
            self.add(
                self.written(i, "data_disk_failure"),
                f"a data disk failure breaks a Kafka broker's disk; the type here is {system}",
            )
            return None
        if kind is None:
            if disk:
                kind = "disk-break"
            elif system == "kafka":
                kind = "cluster-down" if pct == 100 else "broker-stop"
            elif system == "spark":
                kind = "spark-cluster-down" if pct == 100 else "worker-kill"
            else:
                kind = "sink-down"
        elif disk and kind not in _DISK:
            self.add(
                self.written(i, "data_disk_failure"),
                f"true, but the fault is {kind}: a data disk failure is disk-break (or disk-fill); drop one of them",
            )
            return None
        spec = BY_NAME[kind]
        # the instances it hits
        instances: tuple = ()
        if spec.target in ("broker", "worker", "driver"):
            pool: tuple = {
                "broker": self.lab.kafka.get(cluster, ()),
                "worker": self.lab.spark.get(cluster, ()),
                "driver": tuple(d.name for d in deployments if d.cluster == cluster),
            }[spec.target]
            noun = {"broker": "broker ids", "worker": "worker hosts", "driver": "daggers"}[spec.target]
            if target_instances and pct is not None:
                self.add(
                    self.written(i, "failure_percentage"),
                    f"{_num(pct)}% and {noun} in target ({e.target}): give one of them",
                )
                return None
            if target_instances:
                wanted = target_instances
                if spec.target == "broker":
                    if not all(x.isdigit() for x in wanted):
                        self.add(f"{at}.target", f"{e.target!r}: broker ids are numbers ({cluster}/1,2)")
                        return None
                    wanted = tuple(int(x) for x in wanted)
                missing = [x for x in wanted if x not in pool]
                if missing:
                    self.add(
                        f"{at}.target",
                        f"{', '.join(map(str, missing))} not in {cluster} (its {noun}: "
                        f"{', '.join(map(str, pool)) or 'none'})",
                    )
                    return None
                if len(set(wanted)) != len(wanted):
                    self.add(f"{at}.target", f"{e.target!r} names an instance twice")
                    return None
                instances, count = tuple(wanted), len(wanted)
            elif pct is not None:
                if not pool:
                    self.add(self.written(i, "failure_percentage"), f"{cluster} has no {noun} to fail")
                    return None
                count = max(1, math.ceil(len(pool) * pct / 100 - 1e-9))
            else:
                where = f"{at}.failure_percentage" if i >= 0 else "failure_percentage"
                example = {
                    "broker": f"{cluster}/2",
                    "worker": f"{cluster}/{pool[0] if pool else 'worker'}",
                    "driver": dagger_names[0] if dagger_names else "a dagger's name",
                }[spec.target]
                self.add(
                    where,
                    f"required for {kind}: how much of {cluster} fails: failure_percentage (LOKI: "
                    f'"10%") or {noun} in target ({example})',
                )
                return None
            of = len(pool)
        else:
            if target_instances:
                self.add(f"{at}.target", f"{kind} hits the whole {spec.target} {cluster}: name no instances")
                return None
            if pct is not None and pct != 100:
                shares = ", ".join(k.name for k in FAULT_KINDS if k.system == system and k.target != spec.target)
                self.add(
                    self.written(i, "failure_percentage"),
                    f"{_num(pct)}%, but {kind} hits all of {cluster}: drop it, or choose a kind that hits a "
                    f"share ({shares})",
                )
                return None
            of = count = len(self.lab.kafka[cluster]) if system == "kafka" else 1
        if system == "sink" and deployments and cluster not in {d.sink_server for d in deployments}:
            writers = ", ".join(f"{d.name} -> {d.sink}" for d in deployments)
            self.add(
                f"{at}.target" if target_cluster else self.written(i, "blast_radius"),
                f"no dagger of the drill writes to {cluster} ({writers}): the fault would test nothing",
            )
            return None
        if not ok:
            return None
        when = e.at if e.at is not None else default_at
        name = e.name or (book.name if i < 0 else f"case {i + 1}")
        return Fault(
            max(i, 0),
            name,
            kind,
            system,
            cluster,
            instances,
            count,
            of,
            pct,
            when,
            downtime,
            True if recovers is None else recovers,
            derived,
        )

    def times(self) -> None:
        book, faults = self.book, self.book.faults
        if not faults:
            return
        warmup = book.timing.warmup
        before = any("before" in h.phases for h in book.steady_state)
        for f in faults:
            where = (
                f"chaos[{f.index}].at"
                if self.as_written and self.as_written[f.index].at is not None
                else (f"chaos[{f.index}]" if self.as_written else "(top level)")
            )
            if f.at < warmup:
                self.add(
                    where,
                    f"{fmt_duration(f.at)} is inside the warm-up (timing.warmup {fmt_duration(warmup)}): "
                    "the daggers and feeders are still starting; start faults after it",
                )
            elif before and f.at == warmup == book.timeline.first_fault:
                self.add(
                    where,
                    f"{fmt_duration(f.at)} is the end of the warm-up: the steady state before has no "
                    "time to be checked; start the first fault later",
                )
        end = book.timeline.end
        if end > MAX_DRILL_S:
            self.add(
                "timing", f"the drill would last {fmt_duration(end)}, above the ceiling of {fmt_duration(MAX_DRILL_S)}"
            )

    # -- hypotheses, safeguards
    def bound(self, where: str, value: Any, probe: Probe) -> float | None:
        if probe.time:
            if not isinstance(value, str):
                self.add(where, f"{value!r} has no unit: this probe is a time, write {value}s or {value}ms")
                return None
            try:
                return duration(value)
            except ValueError as e:
                self.add(where, str(e))
                return None
        if probe.unit == "percent" and isinstance(value, str) and value.strip().endswith("%"):
            try:
                value = float(value.strip()[:-1])
            except ValueError:
                pass
        if isinstance(value, str):
            self.add(where, f"{value!r} is not a number: this probe counts {probe.unit}")
            return None
        if value < 0:
            self.add(where, f"{_num(value)} is below 0 {probe.unit}")
            return None
        if probe.unit == "percent" and value > 100:
            self.add(where, f"{_num(value)}% is above 100%")
            return None
        return float(value)

    def scope(self, where: str, probe: str, of: str | None, deployments: list[Deployment]) -> None:
        if of is None or (self.unloaded and probe != "under_replicated_partitions"):
            return
        daggers = [d.name for d in deployments]
        topics = sorted({f.topic for f in self.book.feeders if f.topic})
        if probe in ("consumer_lag", "end_to_end_latency") and of not in daggers:
            self.add(
                where,
                f"{of!r} is not a dagger of the drill{did_you_mean(of, daggers)} (its daggers: "
                f"{', '.join(daggers) or 'none'})",
            )
        elif probe == "throughput" and of not in daggers and of not in topics:
            self.add(
                where,
                f"{of!r} is neither a dagger of the drill nor a feeder's topic{did_you_mean(of, daggers + topics)}",
            )
        elif probe == "under_replicated_partitions" and of not in self.lab.kafka:
            self.add(where, f"{of!r} is not a Kafka cluster of the lab{did_you_mean(of, self.lab.kafka)}")
        elif probe in ("mirror_lag", "disk_usage"):
            self.add(where, f"{probe} has one scope in the lab: leave of out")

    def steady_state(self, deployments: list[Deployment]) -> None:
        for i, h in enumerate(self.book.steady_state):
            at, probe, t = f"steady_state[{i}]", PROBES[h.probe], h.tolerance
            self.scope(f"{at}.of", h.probe, h.of, deployments)
            given = [k for k in ("max", "min", "range") if getattr(t, k) is not None]
            low = high = None
            if len(given) != 1:
                self.add(
                    f"{at}.tolerance",
                    "give one of max, min or range: [low, high]"
                    if not given
                    else f"give one of max, min or range, not {' and '.join(given)}",
                )
            elif t.max is not None:
                high = self.bound(f"{at}.tolerance.max", t.max, probe)
            elif t.min is not None:
                low = self.bound(f"{at}.tolerance.min", t.min, probe)
            else:
                low = self.bound(f"{at}.tolerance.range[0]", t.range[0], probe)
                high = self.bound(f"{at}.tolerance.range[1]", t.range[1], probe)
                if low is not None and high is not None and low > high:
                    self.add(f"{at}.tolerance.range", f"[{_num(low)}, {_num(high)}]: the low end is above the high end")
            h._bounds = (low, high)
            if not h.phases:
                self.add(f"{at}.phases", "give at least one phase: before, during or after")
            elif len(set(h.phases)) != len(h.phases):
                self.add(f"{at}.phases", "a phase is listed twice")
            if "during" in h.phases and not self.book.faults:
                self.add(f"{at}.phases", "during: the drill has no fault")

    def safeguards(self, deployments: list[Deployment]) -> None:
        for i, s in enumerate(self.book.safeguards):
            at = f"safeguards[{i}]"
            self.scope(f"{at}.of", s.probe, s.of, deployments)
            given = [k for k in ("abort_above", "abort_below") if getattr(s, k) is not None]
            if len(given) != 1:
                self.add(
                    at,
                    "give abort_above or abort_below: the value that aborts the run"
                    if not given
                    else "give abort_above or abort_below, not both",
                )
                continue
            value = self.bound(f"{at}.{given[0]}", getattr(s, given[0]), SAFEGUARD_PROBES[s.probe])
            if value is not None:
                s._threshold = value

    # -- failover
    def failover(self, deployments: list[Deployment]) -> None:
        fo, faults = self.book.failover, self.book.faults
        if fo is None:
            return
        clusters = self.lab.kafka if fo.kind == "kafka" else self.lab.spark
        noun = "Kafka" if fo.kind == "kafka" else "Spark"
        hit = [f for f in faults if f.system == fo.kind]
        if fo.to is not None and fo.to not in clusters:
            self.add(
                "failover.to",
                f"{fo.to!r} is not a {noun} cluster of the lab{did_you_mean(fo.to, clusters)} "
                f"(it has {', '.join(clusters)})",
            )
            return
        if not hit:
            kinds = sorted({f.system for f in faults})
            self.add(
                "failover.kind",
                f"a {fo.kind} failover, but no fault breaks {fo.kind}"
                + (f" (the faults break {', '.join(kinds)})" if kinds else " (the drill has no fault)"),
            )
            return
        if fo.to is None:
            others = [c for c in clusters if c not in {f.cluster for f in hit}]
            if len(others) != 1:
                self.add("failover.to", f"required: which {noun} cluster the daggers move to ({', '.join(clusters)})")
                return
            self.book.failover = fo = fo.model_copy(update={"to": others[0]})
        broken = [f for f in hit if f.cluster == fo.to]
        if broken:
            self.add("failover.to", f"the daggers move to {fo.to}, but chaos[{broken[0].index}] breaks {fo.to}")
            return
        lost = [f for f in hit if self.loses_cluster(f)]
        if not lost:
            f = hit[0]
            need = self.down_needed(f)
            self.add(
                "failover.kind",
                f"a {fo.kind} failover needs {f.cluster} lost, but the faults leave it "
                f"serving: chaos[{f.index}] is {f.describe()}"
                + (f" ({f.cluster} serves until {need} of its {f.of} brokers are down)" if need else ""),
            )
            return
        if fo.kind == "spark":
            moved = [d for d in deployments if d.cluster == lost[0].cluster]
            if deployments and not moved:
                self.add("failover.kind", f"no dagger runs on {lost[0].cluster}: the failover would move nothing")
        first = min(lost, key=lambda f: f.at)
        self.book._failover_fault = first
        if first.recovers and fo.rto_target >= first.downtime:
            self.add(
                "failover.rto_target",
                f"{fmt_duration(fo.rto_target)}, but chaos[{first.index}] is undone after "
                f"{fmt_duration(first.downtime)}: the failover would be measured after "
                "the fault is over; make the downtime longer than the target",
            )
        if fo.fail_back is not None:
            if not first.recovers:
                self.add(
                    "failover.fail_back",
                    f"the daggers cannot move back to {first.cluster}: chaos[{first.index}] "
                    "leaves it lost to the end (instance_recovery false)",
                )
            elif fo.fail_back >= self.book.timing.settle:
                self.add(
                    "failover.fail_back",
                    f"{fmt_duration(fo.fail_back)} after {first.cluster} is back, but "
                    f'"after" is checked {fmt_duration(self.book.timing.settle)} after it '
                    "(timing.settle): fail back within the settle time",
                )

    def down_needed(self, f: Fault) -> int | None:
        if f.system != "kafka":
            return None
        # with fewer than min.insync.replicas brokers up, writes to the cluster stop
        return f.of - self.lab.min_insync.get(f.cluster, 1) + 1

    def loses_cluster(self, f: Fault) -> bool:
        if f.kind not in _TAKES_DOWN:
            return False
        if f.kind in ("cluster-down", "spark-cluster-down"):
            return True
        if f.system == "kafka":
            return f.count >= self.down_needed(f)
        return f.kind == "worker-kill" and f.count >= f.of

    # -- the verdict
    def verify(self, deployments: list[Deployment]) -> None:
        by_name = {d.name: d for d in deployments}
        fed = {f.topic for f in self.book.feeders if f.topic}
        seen: dict[str, int] = {}
        for i, v in enumerate(self.book.verify):
            at = f"verify[{i}]"
            d = by_name.get(v.dagger)
            if d is None and self.unloaded:
                continue
            if d is None:
                self.add(
                    f"{at}.dagger",
                    f"{v.dagger!r} is not a dagger of the drill{did_you_mean(v.dagger, by_name)} "
                    f"(its daggers: {', '.join(by_name) or 'none'})",
                )
                continue
            if v.dagger in seen:
                self.add(f"{at}.dagger", f"{v.dagger} has a verdict already (verify[{seen[v.dagger]}])")
            seen.setdefault(v.dagger, i)
            if d.sink == "log":
                self.add(f"{at}.dagger", f"{d.name} writes to the log sink: nothing is kept to verify")
            if d.windows and v.window not in d.windows:
                self.add(
                    f"{at}.window",
                    f"{fmt_duration(v.window)}, but {d.name} aggregates over "
                    f"{', '.join(fmt_duration(w) for w in d.windows)} windows",
                )
            messages = sorted({f.message for f in self.book.feeders if f.topic in d.reads and f.message})
            for kind, parse in (("keys", parse_key), ("measures", parse_measure)):
                for column, expr in getattr(v, kind).items():
                    if column not in d.columns:
                        self.add(
                            f"{at}.{kind}.{column}",
                            f"{column!r} is not a column {d.name} writes"
                            f"{did_you_mean(column, d.columns)} (its columns: "
                            f"{', '.join(d.columns)})",
                        )
                    try:
                        paths = parse(column, expr).paths
                    except ValueError as e:
                        self.add(f"{at}.{kind}.{column}", str(e))
                        continue
                    self.fed_fields(f"{at}.{kind}.{column}", messages, paths)
            self.fed_fields(f"{at}.where", messages, list(v.where))
            if not v.measures:
                self.add(f"{at}.measures", "give at least one measure to compare")
            both = set(v.keys) & set(v.measures)
            if both:
                self.add(f"{at}.measures", f"{', '.join(sorted(both))} listed as a key and a measure")
            if not fed & set(d.reads):
                self.add(
                    f"{at}.dagger",
                    f"no feeder writes the topics {d.name} reads ({', '.join(d.reads)}): "
                    "the verdict compares what was fed with what the sink holds",
                )

    def fed_fields(self, at: str, messages: list[str], paths) -> None:
        """Each path is a field of every message fed to the dagger (the ledger keeps it)."""
        for path in paths:
            for message in messages:
                if problem := self.field_problem(message, path):
                    self.add(at, problem)
                    break
