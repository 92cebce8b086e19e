"""A playbook's constants, its error, the probes, and its scalar values: LOKI's strings and ours."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from dagger_runtime import durations
from dagger_runtime.suggest import closest
from dagger_runtime.yaml_lines import Document

from ..catalog import BY_NAME, FAULT_KINDS

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS_DIR = REPO / "chaos" / "drills"
LAB_INVENTORY = REPO / "playbooks" / "inventories" / "lab"

MAX_DOWNTIME_S = 2 * 3600  # LOKI's longest scenarios are 90 minutes
MAX_DRILL_S = 6 * 3600  # the whole drill, start to verdict
BASELINE_S = 60.0  # default time between the warm-up and the first fault
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


_DOC = Document(
    error=PlaybookError, holds="a drill playbook", gets="the drill does", needs="a playbook needs at least a name"
)


@dataclass(frozen=True)
class Probe:
    unit: str  # what tolerances are written in
    time: bool  # a time: tolerances are durations ("5s")
    what: str


PROBES: dict[str, Probe] = {
    "consumer_lag": Probe("messages", False, "the daggers' combined consumer lag, or one dagger's (of)"),
    "throughput": Probe("messages/s", False, "messages a second read by the daggers, or one dagger or topic (of)"),
    "under_replicated_partitions": Probe(
        "partitions",
        False,
        "partitions of a Kafka cluster (of, default the drill's) with fewer in-sync replicas than replicas",
    ),
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
    close = closest(value, choices)
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
        raise ValueError(f'expected a percentage such as "10%", got {_kind(value)}')
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*%?\s*", value)
        if not m:
            raise ValueError(f'{value!r} is not a percentage: write "10%" as LOKI does, or 10')
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
    raise ValueError(f'{value!r} is not true or false (LOKI writes "true" or "false"; true and false work too)')


def _text(limit: int, lines: bool = False):
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected text, got {_kind(value)}")
        allowed = ("\n",) if lines else ()
        bad = next(
            (
                ch
                for ch in value
                if ch not in allowed and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
            ),
            None,
        )
        if bad is not None:
            raise ValueError(
                f"{value!r} has a control or invisible character (U+{ord(bad):04X}): write printable "
                "text" + ("" if lines else " on one line")
            )
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
        raise ValueError(
            f"{value!r} is not a Kafka topic name: {bad!r} is not allowed (letters, digits, '.', '_' and '-' only)"
        )
    return value


def message_name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a protobuf message name, got {_kind(value)}")
    if not MESSAGE.fullmatch(value.lstrip(".")):
        raise ValueError(
            f"{value!r} is not a message name: dotted identifiers, e.g. gojek.esb.booking.BookingLogMessage"
        )
    return value.lstrip(".")


def fault_kind(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a fault kind, got {_kind(value)}")
    if value not in BY_NAME:
        raise ValueError(
            f"{value!r} is not a fault kind{did_you_mean(value, BY_NAME)}; the kinds "
            f"(chaos/catalog.py): {', '.join(k.name for k in FAULT_KINDS)}"
        )
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
    raise ValueError(
        f"a hint is a value, a non-empty list of values to draw from, or one of the generator's "
        f"kinds ({', '.join(KINDS)}) as a mapping, got {_kind(value)}"
    )


def _shape(value: Any) -> Any:
    return {"kind": value} if isinstance(value, str) else value


def _field_path(value: Any) -> str:
    if not isinstance(value, str) or not MESSAGE.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a field of a message: a field name, or a dotted path (driver_location.latitude)"
        )
    return value


Duration = Annotated[float, BeforeValidator(duration)]
PositiveDuration = Annotated[float, BeforeValidator(duration), AfterValidator(_positive_duration)]
Percent = Annotated[float, BeforeValidator(percentage)]
Flag = Annotated[bool, BeforeValidator(flag)]
DrillName = Annotated[
    str,
    BeforeValidator(
        _name(
            NAME,
            "a drill name",
            "lowercase letters, digits and '-', starting with a letter or a digit, at most 63 "
            "characters (it names the run's directory)",
        )
    ),
]
DaggerName = Annotated[
    str,
    BeforeValidator(
        _name(
            NAME,
            "a dagger name",
            "lowercase letters, digits and '-', starting with a letter or a digit, at most 63 characters",
        )
    ),
]
FeederName = Annotated[
    str,
    BeforeValidator(
        _name(
            FEEDER_NAME,
            "a feeder name",
            "letters, digits, '.', '_' and '-', starting with a letter or a digit, at most "
            "63 characters (it names the feeder's files)",
        )
    ),
]
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


def _num(x: float) -> str:
    return f"{x:g}"


fmt_duration = durations.text
