"""Where the warm process listens, who may talk to it, and the frames they exchange.

One unix socket per user, in a directory only that user can enter: the client sends its command
line, working directory and environment (a job's `${VAR}` secrets resolve from it), so both
ends check that the other is the same user before a byte of it moves.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import stat
import struct
import sys
from pathlib import Path

from ..errors import DaggerError
from ..jvm import spark_jars

RUNTIME = Path(__file__).resolve().parent.parent
REPO = RUNTIME.parent
# the commands the warm process runs: the ones an analyst repeats while trying a query
COMMANDS = ("validate", "preview")

# frame kinds, server to client: taken, stdout, stderr, exit code, code changed, another
# checkout's client, a status answer
ACK, OUT, ERR, EXIT, STALE, OTHER, INFO = b"a", b"o", b"e", b"x", b"s", b"t", b"i"
_HEADER = struct.Struct("!cI")
_MAX_REQUEST = 16 << 20


class WarmError(DaggerError):
    """The warm process cannot be used (and the command runs in its own Spark instead)."""


def socket_path() -> Path:
    """$DAGGER_WARM_SOCKET, else daggers/warm.sock in $XDG_RUNTIME_DIR (a per-user tmpfs), else in
    ~/.cache."""
    if os.environ.get("DAGGER_WARM_SOCKET"):
        return Path(os.environ["DAGGER_WARM_SOCKET"])
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "daggers" / "warm.sock"


def private_dir(path: Path, create: bool) -> Path:
    """The socket's directory, refused unless it is a real directory of this user that nobody else
    can enter: another user who made it first could otherwise listen in our place."""
    folder = path.parent
    try:
        if create:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
    except FileNotFoundError:
        raise
    except OSError as e:  # e.g. a root-owned folder left by `sudo dagger warm start`
        raise WarmError(f"{folder}: {e.strerror}: the warm process will not use it") from None
    if not stat.S_ISDIR(info.st_mode):
        raise WarmError(f"{folder} is not a directory (a link?): the warm process will not use it")
    if info.st_uid != os.getuid():
        raise WarmError(f"{folder} belongs to uid {info.st_uid}, not to you: the warm process will not use it")
    if info.st_mode & 0o077:
        raise WarmError(
            f"{folder} can be entered by other users (mode {stat.S_IMODE(info.st_mode):o}); "
            f"`chmod 700 {folder}` or remove it"
        )
    return folder


def peer(conn: socket.socket) -> tuple[int, int]:
    """(uid, gid) of the process at the other end of a unix socket, as the kernel says (SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1:]


def is_me(ids: tuple[int, int]) -> bool:
    return ids == (os.getuid(), os.getgid())


def fingerprint() -> str:
    """The code a warm process runs: the runtime's and the schemas' Python, the JVM jars, the
    interpreter and its installed packages (the folder's entries change with any pip install). A
    process started before any of them changed must not answer for the new code."""
    digest = hashlib.sha256(sys.executable.encode())
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.origin:
        packages = Path(spec.origin).parent.parent
        digest.update(f"{packages}\0{os.stat(packages).st_mtime_ns}\n".encode())

    try:
        jars = spark_jars()
    except DaggerError:
        jars = []
    files = [*sorted(RUNTIME.rglob("*.py")), *sorted((REPO / "protos").glob("*.py")), *jars]
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        digest.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def send_request(conn: socket.socket, request: dict) -> None:
    data = json.dumps(request).encode()
    conn.sendall(struct.pack("!I", len(data)) + data)


def recv_request(conn: socket.socket) -> dict:
    (size,) = struct.unpack("!I", _recv_exact(conn, 4))
    if size > _MAX_REQUEST:
        raise WarmError(f"a request of {size} bytes")
    request = json.loads(_recv_exact(conn, size))
    if not isinstance(request, dict):
        raise WarmError("a request that is not a JSON object")
    return request


def send_frame(conn: socket.socket, kind: bytes, data: bytes) -> None:
    conn.sendall(_HEADER.pack(kind, len(data)) + data)


def recv_frame(conn: socket.socket) -> tuple[bytes, bytes]:
    kind, size = _HEADER.unpack(_recv_exact(conn, _HEADER.size))
    return kind, _recv_exact(conn, size)


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    parts, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 16))
        if not chunk:
            raise ConnectionError("the other end closed the connection")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)
