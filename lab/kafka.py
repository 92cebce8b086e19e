"""A real single-node Apache Kafka (KRaft, combined broker+controller) on 127.0.0.1.

Used by the tests (``tests/conftest.py``: ``kafka_broker``), the lab drills and the
demo.  No ZooKeeper, no distribution tarball: the pinned jars that ``make jars``
copies to ``.jvm/kafka/`` are run with ``java -cp '.jvm/kafka/*'``.

    from lab.kafka import KafkaBroker

    with KafkaBroker() as kafka:                 # temporary data dir, free ports
        kafka.create_topic("booking-log", partitions=3)
        producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
        ...
        kafka.restart()                          # same data dir, same ports
        kafka.kill()                             # SIGKILL, for chaos drills

From a shell (foreground until Ctrl-C)::

    python -m lab.kafka start --data-dir /tmp/kafka-demo

Layout of the data dir::

    server.properties   log4j2.properties   broker.json (ports, cluster id)
    broker.log          JVM logs (log4j2, rolled at 50 MB)
    jvm.out             stdout/stderr of the JVMs (crashes before logging starts)
    format.log          output of the StorageTool
    broker.pid          pid of the running broker
    kraft/              log.dirs: topic partitions and the __cluster_metadata log

The JVM runs in its own process group and is stopped when the broker object is
stopped, on interpreter exit (atexit), and - on Linux, when started from the main
thread - by the kernel if this Python process dies (PR_SET_PDEATHSIG).

kafka-python (3.x) needs nothing special against Kafka 4.x: leave ``api_version``
unset (auto-detected, reports (4, 3)).  Pinning ``api_version`` below (0, 11) makes
the producer use message format v1, which Kafka 4 rejects.

Run it as ``python -m lab.kafka``; ``python lab/kafka.py`` would shadow kafka-python.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Mapping

from dagger_runtime.jvm import jvm_dir
from lab.process import die_with_parent as _die_with_parent
from lab.process import free_ports as _free_ports
from lab.process import port_accepts as _port_accepts
from lab.process import tail as _tail

__all__ = [
    "KafkaBroker",
    "KafkaBrokerError",
    "KafkaJarsMissing",
    "jvm_dir",
    "kafka_classpath",
]

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
BROKER_MAIN = "kafka.Kafka"
# Kafka 4.x still ships the Scala StorageTool (kafka-storage.sh runs it);
# there is no org.apache.kafka.tools.StorageTool in 4.3.1.
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
LOG_TAIL_LINES = 40

# JVM flags: small heap, serial GC (2 shared cores), no hsperfdata files.
DEFAULT_HEAP = "512m"
_COMMON_JVM_FLAGS = [
    "-XX:+UseSerialGC",
    "-XX:-UsePerfData",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
]
# The StorageTool runs for ~1 s: C1 only starts it faster.
_TOOL_JVM_FLAGS = ["-Xmx256m", "-XX:TieredStopAtLevel=1", *_COMMON_JVM_FLAGS]


class KafkaBrokerError(RuntimeError):
    """The broker could not be formatted, started or reached."""


class KafkaJarsMissing(KafkaBrokerError):
    """The Kafka jars are not where DAGGER_JVM_DIR (default .jvm/) says."""


# --------------------------------------------------------------------------- jars


def _find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise KafkaBrokerError("no `java` on PATH (and JAVA_HOME unset): Kafka needs Java 17+")
    return java


def kafka_classpath(base: Path | None = None) -> str:
    """The java -cp value for the broker and tools, or KafkaJarsMissing."""
    base = base or jvm_dir()
    kafka_dir = base / "kafka"
    required = {
        "kafka_2.13-*.jar": "the broker (kafka.Kafka)",
        "kafka-tools-*.jar": "the tools",
        "kafka-clients-*.jar": "the clients",
        "log4j-core-*.jar": "log4j2",
    }
    missing = [f"{pattern} ({what})" for pattern, what in required.items() if not any(kafka_dir.glob(pattern))]
    if missing:
        source = "DAGGER_JVM_DIR" if os.environ.get("DAGGER_JVM_DIR") else "default"
        raise KafkaJarsMissing(
            f"Kafka jars not found in {kafka_dir} ({source} jar dir; missing "
            f"{', '.join(missing)}): run `make jars` in {REPO_ROOT} "
            "(or point DAGGER_JVM_DIR at a directory whose kafka/ holds them)"
        )
    return f"{kafka_dir}{os.sep}*"


# ------------------------------------------------------------------- processes

_live: set["KafkaBroker"] = set()
_live_lock = threading.Lock()


def _cleanup_at_exit() -> None:
    with _live_lock:
        brokers = list(_live)
    for broker in brokers:
        try:
            broker.close(timeout=10)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


atexit.register(_cleanup_at_exit)


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM does
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _random_cluster_id() -> str:
    """Like `kafka-storage random-uuid`: 16 random bytes, url-safe base64, no padding."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_stale(pidfile: Path, marker: str) -> None:
    """Kill a broker that a dead earlier run left on this data dir (it holds the dir lock).

    broker.pid holds "JVM_PID OWNER_PID"; a broker whose owner still lives is not
    stale: that is an error (two brokers cannot share a data dir).
    """
    try:
        fields = pidfile.read_text().split()
        pid = int(fields[0])
        owner = int(fields[1]) if len(fields) > 1 else None
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError, IndexError):
        return
    if BROKER_MAIN not in cmdline or marker not in cmdline:
        return  # pid reused by something else
    if owner is not None and owner != os.getpid() and _pid_alive(owner):
        raise KafkaBrokerError(
            f"{pidfile.parent} is in use by Kafka broker pid {pid} (started by pid {owner}); "
            "stop that one first or use another data dir"
        )
    log.warning("killing stale Kafka broker pid %s left on %s", pid, pidfile.parent)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.05)


# ----------------------------------------------------------------------- broker


class KafkaBroker:
    """One Kafka 4.x node (KRaft, process.roles=broker,controller) on 127.0.0.1.

    Arguments:
        data_dir: where config, logs and partitions go; created if needed.  Default:
            a fresh temporary directory, removed by close()/the context manager
            (kept if the broker failed, for its logs).
        port, controller_port: listener ports.  Default: the ports a previous
            broker on this data_dir used, if free, else free ones.
        auto_create_topics: auto.create.topics.enable (default False).
        extra_config: more server.properties entries (override the defaults).
        heap: -Xmx of the broker JVM.
        start_timeout: seconds start() waits for the broker to answer metadata.
        jvm_opts: more JVM flags.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        controller_port: int | None = None,
        auto_create_topics: bool = False,
        extra_config: Mapping[str, object] | None = None,
        heap: str = DEFAULT_HEAP,
        start_timeout: float = 90.0,
        jvm_opts: list[str] | tuple[str, ...] = (),
        node_id: int = 1,
    ) -> None:
        self._owns_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kafka-broker-")).resolve()
        self.auto_create_topics = auto_create_topics
        self.extra_config = dict(extra_config or {})
        self.heap = heap
        self.start_timeout = start_timeout
        self.jvm_opts = list(jvm_opts)
        self.node_id = node_id
        self._requested_ports = (port, controller_port)
        self.port: int | None = None
        self.controller_port: int | None = None
        self.cluster_id: str | None = None
        self.startup_seconds: float | None = None  # of the last start()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0  # size of broker.log when the current JVM started
        self._failed = False
        self._lock = threading.RLock()

    # paths ---------------------------------------------------------------
    @property
    def log_dir(self) -> Path:
        """log.dirs (partitions and the KRaft metadata log)."""
        return self.data_dir / "kraft"

    @property
    def log_path(self) -> Path:
        """The broker's log4j2 log file."""
        return self.data_dir / "broker.log"

    @property
    def jvm_out_path(self) -> Path:
        return self.data_dir / "jvm.out"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def _state_path(self) -> Path:
        return self.data_dir / "broker.json"

    @property
    def _pid_path(self) -> Path:
        return self.data_dir / "broker.pid"

    # state ---------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """ "127.0.0.1:PORT" (known from construction on; start() assigns ports)."""
        if self.port is None:
            self._assign_ports()
        return f"{HOST}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"<KafkaBroker {HOST}:{self.port} {state} data_dir={self.data_dir}>"

    # lifecycle -----------------------------------------------------------
    def __enter__(self) -> "KafkaBroker":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> "KafkaBroker":
        """Format the storage if new, launch the JVM, wait until it serves metadata."""
        with self._lock:
            if self.is_running:
                return self
            t0 = time.monotonic()
            classpath = kafka_classpath()
            java = _find_java()
            self.data_dir.mkdir(parents=True, exist_ok=True)
            _kill_stale(self._pid_path, str(self.config_path))
            self._assign_ports()
            self._write_config()
            with _live_lock:
                _live.add(self)
            try:
                self._format(java, classpath)
                self._launch(java, classpath)
                self._wait_ready(t0 + self.start_timeout)
            except BaseException:
                self._failed = True
                self.kill()
                raise
            self.startup_seconds = time.monotonic() - t0
            log.info(
                "Kafka broker up at %s in %.1fs (log: %s)", self.bootstrap_servers, self.startup_seconds, self.log_path
            )
            return self

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful stop: SIGTERM (controlled shutdown), wait, then SIGKILL."""
        self._terminate(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """SIGKILL the broker (no controlled shutdown); the data dir stays."""
        self._terminate(signal.SIGKILL, 10.0)

    def restart(self, *, graceful: bool = True) -> "KafkaBroker":
        """Stop (or kill) and start again on the same data dir and ports."""
        if graceful:
            self.stop()
        else:
            self.kill()
        return self.start()

    def close(self, timeout: float = 30.0) -> None:
        """stop(), then remove the data dir if it was a temporary one we made."""
        self.stop(timeout)
        with _live_lock:
            _live.discard(self)
        if self._owns_dir and not self._failed:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # clients -------------------------------------------------------------
    def admin(self, **configs: object):
        """A kafka-python KafkaAdminClient on this broker (close it, or use `with`)."""
        from kafka.admin import KafkaAdminClient

        configs.setdefault("bootstrap_servers", self.bootstrap_servers)
        configs.setdefault("client_id", "lab-kafka-admin")
        return KafkaAdminClient(**configs)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        config: Mapping[str, object] | None = None,
        exist_ok: bool = False,
        timeout: float = 30.0,
    ) -> str:
        """Create a topic (replication factor 1) and wait until every partition has a leader."""
        from kafka.errors import TopicAlreadyExistsError

        spec = {
            "num_partitions": int(partitions),
            "replication_factor": 1,
            "configs": {k: str(v) for k, v in (config or {}).items()},
        }
        with self.admin() as admin:
            try:
                admin.create_topics({name: spec}, timeout_ms=int(timeout * 1000))
            except TopicAlreadyExistsError:
                if not exist_ok:
                    raise
            admin.wait_for_topics([name], timeout_ms=int(timeout * 1000))
        return name

    # internals -----------------------------------------------------------
    def _assign_ports(self) -> None:
        if self.port is not None and self.controller_port is not None:
            return
        port, cport = self._requested_ports
        previous = {}
        try:
            previous = json.loads(self._state_path.read_text())
        except (OSError, ValueError):
            pass
        if port is None and previous.get("port") and _port_is_free(previous["port"]):
            port = previous["port"]
        if (
            cport is None
            and previous.get("controller_port")
            and previous["controller_port"] != port
            and _port_is_free(previous["controller_port"])
        ):
            cport = previous["controller_port"]
        while port is None or cport is None or port == cport:
            a, b = _free_ports(2)
            port = port if port is not None else a
            cport = cport if cport is not None and cport != port else b
        self.port, self.controller_port = port, cport

    def _server_properties(self) -> dict[str, str]:
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": self.node_id,
            "controller.quorum.bootstrap.servers": f"{HOST}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.log_dir,
            "auto.create.topics.enable": str(bool(self.auto_create_topics)).lower(),
            "num.partitions": 1,
            "default.replication.factor": 1,
            "min.insync.replicas": 1,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1,
            "share.coordinator.state.topic.num.partitions": 1,
            "group.initial.rebalance.delay.ms": 0,
            # after a kill the controller refuses the new broker incarnation until the
            # old session expires (default 9 s): restart-after-kill ~12 s -> ~5 s
            "broker.session.timeout.ms": 3000,
            "broker.heartbeat.interval.ms": 500,
            # small segments (1 MiB is the minimum Kafka 4 accepts)
            "log.segment.bytes": 1024 * 1024,
            "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,  # default 128 MB of a 512 MB heap
            "num.network.threads": 2,
            "num.io.threads": 2,
            "num.recovery.threads.per.data.dir": 1,
        }
        props.update(self.extra_config)
        return {k: str(v) for k, v in props.items()}

    def _write_config(self) -> None:
        import javaproperties

        # Java .properties by a writer for the format: escaping of '=', ':', '\\' and newlines included
        self.config_path.write_text(
            javaproperties.dumps(
                self._server_properties(), comments=f"written by lab/kafka.py; {HOST}:{self.port}", timestamp=False
            )
        )
        log = str(self.log_path).replace("\\", "/")
        (self.data_dir / "log4j2.properties").write_text(
            javaproperties.dumps(
                {**_LOG4J2, "appender.file.fileName": log, "appender.file.filePattern": f"{log}.%i"},
                comments=f"written by lab/kafka.py: every JVM log line goes to {log}",
                timestamp=False,
            )
        )
        state = {"port": self.port, "controller_port": self.controller_port}
        if self.cluster_id:
            state["cluster_id"] = self.cluster_id
        try:
            previous = json.loads(self._state_path.read_text())
            state.setdefault("cluster_id", previous.get("cluster_id"))
        except (OSError, ValueError):
            pass
        self._state_path.write_text(json.dumps(state, indent=1) + "\n")

    def _jvm(self, java: str, classpath: str, flags: list[str], main: str, *args: str) -> list[str]:
        return [
            java,
            *flags,
            f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.data_dir}",
            "-cp",
            classpath,
            main,
            *args,
        ]

    def _format(self, java: str, classpath: str) -> None:
        meta = self.log_dir / "meta.properties"
        if meta.exists():  # formatted once; restarts reuse it
            self.cluster_id = self.cluster_id or _read_cluster_id(meta)
            return
        self.cluster_id = _random_cluster_id()
        cmd = self._jvm(
            java,
            classpath,
            _TOOL_JVM_FLAGS,
            STORAGE_TOOL_MAIN,
            "format",
            "--config",
            str(self.config_path),
            "--cluster-id",
            self.cluster_id,
            "--standalone",
            "--ignore-formatted",
        )
        out_path = self.data_dir / "format.log"
        with open(out_path, "wb") as out:
            rc = subprocess.run(
                cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=120
            ).returncode
        if rc != 0:
            raise KafkaBrokerError(
                f"Kafka StorageTool format failed (exit {rc}) for {self.data_dir}; "
                f"output ({out_path}):\n{_tail(out_path)}"
            )
        self._write_config()  # record the cluster id

    def _launch(self, java: str, classpath: str) -> None:
        flags = [f"-Xmx{self.heap}", "-Xms64m", *_COMMON_JVM_FLAGS, *self.jvm_opts]
        cmd = self._jvm(java, classpath, flags, BROKER_MAIN, str(self.config_path))
        env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS")}
        preexec = _die_with_parent() if threading.current_thread() is threading.main_thread() else None
        try:
            self._log_offset = self.log_path.stat().st_size
        except OSError:
            self._log_offset = 0
        with open(self.jvm_out_path, "ab") as out:
            out.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} starting {HOST}:{self.port}\n".encode())
            out.flush()
            self._proc = subprocess.Popen(
                cmd,
                cwd=self.data_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=preexec,
            )
        self._pid_path.write_text(f"{self._proc.pid} {os.getpid()}\n")

    def _wait_ready(self, deadline: float) -> None:
        from kafka.admin import KafkaAdminClient

        last_error: object = "the broker port never accepted a connection"
        while True:
            rc = self._proc.poll() if self._proc else None
            if rc is not None:
                self._fail(f"the Kafka broker exited with code {rc} during start-up")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._fail(
                    f"the Kafka broker did not answer metadata requests within "
                    f"{self.start_timeout:.0f}s (last error: {last_error})"
                )
            if not _port_accepts(self.port):
                time.sleep(0.1)
                continue
            budget_ms = int(max(0.5, min(remaining, 2.0)) * 1000)
            try:
                with KafkaAdminClient(
                    bootstrap_servers=self.bootstrap_servers,
                    client_id="lab-kafka-health",
                    bootstrap_timeout_ms=budget_ms,
                    request_timeout_ms=budget_ms,
                ) as admin:
                    brokers = admin.describe_cluster().get("brokers") or []
                    if any(b.get("broker_id") == self.node_id and not b.get("is_fenced") for b in brokers):
                        admin.list_topics()
                        return
                    last_error = f"broker not registered/unfenced yet: {brokers}"
            except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
                last_error = f"{type(e).__name__}: {e}"
            time.sleep(0.2)

    def _fail(self, what: str) -> None:
        tail = _tail(self.log_path)
        msg = [f"{what}. Broker log: {self.log_path} (JVM output: {self.jvm_out_path})."]
        errors = _first_errors(self.log_path, self._log_offset)
        if errors:
            msg += ["First errors of this run:", errors]
        msg += [f"Last {LOG_TAIL_LINES} lines of {self.log_path}:", tail or "    (empty)"]
        out_tail = _tail(self.jvm_out_path, 15).strip()
        if out_tail and not out_tail.startswith("==="):
            msg += [f"Last lines of {self.jvm_out_path}:", out_tail]
        raise KafkaBrokerError("\n".join(msg))

    def _terminate(self, sig: signal.Signals, timeout: float) -> None:
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, sig)  # its own process group (start_new_session)
                except ProcessLookupError:
                    pass
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    log.warning("Kafka broker pid %s ignored %s for %.0fs: SIGKILL", proc.pid, sig.name, timeout)
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait(10)
            self._proc = None
            try:
                self._pid_path.unlink()
            except OSError:
                pass


def _first_errors(path: Path, offset: int, limit: int = 12) -> str:
    """ERROR/FATAL lines and their `Caused by:` lines logged since offset (the cause
    of a failed start is often far above the shutdown noise at the end)."""
    try:
        with open(path, "rb") as f:
            if offset <= f.seek(0, os.SEEK_END):
                f.seek(offset)
            else:  # rolled over since
                f.seek(0)
            text = f.read(8 * 1024 * 1024).decode("utf-8", errors="replace")
    except OSError:
        return ""
    picked: list[str] = []
    for line in text.splitlines():
        if "] ERROR " in line or "] FATAL " in line or line.startswith("Caused by:"):
            if line not in picked:
                picked.append(line)
            if len(picked) >= limit:
                break
    return "\n".join(picked)


def _read_cluster_id(meta: Path) -> str | None:
    for line in meta.read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.split("=", 1)[1].strip()
    return None


_LOG4J2 = {
    "status": "warn",
    "name": "lab-kafka",
    "appender.file.type": "RollingFile",
    "appender.file.name": "file",
    "appender.file.layout.type": "PatternLayout",
    "appender.file.layout.pattern": "[%d] %p %m (%c)%n",
    "appender.file.policies.type": "Policies",
    "appender.file.policies.size.type": "SizeBasedTriggeringPolicy",
    "appender.file.policies.size.size": "50MB",
    "appender.file.strategy.type": "DefaultRolloverStrategy",
    "appender.file.strategy.max": "2",
    "rootLogger.level": "INFO",
    "rootLogger.appenderRef.file.ref": "file",
    "logger.request.name": "kafka.request.logger",
    "logger.request.level": "WARN",
}


# -------------------------------------------------------------------------- CLI


def _parse_topic(spec: str) -> tuple[str, int]:
    name, _, parts = spec.partition(":")
    return name, int(parts) if parts else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lab.kafka",
        description="Run a single-node Kafka (KRaft) on 127.0.0.1 for the lab and the demo.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    start = sub.add_parser("start", help="run a broker in the foreground until Ctrl-C")
    start.add_argument(
        "--data-dir",
        help="config, logs and partitions (default: a temporary "
        "dir, removed on exit); reuse it to keep topics, data and the port",
    )
    start.add_argument(
        "--port", type=int, help="broker port (default: the previous one on --data-dir, else a free one)"
    )
    start.add_argument("--controller-port", type=int)
    start.add_argument(
        "--auto-create-topics", action="store_true", help="auto.create.topics.enable=true (default false)"
    )
    start.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create this topic if missing (repeatable)",
    )
    start.add_argument("--timeout", type=float, default=90.0, help="start-up timeout, seconds")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    broker = KafkaBroker(
        args.data_dir,
        port=args.port,
        controller_port=args.controller_port,
        auto_create_topics=args.auto_create_topics,
        start_timeout=args.timeout,
    )

    def on_sigterm(signum, frame):  # noqa: ARG001
        signal.signal(signum, signal.SIG_IGN)  # a second Ctrl-C must not break the stop
        raise KeyboardInterrupt

    # also SIGINT: a shell starts background jobs with SIGINT ignored
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_sigterm)
    try:
        try:
            broker.start()
        except KafkaBrokerError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        for spec in args.topic:
            name, parts = _parse_topic(spec)
            broker.create_topic(name, parts, exist_ok=True)
        print(
            f"Kafka {HOST}:{broker.port} is up ({broker.startup_seconds:.1f}s), data dir {broker.data_dir}", flush=True
        )
        print(f"bootstrap.servers={broker.bootstrap_servers}", flush=True)
        print(f"log: {broker.log_path}   (Ctrl-C to stop)", flush=True)
        while broker.is_running:
            time.sleep(0.5)
        rc = broker._proc.returncode if broker._proc else None
        broker._failed = True  # keep a temporary data dir: it holds the log
        print(
            f"error: the broker exited (code {rc}); last lines of {broker.log_path}:\n{_tail(broker.log_path)}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("stopping Kafka ...", file=sys.stderr, flush=True)
        return 0
    finally:
        broker.close()


if __name__ == "__main__":
    sys.exit(main())
