"""The warm process: one Spark kept running so `validate` and `preview` skip its start-up.

Each command runs as the client typed it, in the client's directory and environment, with its
output sent back as it is written; it gets a new session of the warm one, so its tables and
UDFs are its own and gone when it ends. Commands run one after another.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from ..session import build_session, sessions_of
from . import wire

log = logging.getLogger("dagger.warm")


class _Frames(io.TextIOBase):
    """A text stream whose writes go to the client as frames of one kind."""

    def __init__(self, conn: socket.socket, kind: bytes):
        self._conn, self._kind = conn, kind

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            wire.send_frame(self._conn, self._kind, text.encode("utf-8", "replace"))
        return len(text)

    def isatty(self) -> bool:
        return False


# how long a command may run before its Spark jobs are cancelled (`warm start --command-timeout`)
DEFAULT_COMMAND_TIMEOUT_S = 60.0
# after the cancel, how long the command has to end before the process gives up on it: work in the
# driver that no cancel reaches (a JVM call that does not return) leaves only a restart
CANCEL_GRACE_S = 15.0


class Server:
    def __init__(
        self, path: Path, idle_timeout: float, command_timeout: float = DEFAULT_COMMAND_TIMEOUT_S, *, commands
    ):
        """commands: dagger's command line (dagger_runtime.cli: build_parser, uses_warm, run_command,
        main), handed in, as it is what imports this module."""
        self.path, self.idle_timeout, self.command_timeout = path, idle_timeout, command_timeout
        self.commands = commands
        self.started, self.served, self.spark, self.code = time.time(), 0, None, wire.fingerprint()
        self.stopping = False
        self.timed_out = False
        self.own_env = dict(os.environ)

    def _terminate(self, *_):
        self.stopping = True  # a command that catches the interrupt still ends the process after it
        if self.spark is not None:
            self.spark.sparkContext.cancelAllJobs()
        raise KeyboardInterrupt

    def serve(self) -> int:
        # a fixed directory between commands: the one it was started in may go, and its files
        # must not shadow the runtime's modules
        os.chdir("/")
        _own_log()
        wire.private_dir(self.path, create=True)
        if _answers(self.path):
            raise wire.WarmError(f"a warm process already answers on {self.path} (`warm stop` ends it)")
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()  # left by a process that died

        self.spark = build_session("dagger-warm", parallelism=2)
        self._warm_up()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is born 0600: no window in which others may connect
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old)
        inode = os.stat(self.path).st_ino
        listener.listen(8)
        listener.settimeout(self.idle_timeout)
        signal.signal(signal.SIGTERM, self._terminate)
        signal.signal(signal.SIGINT, self._terminate)
        log.info("ready on %s (pid %d)", self.path, os.getpid())
        try:
            while True:
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    log.warning("idle for %.0f s, stopping", self.idle_timeout)
                    return 0
                with conn:
                    if not self._handle(conn) or self.stopping:
                        return 0
        except KeyboardInterrupt:
            return 0
        finally:
            listener.close()
            with contextlib.suppress(OSError):
                if os.stat(self.path).st_ino == inode:  # still ours, not a successor's
                    self.path.unlink()
            self.spark.stop()

    def _warm_up(self) -> None:
        """Validate one example job, unseen: the JVM loads and compiles the classes every
        command needs (analyser, decoder, UDFs) before the first analyst waits for them."""
        examples = sorted((wire.REPO / "examples" / "daggers").glob("*.yaml"))[:1]
        for job in examples:
            sink = io.StringIO()
            with sessions_of(self.spark), contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                self.commands.main(["validate", str(job)], warm=False)
        _log_here()

    def _handle(self, conn: socket.socket) -> bool:
        """One connection; False when the process should stop."""
        # a client that says nothing, or stops reading, must not hold up everyone behind it
        conn.settimeout(10.0)
        try:
            ids = wire.peer(conn)
            if not wire.is_me(ids):
                log.warning("refused a connection from uid %d gid %d", *ids)
                return True
            request = wire.recv_request(conn)
            conn.settimeout(60.0)
            op = request.get("op")
            if op in ("status", "stop"):
                wire.send_frame(conn, wire.INFO, json.dumps(self._status(request)).encode())
                return op == "status"
            if op != "run":
                wire.send_frame(conn, wire.ERR, f"warm: unknown request {op!r}\n".encode())
                return True
            if request.get("fingerprint") != self.code:
                if wire.fingerprint() != self.code:
                    # the code changed since this process started: never answer with the old
                    wire.send_frame(conn, wire.STALE, b"")
                    log.warning("the runtime changed since start, stopping")
                    return False
                wire.send_frame(conn, wire.OTHER, b"")  # a client of another checkout: not ours to run
                return True
            wire.send_frame(conn, wire.ACK, b"")
            began = time.monotonic()
            done = threading.Event()
            self.timed_out = False
            watcher = threading.Thread(target=self._cancel_when_gone, args=(conn, done, began), daemon=True)
            watcher.start()
            try:
                code = self._run(conn, request)
            finally:
                done.set()
                watcher.join()
            if self.timed_out:
                wire.send_frame(conn, wire.ERR, self._timeout_message().encode())
                code = 2
            self.served += 1
            log.info("ran %s: exit %s in %.1f s", " ".join(request["argv"][:2]), code, time.monotonic() - began)
            wire.send_frame(conn, wire.EXIT, str(code).encode())
        except (OSError, ValueError, wire.WarmError) as e:  # the client left or spoke nonsense
            log.warning("a request ended early: %s", e)
        except Exception as e:  # noqa: BLE001 - whatever one client sends, the next one is served
            log.warning("a request failed: %s", type(e).__name__)
        return self._alive()

    def _timeout_message(self) -> str:
        return (
            f"error: the command ran longer than {self.command_timeout:.0f} s, the warm process's limit per "
            "command (`warm start --command-timeout`); its Spark jobs were cancelled\n"
        )

    def _cancel_when_gone(self, conn: socket.socket, done: threading.Event, began: float | None = None) -> None:
        """The client hung up (Ctrl-C, a closed terminal) during its command, or the command ran past
        its time limit: cancel the command's Spark jobs rather than run them while the next command
        waits. A command that the cancel does not end within CANCEL_GRACE_S is answered here and
        the process restarts, so that it answers again."""
        began = time.monotonic() if began is None else began
        cancelled_at = None
        while not done.wait(0.5):
            now = time.monotonic()
            if cancelled_at is None and self.command_timeout and now - began > self.command_timeout:
                log.warning("a command ran past %.0f s; cancelling its Spark jobs", self.command_timeout)
                self.timed_out = True
                cancelled_at = now
                self.spark.sparkContext.cancelAllJobs()
            elif cancelled_at is not None and now - cancelled_at > CANCEL_GRACE_S:
                log.warning("the command did not end after its jobs were cancelled; restarting")
                with contextlib.suppress(OSError):
                    wire.send_frame(conn, wire.ERR, self._timeout_message().encode())
                    wire.send_frame(conn, wire.EXIT, b"2")
                self._restart()
                return
            if select.select([conn], [], [], 0)[0]:  # a client sends nothing more: readable is EOF
                try:
                    gone = conn.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    log.warning("the client left; cancelling its Spark jobs")
                    self.spark.sparkContext.cancelAllJobs()
                    return

    def _restart(self) -> None:
        """A fresh process in place of this one, whose main thread is held in the JVM: the JVM is
        killed (with it whatever held the thread) and the same command line runs again."""
        with contextlib.suppress(OSError):
            self.path.unlink()
        proc = getattr(getattr(self.spark.sparkContext, "_gateway", None), "proc", None)
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.kill()
                proc.wait(10)
        os.chdir("/")
        # the process's own environment, not that of the client whose command is stuck
        os.execve(
            sys.executable,
            [
                sys.executable,
                "-m",
                "dagger_runtime",
                "warm",
                "serve",
                "--idle-timeout",
                str(self.idle_timeout),
                "--command-timeout",
                str(self.command_timeout),
            ],
            self.own_env,
        )

    def _status(self, request: dict) -> dict:
        return {
            "pid": os.getpid(),
            "socket": str(self.path),
            "started": self.started,
            "commands_run": self.served,
            "idle_timeout_s": self.idle_timeout,
            "command_timeout_s": self.command_timeout,
            "current": request.get("fingerprint") == self.code,
        }

    def _run(self, conn: socket.socket, request: dict) -> int:
        argv, cwd, env, umask = (request.get(k) for k in ("argv", "cwd", "env", "umask"))
        if not (
            isinstance(argv, list)
            and all(isinstance(a, str) for a in argv)
            and isinstance(cwd, str)
            and isinstance(env, dict)
            and all(isinstance(v, str) for v in env.values())
            and isinstance(umask, int)
            and 0 <= umask <= 0o777
        ):
            raise wire.WarmError("a malformed run request")
        saved_env, saved_umask = dict(os.environ), os.umask(umask)  # files it writes: the client's modes
        out, err = _Frames(conn, wire.OUT), _Frames(conn, wire.ERR)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    os.chdir(cwd)
                    os.environ.clear()
                    os.environ.update(env)
                    # the command word is checked before argparse reads anything else of argv
                    command = next((a for a in argv if not a.startswith("-")), None)
                    args = self.commands.build_parser().parse_args(argv) if command in wire.COMMANDS else None
                    if args is None or not self.commands.uses_warm(args):
                        print(f"error: the warm process runs {' and '.join(wire.COMMANDS)} only", file=sys.stderr)
                        return self.commands.EXIT_USER_ERROR
                    with sessions_of(self.spark):
                        return self.commands.run_command(args)
                except SystemExit as e:  # argparse: --help, or a usage error already printed
                    return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
                except OSError as e:
                    if isinstance(e, (BrokenPipeError, ConnectionError)):
                        raise
                    print(f"error: {e}", file=sys.stderr)
                    return 1
                except Exception:  # noqa: BLE001 - a bug: the client sees the traceback, the process goes on
                    traceback.print_exc()
                    return 1
        finally:
            _log_here()
            os.environ.clear()
            os.environ.update(saved_env)
            os.umask(saved_umask)
            os.chdir("/")

    def _alive(self) -> bool:
        """After a command: a Spark whose JVM died cannot answer the next one."""
        try:
            return not self.spark.sparkContext._jsc.sc().isStopped()
        except Exception:  # noqa: BLE001 - py4j says a dead JVM in several ways
            log.warning("Spark is gone, stopping")
            return False


def _log_here() -> None:
    """Logging back to the process's own stderr after a command pointed it at its client's."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, force=True, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _own_log() -> None:
    """The process's own lines (commands run, refusals, a client gone) go to its stderr even while
    a command's logging goes to that command's client."""
    handler = logging.StreamHandler(sys.__stderr__)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False


def _answers(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()
