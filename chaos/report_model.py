"""The contract of a drill's `report.json` (schema 1): what the drill runner writes and the report
reads, checked strictly enough that a bug in the runner is refused here rather than drawn.

    report = load_report("out/drills/<run>/report.json")     # ReportError says what is wrong, where

Times: `run.started_at`/`ended_at`, `faults[].injected_at`/`undone_at` and `events[].at` are ISO 8601
with a UTC offset (or epoch seconds); they are held as UTC datetimes. `timeline.t` is epoch seconds.

Rules beyond the types (each refused with the field's path and the numbers):
  * counts, seconds, rates and lags are >= 0, no NaN or infinity; unknown keys are refused (a typo
    in the runner would otherwise drop a field silently)
  * per case: windows_expected == windows_matched + windows_missing + windows_wrong (an extra window
    is one that was not expected, so it is not part of expected); no more example rows than the
    count they illustrate; rto_steps add up to at most rto_seconds; a passing case lost nothing
    (no missing or wrong window) and met its RTO target
  * per hypothesis: tolerance has max and/or min; `ok` agrees with value and tolerance; a
    hypothesis never measured has value and ok null
  * times: started_at <= ended_at; each fault injected_at <= undone_at; faults and events fall
    inside the run; timeline.t strictly increases and lies inside the run (a few seconds of
    slack), and every series has one value (or null) per t
  * fault kinds are the catalogue's (chaos/catalog.py); case and fault names are unique
  * verdict "pass" needs every case passed, every hypothesis ok and every fault undone; "fail" and
    "aborted" need at least one reason
  * produced.by_topic, when given, adds up to produced.messages

Events are kept in time order (sorted on load); the runner may append them from several threads.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from chaos.catalog import BY_NAME as FAULT_KINDS

SCHEMA = 1
# timeline samples may start a little before run.started_at and end a little after ended_at
TIMELINE_SLACK_SECONDS = 5.0
# rto_steps are rounded by the runner: their sum may exceed rto_seconds by this much
RTO_STEPS_SLACK_SECONDS = 0.5

Count = Annotated[int, Field(ge=0)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Number = Annotated[float, Field(allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1)]


class ReportError(ValueError):
    """A report.json that cannot be read or breaks the contract; `problems` holds one line each."""

    def __init__(self, path: str | Path | None, problems: list[str]):
        self.path = str(path) if path is not None else None
        self.problems = problems
        where = f"{self.path}: " if self.path else ""
        if len(problems) == 1:
            super().__init__(f"{where}{problems[0]}")
        else:
            super().__init__(f"{where}{len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


def _utc(value: datetime) -> datetime:
    return value.astimezone(timezone.utc)


def iso(value: datetime | None) -> str:
    """2026-11-23T15:26:58Z (and .ffffff when there are microseconds); '' for None."""
    if value is None:
        return ""
    text = _utc(value).isoformat()
    return text.replace("+00:00", "Z")


class Drill(_Strict):
    name: Name
    description: str = ""
    playbook: str
    type: Name
    blast_radius: Name


class Run(_Strict):
    id: Name
    started_at: AwareDatetime
    ended_at: AwareDatetime
    host: str
    git_commit: str | None = None
    seed: int | None = None

    @field_validator("started_at", "ended_at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return _utc(value)

    @model_validator(mode="after")
    def _ordered(self) -> Run:
        if self.ended_at < self.started_at:
            raise ValueError(f"ended_at {iso(self.ended_at)} is before started_at {iso(self.started_at)}")
        return self

    @property
    def duration_seconds(self) -> float:
        return (self.ended_at - self.started_at).total_seconds()


class Tolerance(_Strict):
    max: Number | None = None
    min: Number | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Tolerance:
        if self.max is None and self.min is None:
            raise ValueError("tolerance needs max or min (or both)")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise ValueError(f"tolerance min {self.min:g} is above max {self.max:g}")
        return self

    def admits(self, value: float) -> bool:
        return (self.max is None or value <= self.max) and (self.min is None or value >= self.min)

    def describe(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        if self.max is not None and self.min is not None:
            return f"{self.min:g} to {self.max:g}{u}"
        if self.max is not None:
            return f"≤ {self.max:g}{u}"
        return f"≥ {self.min:g}{u}"


class Hypothesis(_Strict):
    name: Name
    probe: str
    unit: str = ""
    tolerance: Tolerance
    phase: Literal["before", "during", "after"]
    value: Number | None
    ok: bool | None

    @model_validator(mode="after")
    def _ok_agrees(self) -> Hypothesis:
        if self.value is None:
            if self.ok is not None:
                raise ValueError(
                    f"hypothesis {self.name!r}: ok is {str(self.ok).lower()} but value is null "
                    "(a hypothesis never measured has ok null)"
                )
            return self
        if self.ok is None:
            raise ValueError(f"hypothesis {self.name!r}: value {self.value:g} was measured but ok is null")
        admitted = self.tolerance.admits(self.value)
        if self.ok != admitted:
            raise ValueError(
                f"hypothesis {self.name!r}: ok is {str(self.ok).lower()} but value {self.value:g} "
                f"is {'within' if admitted else 'outside'} tolerance "
                f"{self.tolerance.describe(self.unit)}"
            )
        return self


class Fault(_Strict):
    name: Name
    kind: Name
    target: str
    injected_at: AwareDatetime
    undone_at: AwareDatetime | None = None
    undo_ok: bool
    error: str | None = None

    @field_validator("injected_at", "undone_at")
    @classmethod
    def _in_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else _utc(value)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; the catalogue's: {', '.join(sorted(FAULT_KINDS))}")
        return kind

    @model_validator(mode="after")
    def _ordered(self) -> Fault:
        if self.undone_at is not None and self.undone_at < self.injected_at:
            raise ValueError(
                f"fault {self.name!r}: undone_at {iso(self.undone_at)} is before injected_at {iso(self.injected_at)}"
            )
        if self.undo_ok and self.undone_at is None:
            raise ValueError(f"fault {self.name!r}: undo_ok is true but undone_at is null")
        return self


class Event(_Strict):
    at: AwareDatetime
    kind: Literal["fault", "undo", "failover", "fail-back", "deploy", "first-batch", "abort", "note"]
    text: str

    @field_validator("at")
    @classmethod
    def _in_utc(cls, value: datetime) -> datetime:
        return _utc(value)


Series = list[Annotated[float, Field(allow_inf_nan=False)] | None]


class Timeline(_Strict):
    t: list[Number] = []
    throughput: Series | None = None
    processed: Series | None = None
    consumer_lag: Series | None = None
    latency_ms: Series | None = None
    mirror_lag: Series | None = None

    SERIES: ClassVar[tuple[str, ...]] = ("throughput", "processed", "consumer_lag", "latency_ms", "mirror_lag")

    @model_validator(mode="after")
    def _aligned(self) -> Timeline:
        problems = []
        for i in range(1, len(self.t)):
            if self.t[i] <= self.t[i - 1]:
                problems.append(
                    f"t must strictly increase: t[{i}] = {self.t[i]:g} after t[{i - 1}] = {self.t[i - 1]:g}"
                )
                break
        for name in self.SERIES:
            values = getattr(self, name)
            if values is None:
                continue
            if len(values) != len(self.t):
                problems.append(f"{name} has {len(values)} values for {len(self.t)} times in t")
            negative = next((i for i, v in enumerate(values) if v is not None and v < 0), None)
            if negative is not None:
                problems.append(f"{name}[{negative}] = {values[negative]:g} is negative")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def series(self, name: str) -> list[float | None] | None:
        """A series with at least one value, else None (missing, empty or all null)."""
        values = getattr(self, name)
        if not values or all(v is None for v in values):
            return None
        return values


class RtoStep(_Strict):
    step: Name
    seconds: Seconds


class WrongWindow(_Strict):
    window: Any
    key: Any
    expected: Any
    got: Any


class Examples(_Strict):
    missing: list[Any] = []
    extra: list[Any] = []
    wrong: list[WrongWindow] = []
    late: list[Any] = []  # missing or wrong windows that late messages fell in


class Case(_Strict):
    name: Name
    dagger: Name
    failover: Literal["kafka", "spark"] | None = None
    rto_seconds: Seconds | None = None
    rto_target_seconds: Seconds | None = None
    rto_steps: list[RtoStep] = []
    standby: bool = False  # a standby driver took the checkpoint over (failover.standby)
    # rows the dagger dropped behind its watermark (its metrics, sampled): why windows may be missing
    late_rows_dropped: Count | None = None
    # messages it set aside to its dead letters as late (their window had closed): kept, not lost
    late_messages: Count | None = None
    windows_late: Count | None = None  # missing or wrong windows that late messages fell in
    windows_expected: Count
    windows_matched: Count
    windows_missing: Count
    windows_extra: Count
    windows_wrong: Count
    rpo_seconds: Seconds | None = None
    rpo_messages: Count | None = None
    # failover.fail_back: the cluster it moved back to, and from that move to its first batch there
    fail_back_to: Name | None = None
    fail_back_seconds: Seconds | None = None
    verdict: Literal["pass", "fail"]
    examples: Examples = Examples()

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        problems = []
        accounted = self.windows_matched + self.windows_missing + self.windows_wrong
        if self.windows_expected != accounted:
            problems.append(
                f"windows_expected ({self.windows_expected}) != windows_matched + windows_missing + windows_wrong "
                f"({self.windows_matched} + {self.windows_missing} + {self.windows_wrong} = {accounted})"
            )
        for kind in ("missing", "extra", "wrong", "late"):
            shown, count = len(getattr(self.examples, kind)), getattr(self, f"windows_{kind}") or 0
            if shown > count:
                problems.append(f"examples.{kind} has {shown} rows but windows_{kind} is {count}")
        if self.windows_late is not None and self.windows_late > self.windows_missing + self.windows_wrong:
            problems.append(f"windows_late ({self.windows_late}) is more than the missing and wrong windows")
        if self.rto_steps:
            total = sum(s.seconds for s in self.rto_steps)
            if self.rto_seconds is None:
                problems.append("rto_steps are given but rto_seconds is null")
            elif total > self.rto_seconds + RTO_STEPS_SLACK_SECONDS:
                problems.append(f"rto_steps add up to {total:g} s, more than rto_seconds {self.rto_seconds:g} s")
        if self.verdict == "pass":
            if self.windows_missing or self.windows_wrong:
                problems.append(
                    f"verdict is pass but {self.windows_missing} windows are missing and {self.windows_wrong} wrong"
                )
            if (
                self.rto_seconds is not None
                and self.rto_target_seconds is not None
                and self.rto_seconds > self.rto_target_seconds
            ):
                problems.append(
                    f"verdict is pass but rto_seconds {self.rto_seconds:g} is above "
                    f"rto_target_seconds {self.rto_target_seconds:g}"
                )
        if problems:
            raise ValueError(f"case {self.name!r}: " + "; ".join(problems))
        return self

    @property
    def rto_met(self) -> bool | None:
        if self.rto_seconds is None or self.rto_target_seconds is None:
            return None
        return self.rto_seconds <= self.rto_target_seconds


class Produced(_Strict):
    messages: Count
    by_topic: dict[str, Count] = {}
    failed: Count = 0

    @model_validator(mode="after")
    def _adds_up(self) -> Produced:
        if self.by_topic and sum(self.by_topic.values()) != self.messages:
            raise ValueError(f"by_topic adds up to {sum(self.by_topic.values())}, not messages ({self.messages})")
        return self


class Report(_Strict):
    schema_: Literal[1] = Field(alias="schema")
    drill: Drill
    run: Run
    verdict: Literal["pass", "fail", "aborted"]
    verdict_reasons: list[str] = []
    hypotheses: list[Hypothesis] = []
    faults: list[Fault] = []
    events: list[Event] = []
    timeline: Timeline = Timeline()
    cases: list[Case] = []
    produced: Produced

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("events")
    @classmethod
    def _in_time_order(cls, events: list[Event]) -> list[Event]:
        return sorted(events, key=lambda e: e.at)

    @model_validator(mode="after")
    def _consistent(self) -> Report:
        problems: list[str] = []
        start, end = self.run.started_at, self.run.ended_at
        window = f"the run ({iso(start)} .. {iso(end)})"

        for field, items in (("cases", self.cases), ("faults", self.faults)):
            seen: set[str] = set()
            for i, item in enumerate(items):
                if item.name in seen:
                    problems.append(f"{field}[{i}]: name {item.name!r} is used twice")
                seen.add(item.name)

        for i, f in enumerate(self.faults):
            for attr in ("injected_at", "undone_at"):
                at = getattr(f, attr)
                if at is not None and not start <= at <= end:
                    problems.append(f"faults[{i}] ({f.name}): {attr} {iso(at)} is outside {window}")
        for e in self.events:
            if not start <= e.at <= end:
                problems.append(f"events ({e.kind} {e.text!r}): at {iso(e.at)} is outside {window}")
        if self.timeline.t:
            t0, t1 = self.timeline.t[0], self.timeline.t[-1]
            lo, hi = start.timestamp() - TIMELINE_SLACK_SECONDS, end.timestamp() + TIMELINE_SLACK_SECONDS
            if t0 < lo or t1 > hi:
                problems.append(
                    f"timeline.t spans {t0:.3f} .. {t1:.3f} (epoch seconds), outside {window} "
                    f"= {start.timestamp():.3f} .. {end.timestamp():.3f} "
                    f"(milliseconds or seconds since the start instead of epoch seconds?)"
                )

        if self.verdict == "pass":
            failed = [c.name for c in self.cases if c.verdict != "pass"]
            if failed:
                problems.append(f"verdict is pass but cases failed: {', '.join(failed)}")
            not_ok = [h.name for h in self.hypotheses if h.ok is not True]
            if not_ok:
                problems.append(
                    f"verdict is pass but hypotheses are not ok (failed or not measured): {', '.join(not_ok)}"
                )
            not_undone = [f.name for f in self.faults if not f.undo_ok]
            if not_undone:
                problems.append(f"verdict is pass but faults were not undone: {', '.join(not_undone)}")
        elif not [r for r in self.verdict_reasons if r.strip()]:
            problems.append(f"verdict is {self.verdict} but verdict_reasons is empty: say why")

        if problems:
            raise ValueError("; ".join(problems))
        return self

    # conveniences for the report writers
    @property
    def t0(self) -> float:
        """Epoch seconds of the run's start: the origin of every relative time in the report."""
        return self.run.started_at.timestamp()

    def since_start(self, at: datetime | float | None) -> float | None:
        if at is None:
            return None
        return (at.timestamp() if isinstance(at, datetime) else float(at)) - self.t0


def _location(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith(("function-", "json-or-python")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(report)"


def format_errors(error: ValidationError) -> list[str]:
    """One line per pydantic error: `cases[1]: case 'x': windows_expected (10) != ...`."""
    lines = []
    for e in error.errors(include_url=False):
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        where = _location(tuple(p for p in e["loc"] if not (isinstance(p, str) and "[" in p)))
        if e["type"] in ("missing", "extra_forbidden"):
            msg = "required field is missing" if e["type"] == "missing" else "unknown field (not in schema 1)"
        elif e["type"] == "literal_error" and "input" in e:
            msg = f"{msg}, got {e['input']!r}"
        lines.append(msg if where == "(report)" else f"{where}: {msg}")
    return lines


def parse_report(data: Any, source: str | Path | None = None) -> Report:
    """A Report from the decoded JSON; ReportError with every problem found."""
    if not isinstance(data, dict):
        raise ReportError(source, [f"a report is a JSON object, not {type(data).__name__}"])
    if data.get("schema") != SCHEMA:
        raise ReportError(source, [f"schema: this reader knows schema {SCHEMA}, the file says {data.get('schema')!r}"])
    try:
        return Report.model_validate(data)
    except ValidationError as e:
        raise ReportError(source, format_errors(e)) from None


def load_report(path: str | Path) -> Report:
    """Read and check a report.json; ReportError (a ValueError) says what is wrong and where."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(path, ["no such file"]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(path, [f"cannot read: {e}"]) from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise ReportError(path, [f"not JSON: {e.msg} at line {e.lineno} column {e.colno}"]) from None
    except ValueError as e:
        raise ReportError(path, [str(e)]) from None
    return parse_report(data, path)


def _refuse_constant(name: str) -> float:
    raise ValueError(f"not JSON: {name} is not a number in JSON (the runner wrote a NaN or infinity)")


def dump_report(report: Report) -> dict:
    """The report as JSON-ready data, in the contract's shape (schema first, times ISO 8601 Z)."""
    return report.model_dump(mode="json", by_alias=True)


__all__ = [
    "Report",
    "ReportError",
    "load_report",
    "parse_report",
    "dump_report",
    "format_errors",
    "iso",
    "Drill",
    "Run",
    "Hypothesis",
    "Tolerance",
    "Fault",
    "Event",
    "Timeline",
    "Case",
    "RtoStep",
    "WrongWindow",
    "Examples",
    "Produced",
    "SCHEMA",
]
