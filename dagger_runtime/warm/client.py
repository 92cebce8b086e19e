"""The client side: hand a command to the warm process, or say why it runs on its own Spark."""
from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

from . import wire

NOTE = "note: "


def connect(path: Path | None = None) -> socket.socket | None:
    """A connection to this user's warm process, None when none answers. Raises WarmError when
    the socket's place or the process behind it is not this user's own."""
    path = path or wire.socket_path()
    if not path.exists():
        return None
    wire.private_dir(path, create=False)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(str(path))
    except OSError:  # a socket left by a process that is gone
        conn.close()
        return None
    if wire.peer_uid(conn) != os.getuid():
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
    printed = False
    with conn:
        try:
            wire.send_request(conn, {"op": "run", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                                     "fingerprint": wire.fingerprint()})
            while True:
                kind, data = wire.recv_frame(conn)
                if kind == wire.OUT:
                    printed = True
                    sys.stdout.write(data.decode())
                    sys.stdout.flush()
                elif kind == wire.ERR:
                    sys.stderr.write(data.decode())
                    sys.stderr.flush()
                elif kind == wire.EXIT:
                    return int(data)
                elif kind == wire.STALE:
                    print(f"{NOTE}the warm Spark process ran the runtime as it was before your last change "
                          "and has stopped; this command starts a Spark of its own (`warm start` for a new "
                          "warm one)", file=sys.stderr)
                    return None
        except (OSError, ValueError) as e:
            if printed:  # rows already out: running again would print them twice
                print(f"error: the warm process stopped in the middle of the command ({e})", file=sys.stderr)
                return 1
            print(f"{NOTE}the warm process did not finish the command ({e}); starting a Spark of its own",
                  file=sys.stderr)
            return None


def ask(op: str, path: Path | None = None) -> dict | None:
    """status or stop: the warm process's answer, None when none answers."""
    conn = connect(path)
    if conn is None:
        return None
    with conn:
        wire.send_request(conn, {"op": op, "fingerprint": wire.fingerprint()})
        try:
            kind, data = wire.recv_frame(conn)
        except ConnectionError:
            return None
    return json.loads(data) if kind == wire.INFO else None
