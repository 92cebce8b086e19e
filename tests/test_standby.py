"""A dagger deployed with a standby driver on the other Spark cluster (`dagger deploy --standby`):
when its driver is killed (SIGKILL, the whole process tree), the standby takes the checkpoint's
lease by itself and goes on from the last committed batch; the registry follows the lease
(`dagger status`), the killed driver started again by --supervise becomes the standby, and a
second kill moves the dagger back. `dagger stop` leaves no driver on either cluster and fences the
checkpoint. Every window is checked against counts computed here from the fed bookings."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest

from dagger_runtime import lease
from dagger_runtime.lifecycle import spark as spark_api
from dagger_runtime.lifecycle.clusters import get_cluster
from tests.reference import group, s2id, window_end
from tests.test_failover_loop import DELAY_S, TEAM, cli, current, feed, kill_driver, make_lab, read_all, wait_own_commit

pytestmark = [pytest.mark.e2e, pytest.mark.kafka, pytest.mark.spark]


@pytest.fixture(scope="module")
def lab(lab_env, tmp_path_factory):
    return make_lab(lab_env, tmp_path_factory, "standby")


def status(lab) -> dict:
    return json.loads(cli(lab, "status", lab["name"], "--json"))["daggers"][0]


def master(lab, cluster: str):
    return spark_api.master_state(get_cluster(cluster, lab["env"]["DAGGER_CLUSTERS"], team=TEAM))


def wait_standby(lab, cluster: str, timeout_s: float = 240) -> dict:
    """`dagger status` once the dagger runs on the other cluster than `cluster` with its standby
    ready on `cluster` (the registry follows the lease; a relaunched driver takes a while)."""
    deadline, row = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        row = status(lab)
        if (
            row["cluster"] != cluster
            and (row.get("standby") or {}).get("cluster") == cluster
            and row["standby"]["state"] == "READY"
        ):
            return row
        assert (row.get("standby") or {}).get("state") in (None, "STARTING", "WARMING", "READY"), row
        time.sleep(3)
    raise AssertionError(f"no standby ready on {cluster} after {timeout_s:g} s: {row}")


def expected(sent: list[dict]) -> dict:
    """The windows the fed bookings close, with their counts (tests/reference.py)."""
    completed = [e for e in sent if e["status"] == "COMPLETED"]
    watermark = max(e["event_timestamp"] for e in sent) - dt.timedelta(seconds=DELAY_S)
    return {
        k: n
        for k, n in group(
            completed,
            key=lambda e: (
                window_end(e["event_timestamp"], 60),
                e["city_id"],
                s2id(e["lat"], e["long"], 13),
                e["vehicle_type"],
            ),
            agg=len,
        ).items()
        if k[0] <= watermark
    }


def test_a_standby_takes_over_each_killed_driver_and_stop_leaves_none(lab):
    sent: list[dict] = []
    deployed_at = time.time()
    out = json.loads(
        cli(
            lab, "deploy", str(lab["spec"]), "--cluster", "blue", "--standby", "green", "--as", "standby-test", "--json"
        )
    )
    drivers = {("blue", out["submission_id"]), ("green", out["standby"]["submission_id"])}
    try:
        sent += feed(lab, 0)
        checkpoint = current(lab).checkpoint
        wait_own_commit(lab, checkpoint, deployed_at, "the first launch")
        wait_standby(lab, "green")
        holder = lease.holder(checkpoint)
        assert lease.held(checkpoint) and holder["version"] == 1, holder
        assert holder["master"] == get_cluster("blue", lab["env"]["DAGGER_CLUSTERS"], team=TEAM).master, holder
        for loss, (lost, to) in enumerate((("blue", "green"), ("green", "blue")), start=1):
            sent += feed(lab, 2 * loss - 1)
            dagger, lost_at = current(lab), time.time()
            assert dagger.cluster == lost, dagger
            assert kill_driver(dagger.submission_id) >= 1, f"loss {loss}: no driver process of {dagger}"
            sent += feed(lab, 2 * loss)
            wait_own_commit(lab, checkpoint, lost_at, f"loss {loss}: the standby on {to}", timeout_s=120)
            # the registry follows the lease, and the killed driver, started again, stands by
            row = wait_standby(lab, lost)
            assert row["cluster"] == to and row["version"] == 1, row
            assert row["status"] == "RUNNING", row
        sent += feed(lab, 5 + DELAY_S // 30 + 1)
        want = expected(sent)
        got = read_all(lab, len(want), timeout_s=180)  # the last windows, before the stop
    finally:
        cli(lab, "stop", lab["name"], "--as", "standby-test")
    assert got == want
    # no driver of the dagger is left on either cluster, and no one holds or may take the checkpoint
    for cluster, driver in drivers:
        state = master(lab, cluster).drivers.get(driver, {}).get("state")
        assert state not in ("SUBMITTED", "RUNNING", "RELAUNCHING"), (cluster, driver, state)
    assert lease.held(checkpoint) is False
    assert lease.read_fence(Path(checkpoint)) == 2
    history = json.loads(cli(lab, "history", lab["name"], "--json"))
    statuses = [e["status"] for e in history["events"]]
    assert statuses.count("STANDBY") >= 3 and "NO_STANDBY" in statuses, statuses
