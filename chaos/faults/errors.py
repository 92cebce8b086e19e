"""The faults' errors."""

from __future__ import annotations


class FaultError(Exception):
    """A fault could not be prepared, injected or undone; the message says what and why."""


class NotInScope(FaultError, NotImplementedError):
    """A kind of the catalogue that has no implementation yet."""


class RollbackError(FaultError):
    """Undoing the faults of a drill left something broken; `.problems` lists what."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("rollback incomplete:\n  - " + "\n  - ".join(self.problems))


class Interrupted(BaseException):
    """SIGTERM or SIGINT during a drill: a BaseException, so no `except Exception` in the
    drill's code swallows it before the faults are rolled back."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by signal {signum}")
