"""Commands whose reader leaves early (`... --json | head`) end quietly, as Unix tools do: no
traceback, exit 0 (the rest of the output was not wanted; that is not a failure).

Python ignores SIGPIPE, so a write to a closed pipe raises BrokenPipeError: from the print that
met it, or from the interpreter's last flush of stdout at exit, after main has returned. The
decorator treats either as the end of the output: the flush is made inside main, and a stdout
that failed is pointed at /dev/null so the exit's flush has nowhere to fail. rich's Console does
the same by itself and exits 1 (Console.on_broken_pipe); that exit is taken as this one.
"""

from __future__ import annotations

import functools
import os
import sys


def _stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError):
        return False


def survives_closed_pipe(main):
    @functools.wraps(main)
    def wrapper(*args, **kwargs):
        # `cmd > /dev/null` that fails must still fail: only a stdout pointed there since is a pipe
        was_devnull = _stdout_is_devnull()
        try:
            code = main(*args, **kwargs)
            sys.stdout.flush()
            return code
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
            return 0
        except SystemExit as e:
            if e.code == 1 and not was_devnull and _stdout_is_devnull():  # rich met the closed pipe
                return 0
            raise

    return wrapper
