"""What a drill checks before it acts (chaos/runner.py): one drill at a time on a lab, and room on
every Spark cluster it will use (where its daggers start and where a Spark failover moves them),
or a refusal at once that names the daggers holding it. A drill on the busy demo lab once waited
four minutes and aborted without saying why. The master is a loopback server answering as Spark's
does (tests/conftest.py: fake_master); the registry a SQLite file."""

from __future__ import annotations

import json

import pytest

from chaos.cli import resolve
from chaos.playbook import load
from chaos.runner import Abort, DrillRun, LabAccess
from dagger_runtime.lifecycle import operations
from dagger_runtime.lifecycle.registry import Registry

BOOK = "tests/fixtures/drills/spark-failover-short.yaml"  # bookings (parallelism 2) on blue, to green


@pytest.fixture
def lab(tmp_path, fake_master):
    state, url = fake_master
    (tmp_path / "clusters").mkdir()
    for name in ("blue", "green"):
        (tmp_path / "clusters" / f"{name}.allocations.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "team": "allocations",
                    "master": "spark://127.0.0.1:7077",
                    "web_ui": url,
                    "python": "/opt/daggers/venv/bin/python",
                    "jvm_dir": "/opt/daggers/jvm",
                    "checkpoint_root": "/ck",
                    "spec_dir": "/specs",
                    "metrics_ports": [24000, 24049],
                }
            )
        )
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "registry.url").write_text(f"sqlite:///{tmp_path / 'registry.db'}")
    return tmp_path, state


def run_on(lab_dir, tmp_path, **options) -> DrillRun:
    return DrillRun(load(resolve(BOOK)), LabAccess.of(lab_dir, 19000), out_root=tmp_path / "runs", **options)


def worker(cores: int, memory_mb: int) -> dict:
    return {
        "id": f"worker-{cores}-{memory_mb}",
        "state": "ALIVE",
        "coresfree": cores,
        "memoryfree": memory_mb,
        "webuiaddress": "http://127.0.0.1:1",
    }


def test_one_drill_at_a_time_holds_the_lab(lab, tmp_path):
    lab_dir, _ = lab
    first, second = run_on(lab_dir, tmp_path), run_on(lab_dir, tmp_path)
    first.hold_the_lab()
    with pytest.raises(Abort) as e:
        second.hold_the_lab()
    assert str(e.value) == (
        f"the lab is held by another drill (spark-failover-short run {first.run_id}, pid "
        f"{__import__('os').getpid()}); wait for it to end"
    )
    first.cleanup()  # the end of a run lets the next one in
    second.hold_the_lab()
    second.cleanup()


def test_a_cluster_without_room_is_refused_at_once_naming_what_holds_it(lab, tmp_path, monkeypatch):
    lab_dir, state = lab
    registry = Registry((lab_dir / "secrets" / "registry.url").read_text())
    registry.record_version(
        name="surge-demand",
        team="allocations",
        cluster="blue",
        spec="a",
        spec_format=".yaml",
        spec_digest="d",
        state_key="k",
        checkpoint="/ck/surge-demand/v1",
        start="from earliest",
        actor="demo",
        submission_id="driver-20261127000000-0000",
        metrics_port=24000,
        action="deploy",
    )
    registry.record_status("surge-demand", "RUNNING", actor="demo")
    # the demo's dagger holds all but 2 cores of the worker: the drill's needs 3 (driver and executor)
    state["workers"] = [worker(2, 6144)]
    with pytest.raises(Abort) as e:
        run_on(lab_dir, tmp_path).check_room()
    assert str(e.value) == (
        "Spark cluster blue of team allocations has no room for the drill's bookings (parallelism 2) now (each "
        "needs a core and 768 MB for its driver, its parallelism in cores and 1024 MB for its executor, more with "
        "state_rows; the workers have 2 cores and 6.0 GB free); held by surge-demand: `dagger stop surge-demand`, "
        "or run the drill "
        "with --stop-others"
    )
    # --stop-others stops it (the master then has the room) and goes on
    stopped = []

    def stop(reg, name, **kwargs):
        stopped.append(name)
        state["workers"] = [worker(8, 6144)]

    monkeypatch.setattr(operations, "stop", stop)
    run = run_on(lab_dir, tmp_path, stop_others=True)
    run.check_room()
    assert stopped == ["surge-demand"]
    assert [e["text"] for e in run.events] == ["stopped surge-demand on blue for room (--stop-others)"]
    # with room, nothing is stopped
    stopped.clear()
    run_on(lab_dir, tmp_path, stop_others=True).check_room()
    assert stopped == []


def test_the_failover_cluster_needs_room_too(lab, tmp_path):
    """blue has room; green, where the Spark failover moves the dagger, has not: refused before
    anything is deployed."""
    from tests.conftest import fake_master_server

    lab_dir, state = lab
    state["workers"] = [worker(8, 8192)]
    with fake_master_server() as (green, url):
        path = lab_dir / "clusters" / "green.allocations.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "web_ui": url}))
        green["workers"] = [worker(3, 4096)]  # one dagger of parallelism 2 takes 3 cores, 1.75 GB: fits
        run_on(lab_dir, tmp_path).check_room()
        green["workers"] = [worker(2, 4096)]
        with pytest.raises(
            Abort,
            match=r"^Spark cluster green of team allocations has no room for the drill's "
            r"bookings .* nothing of the registry runs there$",
        ):
            run_on(lab_dir, tmp_path).check_room()
