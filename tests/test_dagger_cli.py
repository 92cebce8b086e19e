"""One command line: `dagger` runs the platform's other command lines as groups (lab, drill,
faults, load, protos, team, bench), each answering --help under its `dagger ...` name and
--version, and doing what its `python -m` form does."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from chaos.catalog import FAULT_KINDS
from dagger_runtime.cli import GROUPS, TEAM_COMMANDS
from tests.labrun import REPO

DAGGER = str(Path(sys.executable).with_name("dagger"))  # the console script users run
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def dagger(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([DAGGER, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def test_dagger_says_its_version_and_lists_every_group():
    assert dagger("--version").stdout == f"dagger {VERSION}\n"
    shown = dagger("--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: dagger ")
    assert all(f"    {group} " in shown.stdout for group in GROUPS), shown.stdout


@pytest.mark.parametrize("group", [g for g in GROUPS if g != "team"] + [f"team {c}" for c in TEAM_COMMANDS])
def test_each_group_answers_help_under_its_dagger_name_and_version(group):
    shown = dagger(*group.split(), "--help")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: dagger {group} "), shown.stdout[:200]
    assert dagger(*group.split(), "--version").stdout == f"dagger {VERSION}\n"


def test_the_team_group_lists_its_commands_and_refuses_an_unknown_one():
    shown = dagger("team", "--help")
    assert shown.returncode == 0 and all(command in shown.stdout for command in TEAM_COMMANDS)
    wrong = dagger("team", "aply")
    assert wrong.returncode == 2 and "usage: dagger team" in wrong.stderr


@pytest.mark.parametrize(
    "args, module",
    [
        (
            ["team", "validate", "tests/fixtures/hostile_teams/newline-topic.yaml"],
            ["infra.validate", "tests/fixtures/hostile_teams/newline-topic.yaml"],
        ),
        (["team", "plan", "infra/teams/growth.yaml", "--json"], ["infra.plan", "infra/teams/growth.yaml", "--json"]),
        (
            ["protos", "show", "gojek.esb.booking.BookingLogMessage"],
            ["protos", "show", "gojek.esb.booking.BookingLogMessage"],
        ),
        (["faults", "kinds"], ["chaos.faults", "kinds"]),
    ],
    ids=["team validate (refused)", "team plan", "protos show", "faults kinds"],
)
def test_a_group_does_what_its_module_does(args, module):
    through = dagger(*args)
    direct = subprocess.run([sys.executable, "-m", *module], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert (through.returncode, same(through.stdout)) == (direct.returncode, same(direct.stdout))
    assert through.stdout or through.stderr


def same(stdout: str):
    """The output, less what differs between two runs (a plan's timings)."""
    if not stdout.startswith("{"):
        return stdout
    value = json.loads(stdout)
    value.pop("elapsed_seconds", None)
    return value


def test_team_validate_and_drill_validate_report_as_json_too():
    good = dagger("team", "validate", "infra/teams/growth.yaml", "--json")
    assert good.returncode == 0, good.stderr
    teams = json.loads(good.stdout)["teams"]
    written = yaml.safe_load((REPO / "infra" / "teams" / "growth.yaml").read_text())
    assert [(t["team"], t["cidr"], t["owners"]) for t in teams] == [
        ("growth", written["network"]["cidr"], written["owners"])
    ]
    bad = dagger("team", "validate", "tests/fixtures/hostile_teams/newline-topic.yaml", "--json")
    report = json.loads(bad.stdout)
    assert bad.returncode == 2 and report["valid"] is False and report["teams"] == []
    assert report["problems"][0].startswith("tests/fixtures/hostile_teams/newline-topic.yaml:11: ")
    assert "\n" not in report["problems"][0]  # the spec's newline is quoted, not printed

    drills = dagger("drill", "validate", "sink-down", "tests/fixtures/hostile_playbooks/percent-150.yaml", "--json")
    as_text = dagger("drill", "validate", "sink-down")
    results = json.loads(drills.stdout)
    assert drills.returncode == 2
    assert [(r["playbook"], r["valid"]) for r in results] == [
        ("sink-down", True),
        ("tests/fixtures/hostile_playbooks/percent-150.yaml", False),
    ]
    # the same playbook, the same length as the text says ("...; 6m in all")
    assert as_text.stdout.strip().endswith(f"{int(results[0]['seconds'] // 60)}m in all)")
    assert "150%" in results[1]["problems"][0]


def test_the_pulumi_program_run_by_hand_says_what_it_is():
    # (tests/test_infra_stacks.py runs it under Pulumi's mocks, where it declares the stack)
    shown = subprocess.run(
        [sys.executable, "-m", "infra", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0 and "pulumi up -s <team>" in shown.stdout and "Traceback" not in shown.stderr
    bare = subprocess.run([sys.executable, "-m", "infra"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bare.returncode == 2 and "this is the Pulumi program" in bare.stderr and "Traceback" not in bare.stderr


def test_the_lab_is_named_by_the_same_option_in_drills_and_faults():
    for group in (["drill", "run"], ["faults", "inject"]):
        shown = dagger(*group, "--help").stdout
        assert "--lab DIR" in shown and "--port-base" in shown, group


def test_faults_kinds_as_json_is_the_catalogue():
    shown = dagger("faults", "kinds", "--json")
    assert shown.returncode == 0, shown.stderr
    kinds = json.loads(shown.stdout)
    assert [(k["name"], k["system"], k["does"]) for k in kinds] == [(k.name, k.system, k.does) for k in FAULT_KINDS]
    assert all(isinstance(k["implemented"], bool) for k in kinds)
