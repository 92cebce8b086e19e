"""A drill's plan: every step the runner takes, at its time from the drill's start. Pure.

    0        deploy the daggers; start the feeders and consumers; safeguards watch to the end
    warmup   steady state "before" checked, up to the first fault
    at       each fault injected (its chaos entry's `at`)
    at       the failover command, for `mode: command`
    at+rto   the failover expected done
    at+down  each fault undone (instance_recovery true); "during" is checked up to the last one
    +back    the daggers moved back to the cluster they lost (failover.fail_back), once they run on
             the other
    +settle  steady state "after" checked for `timing.observe`
    end      traffic stopped, the data verdict, then faults left in place (instance_recovery
             false) rolled back

Steps at the same time come in that order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .catalog import BY_NAME
from .playbook import Playbook, fmt_duration

ACTIONS = (
    "deploy",
    "feed",
    "consume",
    "safeguard",
    "check-before",
    "undo",
    "inject",
    "failover-command",
    "check-during",
    "expect-failover",
    "fail-back",
    "check-after",
    "stop-traffic",
    "verify",
    "rollback",
)


@dataclass(frozen=True)
class Step:
    at: float  # seconds from the drill's start
    action: str  # one of ACTIONS
    what: str
    until: float | None = None  # a check's window ends here

    def to_dict(self) -> dict:
        return asdict(self)


def _rate(feeder) -> str:
    if feeder.rate is None:
        return f"{feeder.count:,} messages as fast as they go"
    s = feeder.shape
    rate = f"{feeder.rate:g}/s"
    if s.kind == "steps":
        rate += f", +{s.by:g}/s every {fmt_duration(s.every)}" + (f" up to {s.max:g}/s" if s.max else "")
    elif s.kind == "ramp":
        rate += f" ramping to {s.to:g}/s over {fmt_duration(s.over)}"
    elif s.kind == "spike":
        rate += f", {s.peak:g}/s at {fmt_duration(s.at)} for {fmt_duration(s.lasting)}"
    total = f", {feeder.count:,} messages in all" if feeder.count else ""
    return rate + total


def plan(book: Playbook) -> list[Step]:
    t = book.timeline
    steps: list[Step] = []
    for d in book.deployments:
        steps.append(Step(0.0, "deploy", f"{d.name} ({d.job}, sink {d.sink}) on {d.cluster}"))
    for f in book.feeders:
        steps.append(Step(0.0, "feed", f"{f.name}: {_rate(f)} of {f.message} to {f.topic}"))
    for c in book.consumers:
        steps.append(
            Step(
                0.0, "consume", f"{c.count} group(s) of {c.consumer_per_group} consumer(s) on {c.topic} from {c.offset}"
            )
        )
    for s in book.safeguards:
        steps.append(Step(0.0, "safeguard", s.describe(), t.end))
    for phase, start, end in (
        ("before", t.warmup, t.first_fault),
        ("during", t.first_fault, t.last_end),
        ("after", t.after, t.end),
    ):
        for h in book.steady_state:
            if phase in h.phases:
                steps.append(Step(start, f"check-{phase}", h.describe(), end))
    for f in book.faults:
        left = "" if f.recovers else ", left in place to the end"
        steps.append(Step(f.at, "inject", f"{f.name}: {f.describe()} for {fmt_duration(f.downtime)}{left}"))
        if f.recovers:
            steps.append(Step(f.end, "undo", f"{f.name}: {_undo(f)}"))
    fo, trigger = book.failover, book.failover_fault
    if fo is not None and trigger is not None:
        if fo.mode == "command":
            steps.append(Step(trigger.at, "failover-command", f"move the daggers to {fo.to} ({fo.kind})"))
        steps.append(
            Step(
                trigger.at + fo.rto_target,
                "expect-failover",
                f"daggers on {fo.to} ({fo.kind}, {fo.mode}): rto target {fmt_duration(fo.rto_target)} "
                f"from {trigger.name}",
            )
        )
        if fo.fail_back is not None:
            steps.append(
                Step(
                    trigger.end + fo.fail_back,
                    "fail-back",
                    f"move the daggers back to {trigger.cluster} ({fo.kind}) once they run on {fo.to}",
                )
            )
    steps.append(Step(t.end, "stop-traffic", "stop the feeders and consumers"))
    for v in book.verify:
        d = next(d for d in book.deployments if d.name == v.dagger)
        keys = ", ".join(v.keys) or "no keys"
        steps.append(
            Step(
                t.end,
                "verify",
                f"{v.dagger}: {d.sink} rows per {fmt_duration(v.window)} window by "
                f"{keys}: {', '.join(v.measures)} against what was fed",
            )
        )
    for f in book.faults:
        if not f.recovers:
            steps.append(Step(t.end, "rollback", f"{f.name}: {_undo(f)}"))
    order = {a: i for i, a in enumerate(ACTIONS)}
    return sorted(steps, key=lambda s: (s.at, order[s.action]))


def _undo(fault) -> str:
    return f"{BY_NAME[fault.kind].undo} ({fault.describe()})"


def render(book: Playbook, steps: list[Step]) -> str:
    """The plan as text: one line a step, the time first."""
    t = book.timeline
    lines = [
        f"drill {book.name}: {len(book.faults)} fault(s), {fmt_duration(t.end)} in all "
        f"(warm-up {fmt_duration(t.warmup)}, first fault at {fmt_duration(t.first_fault)}, "
        f"verdict at {fmt_duration(t.end)})"
    ]
    width = max(len(s.action) for s in steps) if steps else 0
    for s in steps:
        until = f"  (until {fmt_duration(s.until)})" if s.until is not None else ""
        lines.append(f"  {fmt_duration(s.at):>7}  {s.action:<{width}}  {s.what}{until}")
    return "\n".join(lines)
