"""The drill's journal of faults, and `Faults`: every fault rolled back, whatever ends the drill.

The journal is one JSON file, rewritten whole and atomically (a temporary file, fsync, rename)
before each fault acts and after each change, so a drill killed at any point (even by SIGKILL)
leaves a journal that `python -m chaos.faults undo JOURNAL` can finish the work from.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from . import procs
from .base import HEALTH_TIMEOUT_S, Fault
from .errors import FaultError, Interrupted, RollbackError
from .kinds import fault_from_dict
from .targets import Lab

FORMAT = "dagger-chaos-faults/1"


def write_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    # the rename itself is durable only once the directory is
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    def __init__(self, path: Path, lab: Lab, faults: list[Fault] | None = None, drill: dict | None = None):
        self.path = Path(path)
        self.lab = lab
        self.faults = list(faults or [])
        self.drill = drill or _this_process()
        self._lock = threading.Lock()

    def save(self) -> None:
        with self._lock:
            write_atomic(
                self.path,
                {
                    "format": FORMAT,
                    "lab": self.lab.as_dict(),
                    "drill": self.drill,
                    "saved_at": time.time(),
                    "faults": [f.to_dict() for f in self.faults],
                },
            )

    @classmethod
    def load(cls, path: Path) -> "Journal":
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise FaultError(f"cannot read the journal {path}: {e}") from None
        if data.get("format") != FORMAT:
            raise FaultError(f"{path} is not a faults journal ({FORMAT})")
        lab = Lab(Path(data["lab"]["dir"]), int(data["lab"]["port_base"]))
        journal = cls(Path(path), lab, drill=data.get("drill"))
        journal.faults = [fault_from_dict(lab, f) for f in data["faults"]]
        for fault in journal.faults:
            fault.on_change = journal.save
        return journal

    def active(self) -> list[Fault]:
        return [f for f in self.faults if f.active]

    def drill_alive(self) -> bool:
        """The process that wrote the journal still runs (and is the same process)."""
        d = self.drill or {}
        return (
            bool(d.get("pid"))
            and d.get("pid") != os.getpid()
            and procs.same(d["pid"], d.get("starttime", -1)) is not None
        )


def _this_process() -> dict:
    me = procs.read(os.getpid())
    return {"pid": os.getpid(), "starttime": me.starttime if me else None, "argv": sys.argv}


def rollback(faults: list[Fault], *, wait: bool = True, timeout_s: float = HEALTH_TIMEOUT_S) -> list[str]:
    """Undo every active fault, the last injected first; one undo failing does not stop the
    others. Everything is restored before any health wait, so the services recover together."""
    problems: list[str] = []
    pending = [f for f in reversed(faults) if f.active]
    for fault in pending:
        problems += fault.restore()
    if wait:
        deadline = time.monotonic() + timeout_s
        for fault in pending:
            if fault.state == "undone":
                problems += fault.wait_healthy(max(1.0, deadline - time.monotonic()))
    return problems


class Faults:
    """Inject faults in a drill and have them undone whatever happens:

        with Faults(journal_path, lab) as faults:
            faults.run(make_fault("broker-kill", lab, ids=[2], downtime="30s"))   # down 30 s, then undone
            faults.inject(make_fault("sink-down", lab, target="influxdb"))        # down until the end
            ...
        # here: every fault still active is undone, in reverse order, and healthy again

    On leaving (normally, by an exception, or by SIGTERM/SIGINT, which raise `Interrupted` in the
    main thread) the active faults are undone; the problems left are in `.problems`, and raise
    RollbackError when nothing else is being raised. A second signal during the rollback does
    not interrupt it (it is raised after).
    """

    def __init__(
        self,
        journal_path: str | os.PathLike,
        lab: Lab | None = None,
        *,
        wait: bool = True,
        timeout_s: float = HEALTH_TIMEOUT_S,
    ):
        self.lab = lab or Lab.from_env()
        self.journal = Journal(Path(journal_path), self.lab)
        self.wait = wait
        self.timeout_s = timeout_s
        self.problems: list[str] = []
        self._previous: dict[int, object] = {}
        self._rolling_back = False
        self._pending_signal: int | None = None

    @property
    def faults(self) -> list[Fault]:
        return self.journal.faults

    def __enter__(self) -> "Faults":
        path = self.journal.path
        if path.exists():
            try:
                left = Journal.load(path).active()
            except FaultError:
                left = []
            if left:
                raise FaultError(
                    f"{path} holds faults a drill left active ({', '.join(f.kind for f in left)}): "
                    f"undo them first: python -m chaos.faults undo {path}"
                )
        path.parent.mkdir(parents=True, exist_ok=True)
        self.journal.save()
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum, frame) -> None:
        if self._rolling_back:
            self._pending_signal = signum
            return
        raise Interrupted(signum)

    def inject(self, fault: Fault) -> Fault:
        """Record the fault in the journal, then inject it. If it fails half-way, what it did is
        undone at once and the error raised."""
        fault.on_change = self.journal.save
        self.journal.faults.append(fault)
        self.journal.save()  # before anything is touched
        try:
            fault.inject()
        except Exception:
            fault.restore()
            raise
        return fault

    def undo(self, fault: Fault, wait: bool | None = None) -> list[str]:
        return fault.undo(wait=self.wait if wait is None else wait, timeout_s=self.timeout_s)

    def run(self, fault: Fault, sleep=time.sleep) -> Fault:
        """LOKI's way: inject, keep it for its downtime, and undo it then when instance_recovery is
        true (else it stays until the rollback at the end). Problems after the undo are in
        fault.unhealthy and fault.errors."""
        self.inject(fault)
        if fault.downtime_s:
            sleep(fault.downtime_s)
        if fault.instance_recovery:
            self.undo(fault)
        return fault

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._rolling_back = True
        try:
            self.problems = rollback(self.faults, wait=self.wait, timeout_s=self.timeout_s)
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            self._rolling_back = False
        if exc_type is None and self.problems:
            raise RollbackError(self.problems)
        if self.problems:
            print("chaos.faults: rollback incomplete:\n  - " + "\n  - ".join(self.problems), file=sys.stderr)
        if exc_type is None and self._pending_signal is not None:
            raise Interrupted(self._pending_signal)
        return False
