"""Drill playbooks (chaos/playbooks/<drill>.yaml): LOKI's simulation document, plus what a failover
drill on the lab needs. `load(path)` refuses an invalid playbook before anything is touched, with
every problem as `file:line: field.path: message`.

    from chaos.playbook import load, PlaybookError
    try:
        drill = load("chaos/playbooks/kafka-failover.yaml")
    except PlaybookError as e:
        print("\\n".join(e.problems))

The format (YAML, or JSON: a `.json` file), compactly; durations are LOKI's "90s", "20m", "1h30m":

    name: kafka-failover                 # [a-z0-9][a-z0-9-]{0,62}: it names the run's directory
    description: the primary Kafka cluster is lost; the daggers move to the mirror
    topic: GO_RIDE-booking-log           # LOKI: default topic of feeders and consumers
    proto_schema: gojek.esb.booking.BookingLogMessage    # LOKI: their default message type
    feeders:                             # LOKI's {name, topic, count}, plus rate, shape, message, hints, key
      - {name: bookings, topic: GO_RIDE-booking-log, rate: 40, shape: constant, key: order_number}
    consumers:                           # LOKI's {topic, offset, count (groups), consumer_per_group, schema}
      - {topic: GO_RIDE-booking-log, offset: latest, count: 1, consumer_per_group: 2}
    daggers:                             # deployed at the start: a spec (relative to the repo) on a Spark cluster
      - {spec: examples/daggers/completed_bookings_by_s2.yaml, cluster: blue, name: surge-demand}
    chaos:                               # LOKI's list, plus fault, target, at
      - {name: primary lost, type: kafka, blast_radius: primary, failure_percentage: "100%",
         instance_recovery: "false", downtime: 3m, at: 2m}
    steady_state:                        # hypotheses: a probe, a tolerance in the probe's unit, phases
      - {probe: consumer_lag, tolerance: {max: 5000}, phases: [before, after]}
    safeguards:                          # a probe past its threshold aborts the run
      - {probe: disk_usage, abort_above: 90}
    failover: {kind: kafka, to: mirror, mode: auto, rto_target: 30s}   # fail_back: 10s moves them back
    verify:                              # the data verdict: the dagger's sink against what was fed
      - {dagger: surge-demand, window: 60s, keys: {tag_s2id: "s2id(lat, long, 13)"},
         measures: {num_of_bookings: count}, where: {status: COMPLETED}}
    timing: {warmup: 60s, settle: 60s, observe: 60s}

LOKI's top-level blast_radius, type, failure_percentage, data_disk_failure, instance_recovery and
downtime (its slide writes one case at the top level) are the defaults of every `chaos` entry; with
no `chaos` list they make the drill's one fault.

A chaos entry's `fault` (a kind of chaos/catalog.py) when it names none, from LOKI's fields:

    data_disk_failure "true"                     -> disk-break   (Kafka brokers only)
    type kafka, failure_percentage 100%          -> cluster-down
    type kafka, below 100% or broker ids         -> broker-stop  (that share of the brokers)
    type spark, failure_percentage 100%          -> spark-cluster-down
    type spark, below 100% or worker names       -> worker-kill
    type sink                                    -> sink-down

`target` is `CLUSTER` or `CLUSTER/INSTANCES`: `primary`, `primary/2`, `primary/1,3` (broker ids),
`blue`, `blue/spark-blue-worker`, `influxdb`, or a dagger's name for driver-kill; without it the
cluster is LOKI's blast_radius, else the drill's Kafka cluster (`cluster`, default primary), the
first dagger's Spark cluster, or the one sink the daggers write to. A share of instances is
ceil(n x failure_percentage / 100), at least one; which ones is chosen at run time with the seed.
`instance_recovery` false leaves the fault in place to the end of the drill (rolled back after
the verdict). `at` defaults to warm-up + 60s for the first entry, then to the end of the previous.

The drill's time line: 0 deploy and feed; `timing.warmup` steady state "before" checked up to the
first fault; "during" from the first fault to the end of the last downtime; "after" from `settle`
later for `observe`; then the verdict (chaos/plan.py lists every step).

Names, lines and values are checked against the lab: its inventory (playbooks/inventories/lab:
Kafka clusters and broker ids, Spark clusters, sinks, the topics its ACLs grant on each cluster),
the descriptor set (protos.registry.load()) and the dagger specs themselves.
"""
from __future__ import annotations

import difflib
import json
import math
import re
import types
import typing
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, ValidationError

from dagger_runtime import durations
from dagger_runtime.yaml_lines import Document, Problems, field_name, line_of, read_yaml

from .catalog import BY_NAME, FAULT_KINDS
from .verify import parse_key, parse_measure

REPO = Path(__file__).resolve().parent.parent
PLAYBOOKS_DIR = Path(__file__).resolve().parent / "playbooks"
LAB_INVENTORY = REPO / "playbooks" / "inventories" / "lab"

MAX_DOWNTIME_S = 2 * 3600       # LOKI's longest scenarios are 90 minutes
MAX_DRILL_S = 6 * 3600          # the whole drill, start to verdict
BASELINE_S = 60.0               # default time between the warm-up and the first fault
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
FEEDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
MESSAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
SYSTEMS = ("kafka", "spark", "sink")
PHASES = ("before", "during", "after")


class PlaybookError(ValueError):
    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("invalid drill playbook:\n" + "\n".join(f"  - {p}" for p in self.problems))


_DOC = Document(error=PlaybookError, holds="a drill playbook", gets="the drill does",
                needs="a playbook needs at least a name")


@dataclass(frozen=True)
class Probe:
    unit: str           # what tolerances are written in
    time: bool          # a time: tolerances are durations ("5s")
    what: str


PROBES: dict[str, Probe] = {
    "consumer_lag": Probe("messages", False, "the daggers' combined consumer lag, or one dagger's (of)"),
    "throughput": Probe("messages/s", False, "messages a second read by the daggers, or one dagger or topic (of)"),
    "under_replicated_partitions": Probe("partitions", False, "partitions of a Kafka cluster (of, default the "
                                                              "drill's) with fewer in-sync replicas than replicas"),
    "end_to_end_latency": Probe("seconds", True, "event time to the row in the sink, the daggers' worst or one's"),
    "mirror_lag": Probe("seconds", True, "MirrorMaker's replication latency, primary to mirror"),
}
SAFEGUARD_PROBES: dict[str, Probe] = {
    **PROBES,
    "disk_usage": Probe("percent", False, "the lab's filesystem, used"),
}


# -- scalars: LOKI's strings and ours -----------------------------------------------------------------

def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"text ({value!r})"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def did_you_mean(value: str, choices) -> str:
    close = difflib.get_close_matches(str(value), sorted(choices), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def duration(value: Any) -> float:
    """LOKI's "20m", "90s", "1h30m" (and "500ms") -> seconds (dagger_runtime.durations)."""
    return durations.seconds(value)


def _positive_duration(seconds: float) -> float:
    if seconds <= 0:
        raise ValueError("must be longer than 0s")
    return seconds


def percentage(value: Any) -> float:
    """LOKI's "10%" (or 10) -> 10.0, in (0, 100]."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a percentage such as \"10%\", got {_kind(value)}")
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*%?\s*", value)
        if not m:
            raise ValueError(f"{value!r} is not a percentage: write \"10%\" as LOKI does, or 10")
        value = float(m[1])
    shown = f"{value:g}%"
    if value <= 0:
        raise ValueError(f"{shown} fails nothing: a failure percentage is above 0% and at most 100%")
    if value > 100:
        raise ValueError(f"{shown} is more than every instance: a failure percentage is above 0% and at most 100%")
    return float(value)


def flag(value: Any) -> bool:
    """LOKI's "true"/"false" or a YAML boolean."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(f"{value!r} is not true or false (LOKI writes \"true\" or \"false\"; true and false work too)")


def _text(limit: int, lines: bool = False):
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected text, got {_kind(value)}")
        allowed = ("\n",) if lines else ()
        bad = next((ch for ch in value if ch not in allowed and unicodedata.category(ch) in
                    ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")), None)
        if bad is not None:
            raise ValueError(f"{value!r} has a control or invisible character (U+{ord(bad):04X}): write printable "
                             "text" + ("" if lines else " on one line"))
        if len(value) > limit:
            raise ValueError(f"is {len(value)} characters long; at most {limit}")
        return value
    return check


def _name(pattern: re.Pattern, what: str, rule: str):
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected a name, got {_kind(value)}")
        if not pattern.fullmatch(value):
            raise ValueError(f"{value!r} is not allowed as {what}: {rule}")
        return value
    return check


def topic_name(value: Any) -> str:
    """Kafka's own rule: 1 to 249 of [a-zA-Z0-9._-], not "." or ".."."""
    if not isinstance(value, str):
        raise ValueError(f"expected a topic name, got {_kind(value)}")
    if value in (".", ".."):
        raise ValueError(f"{value!r} cannot be a Kafka topic name")
    if not 1 <= len(value) <= 249:
        raise ValueError(f"a Kafka topic name is 1 to 249 characters; this one is {len(value)}")
    bad = next((ch for ch in value if not TOPIC.fullmatch(ch)), None)
    if bad is not None:
        raise ValueError(f"{value!r} is not a Kafka topic name: {bad!r} is not allowed (letters, digits, '.', "
                         "'_' and '-' only)")
    return value


def message_name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a protobuf message name, got {_kind(value)}")
    if not MESSAGE.fullmatch(value.lstrip(".")):
        raise ValueError(f"{value!r} is not a message name: dotted identifiers, e.g. "
                         "gojek.esb.booking.BookingLogMessage")
    return value.lstrip(".")


def fault_kind(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a fault kind, got {_kind(value)}")
    if value not in BY_NAME:
        raise ValueError(f"{value!r} is not a fault kind{did_you_mean(value, BY_NAME)}; the kinds "
                         f"(chaos/catalog.py): {', '.join(k.name for k in FAULT_KINDS)}")
    return value


def _whole(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {_kind(value)}")
    return value


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {_kind(value)}")
    return value


def _bound(value: Any) -> Any:
    """A tolerance or threshold as written: a number, or text with a unit ("5s", "90%"); checked
    against the probe's unit once the probe is known."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"expected a number or a duration, got {_kind(value)}")
    return value


def _hint(value: Any) -> Any:
    from loadtest.generator import KINDS, MODIFIERS

    scalar = (str, int, float, bool)
    if isinstance(value, scalar) or (isinstance(value, list) and value and all(isinstance(v, scalar) for v in value)):
        return value
    # the generator's own hint kinds ({lat: jakarta}, {range: [1, 9]}...): checked when the run
    # builds its generators, at this line
    if isinstance(value, dict) and value and set(value) <= set(KINDS) | set(MODIFIERS):
        return value
    raise ValueError(f"a hint is a value, a non-empty list of values to draw from, or one of the generator's "
                     f"kinds ({', '.join(KINDS)}) as a mapping, got {_kind(value)}")


def _shape(value: Any) -> Any:
    return {"kind": value} if isinstance(value, str) else value


def _field_path(value: Any) -> str:
    if not isinstance(value, str) or not MESSAGE.fullmatch(value):
        raise ValueError(f"{value!r} is not a field of a message: a field name, or a dotted path "
                         "(driver_location.latitude)")
    return value


Duration = Annotated[float, BeforeValidator(duration)]
PositiveDuration = Annotated[float, BeforeValidator(duration), AfterValidator(_positive_duration)]
Percent = Annotated[float, BeforeValidator(percentage)]
Flag = Annotated[bool, BeforeValidator(flag)]
DrillName = Annotated[str, BeforeValidator(_name(
    NAME, "a drill name", "lowercase letters, digits and '-', starting with a letter or a digit, at most 63 "
                          "characters (it names the run's directory)"))]
DaggerName = Annotated[str, BeforeValidator(_name(
    NAME, "a dagger name", "lowercase letters, digits and '-', starting with a letter or a digit, at most 63 "
                           "characters"))]
FeederName = Annotated[str, BeforeValidator(_name(
    FEEDER_NAME, "a feeder name", "letters, digits, '.', '_' and '-', starting with a letter or a digit, at most "
                                  "63 characters (it names the feeder's files)"))]
ShortText = Annotated[str, BeforeValidator(_text(120))]
LongText = Annotated[str, BeforeValidator(_text(2000, lines=True))]
Topic = Annotated[str, BeforeValidator(topic_name)]
MessageName = Annotated[str, BeforeValidator(message_name)]
FaultKind = Annotated[str, BeforeValidator(fault_kind)]
Whole = Annotated[int, BeforeValidator(_whole), Field(gt=0)]
Rate = Annotated[float, BeforeValidator(_number), Field(gt=0)]
Bound = Annotated[Any, BeforeValidator(_bound)]
Hint = Annotated[Any, BeforeValidator(_hint)]
FieldPath = Annotated[str, BeforeValidator(_field_path)]
System = Literal["kafka", "spark", "sink"]


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


SHAPE_PARAMS = {"constant": ((), ()), "steps": (("every", "by"), ("max",)), "ramp": (("to", "over"), ()),
                "spike": (("at", "peak", "lasting"), ())}


class Feeder(_Model):
    """LOKI's {name, topic, count}; ours: rate, shape, message, hints, key. After load, topic and
    message are filled in (from the playbook's topic and proto_schema) and message is the proto name."""
    name: FeederName
    topic: Topic | None = None
    count: Whole | None = None                  # messages to write in all (LOKI)
    rate: Rate | None = None                    # messages a second
    shape: Annotated[Shape, BeforeValidator(_shape)] = Shape(kind="constant")
    message: MessageName | None = None
    hints: dict[str, Hint] = {}                 # field -> a value, or values to draw from
    key: FieldPath | None = None                # the field whose value keys the Kafka records

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
    spec: ShortText                             # a dagger spec, relative to the repository
    cluster: ShortText                          # a Spark cluster of the lab
    name: DaggerName | None = None              # deploy under this name (default: the spec's)
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
    probe: Literal["consumer_lag", "throughput", "under_replicated_partitions", "end_to_end_latency", "mirror_lag",
                   "disk_usage"]
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
        value = fmt_duration(self._threshold) if SAFEGUARD_PROBES[self.probe].time else \
            ("{:g}%".format(self._threshold) if self.unit == "percent" else f"{_num(self._threshold)} {self.unit}")
        return f"abort if {self.probe}{' of ' + self.of if self.of else ''} {side} {value}"


class Failover(_Model):
    kind: Literal["kafka", "spark"]
    to: ShortText | None = None                 # default: the lab's other cluster of that kind
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
        raise ValueError("say how each measure follows from the fed messages, as a mapping: "
                         "{num_of_bookings: count} or {fare: sum(total_fare)}")
    return value


class Verify(_Model):
    dagger: ShortText
    window: PositiveDuration
    # sink column -> how it follows from a fed message (chaos/verify.py: parse_key, parse_measure)
    keys: Annotated[dict[ShortText, ShortText], BeforeValidator(_keys)] = {}
    measures: Annotated[dict[ShortText, ShortText], BeforeValidator(_measures)]
    where: dict[str, Hint] = {}                 # field path -> a value, or values, it must have
    at: Literal["end", "start"] = "end"         # the sink's window time is the window's end or start


class Timing(_Model):
    warmup: Duration = 60.0                     # deploys and feeders settle; nothing is checked yet
    settle: Duration = 60.0                     # after the last downtime, before "after" is checked
    observe: PositiveDuration = 60.0            # how long "after" is checked, before the verdict


@dataclass(frozen=True)
class Fault:
    """One chaos entry resolved against the lab: what is broken, where, when."""
    index: int
    name: str
    kind: str
    system: str
    cluster: str                # Kafka or Spark cluster, or sink name
    instances: tuple = ()       # broker ids, worker hosts or dagger names named in target; () = chosen at run time
    count: int = 1              # how many instances it hits
    of: int = 1                 # how many there are
    percentage: float | None = None
    at: float = 0.0
    downtime: float = 0.0
    recovers: bool = True
    derived: bool = False       # kind derived from LOKI's fields

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
    job: str                    # the spec's own name
    sink: str                   # influx | postgres | kafka | log
    reads: Mapping[str, str]    # topic -> the message type the dagger reads it as
    windows: tuple[float, ...]  # window sizes, seconds
    columns: tuple[str, ...]    # output columns
    watermark_delay: float | None = None    # seconds: the playbook's, instead of the spec's

    @property
    def sink_server(self) -> str | None:
        return {"influx": "influxdb", "postgres": "postgresql"}.get(self.sink)


@dataclass(frozen=True)
class Timeline:
    warmup: float               # "before" starts
    first_fault: float          # "before" ends, "during" starts
    last_end: float             # the last downtime ends: "during" ends
    after: float                # "after" starts
    end: float                  # "after" ends: the verdict


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
        """"<source>:<line>: <field>" for a field path such as chaos[1].downtime."""
        return f"{self._source}:{line_of(self._lines, name)}: {name}"

    @property
    def timeline(self) -> Timeline:
        warmup = self.timing.warmup
        first = min((f.at for f in self._faults), default=warmup + BASELINE_S)
        last_end = max((f.end for f in self._faults), default=first)
        after = last_end + self.timing.settle
        return Timeline(warmup, first, last_end, after, after + self.timing.observe)


# -- the lab ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lab:
    """What a playbook may name, from the lab's Ansible inventory."""
    kafka: Mapping[str, tuple[int, ...]]                     # cluster -> broker ids
    min_insync: Mapping[str, int]                            # cluster -> min.insync.replicas
    spark: Mapping[str, tuple[str, ...]]                     # cluster -> worker hosts
    sinks: tuple[str, ...]                                   # sink servers: influxdb, postgresql
    topics: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    # cluster -> (topic names, topic prefixes) its ACLs grant; no entry: only the syntax is checked
    source: str = "<memory>"

    def topic_problem(self, cluster: str, topic: str) -> str | None:
        if cluster not in self.topics:
            return None
        names, prefixes = self.topics[cluster]
        if topic in names or any(topic.startswith(p) for p in prefixes):
            return None
        granted = ", ".join([*names, *(p + "*" for p in prefixes)])
        return (f"{topic!r} is not a topic of the lab's {cluster} cluster{did_you_mean(topic, names)}; its ACLs "
                f"({self.source}) grant {granted}")


@lru_cache(maxsize=4)
def lab_inventory(inventory: Path = LAB_INVENTORY) -> Lab:
    inventory = Path(inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    kafka: dict[str, list[int]] = {}
    spark: dict[str, list[str]] = {}
    sinks: list[str] = []
    cluster_groups: dict[str, str] = {}

    def visit(group: str, body: dict, inherited: dict, path: tuple[str, ...]) -> None:
        body = body or {}
        own = {**inherited, **(body.get("vars") or {})}
        if "kafka_cluster" in (body.get("vars") or {}):
            cluster_groups[own["kafka_cluster"]] = group
        for host, host_vars in (body.get("hosts") or {}).items():
            v = {**own, **(host_vars or {})}
            if "kafka_cluster" in v and "kafka_node_id" in v:
                kafka.setdefault(v["kafka_cluster"], []).append(int(v["kafka_node_id"]))
            elif "spark_cluster" in v:
                spark.setdefault(v["spark_cluster"], [])
                if v.get("spark_role") == "worker":
                    spark[v["spark_cluster"]].append(host)
            elif group in ("influxdb", "postgresql"):
                if group not in sinks:
                    sinks.append(group)
        for child, child_body in (body.get("children") or {}).items():
            visit(child, child_body, own, path + (child,))

    visit("all", hosts.get("all", {}), {}, ())
    min_insync: dict[str, int] = {}
    topics: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    for cluster, group in cluster_groups.items():
        path = inventory / "group_vars" / f"{group}.yml"
        if not path.is_file():
            continue
        gv = yaml.safe_load(path.read_text()) or {}
        if "kafka_min_insync_replicas" in gv:
            min_insync[cluster] = int(gv["kafka_min_insync_replicas"])
        names: list[str] = []
        prefixes: list[str] = []
        for acl in gv.get("kafka_acls") or []:
            if acl.get("resource_type") != "TOPIC" or acl.get("name") == "*":
                continue
            target = prefixes if acl.get("pattern_type") == "PREFIXED" else names
            if acl["name"] not in target:
                target.append(acl["name"])
        if names or prefixes:
            topics[cluster] = (tuple(names), tuple(prefixes))
    try:
        label = str(inventory.resolve().relative_to(REPO) / "group_vars")
    except ValueError:
        label = str(inventory / "group_vars")
    return Lab({c: tuple(sorted(ids)) for c, ids in kafka.items()}, min_insync,
               {c: tuple(w) for c, w in spark.items()}, tuple(sinks), topics, label)


@lru_cache(maxsize=1)
def _descriptors():
    from protos import registry
    return registry.load()


# -- loading ----------------------------------------------------------------------------------------

def load(path: str | Path, *, lab: Lab | None = None, descriptors=None, base: Path = REPO) -> Playbook:
    """The playbook at `path` (YAML, or JSON for a .json file), checked; PlaybookError lists every problem."""
    p = Path(path)
    label = _label(p)
    if not p.is_file():
        raise PlaybookError([f"{label}:1: (file): no such file"])
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PlaybookError([f"{label}:1: (file): not UTF-8 text ({e.reason} at byte {e.start})"]) from None
    return parse(text, source=label, json_format=p.suffix.lower() == ".json", lab=lab, descriptors=descriptors,
                 base=base)


def parse(text: str, *, source: str = "<memory>", json_format: bool = False, lab: Lab | None = None,
          descriptors=None, base: Path = REPO) -> Playbook:
    raw, lines = _read(text, source, json_format)
    problems = Problems(source, lines)
    if not isinstance(raw, dict):
        problems.add("(top level)", f"expected a mapping of fields, got {_kind(raw)}")
        raise PlaybookError(problems)
    try:
        book = Playbook.model_validate(raw)
    except ValidationError as e:
        for error in e.errors():
            path = tuple(error["loc"])
            problems.add(field_name(path), _message(error, path))
        raise PlaybookError(_ordered(problems)) from None
    book._source, book._lines = source, lines
    book = _Checker(book, problems, lab or lab_inventory(), descriptors, Path(base)).run()
    if problems:
        raise PlaybookError(_ordered(problems))
    return book


def _ordered(problems: Problems) -> list[str]:
    """By line, each once."""
    def line(p: str) -> int:
        m = re.match(r".*?:(\d+): ", p)
        return int(m[1]) if m else 0
    return sorted(dict.fromkeys(problems), key=line)


def _read(text: str, source: str, json_format: bool) -> tuple[Any, dict]:
    if not json_format:
        return read_yaml(text, source, _DOC)
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        raise PlaybookError([f"{source}:{e.lineno}: (json): not valid JSON: {e.msg} (column {e.colno})"]) from None
    # JSON is YAML (tabs aside, which JSON only allows as blanks): read as YAML for the lines, and
    # keys given twice refused as in YAML
    return read_yaml(text.replace("\t", " "), source, _DOC)


def _label(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


# -- pydantic's errors as the playbook's problems --------------------------------------------------------

def _strip(tp):
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _model_at(path: tuple):
    """The model class at a field path of a playbook, or None."""
    tp: Any = Playbook
    for part in path:
        tp = _strip(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if isinstance(part, int):
                return None
            fields = {(f.alias or n): f for n, f in tp.model_fields.items()}
            if part not in fields:
                return None
            tp = fields[part].annotation
        elif typing.get_origin(tp) in (tuple, list) and isinstance(part, int):
            tp = typing.get_args(tp)[0]
        elif typing.get_origin(tp) is dict:
            tp = typing.get_args(tp)[1]
        else:
            return None
    tp = _strip(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _message(error: dict, path: tuple) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "extra_forbidden":
        model = _model_at(path[:-1])
        known = sorted((f.alias or n) for n, f in model.model_fields.items()) if model else []
        return f"unknown field{did_you_mean(str(path[-1]), known)}; the fields here are {', '.join(known)}"
    if kind == "missing":
        return "required"
    if kind == "value_error":
        return error["msg"].removeprefix("Value error, ")
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        choices = re.findall(r"'([^']*)'", expected)
        return f"{value!r} is not one of {', '.join(choices)}{did_you_mean(str(value), choices)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of fields, got {_kind(value)}"
    if kind in ("tuple_type", "list_type"):
        return f"expected a list, got {_kind(value)}"
    if kind == "string_type":
        return f"expected text, got {_kind(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{value!r} is not a whole number"
    if kind in ("float_type", "float_parsing"):
        return f"{value!r} is not a number"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        return f"{value!r} is out of range: {error['msg'].lower()}"
    return error["msg"]


# -- the checks across fields, against the lab, the schemas and the dagger specs ---------------------------

def _num(x: float) -> str:
    return f"{x:g}"


fmt_duration = durations.text


_DISK = ("disk-break", "disk-fill")
# kinds that take instances out of service (a share of a cluster's brokers or workers, or all of it)
_TAKES_DOWN = {"cluster-down", "broker-stop", "broker-kill", "broker-pause", "network-cut", "disk-break",
               "disk-fill", "spark-cluster-down", "worker-kill"}


class _Checker:
    def __init__(self, book: Playbook, problems: Problems, lab: Lab, descriptors, base: Path):
        self.book, self.problems, self.lab, self.base = book, problems, lab, base
        self._descriptors = descriptors
        self.as_written = book.chaos          # before defaults are filled in
        self.unloaded = 0                     # dagger specs refused: checks naming daggers are moot

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
        from protos.errors import SchemaError
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
                return f"{dotted!r} is not a field of {message}: {parent} has no {part!r}" + \
                       (did_you_mean(part, names) or f" (its fields: {', '.join(names)})")
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
        from dagger_runtime.errors import DaggerError
        from dagger_runtime.sql.translate import translate

        out: list[Deployment] = []
        names: dict[str, int] = {}
        for i, d in enumerate(self.book.daggers):
            if d.cluster not in self.lab.spark:
                self.add(f"daggers[{i}].cluster", f"{d.cluster!r} is not a Spark cluster of the lab"
                                                  f"{did_you_mean(d.cluster, self.lab.spark)} (it has "
                                                  f"{', '.join(self.lab.spark)})")
            path = Path(d.spec) if Path(d.spec).is_absolute() else self.base / d.spec
            if not path.is_file():
                close = did_you_mean(Path(d.spec).name, [p.name for p in path.parent.glob("*")]) \
                    if path.parent.is_dir() else ""
                self.unloaded += 1
                self.add(f"daggers[{i}].spec", f"no dagger spec at {d.spec} (paths are relative to the repository)"
                                               f"{close}")
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
                self.add(f"daggers[{i}]" + (".name" if d.name else ".spec"),
                         f"{name} is deployed already (daggers[{names[name]}]): give one a name of its own")
            names.setdefault(name, i)
            reads = {t: s.proto_class or "JSON" for s in job.streams for t in s.topics}
            out.append(Deployment(name, path, d.cluster, job.name, job.sink.type, reads,
                                  tuple(w.size.millis / 1000 for w in translation.windows),
                                  tuple(translation.output_columns), d.watermark_delay))
        return out

    # -- traffic
    def feeders(self, deployments: list[Deployment]) -> tuple[Feeder, ...]:
        book = self.book
        if book.cluster not in self.lab.kafka:
            self.add("cluster", f"{book.cluster!r} is not a Kafka cluster of the lab"
                                f"{did_you_mean(book.cluster, self.lab.kafka)} (it has {', '.join(self.lab.kafka)})")
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
            elif f.topic is not None and book.cluster in self.lab.kafka and \
                    (problem := self.lab.topic_problem(book.cluster, topic)):
                self.add(f"{at}.topic", problem)
            if f.message is not None:
                message = self.message(f"{at}.message", f.message)
            elif book.proto_schema is not None:
                message = default_message
            else:
                message = None
                self.add(f"{at}.message", "required: the message type this feeder writes (or LOKI's proto_schema "
                                          "at the top level), e.g. gojek.esb.booking.BookingLogMessage")
            if f.rate is None and f.count is None:
                self.add(f"{at}.rate", "give rate (messages a second), count (messages in all, LOKI's), or both")
            self.shape(f"{at}.shape", f.shape, f.rate)
            if message is not None:
                if f.key is not None and (problem := self.field_problem(message, f.key)):
                    self.add(f"{at}.key", problem)
                bad = False
                for hint in f.hints:
                    if (problem := self.field_problem(message, hint)):
                        self.add(f"{at}.hints.{hint}", problem)
                        bad = True
                if f.hints and not bad:
                    self.hint_values(f"{at}.hints", message, f.hints)
                for d in deployments:
                    if topic in d.reads and d.reads[topic] != message:
                        self.add(f"{at}.message", f"{message} written to {topic}, but the dagger {d.name} reads "
                                                  f"{topic} as {d.reads[topic]}")
            out.append(f.model_copy(update={"topic": topic, "message": message}))
        return tuple(out)

    def hint_values(self, at: str, message: str, hints: dict) -> None:
        """The values fit their fields (an enum's names, a number for a number): the generator is
        built here, as the run builds it, so a bad value is refused before anything is touched."""
        from loadtest.generator import HintError, MessageGenerator

        from .feeders import generator_hints

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
                self.add(f"{at}.{param}" if len(needed) == 1 else at,
                         f"a {shape.kind} shape needs {' and '.join(needed)}; {param} is missing")
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
            elif c.topic is not None and book.cluster in self.lab.kafka and \
                    (problem := self.lab.topic_problem(book.cluster, topic)):
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
            self.add("proto_class_prefix", f"{prefix!r} starts no message's name (proto or Java) in the descriptor "
                                           f"set{did_you_mean(prefix, names)}")

    # -- faults
    def chaos(self, deployments: list[Deployment]) -> tuple[list[Fault], tuple[ChaosEntry, ...]]:
        book = self.book
        entries = list(book.chaos)
        top_level = not entries and (book.type is not None or book.downtime is not None)
        if top_level:
            entries = [ChaosEntry()]            # LOKI's one case written at the top level
        faults, resolved = [], []
        previous_end = book.timing.warmup + BASELINE_S
        for i, entry in enumerate(entries):
            fault = self.fault(-1 if top_level else i, entry, deployments, previous_end)
            if fault is None:
                resolved.append(entry)
                continue
            previous_end = fault.end
            faults.append(fault)
            resolved.append(entry.model_copy(update={
                "name": fault.name, "blast_radius": fault.cluster, "type": fault.system,
                "failure_percentage": fault.percentage, "data_disk_failure": fault.kind == "disk-break" or
                bool(entry.data_disk_failure if entry.data_disk_failure is not None else book.data_disk_failure),
                "instance_recovery": fault.recovers, "downtime": fault.downtime, "fault": fault.kind,
                "target": entry.target or fault.cluster, "at": fault.at}))
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
            self.add(f"chaos[{i}].downtime" if i >= 0 else "downtime",
                     "required: how long the fault lasts, as LOKI writes it (\"20m\"), here or at the top level")
            ok = False
        elif downtime > MAX_DOWNTIME_S:
            self.add(self.written(i, "downtime"), f"{fmt_duration(downtime)} is above the ceiling of "
                                                  f"{fmt_duration(MAX_DOWNTIME_S)} (LOKI's longest scenarios are 90m)")
            ok = False
        if kind is not None and system is not None and BY_NAME[kind].system != system:
            k = BY_NAME[kind]
            self.add(f"{at}.fault", f"{kind} breaks {k.system} (a {k.target}), but the type here is {system}: "
                                    f"the {system} kinds are "
                                    f"{', '.join(x.name for x in FAULT_KINDS if x.system == system)}")
            return None
        system = BY_NAME[kind].system if kind is not None else system
        if system is None:
            self.add(f"{at}.type" if i >= 0 else "type",
                     "required: give type (kafka, spark or sink), as LOKI does, or fault (a kind of chaos/catalog.py)")
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
            self.add(f"{at}.target", f"names {target_cluster}, but blast_radius is {blast}: the cluster a fault "
                                     "hits is one; drop one of them or make them agree")
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
            self.add(where, f"{cluster!r} is not a {noun} of the lab{did_you_mean(cluster, known)} (it has "
                            f"{', '.join(known)})")
            return None
        # the kind, from LOKI's fields when not named
        derived = kind is None
        if disk and system != "kafka":
            self.add(self.written(i, "data_disk_failure"), f"a data disk failure breaks a Kafka broker's disk; "
                                                            f"the type here is {system}")
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
            self.add(self.written(i, "data_disk_failure"), f"true, but the fault is {kind}: a data disk failure is "
                                                            "disk-break (or disk-fill); drop one of them")
            return None
        spec = BY_NAME[kind]
        # the instances it hits
        instances: tuple = ()
        if spec.target in ("broker", "worker", "driver"):
            pool: tuple = {"broker": self.lab.kafka.get(cluster, ()), "worker": self.lab.spark.get(cluster, ()),
                           "driver": tuple(d.name for d in deployments if d.cluster == cluster)}[spec.target]
            noun = {"broker": "broker ids", "worker": "worker hosts", "driver": "daggers"}[spec.target]
            if target_instances and pct is not None:
                self.add(self.written(i, "failure_percentage"), f"{_num(pct)}% and {noun} in target "
                                                                f"({e.target}): give one of them")
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
                    self.add(f"{at}.target", f"{', '.join(map(str, missing))} not in {cluster} (its {noun}: "
                                             f"{', '.join(map(str, pool)) or 'none'})")
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
                example = {"broker": f"{cluster}/2", "worker": f"{cluster}/{pool[0] if pool else 'worker'}",
                           "driver": dagger_names[0] if dagger_names else "a dagger's name"}[spec.target]
                self.add(where, f"required for {kind}: how much of {cluster} fails: failure_percentage (LOKI: "
                                f"\"10%\") or {noun} in target ({example})")
                return None
            of = len(pool)
        else:
            if target_instances:
                self.add(f"{at}.target", f"{kind} hits the whole {spec.target} {cluster}: name no instances")
                return None
            if pct is not None and pct != 100:
                shares = ", ".join(k.name for k in FAULT_KINDS if k.system == system and k.target != spec.target)
                self.add(self.written(i, "failure_percentage"),
                         f"{_num(pct)}%, but {kind} hits all of {cluster}: drop it, or choose a kind that hits a "
                         f"share ({shares})")
                return None
            of = count = len(self.lab.kafka[cluster]) if system == "kafka" else 1
        if system == "sink" and deployments and cluster not in {d.sink_server for d in deployments}:
            writers = ", ".join(f"{d.name} -> {d.sink}" for d in deployments)
            self.add(f"{at}.target" if target_cluster else self.written(i, "blast_radius"),
                     f"no dagger of the drill writes to {cluster} ({writers}): the fault would test nothing")
            return None
        if not ok:
            return None
        when = e.at if e.at is not None else default_at
        name = e.name or (book.name if i < 0 else f"case {i + 1}")
        return Fault(max(i, 0), name, kind, system, cluster, instances, count, of, pct, when, downtime,
                     True if recovers is None else recovers, derived)

    def times(self) -> None:
        book, faults = self.book, self.book.faults
        if not faults:
            return
        warmup = book.timing.warmup
        before = any("before" in h.phases for h in book.steady_state)
        for f in faults:
            where = f"chaos[{f.index}].at" if self.as_written and self.as_written[f.index].at is not None else \
                (f"chaos[{f.index}]" if self.as_written else "(top level)")
            if f.at < warmup:
                self.add(where, f"{fmt_duration(f.at)} is inside the warm-up (timing.warmup {fmt_duration(warmup)}): "
                                "the daggers and feeders are still starting; start faults after it")
            elif before and f.at == warmup == book.timeline.first_fault:
                self.add(where, f"{fmt_duration(f.at)} is the end of the warm-up: the steady state before has no "
                                "time to be checked; start the first fault later")
        end = book.timeline.end
        if end > MAX_DRILL_S:
            self.add("timing", f"the drill would last {fmt_duration(end)}, above the ceiling of "
                               f"{fmt_duration(MAX_DRILL_S)}")

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
            self.add(where, f"{of!r} is not a dagger of the drill{did_you_mean(of, daggers)} (its daggers: "
                            f"{', '.join(daggers) or 'none'})")
        elif probe == "throughput" and of not in daggers and of not in topics:
            self.add(where, f"{of!r} is neither a dagger of the drill nor a feeder's topic"
                            f"{did_you_mean(of, daggers + topics)}")
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
                self.add(f"{at}.tolerance", "give one of max, min or range: [low, high]" if not given else
                         f"give one of max, min or range, not {' and '.join(given)}")
            elif t.max is not None:
                high = self.bound(f"{at}.tolerance.max", t.max, probe)
            elif t.min is not None:
                low = self.bound(f"{at}.tolerance.min", t.min, probe)
            else:
                low = self.bound(f"{at}.tolerance.range[0]", t.range[0], probe)
                high = self.bound(f"{at}.tolerance.range[1]", t.range[1], probe)
                if low is not None and high is not None and low > high:
                    self.add(f"{at}.tolerance.range", f"[{_num(low)}, {_num(high)}]: the low end is above the high "
                                                      "end")
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
                self.add(at, "give abort_above or abort_below: the value that aborts the run" if not given else
                         "give abort_above or abort_below, not both")
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
            self.add("failover.to", f"{fo.to!r} is not a {noun} cluster of the lab{did_you_mean(fo.to, clusters)} "
                                    f"(it has {', '.join(clusters)})")
            return
        if not hit:
            kinds = sorted({f.system for f in faults})
            self.add("failover.kind", f"a {fo.kind} failover, but no fault breaks {fo.kind}" +
                     (f" (the faults break {', '.join(kinds)})" if kinds else " (the drill has no fault)"))
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
            self.add("failover.kind", f"a {fo.kind} failover needs {f.cluster} lost, but the faults leave it "
                                      f"serving: chaos[{f.index}] is {f.describe()}" +
                     (f" ({f.cluster} serves until {need} of its {f.of} brokers are down)" if need else ""))
            return
        if fo.kind == "spark":
            moved = [d for d in deployments if d.cluster == lost[0].cluster]
            if deployments and not moved:
                self.add("failover.kind", f"no dagger runs on {lost[0].cluster}: the failover would move nothing")
        first = min(lost, key=lambda f: f.at)
        self.book._failover_fault = first
        if first.recovers and fo.rto_target >= first.downtime:
            self.add("failover.rto_target", f"{fmt_duration(fo.rto_target)}, but chaos[{first.index}] is undone after "
                                            f"{fmt_duration(first.downtime)}: the failover would be measured after "
                                            "the fault is over; make the downtime longer than the target")
        if fo.fail_back is not None:
            if not first.recovers:
                self.add("failover.fail_back", f"the daggers cannot move back to {first.cluster}: chaos[{first.index}] "
                                               "leaves it lost to the end (instance_recovery false)")
            elif fo.fail_back >= self.book.timing.settle:
                self.add("failover.fail_back", f"{fmt_duration(fo.fail_back)} after {first.cluster} is back, but "
                                               f"\"after\" is checked {fmt_duration(self.book.timing.settle)} after it "
                                               "(timing.settle): fail back within the settle time")

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
                self.add(f"{at}.dagger", f"{v.dagger!r} is not a dagger of the drill{did_you_mean(v.dagger, by_name)} "
                                         f"(its daggers: {', '.join(by_name) or 'none'})")
                continue
            if v.dagger in seen:
                self.add(f"{at}.dagger", f"{v.dagger} has a verdict already (verify[{seen[v.dagger]}])")
            seen.setdefault(v.dagger, i)
            if d.sink == "log":
                self.add(f"{at}.dagger", f"{d.name} writes to the log sink: nothing is kept to verify")
            if d.windows and v.window not in d.windows:
                self.add(f"{at}.window", f"{fmt_duration(v.window)}, but {d.name} aggregates over "
                                         f"{', '.join(fmt_duration(w) for w in d.windows)} windows")
            messages = sorted({f.message for f in self.book.feeders if f.topic in d.reads and f.message})
            for kind, parse in (("keys", parse_key), ("measures", parse_measure)):
                for column, expr in getattr(v, kind).items():
                    if column not in d.columns:
                        self.add(f"{at}.{kind}.{column}", f"{column!r} is not a column {d.name} writes"
                                                          f"{did_you_mean(column, d.columns)} (its columns: "
                                                          f"{', '.join(d.columns)})")
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
                self.add(f"{at}.dagger", f"no feeder writes the topics {d.name} reads ({', '.join(d.reads)}): "
                                         "the verdict compares what was fed with what the sink holds")


    def fed_fields(self, at: str, messages: list[str], paths) -> None:
        """Each path is a field of every message fed to the dagger (the ledger keeps it)."""
        for path in paths:
            for message in messages:
                if (problem := self.field_problem(message, path)):
                    self.add(at, problem)
                    break


def playbook_files(directory: Path = PLAYBOOKS_DIR) -> list[Path]:
    return sorted([*directory.glob("*.yaml"), *directory.glob("*.yml"), *directory.glob("*.json")])
