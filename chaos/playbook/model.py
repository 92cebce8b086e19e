"""The playbook as pydantic models: feeders, consumers, chaos, hypotheses, safeguards, failover, verify,
timing; and the faults, deployments and timeline a loaded playbook works out."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr

from dagger_runtime.yaml_lines import line_of

from ..catalog import BY_NAME
from .values import (
    BASELINE_S,
    PROBES,
    SAFEGUARD_PROBES,
    Bound,
    DaggerName,
    DrillName,
    Duration,
    FaultKind,
    FeederName,
    FieldPath,
    Flag,
    Hint,
    LongText,
    MessageName,
    Percent,
    PositiveDuration,
    Rate,
    ShortText,
    System,
    Topic,
    Whole,
    _num,
    _shape,
    fmt_duration,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- the model --------------------------------------------------------------------------------------


class Shape(_Model):
    """How a feeder's rate moves (messages a second; `rate` is where it starts):
    constant; steps: up `by` every `every`, to at most `max`; ramp: to `to` over `over`;
    spike: `peak` from `at` for `lasting`, then back to `rate`."""

    kind: Literal["constant", "steps", "ramp", "spike"]
    every: PositiveDuration | None = None
    by: Rate | None = None
    max: Rate | None = None
    to: Rate | None = None
    over: PositiveDuration | None = None
    at: Duration | None = None
    peak: Rate | None = None
    lasting: PositiveDuration | None = None


SHAPE_PARAMS = {
    "constant": ((), ()),
    "steps": (("every", "by"), ("max",)),
    "ramp": (("to", "over"), ()),
    "spike": (("at", "peak", "lasting"), ()),
}


class Feeder(_Model):
    """LOKI's {name, topic, count}; ours: rate, shape, message, hints, key. After load, topic and
    message are filled in (from the playbook's topic and proto_schema) and message is the proto name."""

    name: FeederName
    topic: Topic | None = None
    count: Whole | None = None  # messages to write in all (LOKI)
    rate: Rate | None = None  # messages a second
    shape: Annotated[Shape, BeforeValidator(_shape)] = Shape(kind="constant")
    message: MessageName | None = None
    hints: dict[str, Hint] = {}  # field -> a value, or values to draw from
    key: FieldPath | None = None  # the field whose value keys the Kafka records

    def rate_at(self, t: float) -> float | None:
        """Messages a second `t` seconds into the drill (None: `count` messages as fast as they go)."""
        if self.rate is None:
            return None
        s = self.shape
        if s.kind == "steps":
            return min(self.rate + s.by * math.floor(t / s.every), s.max if s.max is not None else math.inf)
        if s.kind == "ramp":
            return self.rate + (s.to - self.rate) * min(t / s.over, 1.0)
        if s.kind == "spike":
            return s.peak if s.at <= t < s.at + s.lasting else self.rate
        return self.rate


class Consumer(_Model):
    """LOKI's consumers: `count` consumer groups of `consumer_per_group` consumers each."""

    topic: Topic | None = None
    offset: Literal["earliest", "latest"] = "latest"
    count: Whole = 1
    consumer_per_group: Whole = 1
    schema_: MessageName | None = Field(default=None, alias="schema")


class ChaosEntry(_Model):
    """LOKI's chaos case, plus fault, target and at. After load every field is filled in."""

    name: ShortText | None = None
    blast_radius: ShortText | None = None
    type: System | None = None
    failure_percentage: Percent | None = None
    data_disk_failure: Flag | None = None
    instance_recovery: Flag | None = None
    downtime: PositiveDuration | None = None
    fault: FaultKind | None = None
    target: ShortText | None = None
    at: Duration | None = None


class DaggerRef(_Model):
    spec: ShortText  # a dagger spec, relative to the repository
    cluster: ShortText  # a Spark cluster of the lab
    name: DaggerName | None = None  # deploy under this name (default: the spec's)
    # the spec's watermark delay, for this drill: long enough for what its faults hold back (a
    # feeder buffering through an outage sends minutes-old messages when the cluster is back)
    watermark_delay: PositiveDuration | None = None


class Tolerance(_Model):
    max: Bound | None = None
    min: Bound | None = None
    range: tuple[Bound, Bound] | None = None


class Hypothesis(_Model):
    name: ShortText | None = None
    probe: Literal["consumer_lag", "throughput", "under_replicated_partitions", "end_to_end_latency", "mirror_lag"]
    of: ShortText | None = None
    tolerance: Tolerance
    phases: tuple[Literal["before", "during", "after"], ...] = ("before", "after")
    _bounds: tuple[float | None, float | None] = PrivateAttr(default=(None, None))

    @property
    def unit(self) -> str:
        return PROBES[self.probe].unit

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """(lowest, highest) allowed, in the probe's unit (seconds for times); None: no bound."""
        return self._bounds

    def describe(self) -> str:
        low, high = self._bounds
        what = f"{self.probe}" + (f" of {self.of}" if self.of else "")
        if PROBES[self.probe].time:

            def show(x: float) -> str:
                return fmt_duration(x)
        else:

            def show(x: float) -> str:
                return f"{_num(x)} {self.unit}"

        if low is not None and high is not None:
            return f"{what} between {show(low)} and {show(high)}"
        return f"{what} {'<=' if high is not None else '>='} {show(high if high is not None else low)}"


class Safeguard(_Model):
    name: ShortText | None = None
    probe: Literal[
        "consumer_lag", "throughput", "under_replicated_partitions", "end_to_end_latency", "mirror_lag", "disk_usage"
    ]
    of: ShortText | None = None
    abort_above: Bound | None = None
    abort_below: Bound | None = None
    _threshold: float = PrivateAttr(default=0.0)

    @property
    def unit(self) -> str:
        return SAFEGUARD_PROBES[self.probe].unit

    @property
    def threshold(self) -> float:
        """The value past which the run aborts, in the probe's unit."""
        return self._threshold

    def describe(self) -> str:
        side = ">" if self.abort_above is not None else "<"
        value = (
            fmt_duration(self._threshold)
            if SAFEGUARD_PROBES[self.probe].time
            else ("{:g}%".format(self._threshold) if self.unit == "percent" else f"{_num(self._threshold)} {self.unit}")
        )
        return f"abort if {self.probe}{' of ' + self.of if self.of else ''} {side} {value}"


class Failover(_Model):
    kind: Literal["kafka", "spark"]
    to: ShortText | None = None  # default: the lab's other cluster of that kind
    mode: Literal["auto", "command"] = "auto"
    rto_target: PositiveDuration
    # how long after the lost cluster is back the daggers move back to it (by command); none: they stay
    fail_back: PositiveDuration | None = None
    # each dagger is deployed with a standby driver on the lab's other Spark cluster (dagger deploy
    # --standby): spark, it takes the checkpoint's lease the moment the lost cluster's driver is
    # gone; kafka, the failover hands it the new version on the copy (warm, no spark-submit)
    standby: bool = False


def _keys(value: Any) -> Any:
    # a list names columns that are the fed field of the same name
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {v: v for v in value}
    return value


def _measures(value: Any) -> Any:
    if isinstance(value, list):
        raise ValueError(
            "say how each measure follows from the fed messages, as a mapping: "
            "{num_of_bookings: count} or {fare: sum(total_fare)}"
        )
    return value


class Verify(_Model):
    dagger: ShortText
    window: PositiveDuration
    # sink column -> how it follows from a fed message (chaos/verify.py: parse_key, parse_measure)
    keys: Annotated[dict[ShortText, ShortText], BeforeValidator(_keys)] = {}
    measures: Annotated[dict[ShortText, ShortText], BeforeValidator(_measures)]
    where: dict[str, Hint] = {}  # field path -> a value, or values, it must have
    at: Literal["end", "start"] = "end"  # the sink's window time is the window's end or start


class Timing(_Model):
    warmup: Duration = 60.0  # deploys and feeders settle; nothing is checked yet
    settle: Duration = 60.0  # after the last downtime, before "after" is checked
    observe: PositiveDuration = 60.0  # how long "after" is checked, before the verdict


@dataclass(frozen=True)
class Fault:
    """One chaos entry resolved against the lab: what is broken, where, when."""

    index: int
    name: str
    kind: str
    system: str
    cluster: str  # Kafka or Spark cluster, or sink name
    instances: tuple = ()  # broker ids, worker hosts or dagger names named in target; () = chosen at run time
    count: int = 1  # how many instances it hits
    of: int = 1  # how many there are
    percentage: float | None = None
    at: float = 0.0
    downtime: float = 0.0
    recovers: bool = True
    derived: bool = False  # kind derived from LOKI's fields

    @property
    def end(self) -> float:
        return self.at + self.downtime

    def describe(self) -> str:
        target = BY_NAME[self.kind].target
        if target in ("cluster", "sink"):
            whole = f" (all {self.of} brokers)" if self.system == "kafka" else ""
            return f"{self.kind} {self.cluster}{whole}"
        if target == "master":
            return f"{self.kind} {self.cluster}"
        if target == "driver":
            who = ", ".join(self.instances) if self.instances else f"{self.count} of {self.of} daggers"
            return f"{self.kind} {who} on {self.cluster}"
        noun = {"broker": "broker", "worker": "worker"}[target]
        if self.instances:
            plural = "s" if len(self.instances) > 1 else ""
            return f"{self.kind} {self.cluster} {noun}{plural} {', '.join(map(str, self.instances))}"
        share = f", {self.percentage:g}%" if self.percentage is not None else ""
        return f"{self.kind} {self.count} of {self.of} {self.cluster} {noun}s{share}, chosen with the seed"


@dataclass(frozen=True)
class Deployment:
    """A dagger the drill deploys, read from its spec."""

    name: str
    spec: Path
    cluster: str
    job: str  # the spec's own name
    sink: str  # influx | postgres | kafka | log
    reads: Mapping[str, str]  # topic -> the message type the dagger reads it as
    windows: tuple[float, ...]  # window sizes, seconds
    columns: tuple[str, ...]  # output columns
    watermark_delay: float | None = None  # seconds: the playbook's, instead of the spec's

    @property
    def sink_server(self) -> str | None:
        return {"influx": "influxdb", "postgres": "postgresql"}.get(self.sink)


@dataclass(frozen=True)
class Timeline:
    warmup: float  # "before" starts
    first_fault: float  # "before" ends, "during" starts
    last_end: float  # the last downtime ends: "during" ends
    after: float  # "after" starts
    end: float  # "after" ends: the verdict


class Playbook(_Model):
    name: DrillName
    description: LongText = ""
    # LOKI's case fields at the top level: the defaults of every chaos entry
    blast_radius: ShortText | None = None
    type: System | None = None
    failure_percentage: Percent | None = None
    data_disk_failure: Flag | None = None
    instance_recovery: Flag | None = None
    downtime: PositiveDuration | None = None
    # LOKI's traffic: the Kafka cluster it goes to, producer processes, default topic and schema
    cluster: ShortText = "primary"
    producers: Whole = 1
    topic: Topic | None = None
    proto_schema: MessageName | None = None
    proto_class_prefix: MessageName | None = None
    feeders: tuple[Feeder, ...] = ()
    consumers: tuple[Consumer, ...] = ()
    chaos: tuple[ChaosEntry, ...] = ()
    # ours
    daggers: tuple[DaggerRef, ...] = ()
    steady_state: tuple[Hypothesis, ...] = ()
    safeguards: tuple[Safeguard, ...] = ()
    failover: Failover | None = None
    verify: tuple[Verify, ...] = ()
    timing: Timing = Timing()

    _source: str = PrivateAttr(default="<memory>")
    _lines: dict = PrivateAttr(default_factory=dict)
    _faults: tuple = PrivateAttr(default=())
    _deployments: tuple = PrivateAttr(default=())
    _failover_fault: Fault | None = PrivateAttr(default=None)

    @property
    def source(self) -> str:
        return self._source

    @property
    def faults(self) -> tuple[Fault, ...]:
        """The chaos entries resolved against the lab, in the order written."""
        return self._faults

    @property
    def deployments(self) -> tuple[Deployment, ...]:
        return self._deployments

    @property
    def failover_fault(self) -> Fault | None:
        """The first fault that loses the cluster the failover moves away from (None without failover)."""
        return self._failover_fault

    def where(self, name: str) -> str:
        """ "<source>:<line>: <field>" for a field path such as chaos[1].downtime."""
        return f"{self._source}:{line_of(self._lines, name)}: {name}"

    @property
    def timeline(self) -> Timeline:
        warmup = self.timing.warmup
        first = min((f.at for f in self._faults), default=warmup + BASELINE_S)
        last_end = max((f.end for f in self._faults), default=first)
        after = last_end + self.timing.settle
        return Timeline(warmup, first, last_end, after, after + self.timing.observe)
