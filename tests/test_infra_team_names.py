"""One rule for a team's name (dagger_runtime/names.py), used by the platform's specs (infra/) and
by the runtime's job configs (dagger_runtime/config): both take and refuse the same names, with the
same words. The verdicts below are written by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dagger_runtime import names
from dagger_runtime.config import ConfigError, _checks, load_job
from infra import spec, topics

REPO = Path(__file__).resolve().parent.parent
SOURCE = "infra/teams/x.yaml"

TAKEN = ["abc", "fraud", "api-health", "growth-lab", "a1b", "x2-y3", "a" * 20, "abcdefghij-klmnopq9"]
REFUSED = [
    "ab",  # 2 characters
    "a" * 21,  # 21
    "Fraud",
    "FRAUD",  # case
    "9abc",
    "-abc",  # must start with a letter
    "abc-",  # nor end with '-'
    "api--health",  # '--' ends a team's name in its topics, groups and secrets
    "abc_d",
    "abc.d",
    "ab c",
    "fr\u0430ud",  # Cyrillic a
    "\uff46raud",  # fullwidth f
    "abc\n",
    "abc\x1b[2J",  # a newline ($ would take it), ESC
    "abc\u200b",  # zero width space
    "",
]


@pytest.mark.parametrize("name", TAKEN)
def test_a_good_name_is_a_team_name_everywhere(name):
    assert names.team_problem(name) is None
    assert names.check_team(name) == name
    assert _checks.team_name(name) == name


@pytest.mark.parametrize("name", REFUSED)
def test_a_bad_name_is_refused_everywhere_with_the_same_words(name):
    why = names.team_problem(name)
    assert why is not None and why.startswith(
        "a team name is a DNS label (lowercase letters, digits and single '-', 3 to 20 characters"
    )
    assert why.endswith(f", got {ascii(name)}") and why.isascii()
    with pytest.raises(ValueError) as e:
        _checks.team_name(name)
    assert str(e.value) == why


@pytest.mark.parametrize("name", [n for n in REFUSED if n.isprintable() and n and "\u200b" not in n])
def test_a_spec_with_a_bad_name_is_refused_with_the_rules_words(name):
    text = f'team: "{name}"\nowners: ["@gojek/x"]\ntier: experimental\nnetwork: {{cidr: 10.70.140.0/24}}\n'
    with pytest.raises(spec.SpecError) as e:
        spec.parse(text, source=SOURCE)
    assert (
        f"{SOURCE}:1: team: a team name is a DNS label (lowercase letters, digits and single '-', 3 to 20 "
        f"characters, starting with a letter and ending with a letter or digit, without '--'), got {ascii(name)}"
        in e.value.problems
    )


def test_a_job_config_refuses_a_bad_team_with_the_rules_words(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("name: j\nteam: ab\nstreams: []\nsql: select 1\n")
    with pytest.raises(ConfigError) as e:
        load_job(str(job))
    assert "team: a team name is a DNS label (lowercase letters, digits and single '-', 3 to 20 characters" in str(
        e.value
    )


def test_the_rule_is_spelled_once():
    """No other spelling of the team-name rule in infra/ or the runtime: the spec schema leaves the
    name to dagger_runtime/names.py, and the catalogue's owners and readers use the same regex."""
    schema = json.loads((REPO / "infra" / "schema" / "team.schema.json").read_text())
    assert "pattern" not in schema["properties"]["team"]
    assert topics.TEAM_NAME is names.TEAM_NAME
    spelled = [
        str(p.relative_to(REPO))
        for d in ("infra", "dagger_runtime")
        for p in (REPO / d).rglob("*")
        if p.suffix in (".py", ".json") and "{1,18}" in p.read_text(errors="replace")
    ]
    assert spelled == ["dagger_runtime/names.py"], spelled
