"""Processes as Linux shows them in /proc: state, process group, start time, children.

A pid alone is not an identity (pids are reused), so every signal a fault sends names the
process by (pid, start time) and is not sent when the pid now belongs to another process.
"""

from __future__ import annotations

import os
import signal as _signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    pid: int
    state: str  # R, S, D, T (stopped), Z, ...
    ppid: int
    pgrp: int
    starttime: int  # clock ticks after boot: with the pid, the process's identity

    @property
    def stopped(self) -> bool:
        return self.state in ("T", "t")


def read(pid: int) -> Proc | None:
    """The process, or None when there is none (or only its zombie is left)."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name (field 2) may hold spaces and parentheses: the fields start after the last ')'
    fields = text[text.rindex(")") + 2 :].split()
    proc = Proc(pid, fields[0], int(fields[1]), int(fields[2]), int(fields[19]))
    return None if proc.state in ("Z", "X") else proc


def same(pid: int, starttime: int) -> Proc | None:
    """The process if `pid` still is the one that started at `starttime`."""
    proc = read(pid)
    return proc if proc is not None and proc.starttime == starttime else None


def all_procs() -> list[Proc]:
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            proc = read(int(entry.name))
            if proc is not None:
                found.append(proc)
    return found


def group(pgrp: int) -> list[Proc]:
    return [p for p in all_procs() if p.pgrp == pgrp]


def descendants(pid: int) -> list[Proc]:
    procs = all_procs()
    found, frontier = [], {pid}
    while frontier:
        children = [p for p in procs if p.ppid in frontier]
        found += children
        frontier = {p.pid for p in children}
    return found


def cmdline(pid: int) -> list[str]:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def cwd(pid: int) -> str | None:
    try:
        return os.readlink(PROC / str(pid) / "cwd")
    except OSError:
        return None


def send(proc: Proc, sig: int) -> bool:
    """Signal the process if it is still the same one; False when it is gone."""
    if same(proc.pid, proc.starttime) is None:
        return False
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:
        return False
    return True


def send_group(leader: Proc, sig: int) -> bool:
    """Signal the whole process group `leader` leads. A live leader keeps the group id from
    being reused, so checking it is enough."""
    if same(leader.pid, leader.starttime) is None:
        return False
    try:
        os.killpg(leader.pgrp, sig)
    except ProcessLookupError:
        return False
    return True


def wait_gone(procs: list[Proc], timeout_s: float) -> list[Proc]:
    """Wait until none of the processes exists; those still there at the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = [p for p in procs if same(p.pid, p.starttime) is not None]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def signal_name(sig: int) -> str:
    return _signal.Signals(sig).name
