"""The client side: hand a command to the warm process, or say why it runs on its own Spark."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from . import wire

NOTE = "note: "
# how long a command waits for the warm process to take it (it runs one command at a time);
# past this, the command runs on its own Spark rather than queue behind a long one or a hung one
TAKEN_WITHIN_S = 20.0


def connect(path: Path | None = None) -> socket.socket | None:
    """A connection to this user's warm process, None when none answers. Raises WarmError when
    the socket's place or the process behind it is not this user's own."""
    path = path or wire.socket_path()
    try:
        wire.private_dir(path, create=False)  # before the socket itself is looked at
    except FileNotFoundError:
        return None
    if not path.exists():
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(TAKEN_WITHIN_S)
    try:
        conn.connect(str(path))
    except OSError:  # a socket left by a process that is gone
        conn.close()
        return None
    if not wire.is_me(wire.peer(conn)):
        conn.close()
        raise wire.WarmError(f"the process listening on {path} is not yours")
    return conn


def forward(argv: list[str]) -> int | None:
    """Run argv in the warm process, its output copied here as it comes; its exit code, or None
    when the command must run here (no warm process, or one that cannot take it)."""
    try:
        conn = connect()
    except wire.WarmError as e:
        print(f"{NOTE}{e}; starting a Spark of its own", file=sys.stderr)
        return None
    if conn is None:
        return None
    umask = os.umask(0o077)
    os.umask(umask)
    printed = False
    with conn:
        try:
            wire.send_request(
                conn,
                {
                    "op": "run",
                    "argv": argv,
                    "cwd": os.getcwd(),
                    "env": dict(os.environ),
                    "umask": umask,
                    "fingerprint": wire.fingerprint(),
                },
            )
            while True:
                kind, data = wire.recv_frame(conn)
                if kind == wire.ACK:
                    conn.settimeout(None)  # taken: a preview takes as long as its query
                elif kind == wire.OUT:
                    printed = True
                    try:
                        sys.stdout.write(data.decode())
                        sys.stdout.flush()
                    except BrokenPipeError:  # `preview ... | head`: the reader left, as a run here
                        sys.stderr.close()
                        return 0
                elif kind == wire.ERR:
                    sys.stderr.write(data.decode())
                    sys.stderr.flush()
                elif kind == wire.EXIT:
                    return int(data)
                elif kind in (wire.STALE, wire.OTHER):
                    print(f"{NOTE}{_REFUSALS[kind]}; this command starts a Spark of its own", file=sys.stderr)
                    return None
        except KeyboardInterrupt:  # closing the connection cancels the command there
            return 130
        except (OSError, ValueError) as e:
            if printed:  # rows already out: running again would print them twice
                print(f"error: the warm process stopped in the middle of the command ({e})", file=sys.stderr)
                return 1
            why = "is busy with another command" if isinstance(e, TimeoutError) else f"did not finish it ({e})"
            print(f"{NOTE}the warm process {why}; starting a Spark of its own", file=sys.stderr)
            return None


_REFUSALS = {
    wire.STALE: "the warm Spark process ran the runtime as it was before your last change and has stopped "
    "(`warm start` for a new one)",
    wire.OTHER: "the warm Spark process runs another checkout or install of the runtime than this one",
}


def ask(op: str, path: Path | None = None) -> dict | None:
    """status or stop: the warm process's answer, None when none answers."""
    conn = connect(path)
    if conn is None:
        return None
    with conn:
        wire.send_request(conn, {"op": op, "fingerprint": wire.fingerprint()})
        try:
            kind, data = wire.recv_frame(conn)
        except (ConnectionError, TimeoutError):
            return None
    return json.loads(data) if kind == wire.INFO else None
