"""The pull-request flow: a team's file routed to its owners and the platform team (CODEOWNERS, in
sync with the specs), and a workflow that validates, tests, plans and posts the plan."""
from __future__ import annotations

import textwrap

import pytest
import yaml

from infra import codeowners, spec, validate

REPO = spec.INFRA.parent
WORKFLOW = REPO / ".github" / "workflows" / "team-request.yml"


@pytest.fixture(scope="module")
def specs() -> list[spec.TeamSpec]:
    return spec.load_all()


@pytest.fixture(scope="module")
def owners_lines() -> dict[str, list[str]]:
    """CODEOWNERS as {pattern: owners}, comments and blank lines left out."""
    lines = {}
    for line in codeowners.CODEOWNERS_PATH.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, *owners = line.split()
            assert pattern not in lines, f"{pattern} appears twice"
            lines[pattern] = owners
    return lines


# -- CODEOWNERS -----------------------------------------------------------------------------------

def test_codeowners_is_in_sync_with_the_specs(specs):
    assert codeowners.CODEOWNERS_PATH.read_text() == codeowners.render(specs), \
        "stale: run `python -m infra.codeowners` and commit .github/CODEOWNERS"


def test_codeowners_check_passes_on_the_committed_file(capsys):
    assert codeowners.main(["--check"]) == 0
    assert "is up to date" in capsys.readouterr().out


def test_codeowners_check_fails_on_a_stale_file_and_writes_nothing(tmp_path, capsys):
    stale = tmp_path / "CODEOWNERS"
    text = codeowners.CODEOWNERS_PATH.read_text().replace("@gojek/fraud-engineering ", "")
    stale.write_text(text)
    assert codeowners.main(["--check", "--output", str(stale)]) == 1
    out, err = capsys.readouterr()
    assert "+/infra/teams/fraud.yaml @gojek/fraud-engineering @gojek/data-platform" in out
    assert "is stale: run `python -m infra.codeowners`" in err
    assert stale.read_text() == text


def test_codeowners_writes_the_file(tmp_path):
    out = tmp_path / ".github" / "CODEOWNERS"
    assert codeowners.main(["--output", str(out)]) == 0
    assert out.read_text() == codeowners.CODEOWNERS_PATH.read_text()


def test_every_team_file_is_owned_by_its_owners_and_the_platform_team(specs, owners_lines):
    for s in specs:
        assert owners_lines[f"/infra/teams/{s.name}.yaml"] == [*s.owners, "@gojek/data-platform"], s.name


def test_every_team_line_comes_after_the_platform_lines(owners_lines):
    """GitHub applies the last matching line: /infra/ must not override a team's file."""
    patterns = list(owners_lines)
    last_platform = max(patterns.index(p) for p in codeowners.PLATFORM_PATHS)
    first_team = min(i for i, p in enumerate(patterns) if p.startswith("/infra/teams/"))
    assert last_platform < first_team


def test_the_platform_files_are_owned_by_the_platform_team(owners_lines):
    for pattern in ("/infra/", "/.github/"):
        assert owners_lines[pattern] == ["@gojek/data-platform"]


def test_a_team_that_names_the_platform_team_is_not_listed_twice(specs):
    s = specs[0]
    both = spec.TeamSpec(**{**s.__dict__, "owners": (*s.owners, codeowners.PLATFORM_OWNER)})
    assert codeowners.team_owners(both) == [*s.owners, codeowners.PLATFORM_OWNER]


# -- validate: what the pull request runs -------------------------------------------------------------

def test_validate_prints_one_ok_line_per_team(capsys, specs):
    assert validate.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [["OK", s.name] for s in specs]


def test_validate_prints_every_problem_and_fails(tmp_path, capsys):
    bad = tmp_path / "search.yaml"
    bad.write_text(textwrap.dedent("""\
        team: search
        owners: ["@gojek/search"]
        tier: standard
        network: {cidr: 10.64.0.0/24}
        kafka: [{cluster: nowhere}]
        """))
    missing = tmp_path / "gone.yaml"
    assert validate.main([str(bad), str(missing)]) == 1
    out, err = capsys.readouterr()
    assert f"{bad}: kafka[0].cluster: unknown Kafka cluster 'nowhere'" in out
    assert f"{missing}: no such file" in out
    assert "OK" not in out
    assert "2 problem(s)" in err


def test_validate_checks_a_changed_file_against_every_committed_team(tmp_path, capsys, specs):
    taken = specs[0]
    new = tmp_path / "search.yaml"
    new.write_text(f'team: search\nowners: ["@gojek/search"]\ntier: standard\nnetwork: {{cidr: {taken.cidr}}}\n')
    assert validate.main([str(new)]) == 1
    assert f"overlaps {taken.name}'s {taken.cidr}" in capsys.readouterr().out


def test_validate_on_a_committed_file_does_not_clash_with_itself(capsys):
    assert validate.main([str(spec.TEAMS_DIR / "fraud.yaml")]) == 0
    assert capsys.readouterr().out.startswith("OK fraud (infra/teams/fraud.yaml)")


# -- the workflow ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def run_lines(workflow: dict) -> str:
    return "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"])


def test_the_workflow_runs_on_pull_requests_that_touch_team_specs(workflow):
    on = workflow.get("on", workflow.get(True))        # YAML 1.1 reads a bare `on` as true
    paths = on["pull_request"]["paths"]
    assert "infra/teams/**" in paths and "infra/**" in paths


def test_the_workflow_may_comment_on_the_pull_request_and_only_read_the_code(workflow):
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write"}


def test_the_workflow_sets_up_like_a_developer(workflow):
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    uses = {s["uses"].split("@")[0]: s.get("with", {}) for s in steps if "uses" in s}
    assert "actions/checkout" in uses
    assert str(uses["actions/setup-python"]["python-version"]) == "3.11"
    assert str(uses["actions/setup-java"]["java-version"]) == "17"
    assert "make venv" in run_lines(workflow)


def test_the_workflow_validates_tests_plans_and_posts(workflow):
    runs = run_lines(workflow)
    assert "python -m infra.validate $FILES" in runs          # the changed files
    assert "python -m infra.validate\n" in runs + "\n"        # and every team, for overlaps
    assert "python -m infra.codeowners --check" in runs
    for test_file in ("tests/test_infra_spec.py", "tests/test_infra_stacks.py", "tests/test_infra_policy.py"):
        assert test_file in runs
    assert 'python -m infra.plan "$file"' in runs and "plan.md" in runs
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    post = next(s for s in steps if s.get("uses", "").startswith("actions/github-script"))
    assert "plan.md" in post["with"]["script"] and "createComment" in post["with"]["script"]


def test_the_workflow_never_interpolates_pull_request_data_into_a_shell(workflow):
    """File names reach the shell through env, not ${{ }} (a branch can name a file `$(...)`)."""
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", ""), step.get("name")


def test_every_test_file_the_workflow_runs_exists(workflow):
    import re

    files = set(re.findall(r"tests/test_\w+\.py", run_lines(workflow)))
    assert files and [f for f in sorted(files) if not (REPO / f).is_file()] == []
