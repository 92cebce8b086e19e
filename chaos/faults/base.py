"""A fault: what it hits, inject and undo, health after undo, and its record.

Each fault writes down what it is about to act on *before* it acts (`affected`, saved through
`on_change` into the drill's journal), so an undo after a crash restores exactly what the fault
took down and nothing another fault or an operator stopped.
"""

from __future__ import annotations

import datetime as dt
import signal
import time
from typing import Callable, ClassVar

from chaos.catalog import BY_NAME, FaultKind
from dagger_runtime import durations

from . import procs
from .errors import FaultError
from .supervisor import DOWN_STATES, RUNNING, Supervisor
from .targets import Lab

HEALTH_TIMEOUT_S = 180.0
# supervisord's stopwaitsecs in the lab is 30: a stop takes at most that before its SIGKILL
STOP_TIMEOUT_S = 45.0
START_TIMEOUT_S = 60.0


def parse_duration(value: str | float | int | None) -> float:
    """Seconds from 30 (seconds), 30s, 2m, 1m30s, 1h, 250ms; nothing is 0."""
    if value is None or value == "":
        return 0.0
    try:
        return durations.seconds(value, bare_unit="s")
    except ValueError as e:
        raise FaultError(str(e)) from None


def iso(t: float | None) -> str:
    if t is None:
        return "-"
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Fault:
    """One fault of one kind on resolved targets. Build one with `chaos.faults.make_fault`."""

    kind: ClassVar[str]

    def __init__(
        self,
        lab: Lab,
        *,
        programs: list[str],
        label: str,
        params: dict | None = None,
        selection: dict | None = None,
        downtime_s: float = 0.0,
        instance_recovery: bool = True,
    ):
        self.lab = lab
        self.programs = list(programs)  # the supervisord programs it acts on
        self.label = label  # what it hits, for people
        self.params = dict(params or {})  # kind-specific: cluster, broker ids, driver ids...
        self.selection = dict(selection or {})  # how the targets were chosen
        self.downtime_s = float(downtime_s)
        self.instance_recovery = bool(instance_recovery)
        self.state = "new"  # new -> injecting -> active | failed -> undone
        self.started_at: float | None = None  # inject() called
        self.injected_at: float | None = None  # the fault in effect
        self.undone_at: float | None = None  # undo's actions done
        self.healthy_at: float | None = None  # health seen again after undo
        self.affected: list[str] = []  # programs it acted on, written before each action
        self.touched: list[dict] = []  # processes signalled: program, pid, starttime, signal, at
        self.errors: list[str] = []
        self.unhealthy: list[str] = []  # what the last health wait found still wrong
        self.on_change: Callable[[], None] | None = None

    # --- the catalogue's entry ---

    @classmethod
    def entry(cls) -> FaultKind:
        return BY_NAME[cls.kind]

    # --- what subclasses provide ---

    def _inject(self) -> None:
        raise NotImplementedError

    def _restore(self) -> None:
        raise NotImplementedError

    def health(self) -> list[str]:
        """What is still wrong with the targets (empty: healthy)."""
        raise NotImplementedError

    # --- the life of a fault ---

    def inject(self) -> "Fault":
        if self.state != "new":
            raise FaultError(f"{self.kind} on {self.label} was injected already ({self.state})")
        self.state = "injecting"
        self.started_at = time.time()
        self._changed()
        try:
            self._inject()
        except BaseException as e:
            self.state = "failed"
            self.errors.append(f"inject: {e}")
            self._changed()
            if isinstance(e, Exception) and not isinstance(e, FaultError):
                raise FaultError(f"{self.kind} on {self.label}: {e}") from e
            raise
        self.injected_at = self.injected_at or time.time()
        self.state = "active"
        self._changed()
        return self

    def restore(self) -> list[str]:
        """Put back what the fault took down, without waiting for health. Idempotent: a fault
        never injected has nothing to restore; one undone already is checked and left as it is."""
        if self.state == "new":
            return []
        try:
            self._restore()
        except Exception as e:  # noqa: BLE001 - an undo that fails is reported with the others, never raised mid-undo
            error = f"undo {self.kind} on {self.label}: {e}"
            self.errors.append(error)
            self._changed()
            return [error]
        if self.undone_at is None:
            self.undone_at = time.time()
        self.state = "undone"
        self._changed()
        return []

    def wait_healthy(self, timeout_s: float = HEALTH_TIMEOUT_S) -> list[str]:
        """Poll health until it is good or `timeout_s` passes; what is still unhealthy."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                problems = self.health()
            except Exception as e:  # noqa: BLE001 - a check that cannot run is a problem, not a crash
                problems = [f"health check failed: {e}"]
            if not problems:
                self.healthy_at = self.healthy_at or time.time()
                self.unhealthy = []
                self._changed()
                return []
            if time.monotonic() > deadline:
                self.unhealthy = problems
                self._changed()
                return [f"{self.kind} on {self.label}: still unhealthy after {timeout_s:.0f} s: {p}" for p in problems]
            time.sleep(1.0)

    def undo(self, wait: bool = True, timeout_s: float = HEALTH_TIMEOUT_S) -> list[str]:
        """Restore, then (wait=True) wait for health; what is wrong (empty: done and healthy)."""
        errors = self.restore()
        if errors or not wait or self.state == "new":
            return errors
        return self.wait_healthy(timeout_s)

    @property
    def active(self) -> bool:
        """Something may still be down: injected (fully or half-way) and not undone."""
        return self.state in ("injecting", "active", "failed")

    def describe(self) -> str:
        entry = self.entry()
        lines = [
            f"{self.kind} on {self.label}: {entry.does}; undo {entry.undo}",
            f"  state {self.state}; downtime {self.downtime_s:g} s, "
            f"instance_recovery {'true' if self.instance_recovery else 'false'}",
        ]
        if self.selection:
            lines.append("  chosen by " + ", ".join(f"{k}={v}" for k, v in self.selection.items()))
        lines.append(
            f"  injected {iso(self.injected_at)}, undone {iso(self.undone_at)}, healthy {iso(self.healthy_at)}"
        )
        for t in self.touched:
            lines.append(f"  {t['signal']} -> pid {t['pid']} ({t['program']}) at {iso(t['at'])}")
        lines += [f"  error: {e}" for e in self.errors] + [f"  unhealthy: {u}" for u in self.unhealthy]
        return "\n".join(lines)

    # --- the record ---

    _RECORDED = (
        "programs",
        "label",
        "params",
        "selection",
        "downtime_s",
        "instance_recovery",
        "state",
        "started_at",
        "injected_at",
        "undone_at",
        "healthy_at",
        "affected",
        "touched",
        "errors",
        "unhealthy",
    )

    def to_dict(self) -> dict:
        return {"kind": self.kind, **{name: getattr(self, name) for name in self._RECORDED}}

    @classmethod
    def from_dict(cls, lab: Lab, data: dict) -> "Fault":
        fault = cls.__new__(cls)
        Fault.__init__(fault, lab, programs=data["programs"], label=data["label"])
        for name in cls._RECORDED:
            if name in data:
                setattr(fault, name, data[name])
        return fault

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # --- helpers for the kinds ---

    def _affect(self, programs: list[str]) -> None:
        """Record what is about to be acted on, durably, before acting."""
        self.affected += [p for p in programs if p not in self.affected]
        self._changed()

    def _touch(self, program: str, victims: list[procs.Proc], sig: int) -> None:
        now = time.time()
        self.touched += [
            {"program": program, "pid": p.pid, "starttime": p.starttime, "signal": procs.signal_name(sig), "at": now}
            for p in victims
        ]
        self._changed()

    def _supervisor(self) -> Supervisor:
        return self.lab.supervisor()


# --- what the process-level kinds do to supervisord's programs --------------------------------


def require_running(supervisor: Supervisor, programs: list[str]) -> None:
    """Refuse before touching anything when a target is not running: it is down already (another
    fault, an operator), and undoing this fault would then start what it never stopped."""
    for program in programs:
        state = supervisor.state(program)
        if state != RUNNING:
            raise FaultError(f"{program} is {state}, not RUNNING: refusing to act on it")


def stop_programs(fault: Fault, programs: list[str]) -> None:
    """A clean stop: supervisord's stop signal (SIGTERM; Kafka's controlled shutdown), all at once."""
    supervisor = fault._supervisor()
    require_running(supervisor, programs)
    fault._affect(programs)
    for program in programs:
        supervisor.stop(program)
    off = supervisor.wait(programs, DOWN_STATES, STOP_TIMEOUT_S)
    fault.injected_at = time.time()
    if off:
        raise FaultError("did not stop: " + ", ".join(f"{p} ({s})" for p, s in off.items()))


def kill_programs(fault: Fault, programs: list[str], *, whole_group: bool) -> None:
    """SIGKILL, kept down although supervisord restarts whatever exits (autorestart=true).

    Killing first and stopping the program while supervisord restarts it leaves a window: it
    spawns the new process within milliseconds of reaping the old one. So the process is frozen
    first (SIGSTOP), supervisord is asked to stop it (it marks the program STOPPING and sends its
    stop signal, which a frozen process cannot act on), and then SIGKILL ends it: supervisord
    reaps a process it was stopping and starts nothing. The process only ever sees SIGKILL.
    `whole_group`: the program's process group too (a Spark worker's executors and drivers).
    """
    supervisor = fault._supervisor()
    require_running(supervisor, programs)
    for program in programs:
        fault._affect([program])
        pid = supervisor.pid(program)
        leader = procs.read(pid) if pid else None
        if leader is None:
            raise FaultError(f"{program}: supervisord's pid {pid} is no process")
        send = procs.send_group if whole_group else procs.send
        if not send(leader, signal.SIGSTOP):
            raise FaultError(f"{program} (pid {pid}) exited before it could be killed")
        victims = procs.group(leader.pgrp) if whole_group else [leader]  # all frozen: none can fork now
        fault._touch(program, victims, signal.SIGSTOP)
        try:
            supervisor.stop(program)
        except BaseException:
            for victim in victims:  # not killed after all: let it run on as it was
                procs.send(victim, signal.SIGCONT)
            raise
        send(leader, signal.SIGKILL)
        fault.injected_at = fault.injected_at or time.time()
        fault._touch(program, victims, signal.SIGKILL)
        left = procs.wait_gone(victims, 15)
        if left:
            raise FaultError(f"{program}: pids {', '.join(str(p.pid) for p in left)} outlived SIGKILL")
    off = supervisor.wait(programs, DOWN_STATES, STOP_TIMEOUT_S)
    if off:
        raise FaultError("supervisord did not record the kill: " + ", ".join(f"{p} ({s})" for p, s in off.items()))


def pause_programs(fault: Fault, programs: list[str]) -> None:
    """SIGSTOP the program's process: hung, its sockets open, supervisord still says RUNNING."""
    supervisor = fault._supervisor()
    require_running(supervisor, programs)
    frozen = []
    for program in programs:
        fault._affect([program])
        pid = supervisor.pid(program)
        proc = procs.read(pid) if pid else None
        if proc is None or not procs.send(proc, signal.SIGSTOP):
            raise FaultError(f"{program}: supervisord's pid {pid} is no process")
        fault._touch(program, [proc], signal.SIGSTOP)
        frozen.append(proc)
    fault.injected_at = time.time()
    deadline = time.monotonic() + 5
    while not all((p := procs.same(f.pid, f.starttime)) is not None and p.stopped for f in frozen):
        if time.monotonic() > deadline:
            raise FaultError("SIGSTOP sent but not every process shows as stopped")
        time.sleep(0.02)


def resume_frozen(fault: Fault, supervisor: Supervisor, programs: list[str]) -> None:
    """SIGCONT what this fault froze and is still frozen: the processes it recorded, and each
    program's current process with its group (a drill killed between a SIGSTOP and its record
    leaves only that to go by)."""
    candidates: dict[tuple[int, int], tuple[str, procs.Proc]] = {}
    for t in fault.touched:
        if t["signal"] == "SIGSTOP":
            proc = procs.same(t["pid"], t["starttime"])
            if proc is not None:
                candidates[(proc.pid, proc.starttime)] = (t["program"], proc)
    for program in programs:
        pid = supervisor.pid(program)
        leader = procs.read(pid) if pid else None
        if leader is not None and leader.stopped:
            for proc in procs.group(leader.pgrp):
                candidates.setdefault((proc.pid, proc.starttime), (program, proc))
    for program, proc in candidates.values():
        if proc.stopped and procs.send(proc, signal.SIGCONT):
            fault._touch(program, [proc], signal.SIGCONT)


def start_programs(fault: Fault, waves: list[list[str]]) -> None:
    """Start what the fault stopped or killed, wave after wave (a Spark master before its workers,
    so they register at once instead of at their next retry)."""
    supervisor = fault._supervisor()
    every = [p for wave in waves for p in wave]
    resume_frozen(fault, supervisor, every)
    # a stop still under way (a drill killed mid-inject) must end before supervisord can start it
    off = supervisor.wait(every, DOWN_STATES + ("RUNNING", "STARTING", "BACKOFF"), STOP_TIMEOUT_S)
    if off:
        raise FaultError("still stopping: " + ", ".join(f"{p} ({s})" for p, s in off.items()))
    for wave in waves:
        for program in wave:
            if supervisor.state(program) not in (RUNNING, "STARTING"):
                supervisor.start(program)
        off = supervisor.wait(wave, (RUNNING,), START_TIMEOUT_S)
        if off:
            raise FaultError("did not start: " + ", ".join(f"{p} ({s})" for p, s in off.items()))
