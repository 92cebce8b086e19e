"""Builds the Spark session every dagger command runs in."""

from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from .jvm import spark_jars

log = logging.getLogger(__name__)
LOG4J = Path(__file__).with_name("log4j2.properties")


# Spark settings that close what neither sandbox check needs to allow (dagger_runtime.sandbox.guard,
# dagger_runtime.sandbox). PlanGuard.java refuses to check a query in a session without the first two.
SANDBOX_CONF: dict[str, str] = {
    # `${env:SECRET}`, `${system:user.home}` in any part of the SQL text would be replaced by the
    # driver's environment and system properties before parsing
    "spark.sql.variable.substitute": "false",
    # SELECT * FROM parquet.`/etc/...`: files by path, not the job's streams
    "spark.sql.runSQLOnFiles": "false",
    # no metastore: no catalog tables to reach, nothing persistent to change
    "spark.sql.catalogImplementation": "in-memory",
    # SQL scripting (BEGIN ... END blocks, loops, variables) is not a dagger query
    "spark.sql.scripting.enabled": "false",
    # the web UI shows every query, its plan and the environment to anyone who reaches the port
    "spark.ui.enabled": os.environ.get("DAGGER_SPARK_UI", "false"),
}


# the warm process's session, while it runs a command: build_session gives a new session of it
_base = None


@contextmanager
def sessions_of(base):
    """Inside, build_session() returns a new session of `base` (its own temporary views, UDFs and
    SQL settings, the JVM and its loaded classes shared) and makes it the active one; on the way
    out every table it cached is dropped and `base` is active again."""
    global _base
    _base = base
    try:
        yield
    finally:
        _base = None
        base.catalog.clearCache()
        _activate(base)


def _activate(spark) -> None:
    from pyspark.sql import SparkSession

    SparkSession._activeSession = spark
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


# what the JVM prints on every start and an analyst cannot act on: Spark's launcher always adds the
# incubating vector module (org.apache.spark.launcher.JavaModuleOptions) and no flag silences it
_JVM_NOTICES = (b"WARNING: Using incubator modules:",)


def _launch_quiet_jvm(options: dict[str, str], always: bool = False) -> None:
    """Start Spark's JVM as getOrCreate would (the same spark-submit with the same settings), its
    stderr passed on without _JVM_NOTICES; getOrCreate then finds it and starts none. Skipped when a
    JVM is up already, when spark-submit gave one (PYSPARK_GATEWAY_PORT) and under -v (unless
    `always`)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    if logging.getLogger().isEnabledFor(logging.DEBUG) and not always:
        return
    conf = SparkConf()
    for key, value in options.items():
        conf.set(key, value)
    with SparkContext._lock:  # as pyspark checks and launches: one JVM for two threads
        if SparkContext._gateway is not None:
            return
        # read from before the start, so a JVM that fails to start still says why on our stderr
        read_end, write_end = os.pipe()
        reader = threading.Thread(target=_pass_on, args=(read_end,), name="jvm-stderr", daemon=True)
        try:
            reader.start()
            gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
        except BaseException:
            os.close(write_end)
            if reader.is_alive():
                reader.join(timeout=5)  # the JVM is gone: its last words reach stderr before we exit
            else:
                os.close(read_end)
            raise
        os.close(write_end)
        SparkContext._gateway = gateway
        SparkContext._jvm = gateway.jvm


def _pass_on(fd: int) -> None:
    """The JVM's stderr to ours (fd 2, where it would have gone), line by line: Spark's log at
    ERROR and little else, never a line per message."""
    with os.fdopen(fd, "rb") as stream:
        for line in stream:
            if line.startswith(_JVM_NOTICES):
                continue
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(2, view) :]
            except OSError:  # our stderr is gone: keep reading, or the JVM blocks on a full pipe
                pass


# The JIT's first tier only (C1): a command that ends within a minute (validate, preview) spends half
# the CPU starting Spark (17 s instead of 33 for a validate, bench.commands), because C2 compiles
# Spark's start-up code in vain. A dagger that runs for days keeps the JVM's default.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"


def build_session(
    app_name: str = "dagger",
    *,
    master: str | None = None,
    parallelism: int = 2,
    extra_conf: dict[str, str] | None = None,
    short_lived: bool = False,
    secret_conf: dict[str, str] | None = None,
):
    """A Spark session with the runtime's jars, UTC time, and quiet logs.

    Everything time-related runs in UTC so window boundaries and the ISO timestamps printed by
    `preview` do not depend on the machine's zone. `secret_conf` (spark.authenticate.secret of a
    client-mode driver) reaches the JVM over its gateway once it runs, never on the command line
    that starts it, where `ps` would show it to every user.
    """
    from pyspark.sql import SparkSession

    if _base is not None and master is None and not extra_conf and not secret_conf:
        spark = _base.newSession()
        spark.conf.set("spark.sql.shuffle.partitions", str(max(parallelism, 1)))
        _activate(spark)
        return spark

    # Python workers run the same interpreter (and venv) as the driver; Spark binds to loopback.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log_conf = f"-Dlog4j.configurationFile=file:{LOG4J} -Duser.timezone=UTC"
    jars = ",".join(str(p) for p in spark_jars())
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master or os.environ.get("DAGGER_SPARK_MASTER", f"local[{max(parallelism, 1)}]"))
        .config("spark.jars", jars)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", f"{log_conf} {SHORT_LIVED_JVM}" if short_lived else log_conf)
        .config("spark.executor.extraJavaOptions", log_conf)
        .config("spark.pyspark.python", sys.executable)
        # Flink-like leniency: a bad CAST gives NULL instead of failing a long-running job
        .config("spark.sql.ansi.enabled", "false")
        # ExponentialMovingAverage/LinearTrend: the later sample wins a duplicate minute, as in dagger
        .config("spark.sql.mapKeyDedupPolicy", "LAST_WIN")
        .config("spark.sql.shuffle.partitions", str(max(parallelism, 1)))
        .config("spark.default.parallelism", str(max(parallelism, 1)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    for key, value in {**SANDBOX_CONF, **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    _launch_quiet_jvm(builder._options, always=bool(secret_conf))
    if secret_conf:
        # py4j logs every command it sends at DEBUG (-v): the secret's would be one of them
        py4j = logging.getLogger("py4j")
        py4j.setLevel(max(py4j.getEffectiveLevel(), logging.INFO))
    for key, value in (secret_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("DAGGER_SPARK_LOG_LEVEL", "ERROR"))
    return spark
