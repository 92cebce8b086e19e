"""The exit codes of every command under `dagger` (and of their `python -m` forms), one table for
all: docs/reference/exit-codes.md shows it, tests/test_exit_codes.py holds each command to it."""

from __future__ import annotations

OK = 0
FOUND = 1  # it ran, and what it checks or does is not as it should be
REFUSED = 2  # the input was refused before anything ran
DRILL_FAILED = 3
DRILL_ABORTED = 4
INTERRUPTED = 130  # 128 + SIGINT; a signal N ends a command with 128 + N, as a shell reports it

TABLE: dict[int, str] = {
    OK: "done: the job ran or stopped as asked, the input is valid, the check found nothing, the drill passed",
    FOUND: "it ran, and what it checks or does is not as it should be: the lab is not up (`lab status`), "
    "CODEOWNERS is out of date (`team codeowners --check`), a schema change breaks readers "
    "(`protos check`), a fault is still active (`faults show`), a job or deploy failed",
    REFUSED: "refused before anything ran: a wrong command line, or a job file, team spec, drill "
    "playbook or schema that is invalid, with every problem named",
    DRILL_FAILED: "a drill ran and its verdict is FAIL (windows missing, extra or wrong, or a target missed)",
    DRILL_ABORTED: "a drill was aborted: a safeguard tripped, or the lab was not there",
    INTERRUPTED: "interrupted by Ctrl-C (SIGINT); another signal N ends a command with 128 + N",
}
