"""A Spark standalone cluster, through Spark's own interfaces: `spark-submit` in cluster deploy
mode with `--supervise` (the master starts the driver on a worker and restarts it if it fails),
`org.apache.spark.deploy.Client kill` (Spark's documented way to stop such a driver), the master's
JSON status (`/json/`) and the workers' log endpoint (`/log`).

A cluster with `auth_secret_file` runs with `spark.authenticate`: spark-submit and Client kill get
the secret in their environment (`_SPARK_AUTH_SECRET`, which Spark reads before its conf), never on
a command line `ps` shows. With `ui_key_file`, its UIs sit behind Spark's JWSFilter: each request
carries a short-lived HS256 token signed with that key.

A Python driver cannot be submitted in cluster mode directly (Spark refuses .py files there), so
the submitted main class is Spark's own PythonRunner, which starts the runtime's driver script
with the cluster's Python exactly as spark-submit would in client mode.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .. import http_client
from ..errors import DaggerError
from ..jvm import jvm_dir, spark_jars
from .clusters import Cluster

RUNTIME_DIR = Path(__file__).resolve().parent.parent
SUBMITTED = re.compile(r"Driver successfully submitted as (driver-[0-9]+-[0-9]+)")
DRIVER_ID = re.compile(r"driver-[0-9]+-[0-9]+")


def spark_home(cluster: Cluster) -> str:
    if cluster.spark_home:
        return cluster.spark_home
    import pyspark

    return os.path.dirname(pyspark.__file__)


def _on_cluster(cluster: Cluster, local: Path) -> str:
    """A runtime jar's path as the workers see it (the same layout under the cluster's jvm_dir)."""
    return f"{cluster.jvm_dir.rstrip('/')}/{local.relative_to(jvm_dir()).as_posix()}"


# What a dagger asks of a standalone cluster (cluster deploy mode): its driver takes a core and
# DRIVER_MEMORY_MB on a worker, its one executor `parallelism` cores and executor_memory_mb() on a
# worker: EXECUTOR_MEMORY_MB, or more for a job that says it holds many rows in state.
DRIVER_MEMORY_MB = 768
EXECUTOR_MEMORY_MB = 1024

# A job's state on Spark's default state store, from the state bench (bench/state.py, a million
# keys a window): Spark reported about STATE_BYTES_PER_ROW for each row it held. The store keeps the
# last two versions of each partition's state in memory (spark.sql.streaming.maxBatchesToRetainInMemory)
# on the heap's share Spark does not manage: 1 - spark.memory.fraction (0.6) of what its 300 MB
# reserve leaves. On the safe side: in a JVM of their own, the bench's two million rows fit a 1 GB
# heap (768 MB failed), where this gives 2,816 MB.
STATE_BYTES_PER_ROW = 237
STATE_VERSIONS = 2
SPARK_RESERVED_MB = 300
USER_SHARE = 0.4


def executor_memory_mb(state_rows: int | None) -> int:
    """The executor's memory for a job whose state holds at most `state_rows` rows (its
    `state_rows` key; None: EXECUTOR_MEMORY_MB), in steps of 256 MB (pure)."""
    if not state_rows:
        return EXECUTOR_MEMORY_MB
    state_mb = state_rows * STATE_BYTES_PER_ROW * STATE_VERSIONS / USER_SHARE / 2**20
    return max(EXECUTOR_MEMORY_MB, 256 * math.ceil((SPARK_RESERVED_MB + state_mb) / 256))


def fits(workers_free: list[tuple[int, int]], parallelism: int, executor_mb: int = EXECUTOR_MEMORY_MB) -> bool:
    """Whether a dagger's driver and executor can both be placed now, given each alive worker's free
    (cores, memory MB) (pure). A standalone master that cannot place the executor leaves the
    application WAITING with no error: a deploy asks first."""
    driver, executor = (1, DRIVER_MEMORY_MB), (parallelism, executor_mb)
    for i, (cores_a, memory_a) in enumerate(workers_free):
        for j, (cores_b, memory_b) in enumerate(workers_free):
            if i == j:
                if cores_a >= driver[0] + executor[0] and memory_a >= driver[1] + executor[1]:
                    return True
            elif cores_a >= driver[0] and memory_a >= driver[1] and cores_b >= executor[0] and memory_b >= executor[1]:
                return True
    return False


def describe_free(workers_free) -> str:
    """What the workers have free, for a refusal: "1 core and 4.5 GB, 2 cores and 1.0 GB" (pure)."""
    return ", ".join(f"{c} core{'' if c == 1 else 's'} and {m / 1024:.1f} GB" for c, m in workers_free) or "nothing"


def unplaced(
    workers_free: list[tuple[int, int]], parallelisms: list[int], executor_mbs: list[int] | None = None
) -> list[int]:
    """The daggers (by index into `parallelisms`, with their executors' memory in `executor_mbs`)
    whose driver and executor cannot be placed when all of them are deployed one after the other onto
    workers with these free (cores, memory MB), each taking the first placement that fits, as `fits`
    finds it (pure)."""
    free = [list(w) for w in workers_free]
    left = []
    memories = executor_mbs or [EXECUTOR_MEMORY_MB] * len(parallelisms)
    for k, (parallelism, executor_mb) in enumerate(zip(parallelisms, memories, strict=True)):
        driver, executor = (1, DRIVER_MEMORY_MB), (parallelism, executor_mb)

        def holds(i: int, *needs: tuple[int, int]) -> bool:
            return free[i][0] >= sum(n[0] for n in needs) and free[i][1] >= sum(n[1] for n in needs)

        spot = next(
            (
                (i, j)
                for i in range(len(free))
                for j in range(len(free))
                if (i == j and holds(i, driver, executor)) or (i != j and holds(i, driver) and holds(j, executor))
            ),
            None,
        )
        if spot is None:
            left.append(k)
            continue
        for index, (cores, memory) in zip(spot, (driver, executor)):
            free[index][0] -= cores
            free[index][1] -= memory
    return left


def submit_argv(
    cluster: Cluster,
    *,
    name: str,
    spec_path: str,
    checkpoint: str,
    metrics_port: int,
    parallelism: int,
    executor_mb: int = EXECUTOR_MEMORY_MB,
    starting: dict[str, dict[str, str]] | None = None,
    emit_after_ms: int | None = None,
    version: int | None = None,
    standby: bool = False,
) -> list[str]:
    """spark-submit's command line for a dagger (pure)."""
    jars = [_on_cluster(cluster, p) for p in spark_jars()]
    decoder = jars[-1]
    log_conf = f"-Dlog4j.configurationFile=file:{RUNTIME_DIR / 'log4j2.properties'} -Duser.timezone=UTC"
    conf = {
        **auth_conf(cluster),
        "spark.pyspark.python": cluster.python,
        "spark.pyspark.driver.python": cluster.python,
        "spark.driver.memory": f"{DRIVER_MEMORY_MB}m",
        "spark.executor.memory": f"{executor_mb}m",
        "spark.cores.max": str(parallelism),
        "spark.executor.cores": str(parallelism),
        "spark.driver.extraJavaOptions": log_conf,
        "spark.executor.extraJavaOptions": log_conf,
    }
    argv = [
        f"{spark_home(cluster)}/bin/spark-submit",
        "--master",
        cluster.master,
        "--deploy-mode",
        "cluster",
        "--supervise",
        "--name",
        f"dagger-{name}",
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        "--jars",
        ",".join(jars),
    ]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    # PythonRunner's arguments: the script, its extra Python files (none), then the script's own
    argv += [
        decoder,
        str(RUNTIME_DIR / "driver.py"),
        "",
        cluster.jvm_dir,
        "run",
        spec_path,
        "--checkpoint",
        checkpoint,
        "--master",
        cluster.master,
        "--metrics-port",
        str(metrics_port),
        "--metrics-addr",
        cluster.metrics_host,
    ]
    if starting:
        argv += ["--starting", json.dumps(starting, sort_keys=True, separators=(",", ":"))]
    if emit_after_ms is not None:
        argv += ["--emit-windows-after", str(int(emit_after_ms))]
    if version is not None:
        argv += ["--dagger-version", str(int(version))]
    if standby:
        argv += ["--standby"]
    return argv


# what spark-submit itself needs from the environment
_BASE_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "JAVA_HOME", "SPARK_LOCAL_IP", "SPARK_CONF_DIR", "TMPDIR")
# where Spark's SecurityManager looks for the secret before its conf (the worker hands it to the
# drivers and executors it launches the same way)
AUTH_SECRET_ENV = "_SPARK_AUTH_SECRET"


def auth_conf(cluster: Cluster) -> dict[str, str]:
    """The client side of the cluster's authentication: on, with encrypted RPC and no unencrypted
    fallback (the driver's and executors' own servers too: spark-submit hands these on)."""
    if not cluster.auth_secret_file:
        return {}
    return {
        "spark.authenticate": "true",
        "spark.network.crypto.enabled": "true",
        "spark.network.crypto.saslFallback": "false",
    }


def _read_secret(path: str, what: str) -> str:
    try:
        value = Path(path).read_text().strip()
    except OSError as e:
        raise DaggerError(
            f"cannot read the {what} at {path} ({e.strerror}): the deploy tooling holds it "
            "(is the lab up, and is this its operator?)"
        ) from None
    if not value:
        raise DaggerError(f"the {what} at {path} is empty")
    return value


def client_env(cluster: Cluster) -> dict[str, str]:
    """The environment a Spark client of the cluster needs beside its own (the secret, if any)."""
    if not cluster.auth_secret_file:
        return {}
    return {AUTH_SECRET_ENV: _read_secret(cluster.auth_secret_file, f"Spark secret of cluster {cluster.name}")}


def _spark_env(passed: tuple[str, ...] = (), cluster: Cluster | None = None) -> dict[str, str]:
    """spark-submit's environment: in standalone cluster mode Spark hands the submitter's whole
    environment to the driver, so only what it needs goes, plus the variables the spec refers to
    (`${VAR}` secrets, resolved by the driver when it loads the spec), plus the cluster's secret
    (which the driver gets from its worker anyway)."""
    env = {k: v for k, v in os.environ.items() if k in _BASE_ENV or k in passed}
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if cluster is not None:
        env.update(client_env(cluster))
    return env


SECRET_PREFIX = "DAGGER_SECRET_"


def secret_prefix(team: str | None) -> str:
    """DAGGER_SECRET_<TEAM>__: a double underscore ends the team, which no team name can hold
    (no '--' in team names), so team `api` cannot name team `api-health`'s secrets."""
    return SECRET_PREFIX + (team.upper().replace("-", "_") + "__" if team else "")


def referenced_env(spec_text: str, team: str | None, fmt: str = "yaml") -> tuple[str, ...]:
    """The environment variables a spec's `${VAR}` references name, which deploy passes to the
    driver. Only the team's own secrets may be named (DAGGER_SECRET_<TEAM>__...), and a spec
    without a team may name none: a spec is the analyst's, the environment the operator's, and a
    sink URL could carry any variable away. The names are read both from the text (comments
    included) and from the parsed secret values (so an escaped `\x24{VAR}` is seen too)."""
    from ..config._checks import ENV_REF_RE
    from ..config.loader import secret_references

    names = tuple(
        sorted(
            {m.group(1) for m in ENV_REF_RE.finditer(spec_text.replace("$${", ""))}
            | set(secret_references(spec_text, "properties" if fmt.endswith("properties") else "yaml"))
        )
    )
    if names and not team:
        raise DaggerError(
            f"the spec refers to {', '.join('${' + n + '}' for n in names)} but names no team; a "
            "deployed dagger may only refer to its team's secrets, named DAGGER_SECRET_<TEAM>__<NAME>: "
            "set `team:`"
        )
    prefix = secret_prefix(team)
    foreign = [n for n in names if not n.startswith(prefix) or n == prefix]
    if foreign:
        raise DaggerError(
            f"the spec refers to {', '.join('${' + n + '}' for n in foreign)}; a deployed dagger may "
            f"only refer to its team's secrets, named {prefix}<NAME>"
        )
    missing = [n for n in names if n not in os.environ]
    if missing:
        raise DaggerError(
            f"the spec refers to {', '.join('${' + n + '}' for n in missing)}, which "
            "is not set here; set it in the environment of the deploy (it is passed to the driver, "
            "never stored)"
        )
    return names


def submit(argv: list[str], passed_env: tuple[str, ...] = (), cluster: Cluster | None = None) -> str:
    """Run spark-submit (with `cluster`'s secret); the driver's submission id."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=_spark_env(passed_env, cluster), timeout=180)
    except subprocess.TimeoutExpired:
        raise DaggerError(
            "spark-submit did not answer within 180 s; a driver may have started: look at the "
            "master's drivers before deploying again"
        ) from None
    found = SUBMITTED.search(done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        raise DaggerError(f"spark-submit failed (exit {done.returncode}): {_last_error(done.stderr)}")
    return found.group(1)


def kill(cluster: Cluster, driver_id: str) -> None:
    if not DRIVER_ID.fullmatch(driver_id):
        raise DaggerError(f"{driver_id!r} is not a Spark driver id")
    env = _spark_env(cluster=cluster)
    if cluster.auth_secret_file:
        # Client reads only system properties (spark-class gives it no *_OPTS variable of its own)
        env["JAVA_TOOL_OPTIONS"] = " ".join(f"-D{k}={v}" for k, v in auth_conf(cluster).items())
    done = subprocess.run(
        [f"{spark_home(cluster)}/bin/spark-class", "org.apache.spark.deploy.Client", "kill", cluster.master, driver_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if done.returncode != 0:
        raise DaggerError(f"could not stop {driver_id} on {cluster.name}: {_last_error(done.stderr)}")


def _last_error(text: str) -> str:
    lines = [line for line in text.splitlines() if re.search(r"ERROR|Exception|rror:", line)]
    return (lines[-1] if lines else (text.strip().splitlines() or ["no output"])[-1]).strip()[:400]


@dataclass(frozen=True)
class MasterState:
    status: str
    workers_alive: int
    cores: int
    cores_used: int
    memory_mb: int
    memory_used_mb: int
    drivers: dict[str, dict]  # every driver the master knows, by id
    worker_ui: dict[str, str]  # worker id -> its web UI
    workers_free: tuple[tuple[int, int], ...] = ()  # each alive worker's free (cores, memory MB)


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def ui_token(key_text: str, ttl_s: int = 60) -> str:
    """A JWS for Spark's org.apache.spark.ui.JWSFilter: HS256 over the key as the filter reads it
    (its text BASE64URL-decoded). Spark checks the signature and jjwt the expiry: a token copied
    from somewhere is worthless a minute later."""
    key = base64.urlsafe_b64decode(key_text + "=" * (-len(key_text) % 4))
    if len(key) < 32:
        raise DaggerError("the Spark UI key is shorter than 256 bits")
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = _b64url(
        json.dumps({"sub": "dagger-platform", "exp": int(time.time()) + ttl_s}, separators=(",", ":")).encode()
    )
    signed = head + b"." + body
    return (signed + b"." + _b64url(hmac.new(key, signed, hashlib.sha256).digest())).decode()


def ui_headers(cluster: Cluster) -> dict[str, str]:
    """What a request to the cluster's master or worker UIs carries ({} for an open UI)."""
    if not cluster.ui_key_file:
        return {}
    key = _read_secret(cluster.ui_key_file, f"Spark UI key of cluster {cluster.name}")
    return {"Authorization": f"Bearer {ui_token(key)}"}


def ui_get(cluster: Cluster, url: str, timeout: float, params: dict | None = None):
    """GET one of the cluster's UI pages (the master's /json/, a worker's /log) with its token
    (raises http_client.Error)."""
    return http_client.get(url, timeout=timeout, params=params, headers=ui_headers(cluster))


def master_json(cluster: Cluster, timeout: float = 5.0) -> dict:
    """The master's /json/ (raises http_client.Error, an OSError, or ValueError for a body not JSON)."""
    return ui_get(cluster, f"{cluster.web_ui}/json/", timeout).json()


def master_state(cluster: Cluster, timeout: float = 5.0) -> MasterState:
    try:
        data = master_json(cluster, timeout)
    except (OSError, ValueError) as e:
        raise DaggerError(f"cluster {cluster.name}: the master at {cluster.web_ui} does not answer ({e})") from None
    drivers = {d["id"]: d for d in data.get("completeddrivers", []) + data.get("activedrivers", [])}
    workers = {w["id"]: w.get("webuiaddress", "") for w in data.get("workers", [])}
    free = tuple(
        (w.get("coresfree", 0), w.get("memoryfree", 0)) for w in data.get("workers", []) if w.get("state") == "ALIVE"
    )
    return MasterState(
        data.get("status", "UNKNOWN"),
        data.get("aliveworkers", 0),
        data.get("cores", 0),
        data.get("coresused", 0),
        data.get("memory", 0),
        data.get("memoryused", 0),
        drivers,
        workers,
        free,
    )


def driver_log(cluster: Cluster, driver_id: str, *, which: str = "stderr", tail_bytes: int = 20000) -> str:
    """The end of a driver's stdout or stderr, from the worker it runs on."""
    state = master_state(cluster)
    driver = state.drivers.get(driver_id)
    if driver is None or not driver.get("worker") or driver["worker"] not in state.worker_ui:
        raise DaggerError(
            f"cluster {cluster.name} no longer knows where driver {driver_id} ran "
            "(the master forgets drivers when it restarts)"
        )
    worker_ui = state.worker_ui[driver["worker"]]
    if not re.fullmatch(r"https?://[A-Za-z0-9.-]+:\d{1,5}", worker_ui):
        raise DaggerError(f"the master gives {worker_ui!r} as the worker's web UI; not reading a log from there")
    query = {"driverId": driver_id, "logType": which, "byteLength": tail_bytes}
    try:
        text = ui_get(cluster, f"{worker_ui}/log", 10, params=query).content.decode("utf-8", "replace")
    except OSError as e:
        raise DaggerError(f"cannot read the log of {driver_id} from its worker: {e}") from None
    # the worker prefixes "==== Bytes a-b of n of <path> ====": keep the log itself
    return text.split("\n", 1)[1] if text.startswith("==== ") else text
