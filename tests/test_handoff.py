"""What a standby does with a handoff (run._handed): the tooling's order is checked as a deploy's
options are before the warm driver runs it; an order for another dagger or team, or with starting
options that are not the job's, is refused."""
from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from dagger_runtime.config import load_job
from dagger_runtime.errors import DaggerError
from dagger_runtime.plan import plan_job
from dagger_runtime.run import RunOptions, _handed

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples" / "daggers" / "completed_bookings_by_s2.yaml"


def _spec(tmp_path: Path, **changes) -> str:
    job = yaml.safe_load(SPEC.read_text())
    job.update(changes)
    path = tmp_path / f"{job['name']}-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(job))
    return str(path)


def _order(spec: str, **changes) -> dict:
    return {"version": 2, "spec": spec, "checkpoint": "/cp/v2",
            "starting": {"data_stream": {"startingTimestamp": "1700000000000"}}, "emit_after_ms": 1700000060000,
            **changes}


def test_the_handed_version_runs_with_the_orders_checkpoint_start_and_windows(tmp_path):
    plan = plan_job(load_job(str(SPEC)))
    streams = yaml.safe_load(SPEC.read_text())["streams"]
    streams[0]["topics"] = ["primary.GO_RIDE-booking-log"]          # the mirror's copy, as moved
    moved = _spec(tmp_path, streams=streams)
    out = io.StringIO()
    handed, options = _handed(plan, RunOptions(version=1, standby=True, metrics_port=9500), _order(moved), out)
    assert handed.job.name == plan.job.name and tuple(handed.job.streams[0].topics) == ("primary.GO_RIDE-booking-log",)
    assert (options.version, options.checkpoint, options.emit_after_ms, options.standby, options.metrics_port) == (
        2, "/cp/v2", 1700000060000, False, 9500)
    assert options.starting == {"data_stream": {"startingTimestamp": "1700000000000"}}
    assert "handed version 2" in out.getvalue()


@pytest.mark.parametrize("change, refusal", [
    ({"name": "another-dagger"}, "names another-dagger of team allocations; this standby runs completed-bookings"),
    ({"team": "growth"}, "of team growth"),
])
def test_a_handoff_naming_another_dagger_or_team_is_refused(tmp_path, change, refusal):
    plan = plan_job(load_job(str(SPEC)))
    with pytest.raises(DaggerError, match=refusal):
        _handed(plan, RunOptions(version=1, standby=True), _order(_spec(tmp_path, **change)), io.StringIO())


@pytest.mark.parametrize("change, refusal", [
    ({"starting": {"other_stream": {"startingOffsets": "earliest"}}}, "'other_stream' is not one of the job's"),
    ({"starting": {"data_stream": {"kafka.bootstrap.servers": "evil:9092"}}}, "is not one of startingOffsets"),
    ({"emit_after_ms": "1700000060000"}, "not one the tooling writes"),
    ({"emit_after_ms": True}, "not one the tooling writes"),
    ({"checkpoint": ["/cp"]}, "not one the tooling writes"),
])
def test_a_handoff_with_options_a_deploy_would_not_pass_is_refused(tmp_path, change, refusal):
    plan = plan_job(load_job(str(SPEC)))
    with pytest.raises(DaggerError, match=refusal):
        _handed(plan, RunOptions(version=1, standby=True), _order(_spec(tmp_path), **change), io.StringIO())
