"""Local server processes for the lab and the tests: free loopback ports, a process that dies with
its parent, a health check before anyone uses it, and a stop that always happens."""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path

HOST = "127.0.0.1"


def die_with_parent():
    """preexec_fn: the kernel SIGKILLs the child when this process dies (Linux), so a crashed
    test run leaves no server behind."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # parent already gone
            os._exit(1)

    return preexec


def free_ports(count: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def port_accepts(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def tail(path: Path, lines: int = 40) -> str:
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except OSError:
        return ""


class ServerError(RuntimeError):
    """A local server could not be started or did not become healthy."""


_live: set = set()
_live_lock = threading.Lock()


@atexit.register
def _stop_all() -> None:
    with _live_lock:
        servers = list(_live)
    for server in servers:
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


class LocalServer:
    """One server process on loopback. Subclasses give `command()`, `env()` and `healthy()`."""

    name = "server"

    def __init__(self, data_dir: str | Path | None = None, *, port: int | None = None, start_timeout: float = 60.0):
        self._temporary = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix=f"dagger-{self.name}-")).resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_ports(1)[0]
        self.start_timeout = start_timeout
        self.log_path = self.data_dir / f"{self.name}.log"
        self._proc: subprocess.Popen | None = None

    # -- what subclasses say ------------------------------------------------------------
    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def prepare(self) -> None:
        """One-time set-up of the data dir before the first start (initdb, ...)."""

    def healthy(self) -> bool:
        return port_accepts(self.port)

    def preexec(self):
        return die_with_parent() if threading.current_thread() is threading.main_thread() else None

    # -- life cycle -----------------------------------------------------------------------
    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.is_running else None

    def start(self):
        if self.is_running:
            return self
        self.prepare()
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.command(),
                env=self.env(),
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=self.preexec(),
            )
        with _live_lock:
            _live.add(self)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerError(
                    f"{self.name} exited with code {self._proc.returncode} during start-up; "
                    f"last lines of {self.log_path}:\n{tail(self.log_path)}"
                )
            try:
                if self.healthy():
                    return self
            except Exception:  # noqa: BLE001 - not ready yet
                pass
            time.sleep(0.2)
        self.stop()
        raise ServerError(
            f"{self.name} on {HOST}:{self.port} was not healthy within {self.start_timeout:.0f}s; "
            f"last lines of {self.log_path}:\n{tail(self.log_path)}"
        )

    def _signal(self, sig: signal.Signals, timeout: float) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        self._proc = None
        with _live_lock:
            _live.discard(self)

    def stop(self, timeout: float = 30.0) -> None:
        self._signal(signal.SIGTERM, timeout)

    def kill(self) -> None:
        self._signal(signal.SIGKILL, 10)

    def close(self) -> None:
        self.stop()
        if self._temporary:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"
