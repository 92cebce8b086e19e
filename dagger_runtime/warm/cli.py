"""`dagger warm start|stop|status|serve`: keep one Spark running for validate and preview."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from . import wire
from .client import ask

START_TIMEOUT_S = 240.0
DEFAULT_COMMAND_TIMEOUT_S = 60.0  # as server.DEFAULT_COMMAND_TIMEOUT_S (not imported: the server loads Spark)
DEFAULT_IDLE_S = 3 * 3600.0


def add_command(sub, commands) -> None:
    """`dagger warm`; `commands`, dagger's command line (dagger_runtime.cli), runs what the warm
    process is handed: passed in, not imported, as it is the module that imports this one."""
    w = sub.add_parser(
        "warm",
        help="keep a Spark running so validate and preview answer in a second or two",
        description="Start, stop or look at this user's warm Spark process. While one runs, `validate` and "
        "`preview` hand it their command (over a unix socket only you can open) instead of "
        "starting Spark themselves: same output, same exit codes, each command in a session of "
        "its own. It stops after --idle-timeout without a command, and when the runtime's code "
        "changes under it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ws = w.add_subparsers(dest="warm_command", required=True, metavar="ACTION")
    start = ws.add_parser(
        "start",
        help="start the warm process in the background and wait until it answers",
        description="Start the warm process in the background (its log next to its socket) "
        "and wait until it answers. Does nothing when a current one runs.",
    )
    serve = ws.add_parser(
        "serve",
        help="run the warm process in the foreground (for supervisord or systemd)",
        description="Run the warm process in the foreground until SIGTERM, Ctrl-C, --idle-timeout or `warm stop`.",
    )
    for p in (start, serve):
        p.add_argument(
            "--idle-timeout",
            type=float,
            default=DEFAULT_IDLE_S,
            metavar="SECONDS",
            help=f"stop after this long without a command (default {DEFAULT_IDLE_S:.0f})",
        )
        p.add_argument(
            "--command-timeout",
            type=float,
            default=DEFAULT_COMMAND_TIMEOUT_S,
            metavar="SECONDS",
            help="cancel a command's Spark jobs after this long and answer the next command "
            f"(exit 2; default {DEFAULT_COMMAND_TIMEOUT_S:.0f}; 0: no limit)",
        )
    status = ws.add_parser(
        "status",
        help="say whether a warm process answers, and since when",
        description="Say whether a warm process answers (exit 0) or not (exit 3).",
    )
    status.add_argument("--json", action="store_true", help="print the answer as JSON")
    ws.add_parser("stop", help="stop the warm process", description="Stop the warm process, if one runs.")
    w.set_defaults(func=_run, commands=commands)


def _run(args) -> int:
    path = wire.socket_path()
    if args.warm_command == "serve":
        from .server import Server

        return Server(path, args.idle_timeout, args.command_timeout, commands=args.commands).serve()
    answer = ask("status")
    if args.warm_command == "status":
        if args.json:
            print(json.dumps({"running": answer is not None, **(answer or {})}, indent=2))
        elif answer is None:
            print(f"no warm process answers on {path}")
        else:
            print(
                f"warm process {answer['pid']} on {answer['socket']}: up {_since(answer['started'])}, "
                f"{answer['commands_run']} commands run"
                + ("" if answer["current"] else "; it runs older code and will stop at the next command")
            )
        return 0 if answer is not None else 3
    if args.warm_command == "stop":
        if answer is None:
            print(f"no warm process answers on {path}")
            return 0
        ask("stop")
        print(f"stopped warm process {answer['pid']}")
        return 0
    if answer is not None and answer["current"]:
        print(f"a warm process already answers: pid {answer['pid']} on {answer['socket']}")
        return 0
    if answer is not None:
        ask("stop")
    return _start(path, args.idle_timeout, args.command_timeout)


def _start(path, idle_timeout: float, command_timeout: float = DEFAULT_COMMAND_TIMEOUT_S) -> int:
    from rich.console import Console

    folder = wire.private_dir(path, create=True)
    log_path = folder / "warm.log"
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "ab") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dagger_runtime",
                "warm",
                "serve",
                "--idle-timeout",
                str(idle_timeout),
                "--command-timeout",
                str(command_timeout),
            ],
            # from "/": with -m the start directory leads sys.path, and whatever .py files it holds
            # would shadow the runtime's modules for the process's whole life
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd="/",
        )

    began = time.monotonic()
    with Console(stderr=True).status("starting Spark for the warm process (15-30 s)..."):
        while time.monotonic() - began < START_TIMEOUT_S:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace").splitlines()[-15:]
                print("error: the warm process stopped while starting:\n  " + "\n  ".join(tail), file=sys.stderr)
                return 1
            answer = ask("status")
            if answer is not None and answer["pid"] == process.pid:
                print(
                    f"warm process {process.pid} answers on {path} after {time.monotonic() - began:.0f} s: "
                    "validate and preview use it (`warm stop` ends it; log in "
                    f"{log_path})"
                )
                return 0
            time.sleep(0.5)
    process.terminate()
    print(f"error: the warm process did not answer within {START_TIMEOUT_S:.0f} s (log in {log_path})", file=sys.stderr)
    return 1


def _since(started: float) -> str:
    seconds = int(time.time() - started)
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )
