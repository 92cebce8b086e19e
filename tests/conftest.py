"""Shared fixtures. Keep this file small: one fixture per shared resource."""

import contextlib
import json
import os
import shutil
import tempfile
import threading

import pytest

from dagger_runtime.session import SHORT_LIVED_JVM, build_session
from dagger_runtime.udfs import register_all
from lab.kafka import KafkaBroker
from tests.labrun import PORT_BASE, Quiet, lab

# the tests' JVMs are short-lived: the JIT's first tier (C1) only, as in spark-conf/spark-defaults.conf
JIT_FIRST_TIER = [SHORT_LIVED_JVM]
# a test that uses one of these fixtures gets its mark, so `make test-fast` (no JVM, no server)
# can leave it out without each file saying so
FIXTURE_MARKS = {
    "spark": "spark",
    "kafka_broker": "kafka",
    "influxdb": "servers",
    "victoria_metrics": "servers",
    "postgres": "servers",
    "lab_env": "e2e",
}


def pytest_configure(config):
    # a developer's own warm process (`dagger warm start`) never answers the tests' commands:
    # test_warm.py starts the ones it checks
    os.environ["DAGGER_WARM_SOCKET"] = "/nonexistent/dagger-tests/warm.sock"
    # every Spark JVM the tests start, here and in subprocesses, reads the tests' spark-defaults.conf
    # (the JIT's first tier only: see that file)
    os.environ["SPARK_CONF_DIR"] = os.path.join(os.path.dirname(__file__), "spark-conf")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Every test that uses the lab (one per machine, on a fixed port base) in one xdist group, so
    `-n 2 --dist loadgroup` runs them in order on one worker and everything else beside them.
    tryfirst: this conftest loads before xdist's worker plugin, whose own hook turns the marks
    into groups, and would otherwise run after it (pytest-xdist#1241)."""
    for item in items:
        used = getattr(item, "fixturenames", ())
        if "lab_env" in used:
            item.add_marker(pytest.mark.xdist_group("lab"))
        for fixture, mark in FIXTURE_MARKS.items():
            if fixture in used:
                item.add_marker(mark)
    # the tests that take the whole lab down and up again run after every other test of the lab:
    # a lab that does not come back then fails them alone, not every test after them
    items.sort(key=lambda item: item.get_closest_marker("lab_last") is not None)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """One real single-node Kafka (KRaft) on 127.0.0.1 for the whole session."""
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"), jvm_opts=JIT_FIRST_TIER)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (with the runtime's jars and UDFs) for every test that needs one."""
    session = build_session("dagger-tests", parallelism=2)
    register_all(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def influxdb(tmp_path_factory):
    """A real InfluxDB 1.x (Debian's influxdb) on a free loopback port."""
    from lab.influxdb import InfluxDB

    server = InfluxDB(tmp_path_factory.mktemp("influxdb"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def victoria_metrics(tmp_path_factory):
    """A real VictoriaMetrics: a server of InfluxDB's v2 write API."""
    from lab.victoriametrics import VictoriaMetrics

    server = VictoriaMetrics(tmp_path_factory.mktemp("victoria-metrics"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL (Debian's) on a free loopback port, password authentication over TCP."""
    from lab.postgres import Postgres

    server = Postgres()
    server.start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def lab_env(request):
    """The lab, converged by the playbooks on PORT_BASE, for every test that needs it (its
    environment: DAGGER_LAB_DIR, DAGGER_LAB_PORT_BASE); down at the end of the session.
    DAGGER_TEST_LAB_DIR and DAGGER_TEST_LAB_PORT_BASE name a lab that is up instead."""
    import os

    if os.environ.get("DAGGER_TEST_LAB_DIR"):
        # a lab already up (a developer's, with DAGGER_TEST_LAB_PORT_BASE): used as it is, kept up
        yield Quiet(
            {
                **os.environ,
                "DAGGER_LAB_DIR": os.environ["DAGGER_TEST_LAB_DIR"],
                "DAGGER_LAB_PORT_BASE": os.environ["DAGGER_TEST_LAB_PORT_BASE"],
            }
        )
        return
    # not under pytest's temporary directories, which are closed to other users: as root, PostgreSQL
    # runs as `postgres` and must reach its directory in the lab
    lab_dir = tempfile.mkdtemp(prefix="dagger-lab-test-")
    os.chmod(lab_dir, 0o711)
    env = Quiet({**os.environ, "DAGGER_LAB_DIR": lab_dir, "DAGGER_LAB_PORT_BASE": str(PORT_BASE)})
    failed_before = request.session.testsfailed
    up = lab(["up"], env, timeout=1800)  # a hang guard: 11 minutes alone, 14 beside the suite
    if up.returncode != 0:  # the lab is kept, with its logs, for the post-mortem
        lab(["down"], env)
        raise AssertionError(f"lab up failed (lab kept at {lab_dir}):\n" + up.stdout[-3000:] + up.stderr[-5000:])
    try:
        yield env
    finally:
        lab(["down"], env)
        if request.session.testsfailed == failed_before:
            shutil.rmtree(lab_dir, ignore_errors=True)
        else:  # kept, with its logs, for the failure's post-mortem
            print(f"lab kept at {lab_dir}")


@contextlib.contextmanager
def fake_master_server():
    """A loopback server answering /json/ as Spark 4.0's standalone master does, with `state`."""
    import http.server

    state = {
        "status": "ALIVE",
        "aliveworkers": 1,
        "cores": 8,
        "coresused": 0,
        "memory": 8192,
        "memoryused": 0,
        "workers": [],
        "activedrivers": [],
        "completeddrivers": [],
    }

    class Master(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(state).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Master)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@pytest.fixture
def fake_master():
    with fake_master_server() as master:
        yield master
