"""The pull-request flow: a team's file routed to its owners and the platform team (CODEOWNERS, in
sync with the specs), what only the platform team grants (infra/grants), and a workflow that
validates, tests, plans and posts the plan with a verdict that fails when any step failed."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest
import yaml

from infra import codeowners, grants, spec, validate
from infra.tiers import TIERS

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
    assert codeowners.CODEOWNERS_PATH.read_text() == codeowners.render(specs), (
        "stale: run `python -m infra.codeowners` and commit .github/CODEOWNERS"
    )


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


def _codeowners_pattern(pattern: str) -> re.Pattern:
    """A CODEOWNERS pattern as GitHub reads it (gitignore rules): a leading or inner `/` anchors it
    at the root, a trailing `/` means everything below, `*` stays within a path segment, `**`
    crosses them, and a pattern naming a directory covers what is inside."""
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    body = pattern.strip("/")
    regex = ""
    for part in re.split(r"(\*\*|\*|\?)", body):
        regex += {"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.compile(("^" if anchored else "^(.*/)?") + regex + "(/.*)?$")


def owners_of(path: str) -> list[str]:
    """The owners GitHub asks for a change to `path`: the last matching line of CODEOWNERS wins."""
    found: list[str] = []
    for line in codeowners.CODEOWNERS_PATH.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pattern, *owners = line.split()
            if _codeowners_pattern(pattern).match(path):
                found = owners
    return found


def test_the_codeowners_reader_follows_last_match():
    assert _codeowners_pattern("/infra/").match("infra/grants/fraud.yaml")
    assert not _codeowners_pattern("/infra/teams/fraud.yaml").match("infra/teams/fraud.yaml.bak")
    assert _codeowners_pattern("/tests/test_infra_*").match("tests/test_infra_policy.py")
    assert not _codeowners_pattern("/tests/test_infra_*").match("tests/x/test_infra_policy.py")


def test_a_teams_owners_do_not_own_its_grant_or_its_stack_config(specs):
    """A team may approve its spec, never its tier, quota, Kafka clusters or owners' group."""
    platform = ["@gojek/data-platform"]
    for s in specs:
        assert owners_of(f"infra/teams/{s.name}.yaml") == [*s.owners, *platform], s.name
        assert owners_of(f"infra/grants/{s.name}.yaml") == platform, s.name
        assert owners_of(f"infra/Pulumi.{s.name}.yaml") == platform, s.name
        assert not set(s.owners) & set(owners_of(f"infra/grants/{s.name}.yaml"))
    for path in (
        "infra/grants.py",
        "infra/tiers.py",
        "infra/platform.yaml",
        ".github/CODEOWNERS",
        ".github/workflows/team-request.yml",
    ):
        assert owners_of(path) == platform, path


def test_the_grants_line_is_the_last_so_no_team_line_can_cover_it(owners_lines):
    patterns = list(owners_lines)
    assert patterns[-1] == "/infra/grants/" and owners_lines["/infra/grants/"] == ["@gojek/data-platform"]


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
    bad.write_text(
        textwrap.dedent("""\
        team: search
        owners: ["@gojek/search"]
        tier: standard
        network: {cidr: 10.64.0.0/24}
        kafka: [{cluster: nowhere}]
        """)
    )
    missing = tmp_path / "gone.yaml"
    assert validate.main([str(bad), str(missing)]) == 2
    out, err = capsys.readouterr()
    # (the line, `:5:`, where the spec loader names it)
    assert re.search(rf"^{re.escape(str(bad))}(:5)?: kafka\[0\]\.cluster: unknown Kafka cluster 'nowhere'", out, re.M)
    assert re.search(rf"^{re.escape(str(missing))}(:1)?: .*no such file", out, re.M)
    assert "OK" not in out
    assert "2 problem(s)" in err


def test_validate_checks_a_changed_file_against_every_committed_team(tmp_path, capsys, specs):
    taken = specs[0]
    new = tmp_path / "search.yaml"
    new.write_text(f'team: search\nowners: ["@gojek/search"]\ntier: standard\nnetwork: {{cidr: {taken.cidr}}}\n')
    assert validate.main([str(new)]) == 2
    assert f"overlaps {taken.name}'s {taken.cidr}" in capsys.readouterr().out


def test_validate_on_a_committed_file_does_not_clash_with_itself(capsys):
    assert validate.main([str(spec.TEAMS_DIR / "fraud.yaml")]) == 0
    assert capsys.readouterr().out.startswith("OK fraud (infra/teams/fraud.yaml)")


# -- the workflow ---------------------------------------------------------------------------------

# -- grants: what a spec may ask for ---------------------------------------------------------------


def _grant(name: str, **changes) -> str:
    raw = {
        "team": name,
        "tier": "experimental",
        "quota": {"cpu": 16, "memory_gb": 64, "pods": 40},
        "kafka_clusters": ["playground"],
        "rbac_group": f"dagger-{name}-owners@daggers.dev",
        **changes,
    }
    return yaml.safe_dump(raw, sort_keys=False)


def _growth_asking(tmp_path, extra: str):
    """growth's committed spec with `extra` lines, validated as a pull request would."""
    path = tmp_path / "growth.yaml"
    path.write_text((spec.TEAMS_DIR / "growth.yaml").read_text() + extra)
    _, problems = validate.validate([path])
    # the committed growth.yaml clashes with this copy (same name, same range): not what is tested
    return path, [p for p in problems if "already used by" not in p and "overlaps" not in p]


ASK = "ask @gojek/data-platform to change infra/grants/growth.yaml"


def test_a_spec_above_its_granted_tier_is_refused(tmp_path):
    path = tmp_path / "growth.yaml"
    path.write_text((spec.TEAMS_DIR / "growth.yaml").read_text().replace("tier: experimental", "tier: standard"))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("tier:"))
    _, problems = validate.validate([path])
    assert f"{path}:{line}: tier: standard is above the tier granted to growth (experimental); {ASK}" in problems


def test_a_spec_above_its_quota_ceiling_is_refused(tmp_path):
    path, problems = _growth_asking(tmp_path, "quota:\n  cpu: 17\n  pods: 40\n")
    lines = path.read_text().splitlines()
    assert problems == [
        f"{path}:{lines.index('  cpu: 17') + 1}: quota.cpu: 17 CPUs is above the ceiling granted to "
        f"growth (16 CPUs); {ASK}"
    ]


def test_a_spec_reading_a_kafka_cluster_not_granted_is_refused(tmp_path):
    path, problems = _growth_asking(tmp_path, "kafka:\n  - cluster: playground\n  - cluster: mainstream\n")
    lines = path.read_text().splitlines()
    assert problems == [
        f"{path}:{lines.index('  - cluster: mainstream') + 1}: kafka[1].cluster: mainstream is not "
        f"among the Kafka clusters granted to growth (playground); {ASK}"
    ]


def test_a_spec_without_a_grant_is_refused_and_one_within_its_grant_passes(tmp_path):
    team = tmp_path / "teams" / "search.yaml"
    team.parent.mkdir()
    team.write_text('team: search\nowners: ["@gojek/search"]\ntier: experimental\nnetwork: {cidr: 10.65.0.0/24}\n')
    empty = tmp_path / "grants"
    empty.mkdir()
    _, problems = validate.validate([team], grants_dir=empty)
    assert problems == [
        f"{team}:1: team: search has no grant: the platform team grants each team its tier, quota "
        "ceilings, Kafka clusters and owners' group in infra/grants/search.yaml; "
        "ask @gojek/data-platform to add it"
    ]
    (empty / "search.yaml").write_text(_grant("search"))
    assert validate.validate([team], grants_dir=empty) == ([spec.load(team)], [])


def test_a_broken_grant_refuses_its_teams_spec_naming_the_grant_file(tmp_path):
    (tmp_path / "growth.yaml").write_text(_grant("growth", tier="platinum"))
    _, problems = validate.validate([spec.TEAMS_DIR / "growth.yaml"], grants_dir=tmp_path)
    assert any(p.startswith(f"{tmp_path / 'growth.yaml'}:2: tier: 'platinum' is not a tier") for p in problems), (
        problems
    )
    assert any("the grant of team growth is invalid" in p for p in problems), problems


@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"tier": "gold"}, ":2: tier: 'gold' is not a tier (experimental, standard, critical)"),
        ({"team": "fraud"}, ":1: team: 'fraud' is not the team the file is named after (growth)"),
        ({"quota": {"cpu": -1, "memory_gb": 64, "pods": 40}}, ":4: quota.cpu: -1 is not a whole number >= 0"),
        ({"quota": {"cpu": True, "memory_gb": 64, "pods": 40}}, ":4: quota.cpu: True is not a whole number >= 0"),
        ({"quota": {"cpu": 16, "memory_gb": 64}}, ":3: quota.pods: missing"),
        ({"quota": {"cpu": 16, "memory_gb": 64, "pods": 40, "gpus": 8}}, ":7: quota.gpus: unknown field"),
        ({"kafka_clusters": ["nowhere"]}, ":7: kafka_clusters: unknown Kafka cluster 'nowhere'"),
        (
            {"kafka_clusters": ["esb-critical"]},
            ":7: kafka_clusters: esb-critical is for tiers critical, not experimental",
        ),
        ({"kafka_clusters": ["playground", "playground"]}, ":7: kafka_clusters: 'playground' is listed twice"),
        (
            {"rbac_group": "fraud-engineering@gojek.com"},
            ":9: rbac_group: 'fraud-engineering@gojek.com' is not a group of daggers.dev",
        ),
        ({"rbac_group": "Dagger-Growth@daggers.dev"}, ":9: rbac_group: 'Dagger-Growth@daggers.dev' is not a group of"),
        (
            {"rbac_group": "dagger-growth\n@daggers.dev"},
            ":9: rbac_group: 'dagger-growth\\n@daggers.dev' is not a group of",
        ),
        (
            {"rbac_group": "dagger-growth@daggers.dev."},
            ":9: rbac_group: 'dagger-growth@daggers.dev.' is not a group of",
        ),
        # the look-alike shown escaped (\u0430), as every text of a grant or spec is in a message
        (
            {"rbac_group": "dаgger-growth@daggers.dev"},
            ":9: rbac_group: 'd\\u0430gger-growth@daggers.dev' is not plain ASCII",
        ),
        (
            {"rbac_group": "gke-security-groups@daggers.dev"},
            ":9: rbac_group: 'gke-security-groups@daggers.dev' is the cluster's security group itself",
        ),
        # the operators' group would give the team every other team's daggers in the portal
        (
            {"rbac_group": "dagger-platform-operators@daggers.dev"},
            ":9: rbac_group: 'dagger-platform-operators@daggers.dev' is the platform operators' group",
        ),
        ({"owners": ["@x"]}, ":10: owners: unknown field"),
    ],
)
def test_a_grant_file_is_checked_naming_the_file_line_and_field(tmp_path, changes, expected):
    path = tmp_path / "growth.yaml"
    text = _grant("growth", **changes)
    path.write_text(text)
    with pytest.raises(grants.GrantError) as info:
        grants.load(path, grants.platform_clusters(spec.load_platform()))
    assert any(p.startswith(f"{path}{expected}") for p in info.value.problems), (text, info.value.problems)


def test_every_committed_grant_loads_and_ranks_every_tier():
    granted, broken = grants.load_all(kafka_clusters=grants.platform_clusters(spec.load_platform()))
    assert broken == {}
    assert set(granted) == {p.stem for p in spec.TEAMS_DIR.glob("*.yaml")}

    assert set(grants.TIER_ORDER) == set(TIERS)
    g = granted["growth"]
    assert (g.allows_tier("experimental"), g.allows_tier("standard"), g.allows_tier("critical")) == (True, False, False)


# -- the workflow ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def run_lines(workflow: dict) -> str:
    return "\n".join(step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"])


def test_the_workflow_runs_on_pull_requests_that_touch_team_specs(workflow):
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
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
    assert "python -m infra.validate $FILES" in runs  # the changed files
    assert "python -m infra.validate\n" in runs + "\n"  # and every team, for overlaps
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
    files = set(re.findall(r"tests/test_\w+\.py", run_lines(workflow)))
    assert files and [f for f in sorted(files) if not (REPO / f).is_file()] == []


def _steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def _verdict(workflow: dict) -> tuple[int, dict]:
    steps = _steps(workflow)
    (index,) = [i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/github-script")]
    return index, steps[index]


def test_the_verdict_consults_every_step_before_it(workflow):
    index, verdict = _verdict(workflow)
    before = _steps(workflow)[:index]
    assert all("id" in s for s in before), [s.get("name", s.get("uses")) for s in before if "id" not in s]
    assert verdict["if"].startswith("always()")
    # the outcomes reach the script through env, all of them
    assert verdict["env"]["STEPS"].replace(" ", "") == "${{toJSON(steps)}}"
    script = verdict["with"]["script"]
    assert "${{" not in script
    consulted = set(re.findall(r"\['([\w-]+)',", script))
    assert consulted == {s["id"] for s in before}


def test_every_check_runs_even_after_an_earlier_one_failed(workflow):
    """Else a failed validation would skip the tests, and the comment could not say whether they pass."""
    for step in _steps(workflow):
        if step.get("id") in ("validate", "validate-all", "codeowners", "tests", "plan"):
            assert step["if"].startswith("always()"), step["id"]


def _run_verdict(workflow: dict, tmp_path, outcomes: dict) -> dict:
    _, verdict = _verdict(workflow)
    harness = tmp_path / "harness.js"
    (tmp_path / "script.js").write_text(verdict["with"]["script"])
    harness.write_text(
        textwrap.dedent("""\
        const fs = require('fs');
        const script = fs.readFileSync(process.argv[2], 'utf8');
        const out = { posted: null, failed: null };
        const save = async (a) => { out.posted = a.body; };
        const github = { paginate: async () => [], rest: { issues: { listComments: null, createComment: save,
                                                                     updateComment: save } } };
        const context = { repo: { owner: 'o', repo: 'r' }, payload: { pull_request: { number: 1 } } };
        const core = { setFailed: (m) => { out.failed = m; } };
        const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
        new AsyncFunction('require', 'github', 'context', 'core', script)(require, github, context, core)
          .then(() => console.log(JSON.stringify(out)));
        """)
    )
    steps = {step_id: {"outcome": o, "conclusion": o, "outputs": {}} for step_id, o in outcomes.items()}
    result = subprocess.run(
        ["node", str(harness), str(tmp_path / "script.js")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"STEPS": json.dumps(steps), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_verdict_says_valid_only_when_every_step_succeeded(workflow, tmp_path):
    index, _ = _verdict(workflow)
    ids = [s["id"] for s in _steps(workflow)[:index]]
    ok = _run_verdict(workflow, tmp_path, {i: "success" for i in ids})
    assert "## Team request: valid" in ok["posted"] and ok["failed"] is None
    for failing in ids:
        out = _run_verdict(workflow, tmp_path, {i: ("failure" if i == failing else "success") for i in ids})
        assert "## Team request: needs changes" in out["posted"], failing
        assert f"(`{failing}`): failure" in out["posted"] and failing in out["failed"], failing
    missing = _run_verdict(workflow, tmp_path, {i: "success" for i in ids if i != "tests"})
    assert "needs changes" in missing["posted"] and "(`tests`): not run" in missing["posted"]
