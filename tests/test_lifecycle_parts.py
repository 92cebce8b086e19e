"""The lifecycle's parts without a cluster: the registry on SQLite and on a real PostgreSQL, when an
edit can keep its checkpoint, the committed offsets read from a checkpoint written the way Spark
writes it, start positions, cluster definitions and the spark-submit command line."""

from __future__ import annotations

import datetime as dt
import json
import os
import pwd
import socket
import threading
import time as clock
import urllib.parse
from pathlib import Path

import pytest
import yaml

from dagger_runtime import launches
from dagger_runtime.config import load_job
from dagger_runtime.errors import DaggerError
from dagger_runtime.lifecycle import spark as spark_api
from dagger_runtime.lifecycle.clusters import cluster_names, get_cluster, load_all, load_clusters, members
from dagger_runtime.lifecycle.registry import Registry, resolve_url
from dagger_runtime.lifecycle.spark import _spark_env, fits, referenced_env, submit_argv, unplaced
from dagger_runtime.lifecycle.state import Start, committed_offsets, parse_start, starting_options, state_key
from dagger_runtime.plan import plan_job
from lab.postgres import SUPERUSER
from tests.kafka_jobs import EXAMPLES

SURGE = EXAMPLES / "completed_bookings_by_s2.yaml"


def record(
    reg: Registry,
    name="surge",
    cluster="blue",
    actor="ana",
    action="deploy",
    spec="a",
    key="k1",
    checkpoint="/ck/surge/v1",
    port=9500,
    driver="driver-20261123000000-0000",
) -> int:
    return reg.record_version(
        name=name,
        team="allocations",
        cluster=cluster,
        spec=spec,
        spec_format=".yaml",
        spec_digest="d",
        state_key=key,
        checkpoint=checkpoint,
        start="from earliest",
        actor=actor,
        submission_id=driver,
        metrics_port=port,
        action=action,
    )


def exercise(reg: Registry) -> None:
    assert record(reg) == 1
    assert record(reg, actor="ben", action="edit", spec="b") == 2
    assert reg.record_status("surge", "RUNNING", actor="status") is True
    assert reg.record_status("surge", "RUNNING", actor="status") is False  # only changes are history
    assert reg.record_status("surge", "STOPPED", actor="ana", action="stop") is True
    current = reg.get("surge")
    assert (current.version, current.status, current.running) == (2, "STOPPED", False)
    assert [v.deployed_by for v in reg.versions("surge")] == ["ana", "ben"]
    assert reg.version("surge").spec == "b" and reg.version("surge", 1).spec == "a"
    assert [(e.actor, e.action, e.status) for e in reg.history("surge")] == [
        ("ana", "deploy", "SUBMITTED"),
        ("ben", "edit", "SUBMITTED"),
        ("status", "status", "RUNNING"),
        ("ana", "stop", "STOPPED"),
    ]
    record(reg, name="supply", cluster="green", port=9501)
    assert [d.name for d in reg.list()] == ["supply", "surge"]
    assert [d.name for d in reg.list("green")] == ["supply"]
    assert reg.ports_in_use("green") == {9501} and reg.ports_in_use("blue") == set()  # stopped frees its port
    assert reg.get("nothing") is None


def test_the_registry_keeps_versions_and_status_changes_in_sqlite(tmp_path):
    reg = Registry(f"sqlite:///{tmp_path}/sub/registry.db")
    exercise(reg)
    reg.close()
    # the history survives: a new process sees the same rows
    again = Registry(f"sqlite:///{tmp_path}/sub/registry.db")
    assert again.get("surge").version == 2 and len(again.history("surge")) == 4


def test_the_registry_runs_on_postgresql_and_never_shows_its_password(postgres, tmp_path):
    postgres.create_database("registry_test")
    password = urllib.parse.quote(postgres.password, safe="")
    url = f"postgresql+psycopg://{SUPERUSER}:{password}@127.0.0.1:{postgres.port}/registry_test"
    (tmp_path / "registry.url").write_text(url + "\n")
    reg = Registry(resolve_url(f"@{tmp_path / 'registry.url'}"))
    assert postgres.password not in reg.where and "***" in reg.where
    exercise(reg)
    with postgres.connect("registry_test") as conn:
        rows = conn.execute("SELECT dagger, number, deployed_by FROM versions ORDER BY id").fetchall()
    assert rows == [("surge", 1, "ana"), ("surge", 2, "ben"), ("supply", 1, "ana")]


def test_the_registry_reconnects_after_postgresql_drops_its_connections(postgres):
    """A server restart (a drill's, in the lab) ends every pooled connection: the next call opens a
    new one rather than failing (the portal answered 500 once, after one)."""
    postgres.create_database("registry_reconnect")
    password = urllib.parse.quote(postgres.password, safe="")
    reg = Registry(f"postgresql+psycopg://{SUPERUSER}:{password}@127.0.0.1:{postgres.port}/registry_reconnect")
    exercise(reg)
    assert [d.name for d in reg.list()] == ["supply", "surge"]  # a pooled connection now
    with postgres.connect("postgres") as conn:
        ended = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = 'registry_reconnect'"
        ).fetchone()[0]
    assert ended >= 1
    assert [d.name for d in reg.list()] == ["supply", "surge"]


def test_a_registry_that_is_not_a_database_or_not_reachable_is_refused_clearly(tmp_path):
    with pytest.raises(DaggerError, match="not a database URL"):
        Registry("registry.db")
    with pytest.raises(DaggerError, match="SQLite or PostgreSQL, not mysql"):
        Registry("mysql://u@127.0.0.1/x")
    with pytest.raises(DaggerError, match=r"cannot read the registry URL from .*missing"):
        resolve_url(f"@{tmp_path}/missing")
    with pytest.raises(DaggerError) as refused:
        Registry("postgresql+psycopg://daggers:s3cret-pw@127.0.0.1:1/daggers")
    assert "cannot reach the registry" in str(refused.value) and "s3cret-pw" not in str(refused.value)


def plan_of(tmp_path, **changes):
    job = yaml.safe_load(SURGE.read_text())
    for key, value in changes.items():
        job[key] = value(job[key]) if callable(value) else value
    path = tmp_path / f"job-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return plan_job(load_job(path))


def test_the_state_key_changes_with_what_shapes_the_state_and_nothing_else(tmp_path):
    base = state_key(plan_of(tmp_path))
    same = [
        dict(description="another description", parallelism=5),
        dict(sink={"type": "kafka", "kafka": {"brokers": "127.0.0.1:9092", "topic": "out", "data_type": "JSON"}}),
        # layout, comments and keyword case do not change the query
        dict(sql=lambda q: "-- per minute\n" + q.replace("WHERE", "where").replace("\n", "\n   ")),
    ]
    for changes in same:
        assert state_key(plan_of(tmp_path, **changes)) == base, changes
    different = [
        dict(sql=lambda q: q.replace("'60' SECOND", "'120' SECOND")),
        dict(sql=lambda q: q.replace("status='COMPLETED'", "status='CUSTOMER_CANCELLED'")),
        dict(watermark_delay="30s"),
        dict(streams=lambda s: [{**s[0], "topics": ["GO_RIDE-booking-log"]}]),
    ]
    for changes in different:
        assert state_key(plan_of(tmp_path, **changes)) != base, changes


def spark_checkpoint(root, batches: dict[int, list[dict]], committed: list[int]):
    """A checkpoint laid out as Spark 4 writes it: offsets/N (v1, metadata, one line per source)
    before batch N runs, commits/N after its results are stored."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, sources in batches.items():
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1795440000000, "conf": {}}
        (root / "offsets" / str(batch)).write_text(
            "\n".join(["v1", json.dumps(meta)] + [json.dumps(s) for s in sources])
        )
    for batch in committed:
        (root / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_committed_offsets_are_those_of_the_last_batch_whose_results_were_stored(tmp_path):
    spark_checkpoint(
        tmp_path / "ck",
        {
            4: [{"rides": {"0": 10, "1": 12}}],
            5: [{"rides": {"0": 20, "1": 25}}],
            6: [{"rides": {"0": 30, "1": 31}}],  # planned, not committed: it will be replayed
        },
        committed=[4, 5],
    )
    assert committed_offsets(str(tmp_path / "ck")) == [{"rides": {"0": 20, "1": 25}}]
    plan = plan_of(tmp_path, streams=lambda s: [{**s[0], "topics": ["rides"]}])
    options = starting_options(Start("committed"), plan.job.streams, committed_offsets(str(tmp_path / "ck")))
    assert json.loads(options["data_stream"]["startingOffsets"]) == {"rides": {"0": 20, "1": 25}}


def test_committed_offsets_refuse_what_they_cannot_give(tmp_path):
    spark_checkpoint(tmp_path / "ck", {0: [{"rides": {"0": 5}}]}, committed=[])
    with pytest.raises(DaggerError, match="no committed batch"):
        committed_offsets(str(tmp_path / "ck"))
    with pytest.raises(DaggerError, match="cannot read the committed offsets of gs://"):
        committed_offsets("gs://bucket/ck")
    plan = plan_of(tmp_path, streams=lambda s: [{**s[0], "topics": ["rides", "cars"]}])
    with pytest.raises(DaggerError, match="did not read cars"):
        starting_options(Start("committed"), plan.job.streams, [{"rides": {"0": 5}}])


def test_start_positions():
    assert parse_start("committed") == Start("committed") and parse_start(" Earliest ") == Start("earliest")
    at = parse_start("2026-11-23T10:00:00Z")
    assert at.timestamp_ms == int(dt.datetime(2026, 11, 23, 10, tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert str(at) == "from 2026-11-23T10:00:00Z"
    assert parse_start("1795440000000") == Start("timestamp", 1795440000000)
    for bad, message in (
        ("yesterday", "expected committed, earliest, latest"),
        ("2026-11-23T10:00:00", "give the time zone"),
    ):
        with pytest.raises(DaggerError, match=message):
            parse_start(bad)


def write_cluster(folder, name="blue", file=None, **changes):
    folder.mkdir(exist_ok=True)
    data = {
        "name": name,
        "master": "spark://127.0.0.1:7077",
        "web_ui": "http://127.0.0.1:8080",
        "python": "/opt/daggers/venv/bin/python",
        "jvm_dir": "/opt/daggers/jvm",
        "checkpoint_root": "/ck",
        "spec_dir": "/specs",
        "metrics_ports": [9500, 9599],
        **changes,
    }
    (folder / (file or f"{name}.json")).write_text(json.dumps(data))


def test_a_name_holding_a_cluster_per_team_gives_each_team_its_own(tmp_path):
    for name, port in (("blue", 7077), ("green", 8077)):
        for i, team in enumerate(("allocations", "api-health")):
            write_cluster(
                tmp_path,
                name,
                file=f"{name}.{team}.json",
                team=team,
                master=f"spark://127.0.0.1:{port + 10 * i}",
                checkpoint_root=f"/ck/{team}",
            )
    folder = str(tmp_path)
    assert cluster_names(folder) == ["blue", "green"]
    assert get_cluster("blue", folder, team="api-health").master == "spark://127.0.0.1:7087"
    assert get_cluster("green", folder, team="allocations").checkpoint_root == "/ck/allocations"
    assert {n: c.master for n, c in load_clusters(folder, team="allocations").items()} == {
        "blue": "spark://127.0.0.1:7077",
        "green": "spark://127.0.0.1:8077",
    }
    assert [c.team for c in members("blue", folder)] == ["allocations", "api-health"]
    # a team without a cluster there, or a dagger without a team, is told whose clusters it holds
    with pytest.raises(
        DaggerError,
        match="cluster blue has no Spark cluster for team growth; it holds the clusters of: allocations, api-health",
    ):
        get_cluster("blue", folder, team="growth")
    with pytest.raises(DaggerError, match="for a dagger without a team"):
        get_cluster("blue", folder)
    assert load_clusters(folder) == {}
    with pytest.raises(DaggerError, match="unknown cluster 'red'; known clusters: blue, green"):
        get_cluster("red", folder, team="allocations")
    # one team's cluster twice, or a shared cluster beside the teams' under one name: refused
    write_cluster(tmp_path, "blue", file="blue.copy.json", team="api-health")
    with pytest.raises(DaggerError, match="blue.copy.json: cluster blue of team api-health is defined twice"):
        load_all(folder)
    (tmp_path / "blue.copy.json").unlink()
    write_cluster(tmp_path, "blue")
    with pytest.raises(DaggerError, match="cluster blue is defined both for any team and for a team"):
        get_cluster("blue", folder, team="allocations")


def test_cluster_definitions_are_checked_field_by_field(tmp_path):
    write_cluster(tmp_path / "ok")
    assert load_clusters(str(tmp_path / "ok"))["blue"].metrics_ports == (9500, 9599)
    cases = [
        ({"master": "spark://127.0.0.1:7077\nspark.x=1"}, "master"),
        ({"python": "python3"}, "python: Value error, must be an absolute path"),
        ({"metrics_ports": [80, 90]}, "metrics_ports"),
        ({"spark_home": "/opt/spark\n"}, "control characters"),
        ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
    ]
    for i, (changes, message) in enumerate(cases):
        folder = tmp_path / f"bad{i}"
        write_cluster(folder, **changes)
        with pytest.raises(DaggerError, match=message):
            load_clusters(str(folder))


def test_spark_submit_runs_the_driver_on_the_cluster_under_its_supervision(tmp_path):
    write_cluster(tmp_path)
    cluster = load_clusters(str(tmp_path))["blue"]
    argv = submit_argv(
        cluster,
        name="surge",
        spec_path="/specs/surge/v1.yaml",
        checkpoint="/ck/surge/v1",
        metrics_port=9500,
        parallelism=2,
        starting={"data_stream": {"startingOffsets": '{"rides":{"0":20}}'}},
    )
    assert argv[argv.index("--deploy-mode") + 1] == "cluster" and "--supervise" in argv
    assert argv[argv.index("--class") + 1] == "org.apache.spark.deploy.PythonRunner"
    jars = argv[argv.index("--jars") + 1].split(",")
    assert all(j.startswith("/opt/daggers/jvm/spark/") for j in jars)
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs["spark.pyspark.python"] == confs["spark.pyspark.driver.python"] == "/opt/daggers/venv/bin/python"
    assert confs["spark.cores.max"] == "2"
    # after the primary jar: PythonRunner's script and (empty) py-files, then the dagger's own arguments
    script = argv.index(jars[-1]) + 1
    assert argv[script].endswith("dagger_runtime/driver.py") and argv[script + 1] == ""
    tail = argv[script + 2 :]
    assert tail[:3] == ["/opt/daggers/jvm", "run", "/specs/surge/v1.yaml"]
    assert tail[tail.index("--checkpoint") + 1] == "/ck/surge/v1"
    assert json.loads(tail[tail.index("--starting") + 1]) == {"data_stream": {"startingOffsets": '{"rides":{"0":20}}'}}


def test_a_deployed_spec_may_name_only_its_teams_secrets(monkeypatch):
    monkeypatch.setenv("DAGGER_SECRET_FRAUD__PG", "pw")
    monkeypatch.setenv("DAGGER_REGISTRY_URL", "postgresql://u:registry-pw@h/db")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws")
    assert referenced_env("password: ${DAGGER_SECRET_FRAUD__PG}\n# $${NOT_A_REF}", "fraud") == (
        "DAGGER_SECRET_FRAUD__PG",
    )
    for text, team in (
        ("password: ${DAGGER_REGISTRY_URL}", "fraud"),
        ("password: ${AWS_SECRET_ACCESS_KEY}", None),
        ("password: ${DAGGER_SECRET_FRAUD__PG}", None),  # no team: no secret at all
        ("password: ${DAGGER_SECRET_FRAUD__PG}", "growth"),  # another team's secret
        # team api may not name team api-health's secrets
        ("password: ${DAGGER_SECRET_API_HEALTH__PG}", "api"),
        ("password: ${DAGGER_SECRET_API_X}", "api"),
        ("# a comment: ${HOME}", "fraud"),
        ("password: ${DAGGER_SECRET_FRAUD__}", "fraud"),
    ):
        with pytest.raises(DaggerError, match="only refer to its team's secrets"):
            referenced_env(text, team)
    # a YAML escape hides the reference from the text but not from the loader, which resolves it
    escaped = (
        "name: x\nteam: fraud\nstreams: []\nsql: SELECT 1\n"
        'sink: {type: influx, influx: {url: "http://127.0.0.1:9", db_name: d, measurement_name: m, '
        'password: "\\x24{DAGGER_REGISTRY_URL}"}}\n'
    )
    assert "${DAGGER_REGISTRY_URL}" not in escaped
    with pytest.raises(DaggerError, match=r"\$\{DAGGER_REGISTRY_URL\}"):
        referenced_env(escaped, "fraud")
    # what spark-submit (and so the driver) gets: its own needs and the named secrets, nothing else
    env = _spark_env(("DAGGER_SECRET_FRAUD__PG",))
    assert env["DAGGER_SECRET_FRAUD__PG"] == "pw"
    assert "DAGGER_REGISTRY_URL" not in env and "AWS_SECRET_ACCESS_KEY" not in env


def test_a_team_deploys_only_to_its_cluster_and_keeps_its_names(tmp_path):
    from dagger_runtime.lifecycle.operations import _check_team

    write_cluster(tmp_path / "team", name="fraud-eu", team="fraud")
    write_cluster(tmp_path / "shared", name="blue")
    fraud = load_clusters(str(tmp_path / "team"), team="fraud")["fraud-eu"]
    shared = load_clusters(str(tmp_path / "shared"))["blue"]
    (tmp_path / "jobs").mkdir()
    plan = plan_of(tmp_path / "jobs", team="allocations")
    with pytest.raises(DaggerError, match="cluster fraud-eu belongs to team fraud; the job's team is allocations"):
        _check_team(plan, fraud, None)
    _check_team(plan, shared, None)  # a cluster without a team takes any
    reg = Registry(f"sqlite:///{tmp_path}/r.db")
    record(reg, name=plan.job.name)
    reg.record_status(plan.job.name, "STOPPED", actor="x", action="stop")
    other = plan_of(tmp_path / "jobs", team="growth")
    with pytest.raises(DaggerError, match="belongs to team allocations; this spec says team growth"):
        _check_team(other, shared, reg.get(plan.job.name))


def test_a_status_seen_for_a_replaced_driver_is_not_recorded(tmp_path):
    reg = Registry(f"sqlite:///{tmp_path}/r.db")
    record(reg)
    assert reg.record_status("surge", "KILLED", actor="status", submission_id="driver-20260101000000-0009") is False
    assert reg.get("surge").status == "SUBMITTED"
    assert reg.record_status("surge", "RUNNING", actor="status", submission_id="driver-20261123000000-0000") is True


def test_an_offset_log_of_another_version_is_refused(tmp_path):
    spark_checkpoint(tmp_path / "ck", {0: [{"rides": {"0": 5}}]}, committed=[0])
    (tmp_path / "ck" / "offsets" / "0").write_text('v2\n{}\n0:{"rides":{"0":5}}')
    with pytest.raises(DaggerError, match="offset log of version v2"):
        committed_offsets(str(tmp_path / "ck"))


def test_an_outcome_keeps_lines_and_data_of_its_own_and_a_fence_is_a_dagger_error():
    from dagger_runtime.lifecycle.operations import DriverStillAnswers, Outcome

    first, second = Outcome(), Outcome()
    first.say("stopped")
    first.data["version"] = 2
    assert (first.lines, first.data) == (["stopped"], {"version": 2})
    assert (second.lines, second.data) == ([], {})
    assert issubclass(DriverStillAnswers, DaggerError) and str(DriverStillAnswers("still answers")) == "still answers"


def test_a_dagger_fits_a_cluster_when_its_driver_and_executor_can_both_be_placed():

    # one worker: a core and 768 MB for the driver plus parallelism cores and 1 GB for the executor
    assert fits([(3, 1792)], 2) and not fits([(2, 8192)], 2) and not fits([(3, 1791)], 2)
    # two workers: the driver on one, the executor on the other
    assert fits([(1, 768), (2, 1024)], 2) and fits([(2, 1024), (1, 768)], 2)
    assert not fits([(1, 768), (1, 1024)], 2) and not fits([(1, 767), (2, 1024)], 2)
    assert not fits([], 1) and not fits([(0, 0)], 1)


def test_a_job_that_holds_many_rows_in_state_gets_an_executor_with_the_memory_for_them(tmp_path):
    """The state bench's figures (bench/state.py): about 237 bytes a row as Spark reports it, two
    versions kept, on the 40% of the heap past Spark's 300 MB reserve that Spark does not manage."""
    from dagger_runtime.lifecycle.spark import executor_memory_mb

    assert executor_memory_mb(None) == executor_memory_mb(1) == 1024
    # 500,000 rows: 300 MB + 565 MB: within the 1 GB every dagger gets
    assert executor_memory_mb(500_000) == 1024
    # 2,000,000 rows (the state bench's): 300 + 2,260 MB = 2,560.3 MB, up to the next 256 MB
    assert executor_memory_mb(2_000_000) == 2816
    write_cluster(tmp_path)
    cluster = load_clusters(str(tmp_path))["blue"]
    argv = submit_argv(
        cluster, name="keys", spec_path="/s.yaml", checkpoint="/ck", metrics_port=9500, parallelism=2, executor_mb=2816
    )
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    assert confs["spark.executor.memory"] == "2816m" and confs["spark.driver.memory"] == "768m"
    # placed with that memory: a worker of 3 cores needs 768 + 2816 MB free
    assert fits([(3, 3584)], 2, 2816) and not fits([(3, 3583)], 2, 2816)
    assert unplaced([(8, 8192)], [1, 1, 1], [1024, 2816, 2816]) == [2]


def unvalidated(monkeypatch):
    """deploy without its Spark validation (tested on its own): these tests are about placement, and
    a Spark session built here would change the shared test session's settings."""
    from dagger_runtime.lifecycle import operations

    monkeypatch.setattr(operations, "load_spec", lambda path: (plan_job(load_job(path)), Path(path).read_text()))


def test_a_deploy_onto_a_cluster_without_room_is_refused_before_anything_is_submitted(
    tmp_path, monkeypatch, fake_master
):
    """A standalone master leaves an application that no worker can hold WAITING, without a word: the
    dagger would never start (seen when a drill deployed onto the busy demo lab)."""
    from dagger_runtime.lifecycle import operations

    unvalidated(monkeypatch)
    state, url = fake_master
    state["workers"] = [
        {"id": "worker-1", "state": "ALIVE", "coresfree": 1, "memoryfree": 4608, "webuiaddress": "http://127.0.0.1:1"}
    ]
    submitted = []
    monkeypatch.setattr(spark_api, "submit", lambda *a, **k: submitted.append(a) or "driver-x")
    write_cluster(tmp_path / "clusters", web_ui=url)
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    with pytest.raises(DaggerError) as e:
        operations.deploy(registry, str(SURGE), "blue", actor="ana", clusters_dir=str(tmp_path / "clusters"))
    message = str(e.value)
    assert "cluster blue has no room for" in message and "2 cores (its parallelism)" in message
    assert "the workers have 1 core and 4.5 GB free" in message
    assert submitted == [] and registry.get(load_job(SURGE).name) is None
    # with room (a second worker holding the executor), the same deploy reaches spark-submit
    state["workers"].append(
        {"id": "worker-2", "state": "ALIVE", "coresfree": 2, "memoryfree": 1024, "webuiaddress": "http://127.0.0.1:1"}
    )
    state["aliveworkers"] = 2
    monkeypatch.setattr(operations, "_write_target", lambda *a, **k: None)
    operations.deploy(registry, str(SURGE), "blue", actor="ana", clusters_dir=str(tmp_path / "clusters"))
    assert len(submitted) == 1


def test_a_driver_the_master_forgot_and_whose_metrics_are_silent_is_recorded_lost(tmp_path, fake_master):
    """A lab restarted (`make lab-down`, then up) has masters that know none of the old drivers: the
    registry said RUNNING, so `make demo` skipped its daggers and waited for results that never came."""

    from dagger_runtime.lifecycle import operations

    state, url = fake_master
    write_cluster(tmp_path / "clusters", web_ui=url)
    with socket.socket() as s:  # a port nothing listens on: the dagger's silent /metrics
        s.bind(("127.0.0.1", 0))
        silent = s.getsockname()[1]
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    record(registry, name="gone", cluster="blue", port=silent)
    record(registry, name="known", cluster="blue", port=silent)
    registry.record_status("gone", "RUNNING", actor="status")
    registry.record_status("known", "RUNNING", actor="status")
    # the master knows one of the two drivers: that one stays as the master says
    state["activedrivers"] = [{"id": "driver-20261123000000-0000", "state": "RUNNING", "worker": "w"}]
    record(
        registry,
        name="known",
        action="edit",
        checkpoint="/ck/known/v2",
        port=silent,
        driver="driver-20261123000000-0000",
    )
    record(
        registry, name="gone", action="edit", checkpoint="/ck/gone/v2", port=silent, driver="driver-20261123000000-0009"
    )
    out = operations.status(registry, None, actor="status", clusters_dir=str(tmp_path / "clusters"))
    assert registry.get("gone").status == "LOST" and not registry.get("gone").running
    assert "does not know driver driver-20261123000000-0009" in registry.history("gone")[-1].detail
    assert registry.get("known").running
    assert {r["dagger"]: r["status"] for r in out.data["daggers"]}["gone"] == "LOST"
    # a master that is not ALIVE (restarting, standby) proves nothing: no change is recorded
    record(
        registry, name="gone", action="edit", checkpoint="/ck/gone/v3", port=silent, driver="driver-20261123000000-0010"
    )
    state["status"] = "RECOVERING"
    operations.status(registry, "gone", actor="status", clusters_dir=str(tmp_path / "clusters"))
    assert registry.get("gone").running


def test_daggers_deployed_at_once_to_one_cluster_get_different_metrics_ports(tmp_path, monkeypatch, fake_master):
    """A drill fails its daggers over together: both once took the first free port, and one driver
    died with "Address already in use", restarted by --supervise, again and again. A port that
    something already listens on is skipped too."""

    from dagger_runtime.lifecycle import operations

    unvalidated(monkeypatch)
    state, url = fake_master
    state["workers"] = [
        {"id": "w", "state": "ALIVE", "coresfree": 64, "memoryfree": 65536, "webuiaddress": "http://127.0.0.1:1"}
    ]
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    first = busy.getsockname()[1]
    write_cluster(tmp_path / "clusters", web_ui=url, metrics_host="127.0.0.1", metrics_ports=[first, first + 40])
    monkeypatch.setattr(spark_api, "submit", lambda *a, **k: clock.sleep(1.0) or f"driver-{threading.get_ident()}")
    monkeypatch.setattr(operations, "_write_target", lambda *a, **k: None)
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    specs = []
    for name in ("one", "two", "three"):
        spec = yaml.safe_load(SURGE.read_text())
        spec["name"] = name
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec))
        specs.append(tmp_path / f"{name}.yaml")
    errors = []

    def deploy(path):
        try:
            operations.deploy(registry, str(path), "blue", actor="ana", clusters_dir=str(tmp_path / "clusters"))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    try:
        threads = [threading.Thread(target=deploy, args=(p,)) for p in specs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        busy.close()
    assert errors == []
    ports = sorted(registry.get(n).metrics_port for n in ("one", "two", "three"))
    assert len(set(ports)) == 3 and first not in ports, ports


def test_a_checkpoint_is_read_without_following_a_teams_symbolic_links(tmp_path):
    """The deploy tooling reads checkpoints as root; their folders are a team's user's. A link the
    team made (to a secret, or to another team's checkpoint) is refused, and nothing of the file it
    points at shows in the message."""
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t-line\nmore\n")
    secret.chmod(0o600)
    team = pwd.getpwnam("nobody")
    ck = tmp_path / "team" / "ck"
    spark_checkpoint(ck, {0: [{"rides": {"0": 5}}]}, committed=[0, 1])
    (ck / "commits" / "1").write_text("v1\n{}")
    os.symlink(secret, ck / "offsets" / "1")  # the team's link to a file only root reads
    for folder in (tmp_path / "team", ck, ck / "offsets"):
        os.chown(folder, team.pw_uid, team.pw_gid)
    with pytest.raises(DaggerError, match="is a symbolic link in a folder others than root may write") as e:
        committed_offsets(str(ck))
    assert "s3cr3t" not in str(e.value)
    # a link to another checkpoint in place of the team's own offsets folder: refused too
    (ck / "offsets" / "1").unlink()
    other = tmp_path / "other"
    spark_checkpoint(other, {1: [{"rides": {"0": 99}}]}, committed=[1])
    os.rename(ck / "offsets", tmp_path / "kept")
    os.symlink(other / "offsets", ck / "offsets")
    with pytest.raises(DaggerError, match="symbolic link"):
        committed_offsets(str(ck))
    # positive control: the same checkpoint without links is read
    (ck / "offsets").unlink()
    os.rename(tmp_path / "kept", ck / "offsets")
    (ck / "commits" / "1").unlink()
    assert committed_offsets(str(ck)) == [{"rides": {"0": 5}}]
    # a file that is no offset log shows only a version number, never its first line
    (ck / "offsets" / "0").write_text("s3cr3t-line\nx\n")
    with pytest.raises(DaggerError, match="offset log of version unknown") as e:
        committed_offsets(str(ck))
    assert "s3cr3t" not in str(e.value)


def test_a_driver_the_master_calls_running_but_that_keeps_failing_before_a_batch_is_a_crash_loop(tmp_path, fake_master):
    """--supervise restarts a failing driver as often as it fails and the master says RUNNING all
    along (a drill saw 16 launches and a registry saying RUNNING): the checkpoint's launch ledger
    says otherwise, and status records it, with why, until a batch is committed."""
    from dagger_runtime.lifecycle import operations

    state, url = fake_master
    write_cluster(tmp_path / "clusters", web_ui=url)
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    checkpoint = tmp_path / "ck" / "surge" / "v1"
    record(registry, checkpoint=str(checkpoint), port=1)
    state["activedrivers"] = [{"id": "driver-20261123000000-0000", "state": "RUNNING", "worker": "w"}]
    for at in (1_000, 2_000):
        launches.record(str(checkpoint), now_ms=at)
    operations.status(registry, "surge", actor="status", clusters_dir=str(tmp_path / "clusters"))
    assert registry.get("surge").status == "RUNNING"  # a restart is not yet a loop
    launches.record(str(checkpoint), now_ms=3_000)
    out = operations.status(registry, "surge", actor="status", clusters_dir=str(tmp_path / "clusters"))
    assert out.data["daggers"][0]["status"] == "CRASH_LOOP"
    current = registry.get("surge")
    assert current.status == "CRASH_LOOP" and current.running  # still deployed: stop or edit it
    assert registry.history("surge")[-1].detail == (
        "3 driver launches in a row without a committed batch since 1970-01-01T00:00:01Z (no batch committed yet)"
    )
    # the loop ends when a batch is committed: the master's RUNNING holds again
    (checkpoint / "commits").mkdir()
    (checkpoint / "commits" / "0").write_text("v1\n{}\n")
    operations.status(registry, "surge", actor="status", clusters_dir=str(tmp_path / "clusters"))
    assert registry.get("surge").status == "RUNNING"


def test_several_daggers_are_placed_one_after_the_other_on_what_the_workers_have_free():
    """What a drill checks before it deploys its daggers (and the failover's cluster before it
    moves them): each takes its driver (a core, 768 MB) and executor (parallelism cores, 1 GB)
    from what the ones before it left."""
    # one worker of 4 cores and 4 GB: two daggers of parallelism 1 take 2 cores and 1.75 GB each
    assert unplaced([(4, 4096)], [1, 1]) == []
    assert unplaced([(4, 4096)], [1, 1, 1]) == [2]
    # parallelism 2 needs 3 cores: the second does not fit the 1 left, the third (1) fits nowhere either
    assert unplaced([(4, 4096)], [2, 2, 1]) == [1, 2]
    # memory runs out before cores: 16 cores, 3 GB
    assert unplaced([(16, 3072)], [1, 1]) == [1]
    # two workers: driver on one, executor on the other
    assert unplaced([(1, 1024), (2, 1024)], [2]) == []
    assert unplaced([(1, 512), (2, 1024)], [2]) == [0]
    assert unplaced([], [1]) == [0]


def test_the_registry_never_moves_a_dagger_to_another_team_nor_deploys_a_name_twice(tmp_path):
    """Two deploys of one name may race past the checks made before them: the registry's own
    transaction refuses the second, and a dagger's team never changes."""
    from dagger_runtime.lifecycle.registry import Registry

    reg = Registry(f"sqlite:///{tmp_path / 'r.db'}")
    version = dict(
        cluster="blue",
        spec="x",
        spec_format=".yaml",
        spec_digest="d" * 64,
        state_key="k",
        checkpoint="/c/v1",
        start="latest",
        actor="a",
        submission_id="driver-1",
        metrics_port=None,
    )
    assert reg.record_version(name="surge", team="allocations", action="deploy", new=True, **version) == 1
    with pytest.raises(DaggerError, match="deployed meanwhile"):
        reg.record_version(name="surge", team="allocations", action="deploy", new=True, **version)
    with pytest.raises(DaggerError, match="belongs to another team"):
        reg.record_version(name="surge", team="api-health", action="edit", **version)
    assert reg.record_version(name="surge", team="allocations", action="edit", **version) == 2
    assert reg.get("surge").team == "allocations" and len(reg.versions("surge")) == 2
    reg.close()
