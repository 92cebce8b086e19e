"""What a standby does with a handoff (run._handed): the tooling's order is checked as a deploy's
options are before the warm driver runs it. The handoff file lies in the team's own checkpoint
folder, so a team could write one: an order for another dagger or team, a spec the tooling did not
store beside the standby's own, a checkpoint elsewhere, a secret that is not the team's, or
starting options that are not the job's are all refused."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import yaml

from dagger_runtime.config import load_job
from dagger_runtime.errors import DaggerError
from dagger_runtime.plan import plan_job
from dagger_runtime.run import RunOptions, _handed

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "daggers" / "completed_bookings_by_s2.yaml"
NAME = "completed-bookings-by-s2"


def _stored(specs: Path, version: int, **changes) -> str:
    """A spec where the tooling stores it: <specs>/<team>/<name>/v<version>/<name>.yaml."""
    job = yaml.safe_load(EXAMPLE.read_text())
    job.update(changes)
    path = specs / "allocations" / NAME / f"v{version}" / f"{NAME}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(job))
    return str(path)


def _standby(tmp_path: Path):
    """The standby's plan (version 1, from its stored spec) and options."""
    plan = plan_job(load_job(_stored(tmp_path / "specs", 1)))
    return plan, RunOptions(version=1, standby=True, metrics_port=9500, checkpoint=str(tmp_path / "cp" / NAME / "v1"))


def _order(tmp_path: Path, spec: str, **changes) -> dict:
    return {
        "version": 2,
        "spec": spec,
        "checkpoint": str(tmp_path / "cp" / NAME / "v2"),
        "starting": {"data_stream": {"startingTimestamp": "1700000000000"}},
        "emit_after_ms": 1700000060000,
        **changes,
    }


def test_the_handed_version_runs_with_the_orders_checkpoint_start_and_windows(tmp_path):
    plan, options = _standby(tmp_path)
    streams = yaml.safe_load(EXAMPLE.read_text())["streams"]
    streams[0]["topics"] = ["primary.GO_RIDE-booking-log"]  # the mirror's copy, as moved
    moved = _stored(tmp_path / "specs", 2, streams=streams)
    out = io.StringIO()
    handed, handed_options = _handed(plan, options, _order(tmp_path, moved), out)
    assert handed.job.name == plan.job.name and tuple(handed.job.streams[0].topics) == ("primary.GO_RIDE-booking-log",)
    assert (
        handed_options.version,
        handed_options.checkpoint,
        handed_options.emit_after_ms,
        handed_options.standby,
        handed_options.metrics_port,
    ) == (2, str(tmp_path / "cp" / NAME / "v2"), 1700000060000, False, 9500)
    assert handed_options.starting == {"data_stream": {"startingTimestamp": "1700000000000"}}
    assert "handed version 2" in out.getvalue()


@pytest.mark.parametrize(
    "change, refusal",
    [
        ({"name": "another-dagger"}, "names another-dagger of team allocations; this standby runs completed-bookings"),
        ({"team": "growth"}, "of team growth"),
    ],
)
def test_a_handoff_naming_another_dagger_or_team_is_refused(tmp_path, change, refusal):
    plan, options = _standby(tmp_path)
    spec = _stored(tmp_path / "specs", 2, **change)
    with pytest.raises(DaggerError, match=refusal):
        _handed(plan, options, _order(tmp_path, spec), io.StringIO())


def test_a_spec_the_tooling_did_not_store_beside_the_standbys_is_refused(tmp_path):
    plan, options = _standby(tmp_path)
    # the team's own file, anywhere else: in its checkpoint folder, or another version's folder
    elsewhere = tmp_path / "cp" / NAME / "v1" / "evil.yaml"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text((tmp_path / "specs" / "allocations" / NAME / "v1" / f"{NAME}.yaml").read_text())
    for spec in (str(elsewhere), _stored(tmp_path / "specs", 3)):
        with pytest.raises(DaggerError, match="not where the tooling stores version 2"):
            _handed(plan, options, _order(tmp_path, spec), io.StringIO())
    # a link where the stored spec would be
    link = tmp_path / "specs" / "allocations" / NAME / "v2" / f"{NAME}.yaml"
    link.parent.mkdir(parents=True)
    link.symlink_to(elsewhere)
    with pytest.raises(DaggerError, match="not a regular file owned like this driver's spec"):
        _handed(plan, options, _order(tmp_path, str(link)), io.StringIO())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the file another owner")
def test_a_spec_owned_by_someone_else_than_the_standbys_is_refused(tmp_path):
    plan, options = _standby(tmp_path)
    spec = _stored(tmp_path / "specs", 2)
    os.chown(spec, 65534, 65534)  # nobody: not who stored this driver's spec
    with pytest.raises(DaggerError, match="owned like this driver's spec"):
        _handed(plan, options, _order(tmp_path, spec), io.StringIO())


def test_a_handed_spec_naming_a_secret_not_the_teams_is_refused(tmp_path, monkeypatch):
    plan, options = _standby(tmp_path)
    monkeypatch.setenv("_SPARK_AUTH_SECRET", "the cluster's")
    spec = _stored(
        tmp_path / "specs",
        2,
        sink={
            "type": "influx",
            "influx": {
                "url": "http://127.0.0.1:8086",
                "db_name": "d",
                "measurement_name": "m",
                "password": "${_SPARK_AUTH_SECRET}",
                "username": "u",
            },
        },
    )
    with pytest.raises(DaggerError, match="may only refer to its team's secrets"):
        _handed(plan, options, _order(tmp_path, spec), io.StringIO())


@pytest.mark.parametrize(
    "change, refusal",
    [
        ({"starting": {"other_stream": {"startingOffsets": "earliest"}}}, "'other_stream' is not one of the job's"),
        ({"starting": {"data_stream": {"kafka.bootstrap.servers": "evil:9092"}}}, "is not one of startingOffsets"),
        ({"emit_after_ms": "1700000060000"}, "not one the tooling writes"),
        ({"emit_after_ms": True}, "not one the tooling writes"),
        ({"checkpoint": ["/cp"]}, "not one the tooling writes"),
        ({"checkpoint": "/tmp/another-teams/v2"}, "is not .*/v2: refused"),
    ],
)
def test_a_handoff_with_options_a_deploy_would_not_pass_is_refused(tmp_path, change, refusal):
    plan, options = _standby(tmp_path)
    with pytest.raises(DaggerError, match=refusal):
        _handed(plan, options, _order(tmp_path, _stored(tmp_path / "specs", 2), **change), io.StringIO())
