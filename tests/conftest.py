"""Shared fixtures. Keep this file small: one fixture per shared resource."""

import pytest


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """One real single-node Kafka (KRaft) on 127.0.0.1 for the whole session."""
    from lab.kafka import KafkaBroker

    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def spark():
    """One local Spark session (with the runtime's jars and UDFs) for every test that needs one."""
    from dagger_runtime.session import build_session
    from dagger_runtime.udfs import register_all

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
