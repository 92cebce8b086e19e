"""`python -m infra.plan` shows a reviewer what a team's stack declares, quickly, as a table or
JSON; a bad spec is refused with exit status 2 and the spec's problems."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra import plan
from infra.spec import TEAMS_DIR

ROOT = Path(__file__).resolve().parent.parent
TEAMS = sorted(p.stem for p in TEAMS_DIR.glob("*.yaml"))


def run_plan(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "infra.plan", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    return result, time.perf_counter() - started


def test_plan_prints_the_resources_grouped_by_component_in_a_fresh_process():
    result, seconds = run_plan("infra/teams/allocations.yaml")
    print(f"\nplan allocations: {seconds:.2f} s wall, in a fresh interpreter")  # the measured time (-s shows it)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for heading in (
        "TeamNetwork allocations-network",
        "TeamIdentity allocations-identity",
        "CheckpointBucket allocations-checkpoints",
        "SparkCluster allocations-spark",
        "KafkaMirror allocations-mirror-mainstream",
        "KafkaMirror allocations-mirror-esb-critical",
    ):
        assert f"\n{heading}\n" in out, f"no component section {heading!r} in:\n{out}"
    bucket_line = next(line for line in out.splitlines() if "storage.Bucket " in line)
    assert "uniform access=yes" in bucket_line and "public access=prevented" in bucket_line, bucket_line
    assert "sources=10.64.0.0/20" in out and "default-deny" in out and "requests.cpu=160" in out
    assert "serviceAccount:dagger-allocations@daggers-platform.iam.gserviceaccount.com" in out
    assert "declared in" in out and "s with imports" in out, "plan prints its time"


def test_plan_json_parses_and_lists_every_resource_with_its_urn_and_properties():
    result, _ = run_plan("infra/teams/fraud.yaml", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["team"] == "fraud" and doc["flavour"] == "vm"
    kinds = [c["type"].rsplit(":", 1)[-1] for c in doc["components"]]
    assert {"TeamNetwork", "TeamIdentity", "CheckpointBucket", "SparkCluster", "KafkaMirror"} <= set(kinds)
    resources = [r for c in doc["components"] for r in c["resources"]]
    assert len(resources) == doc["resource_count"] and all(
        r["urn"].startswith("urn:pulumi:fraud::daggers::") for r in resources
    )
    subnet = next(r for r in resources if r["type"] == "gcp:compute/subnetwork:Subnetwork")
    assert subnet["properties"]["range"] == "10.64.16.0/20" and subnet["inputs"]["ipCidrRange"] == "10.64.16.0/20"
    inventory = doc["outputs"]["inventory"]
    assert len(inventory["spark_workers"]["hosts"]) == 6
    assert doc["elapsed_seconds"]["total"] > 0


def test_plan_json_never_prints_a_secret_input(capsys):
    assert plan.main(["infra/teams/growth.yaml", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    provider = next(r for c in doc["components"] for r in c["resources"] if r["type"] == "pulumi:providers:kubernetes")
    assert provider["inputs"]["kubeconfig"] == plan.REDACTED, "the platform's kubeconfig is a secret"


@pytest.mark.parametrize("team", TEAMS)
def test_plan_runs_for_every_team_spec(team, capsys):
    assert plan.main([f"infra/teams/{team}.yaml"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"plan: team {team} ")
    assert f"CheckpointBucket {team}-checkpoints" in out and "resources in" in out


def test_a_bad_spec_exits_2_naming_the_problem(tmp_path):
    bad = tmp_path / "gold.yaml"
    bad.write_text("team: gold\nowners: ['@gojek/gold']\ntier: platinum\nnetwork: {cidr: 10.64.90.0/24}\n")
    result, _ = run_plan(str(bad))
    assert result.returncode == 2 and result.stdout == ""
    assert "invalid team spec" in result.stderr and "tier" in result.stderr and "platinum" in result.stderr


def test_a_missing_spec_exits_2(capsys):
    assert plan.main(["infra/teams/no-such-team.yaml"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_range_too_small_for_the_cluster_exits_2_naming_the_range(tmp_path, capsys):
    spec = tmp_path / "tiny.yaml"
    spec.write_text("team: tiny\nowners: ['@gojek/tiny']\ntier: critical\nnetwork: {cidr: 10.64.200.0/24}\n")
    assert plan.main([str(spec)]) == 2
    err = capsys.readouterr().err
    assert "10.64.200.0/24" in err and "network.cidr" in err
