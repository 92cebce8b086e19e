"""Load shapes for locust: how many producing users, and how fast they start, at each second.

A shape is a small dict (or JSON), in messages a second; each user produces `per_user_rate`
messages a second (locust's constant_throughput), so a rate is users x per_user_rate and must be
a multiple of it (a stage may give "users" instead of "rate"):

    {"shape": "constant", "rate": 200, "duration_s": 60}
    {"shape": "steps", "steps": [{"rate": 100, "duration_s": 30}, {"rate": 300, "duration_s": 30}]}
    {"shape": "ramp", "from_rate": 50, "to_rate": 500, "duration_s": 120, "step_s": 10}
    {"shape": "spike", "rate": 100, "spike_rate": 1000, "spike_at_s": 30, "spike_s": 10, "duration_s": 90}

Common keys: "per_user_rate" (default 10) and "spawn_rate" (users started or stopped a second;
default: the largest user count, so every change takes about a second).

The plans here are plain Python (importing locust monkey-patches the process with gevent);
loadtest/locustfile.py turns one into locust's LoadTestShape. `python -m loadtest shapes FILE`
prints a plan and the locust command line that runs it.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
from dataclasses import dataclass
from typing import Any

from .settings import load_json_or_file

__all__ = ["Plan", "Stage", "ShapeError", "plan_from_config", "SHAPES"]

SHAPES = ("constant", "steps", "ramp", "spike")
DEFAULT_PER_USER_RATE = 10.0


class ShapeError(ValueError):
    """A shape config that cannot be run, naming the key and what is wrong."""


@dataclass(frozen=True)
class Stage:
    start_s: float
    end_s: float
    users: int


@dataclass(frozen=True)
class Plan:
    """Stages of constant user counts back to back from t=0; the test ends after the last."""

    name: str
    stages: tuple[Stage, ...]
    per_user_rate: float
    spawn_rate: float

    @property
    def duration_s(self) -> float:
        return self.stages[-1].end_s

    def tick(self, run_time_s: float) -> tuple[int, float] | None:
        """What locust's LoadTestShape.tick returns at `run_time_s`: (users, spawn rate), None at the end."""
        for s in self.stages:
            if run_time_s < s.end_s:
                return s.users, self.spawn_rate
        return None

    def rate_at(self, run_time_s: float) -> float:
        t = self.tick(run_time_s)
        return 0.0 if t is None else t[0] * self.per_user_rate

    def nominal_messages(self) -> float:
        """Messages if every user ran at its rate from each stage's first instant (spawning ignored)."""
        return sum(s.users * self.per_user_rate * (s.end_s - s.start_s) for s in self.stages)

    def describe(self) -> list[str]:
        lines = [
            f"{self.name}: {self.duration_s:g} s, {self.per_user_rate:g} msg/s per user, "
            f"spawn rate {self.spawn_rate:g} users/s, about {self.nominal_messages():,.0f} messages"
        ]
        for s in self.stages:
            lines.append(
                f"  {s.start_s:7g} s - {s.end_s:7g} s  {s.users:5d} users  {s.users * self.per_user_rate:9g} msg/s"
            )
        return lines


def _number(
    cfg: dict, key: str, where: str, *, default: Any = None, positive: bool = True, allow_zero: bool = False
) -> float:
    if key not in cfg:
        if default is None:
            raise ShapeError(f"{where}: missing {key!r}")
        return default
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ShapeError(f"{where}.{key}: {v!r} is not a number")
    if positive and (v < 0 or (v == 0 and not allow_zero)):
        raise ShapeError(f"{where}.{key}: must be {'>= 0' if allow_zero else '> 0'}, not {v!r}")
    return float(v)


def _users(cfg: dict, where: str, per_user_rate: float, rate_key: str = "rate") -> int:
    """Users of a stage from its rate (a multiple of per_user_rate) or its "users"."""
    if "users" in cfg:
        if rate_key in cfg:
            raise ShapeError(f"{where}: give {rate_key!r} or 'users', not both")
        u = cfg["users"]
        if isinstance(u, bool) or not isinstance(u, int) or u < 0:
            raise ShapeError(f"{where}.users: must be an integer >= 0, not {u!r}")
        return u
    rate = _number(cfg, rate_key, where, allow_zero=True)
    users = rate / per_user_rate
    if abs(users - round(users)) > 1e-9:
        lo, hi = math.floor(users) * per_user_rate, math.ceil(users) * per_user_rate
        raise ShapeError(
            f"{where}.{rate_key}: {rate:g} msg/s is not a whole number of users at "
            f"{per_user_rate:g} msg/s each; use {lo:g} or {hi:g}, or change per_user_rate"
        )
    return int(round(users))


def plan_from_config(config: dict | str) -> Plan:
    """A Plan from a shape config (a dict or its JSON text)."""
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError as e:
            raise ShapeError(f"shape config is not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise ShapeError(f'shape config must be an object like {{"shape": "steps", ...}}, not {config!r}')
    name = config.get("shape")
    if name not in SHAPES:
        raise ShapeError(f"shape: {name!r} is not one of {', '.join(SHAPES)}")
    known = {"shape", "per_user_rate", "spawn_rate"} | {
        "constant": {"rate", "users", "duration_s"},
        "steps": {"steps"},
        "ramp": {"from_rate", "to_rate", "duration_s", "step_s"},
        "spike": {"rate", "users", "spike_rate", "spike_at_s", "spike_s", "duration_s"},
    }[name]
    unknown = sorted(set(config) - known)
    if unknown:
        raise ShapeError(f"{name}: unknown key {unknown[0]!r} (a {name} shape takes {', '.join(sorted(known))})")
    per = _number(config, "per_user_rate", name, default=DEFAULT_PER_USER_RATE)
    stages: list[Stage] = []

    def add(users: int, seconds: float) -> None:
        start = stages[-1].end_s if stages else 0.0
        stages.append(Stage(start, start + seconds, users))

    if name == "constant":
        add(_users(config, name, per), _number(config, "duration_s", name))
    elif name == "steps":
        steps = config.get("steps")
        if not isinstance(steps, list) or not steps:
            raise ShapeError('steps.steps: want a non-empty list of {"rate": R, "duration_s": S}')
        for i, step in enumerate(steps):
            where = f"steps[{i}]"
            if not isinstance(step, dict):
                raise ShapeError(f'{where}: want {{"rate": R, "duration_s": S}}, not {step!r}')
            extra = sorted(set(step) - {"rate", "users", "duration_s"})
            if extra:
                raise ShapeError(f"{where}: unknown key {extra[0]!r} (a step takes rate or users, and duration_s)")
            add(_users(step, where, per), _number(step, "duration_s", where))
    elif name == "ramp":
        lo = _users(config, name, per, "from_rate")
        hi = _users(config, name, per, "to_rate")
        total = _number(config, "duration_s", name)
        step = _number(config, "step_s", name, default=min(10.0, total))
        n = max(1, math.ceil(total / step - 1e-9))
        for i in range(n):
            # whole users, linear from `lo` to `hi` over the steps
            users = round(lo + (hi - lo) * (i / (n - 1) if n > 1 else 1.0))
            add(users, min(step, total - i * step))
    else:
        base = _users(config, name, per)
        peak = _users(config, name, per, "spike_rate")
        at = _number(config, "spike_at_s", name, allow_zero=True)
        length = _number(config, "spike_s", name)
        total = _number(config, "duration_s", name)
        if at + length > total:
            raise ShapeError(f"{name}: the spike ({at:g} s + {length:g} s) ends after duration_s {total:g}")
        if at > 0:
            add(base, at)
        add(peak, length)
        if total > at + length:
            add(base, total - at - length)
    spawn = _number(config, "spawn_rate", name, default=float(max(1, max(s.users for s in stages))))
    return Plan(name, tuple(stages), per, spawn)


# ----------------------------------------------------------------------------- command line


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="a shape: inline JSON or a .json/.yaml file")
    p.add_argument("--host", default="127.0.0.1:9092", help="bootstrap servers for the printed command line")
    p.add_argument("--topic", default="loadtest", help="topic for the printed command line")
    p.add_argument(
        "--message", default="gojek.esb.booking.BookingLogMessage", help="message for the printed command line"
    )


def run(args: argparse.Namespace) -> int:
    config = load_json_or_file(args.config, "shape")
    plan = plan_from_config(config)
    print("\n".join(plan.describe()))
    cmd = [
        ".venv/bin/locust",
        "-f",
        "loadtest/locustfile.py",
        "--headless",
        "--host",
        args.host,
        "--kafka-topic",
        args.topic,
        "--kafka-message",
        args.message,
        "--shape-config",
        json.dumps(config, separators=(",", ":")),
        "--kafka-ledger",
        "ledger.parquet",
        "--csv",
        "loadtest",
    ]
    print("\nrun it with:\n  " + shlex.join(cmd))
    return 0
