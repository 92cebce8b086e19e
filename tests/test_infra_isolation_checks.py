"""Issue 22, the team specs' half: checks that fail closed, topic patterns checked as MirrorMaker 2
compiles them, consumer groups no other team's name can extend, CODEOWNERS over everything a
check reads, the pack's name rules in validate, VM sizing that leaves the OS its share, and limits
on a spec file before YAML parses it. (Kafka's own reading of mm2.properties: test_infra_mm2_filter.)"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from infra import codeowners, grants, kafka_access, sizing, spec, spec_file, topic_quota, topic_regex, topics, validate
from infra.policy import rules
from infra.policy.pack import load_teams
from tests.test_infra_pr_flow import owners_of

REPO = spec.INFRA.parent
ACCEPTED = REPO / "tests" / "fixtures" / "accepted_teams"
ACCEPTED_GRANTS = REPO / "tests" / "fixtures" / "accepted_grants"
PLATFORM = "@gojek/data-platform"


@pytest.fixture(scope="module")
def platform() -> spec.Platform:
    return spec.load_platform()


def committed_copy(tmp_path: Path) -> Path:
    teams = tmp_path / "teams"
    shutil.copytree(spec.TEAMS_DIR, teams)
    return teams


# -- fail closed -----------------------------------------------------------------------------------

BROKEN = REPO / "tests" / "fixtures" / "broken_registry"


def broken_fraud_and_an_intruder(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The committed teams with fraud's spec broken by something unrelated (a cluster renamed away),
    and a new team whose range sits inside fraud's 10.64.16.0/20 (tests/fixtures/broken_registry)."""
    teams = committed_copy(tmp_path)
    fraud = teams / "fraud.yaml"
    shutil.copy(BROKEN / "fraud.yaml", fraud)
    assert fraud.read_text() != (spec.TEAMS_DIR / "fraud.yaml").read_text()
    return teams, fraud, BROKEN / "intruder.yaml"


def test_a_committed_spec_that_does_not_load_fails_every_validation_naming_it(tmp_path):
    teams, fraud, intruder = broken_fraud_and_an_intruder(tmp_path)
    _, problems = validate.validate([intruder], teams_dir=teams)
    assert any(
        p.startswith(f"{fraud}:1: (file): this team spec does not load") and "fail for every team" in p
        for p in problems
    ), problems
    # the intruder's overlap is found as soon as fraud loads again: it was hidden, never fine
    shutil.copy(spec.TEAMS_DIR / "fraud.yaml", fraud)
    _, problems = validate.validate([intruder], teams_dir=teams)
    assert any("overlaps fraud's 10.64.16.0/20" in p for p in problems), problems


def test_validate_exits_1_while_any_committed_spec_is_broken(tmp_path, capsys, monkeypatch):
    teams, fraud, _ = broken_fraud_and_an_intruder(tmp_path)
    monkeypatch.setattr(spec, "TEAMS_DIR", teams)
    monkeypatch.setattr(validate.validate, "__defaults__", (None, teams) + validate.validate.__defaults__[2:])
    growth = teams / "growth.yaml"
    assert validate.main([str(growth)]) == 2
    out = capsys.readouterr().out
    assert f"{fraud}:1: (file): this team spec does not load" in out and "OK growth" not in out


def test_the_policy_packs_registry_refuses_to_start_without_every_team(tmp_path):
    teams, fraud, _ = broken_fraud_and_an_intruder(tmp_path)
    with pytest.raises(spec.SpecError) as e:
        load_teams(teams_dir=teams)
    assert any(p.startswith(f"{fraud}:") for p in e.value.problems), e.value.problems
    assert load_teams(teams_dir=spec.TEAMS_DIR).names == {p.stem for p in spec.TEAMS_DIR.glob("*.yaml")}


@pytest.mark.parametrize("stray", ["search.yml", "Search.YAML", "notes.txt", ".hidden.yaml", "sub/x.yaml"])
def test_a_file_no_check_would_read_in_the_teams_directory_fails_the_checks(tmp_path, stray):
    teams = committed_copy(tmp_path)
    path = teams / stray
    path.parent.mkdir(exist_ok=True)
    path.write_text("team: search\n")
    first = teams / stray.split("/")[0]
    _, problems = validate.validate(None, teams_dir=teams)
    assert (
        f"{first}:1: (file): not a team spec file (a regular file <team>.yaml): no check reads it; remove or rename it"
        in problems
        or stray == ".hidden.yaml"
    ), problems
    if stray == ".hidden.yaml":  # read, and refused as a spec whose name is not its file's
        assert any(p.startswith(f"{path}:") for p in problems), problems
    with pytest.raises(spec.SpecError):
        spec.load_all(teams)


def test_a_link_in_the_teams_directory_is_refused(tmp_path):
    teams = committed_copy(tmp_path)
    (teams / "search.yaml").symlink_to(teams / "growth.yaml")
    files, problems = spec.team_files(teams)
    assert teams / "search.yaml" not in files and any(p.startswith(f"{teams / 'search.yaml'}:1:") for p in problems)


# -- spec files: size and depth before YAML ------------------------------------------------------------


def test_a_50_mb_spec_is_refused_fast_without_echoing_it(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text('team: big\nowners: ["@gojek/big"]\ndescription: ' + "A" * (50 * 1024 * 1024) + "\n")
    start = time.monotonic()
    with pytest.raises(spec.SpecError) as e:
        spec.load(path)
    assert time.monotonic() - start < 5
    (problem,) = e.value.problems
    assert problem.startswith(f"{path}:1: (file): larger than 64 KiB") and "AAAA" not in problem


@pytest.mark.parametrize(
    "body",
    [
        "labels: " + "[" * 5000 + "]" * 5000,  # flow lists
        "labels: " + "{a: " * 3000 + "b" + "}" * 3000,  # flow mappings
        "labels:\n" + "".join(" " * i + "k:\n" for i in range(1, 60)) + " " * 60 + "v\n",  # block mappings
        "labels:\n  " + "- " * 2000 + "x",  # compact block lists
        "labels:\n" + "".join(" " * (2 * i) + "- k:\n" for i in range(1, 40)) + " " * 82 + "v\n",  # mixed
    ],
)
def test_deep_nesting_is_refused_before_parsing_naming_file_and_line(body):
    text = 'team: deep\nowners: ["@gojek/deep"]\ntier: standard\nnetwork: {cidr: 10.70.1.0/24}\n' + body + "\n"
    with pytest.raises(spec.SpecError) as e:  # a RecursionError would escape and fail the test
        spec.parse(text, source="infra/teams/deep.yaml")
    (problem,) = e.value.problems
    assert re.match(r"infra/teams/deep\.yaml:\d+: \(file\): nested more than 8 levels deep", problem), problem


def test_a_long_value_is_refused_by_its_length_not_echoed():
    text = (
        'team: search\nowners: ["@gojek/search"]\ntier: standard\nnetwork: {cidr: 10.70.1.0/24}\n'
        f"description: {'B' * 5000}\n"
    )
    with pytest.raises(spec.SpecError) as e:
        spec.parse(text, source="infra/teams/search.yaml")
    assert e.value.problems == [
        "infra/teams/search.yaml:5: (file): a value of 5000 characters; no field of a team spec takes more than 1000"
    ]


def test_every_committed_spec_is_well_within_the_limits():
    for path in spec.TEAMS_DIR.glob("*.yaml"):
        text = path.read_text()
        assert len(text) < spec_file.MAX_BYTES // 16 and spec_file.shape_problem(text, path.name) is None


# -- topic patterns: the allow-list ---------------------------------------------------------------------

REFUSED = [
    ("(?i)ledger-.*", "inline flag"),
    ("(?-i)campaign-.*", "inline flag"),
    ("(?i:campaign)-.*", "inline flag"),
    ("campaign-(?I)x", "inline flag"),
    ("(?x)campaign-.*#c", "inline flag"),
    ("(?u)campaign-.*", "inline flag"),
    ("(?#c)campaign-.*", "comment (?#"),
    ("campaign-.*#c", "'#' is not a topic-name character"),
    ("\\Qcampaign-", "'\\Q' quoting"),
    ("campaign-\\E", "'\\E' quoting"),
    ("campaign-[\\Q]", "'\\Q' quoting"),
    ("campaign-(", "'(' is never closed"),
    ("campaign-)", "')' closes a group"),
    ("campaign-[a-", "'[' is never closed"),
    ("campaign-]", "']' closes a character class"),
    ("(campaign|", "'(' is never closed"),
    ("campaign-\\x41", "'\\x' is not allowed"),
    ("campaign-\\u0041", "'\\u' is not allowed"),
    ("campaign-\\0101", "'\\0' is not allowed"),
    ("campaign-\\cA", "'\\c' is not allowed"),
    ("campaign-\\p{L}", "'\\p' is not allowed"),
    ("campaign-\\1", "'\\1' is not allowed"),
    ("campaign-\\", "'\\' is not allowed"),
    ("campaign-[[:alpha:]]", "not allowed in a character class"),
    ("campaign-[a&&b]", "not allowed in a character class"),
    ("campaign-[z-a]", "the range z-a"),
    ("campaign-[a-Z]", "the range a-Z"),
    ("(?<n>campaign)-x", "named groups"),
    ("(?=campaign)campaign-.*", "lookarounds"),
    ("(?P<n>campaign)", "named groups"),
    ("campaign-.*|", "an empty alternative"),
    ("|campaign-.*", "an empty alternative"),
    ("campaign-()", "an empty group"),
    ("campaign-(a|a)*", "can backtrack exponentially"),
    ("(campaign-(a|a)*)*$", "can backtrack exponentially"),
    ("(a*)*", "repeating a group that holds a quantifier"),
    ("campaign-(x+){2}", "repeating a group that holds a quantifier"),
    ("campaign-.*?", "a quantifier after a quantifier"),
    ("campaign-.*+", "a quantifier after a quantifier"),
    ("*campaign", "repeats nothing"),
    (".*a.*b.*c.*d", "too many ways to match a name"),
    ("campaign-(a?){30}a{30}", "holds a quantifier"),
    ("campaign-" + "a?" * 40 + "a" * 40, "too many ways to match a name"),
    ("campaign-" + "(a|b)" * 30, "too many ways to match a name"),
    (".*a.*b.*c.*x?", "too many ways"),
    ("campaign-x{1000}", "a count is {n}"),
    ("campaign-x{}", "a count is {n}"),
    ("campaign-x{٣}", "a count is {n}"),
    ("^^campaign", "'^' is allowed only at the start"),
    ("campaign$$", "'$' is allowed only at the end"),
    ("campaign$|x", "'$' is allowed only at the end"),
    ("campaign-ａ", "not a topic-name character"),
    ("campaign- x", "a space is not a topic-name character"),
    ("campaign-é", "not a topic-name character"),
    ("campaign-/x", "not a topic-name character"),
    ("((((((((((campaign))))))))))", "groups nested more than 8 deep"),
    ("^$", "matches the empty name"),
]
ACCEPTED_PATTERNS = [
    "campaign-.*",
    "^campaign-(?:clicks|views)$",
    "campaign-[a-z0-9_.-]+",
    "campaign-v\\d+",
    "campaign-\\.x",
    "[^.]+-campaign",
    "(campaign|sandbox)-x",
    "campaign-\\w{3}",
    "campaign-x?y",
    "GO_.*-booking-log",
    "payment-.*",
    "campaign-[-a]",
    "campaign-[a-]",
]


@pytest.mark.parametrize("pattern, why", REFUSED, ids=[p for p, _ in REFUSED])
def test_a_pattern_outside_the_allow_list_is_refused_saying_why(pattern, why):
    problem = topic_regex.problem(pattern)
    assert problem is not None and why in problem, problem
    # quoted as ascii() does: 'campaign-\xe9', never the character itself
    assert problem.startswith(f"{ascii(pattern)} is refused: ") and "(index " in problem and problem.isascii()


def test_a_pattern_inside_the_allow_list_reads_the_same_in_java_and_python():
    """The allow-list is a subset both dialects read alike: Java (MirrorMaker's) and Python's re
    agree on every candidate name, so what the checks compute is what MirrorMaker does."""
    names = [
        "campaign-x",
        "campaign-clicks",
        "campaign-views",
        "campaign-v12",
        "campaign-.x",
        "campaign-ax",
        "a-campaign",
        "sandbox-x",
        "campaign-abc",
        "campaign-y",
        "campaign-xy",
        "GO_RIDE-booking-log",
        "payment-cards",
        "campaign-",
        "campaign--",
        "campaign-a",
        ".-campaign",
        "campaign-a.b_c-d",
    ]
    for pattern in ACCEPTED_PATTERNS:
        assert topic_regex.problem(pattern) is None, pattern
    answers = topics._checker.ask([("M", p, n) for p in ACCEPTED_PATTERNS for n in names])
    java = {(p, n): a == "FULL" for (p, n), a in zip([(p, n) for p in ACCEPTED_PATTERNS for n in names], answers)}
    python = {(p, n): re.fullmatch(p, n) is not None for p in ACCEPTED_PATTERNS for n in names}
    assert java == python
    assert sum(java.values()) > len(ACCEPTED_PATTERNS)  # not vacuous


def test_random_patterns_the_allow_list_takes_compile_read_alike_and_join_as_their_union():
    """Attack by volume: random strings of regex pieces, allowed and not. Every one the allow-list
    takes compiles in Java, matches the same names in Java and Python, and joined with another
    matches exactly what the two match alone (MirrorMaker's '|')."""
    rng = random.Random(22)
    pieces = list("ab-_.") + [
        "\\.",
        "\\d",
        "\\w",
        "\\Q",
        "\\E",
        "(",
        ")",
        "(?:",
        "(?i)",
        "(?x)",
        "[",
        "]",
        "[^",
        "a-z",
        "|",
        "*",
        "+",
        "?",
        "{2}",
        "{0}",
        "^",
        "$",
        "#",
        " ",
        "\\",
        "&&",
        "{1,2}",
    ]
    taken = sorted(
        {
            p
            for p in ("".join(rng.choice(pieces) for _ in range(rng.randint(1, 10))) for _ in range(20000))
            if topic_regex.problem(p) is None
        }
    )
    assert len(taken) > 100
    assert not any(re.search(r"\(\?[ix]|\\[QE]|#| |&&|\{1,2\}", p) for p in taken)
    assert set(topics._checker.ask([("C", p) for p in taken])) == {"OK"}
    names = ["".join(rng.choice("ab-_.9") for _ in range(rng.randint(1, 8))) for _ in range(60)]
    asks = [("M", p, n) for p in taken for n in names]
    java = {(p, n): a == "FULL" for (_, p, n), a in zip(asks, topics._checker.ask(asks))}
    assert java == {(p, n): re.fullmatch(p, n) is not None for p in taken for n in names}
    pairs = [(rng.choice(taken), rng.choice(taken)) for _ in range(300)]
    asks = [("M", topic_regex.as_mirrormaker_joins(f"{a}, {b}"), n) for a, b in pairs for n in names]
    joined = iter(topics._checker.ask(asks))
    assert all((next(joined) == "FULL") == (java[(a, n)] or java[(b, n)]) for a, b in pairs for n in names)


def test_mirrormakers_join_is_what_the_checks_compile():
    written = ", ".join(["(?i)ledger-.*", "CUSTOMER-PROFILE-UPDATES|campaign-.*"])
    assert topic_regex.as_mirrormaker_joins(written) == "(?i)ledger-.*|CUSTOMER-PROFILE-UPDATES|campaign-.*"


def test_the_joined_pattern_is_checked_as_a_whole_even_without_the_allow_list(monkeypatch, platform):
    """With the allow-list switched off, each pattern alone passes and only their join reaches the
    restricted customer-profile-updates: the joined check (in Java) refuses it on its own."""
    monkeypatch.setattr(topic_regex, "problem", lambda pattern: None)
    catalogue = {"mainstream": platform.kafka_clusters["mainstream"].topics}
    patterns = ["(?i)campaign-.*", "CUSTOMER-PROFILE-UPDATES|campaign-.*"]
    for p in patterns:
        assert topics.check_patterns("ledger", [("mainstream", [p])], catalogue) == {}, p
    problems = topics.check_patterns("ledger", [("mainstream", patterns)], catalogue)
    assert list(problems) == [(0, -1)]
    assert problems[(0, -1)].startswith(
        "joined as MirrorMaker 2 compiles them: '(?i)campaign-.*|CUSTOMER-PROFILE-"
        "UPDATES|campaign-.*' can reach customer-profile-updates on mainstream, "
        "restricted topic(s) of team customer-identity not granted to ledger"
    )


def test_a_joined_problem_names_the_whole_list_in_the_spec(monkeypatch, platform):
    monkeypatch.setattr(topic_regex, "problem", lambda pattern: None)
    text = (
        'team: ledger\nowners: ["@gojek/ledger"]\ntier: standard\nnetwork: {cidr: 10.70.60.0/24}\nkafka:\n'
        '  - cluster: mainstream\n    topics: ["(?i)campaign-.*", "CUSTOMER-PROFILE-UPDATES|campaign-.*"]\n'
    )
    with pytest.raises(spec.SpecError) as e:
        spec.parse(text, source="infra/teams/ledger.yaml", platform=platform)
    assert [p.split(": joined")[0] for p in e.value.problems] == ["infra/teams/ledger.yaml:7: kafka[0].topics"]


def test_a_runaway_match_is_refused_by_javas_budget_even_without_the_allow_list(monkeypatch, platform):
    monkeypatch.setattr(topic_regex, "problem", lambda pattern: None)
    catalogue = {"mainstream": platform.kafka_clusters["mainstream"].topics}
    start = time.monotonic()
    problems = topics.check_patterns("growth", [("mainstream", ["(campaign-(a|a)*)*$"])], catalogue)
    assert "backtracks without end" in problems[(0, 0)]
    assert time.monotonic() - start < 30


def test_the_stress_names_are_cheap_for_every_accepted_pattern():
    asks = [("M", p, n) for p in ACCEPTED_PATTERNS for n in topic_regex.stress_names(p)]
    assert "SLOW" not in topics._checker.ask(asks)


# -- consumer groups ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def every_team(platform) -> list[spec.TeamSpec]:
    fixtures, problems = validate.validate(sorted(ACCEPTED.glob("*.yaml")), grants_dir=ACCEPTED_GRANTS)
    assert problems == []
    return spec.load_all(platform=platform) + fixtures


def group_prefixes(s: spec.TeamSpec, platform) -> set[str]:
    return {a.name for a in kafka_access.acls_for(s, platform) if a.resource_type == "GROUP"}


def test_growth_and_growth_lab_get_disjoint_group_acls(every_team, platform):
    by_name = {s.name: s for s in every_team}
    (growth,), (lab,) = group_prefixes(by_name["growth"], platform), group_prefixes(by_name["growth-lab"], platform)
    assert (growth, lab) == ("dagger-growth--", "dagger-growth-lab--")
    # a PREFIXED ACL covers every name starting with it: two overlap iff one starts with the other
    assert not growth.startswith(lab) and not lab.startswith(growth)
    for dagger in ("lab--x", "lab-x", "-lab--x", "x"):
        group = kafka_access.consumer_group("growth-lab", dagger)
        assert group.startswith(lab) and not group.startswith(growth), group


def test_no_two_teams_group_prefixes_overlap(every_team, platform):
    prefixes = {s.name: p for s in every_team for p in group_prefixes(s, platform)}
    for a, pa in prefixes.items():
        for b, pb in prefixes.items():
            assert a == b or not pb.startswith(pa), (a, b)


def test_a_team_name_with_the_delimiter_has_no_group_prefix_and_no_spec(platform):
    with pytest.raises(ValueError, match="contains '--'"):
        kafka_access.consumer_group_prefix("growth--lab")
    with pytest.raises(spec.SpecError, match="without '--'"):
        spec.parse(
            'team: growth--lab\nowners: ["@gojek/x"]\ntier: standard\nnetwork: {cidr: 10.70.1.0/24}\n',
            source="infra/teams/growth--lab.yaml",
            platform=platform,
        )


# -- the pack's name rules, in validate --------------------------------------------------------------


@pytest.mark.parametrize("team", ["ads-google-ml", "google-ads", "xgoogle", "goog-x", "ads-googl-e"])
def test_validate_refuses_a_name_the_pack_refuses_with_the_packs_own_words(team, platform):
    text = f'team: {team}\nowners: ["@gojek/ads"]\ntier: experimental\nnetwork: {{cidr: 10.70.1.0/24}}\n'
    bucket = f"{platform.project}-{team}-checkpoints"
    pack = rules.gcp_name_limits("gcp:storage/bucket:Bucket", {"name": bucket}, "urn:pulumi:x::d::b::b", team)
    reserved = rules.reserved_name_problem(team)
    if not pack and not reserved:  # a name both accept: validate accepts it too
        assert spec.parse(text, source=f"infra/teams/{team}.yaml", platform=platform).name == team
        return
    with pytest.raises(spec.SpecError) as e:
        spec.parse(text, source=f"infra/teams/{team}.yaml", platform=platform)
    assert all(any(v.message in p for p in e.value.problems) for v in pack), e.value.problems


# -- VM sizing -------------------------------------------------------------------------------------


def test_a_vm_worker_never_gets_the_whole_machine():
    for name, (_, gb) in sizing.MACHINE_TYPES.items():
        room = sizing.vm_worker_room_gb(gb)
        assert room <= gb - max(2, gb / 10), name


def test_the_vm_preset_fits_and_the_whole_memory_is_refused(platform):
    base = (
        'team: search\nowners: ["@gojek/search"]\ntier: critical\nregion: asia-southeast1\n'
        "network: {cidr: 10.70.1.0/24}\n"
    )
    s = spec.parse(base + "spark: {flavour: vm, size: medium}\n", source="infra/teams/search.yaml", platform=platform)
    assert (s.spark.machine_type, s.spark.worker_memory_gb) == ("n2-standard-8", 28)
    with pytest.raises(spec.SpecError) as e:
        spec.parse(
            base + "spark: {flavour: vm, size: medium, worker_memory_gb: 29}\n",
            source="infra/teams/search.yaml",
            platform=platform,
        )
    assert "use worker_cores <= 8 and worker_memory_gb <= 28" in e.value.problems[0]


# -- CODEOWNERS ------------------------------------------------------------------------------------


def files_the_checks_read() -> set[str]:
    """What CI's team-request workflow and `make test` run or read: the Python modules the checks and
    the infra tests import (found by importing them), and the files they read or run by name."""
    code = (
        "import importlib, os, sys\n"
        "for m in ['tests.conftest', 'infra.validate', 'infra.codeowners', 'infra.plan', 'infra.policy.pack',\n"
        "          'infra.mocks', 'infra.team', 'infra.inventory_export'] + [\n"
        "          'tests.' + f[:-3] for f in os.listdir('tests') if f.startswith('test_infra_')]:\n"
        "    importlib.import_module(m)\n"
        "for m in list(sys.modules.values()):\n"
        "    f = getattr(m, '__file__', None) or ''\n"
        "    if f.startswith(os.getcwd() + '/') and '/.venv/' not in f: print(os.path.relpath(f))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    imported = set(out.stdout.split())
    named = {
        "Makefile",
        "pyproject.toml",
        ".ci/run",
        ".github/workflows/team-request.yml",
        ".github/CODEOWNERS",
        "jvm/topic-patterns/TopicPatterns.java",
        "jvm/mm2-filter/Mm2TopicFilter.java",
        "jvm/kafka/pom.xml",
        "infra/platform.yaml",
        "infra/schema/team.schema.json",
        "infra/Pulumi.yaml",
        "playbooks/roles/kafka/library/kafka_access.py",
        "playbooks/roles/mirrormaker/defaults/main.yml",
    }
    data = {
        str(p.relative_to(REPO))
        for d in (
            "infra/grants",
            "infra/topic-grants",
            "tests/fixtures/hostile_teams",
            "tests/fixtures/accepted_teams",
            "tests/fixtures/accepted_grants",
            "tests/fixtures/broken_registry",
            "tests/fixtures/hostile_grants",
        )
        for p in (REPO / d).rglob("*")
        if p.is_file()
    }
    return imported | named | data


def test_every_file_a_check_or_ci_reads_is_owned_by_the_platform_or_a_data_owner():
    restricted = dict(codeowners.restricted_grants(spec.load_platform()))
    files = files_the_checks_read()
    assert {"infra/topics.py", "infra/topic_regex.py", "tests/conftest.py", "dagger_runtime/session.py"} <= files
    for path in sorted(files):
        assert (REPO / path).is_file(), path
        if path in restricted:
            assert owners_of(path) == [restricted[path]], path
        else:
            # a non-team line: the platform team alone
            assert owners_of(path) == [PLATFORM], (path, owners_of(path))


def test_every_tracked_file_has_an_owner_and_team_lines_cover_only_their_spec():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True).stdout.split()
    teams = {f"infra/teams/{p.name}" for p in spec.TEAMS_DIR.glob("*.yaml")}
    for path in tracked:
        owners = owners_of(path)
        assert owners, path
        assert path in teams or owners == [PLATFORM] or path.startswith("infra/topic-grants/"), (path, owners)


def test_a_restricted_topics_grant_is_owned_by_its_data_owner_alone(platform):
    restricted = [t for c in platform.kafka_clusters.values() for t in c.topics if t.sensitivity == "restricted"]
    assert {t.label for t in restricted} == {"customer-profile-updates", "payment-*", "audit-log"}
    for t in restricted:
        path = topics.restricted_grant_path(t.cluster, t.value, t.is_prefix)
        assert owners_of(path) == [t.contact], path
    fraud = next(t for t in restricted if t.label == "payment-*")
    assert fraud.readers == ("fraud",)  # read from its grant file, not platform.yaml


def test_readers_of_a_restricted_topic_in_platform_yaml_are_refused():
    raw = [
        {
            "name": "audit-log",
            "owner": "security",
            "sensitivity": "restricted",
            "criticality": "critical",
            "contact": "security@gojek.com",
            "readers": ["growth"],
        }
    ]
    with pytest.raises(topics.CatalogueError, match="infra/topic-grants/logstream/name/audit-log.yaml"):
        topics.parse_catalogue("logstream", raw)
    del raw[0]["readers"]
    assert topics.parse_catalogue("logstream", raw, {"infra/topic-grants/logstream/name/audit-log.yaml": ("growth",)})[
        0
    ].readers == ("growth",)
    with pytest.raises(topics.CatalogueError, match="not a restricted entry"):
        topics.parse_catalogue("logstream", raw, {"infra/topic-grants/logstream/prefix/audit-.yaml": ("growth",)})


def test_a_malformed_restricted_grant_file_is_refused(tmp_path):
    (tmp_path / "logstream" / "name").mkdir(parents=True)
    bad = tmp_path / "logstream" / "name" / "audit-log.yaml"
    for text in ("readers: growth\n", "readers: [growth]\nextra: 1\n", "readers: [Growth!]\n", "- growth\n"):
        bad.write_text(text)
        with pytest.raises(topics.CatalogueError, match="infra/topic-grants/logstream/name/audit-log.yaml"):
            topics.load_restricted_readers(tmp_path)


# -- a team's own topics: caps a topic and a team -------------------------------------------------------


def test_a_teams_own_topic_gets_read_write_describe_and_never_create(every_team, platform):
    lab = next(s for s in every_team if s.name == "growth-lab")
    assert lab.own_topics == (topic_quota.OwnTopic("playground", "growth-lab--campaign-counts", 6, 72, 2),)
    own = {
        (a.name, a.pattern_type, a.operation)
        for a in kafka_access.acls_for(lab, platform)
        if a.name == "growth-lab--campaign-counts"
    }
    assert own == {("growth-lab--campaign-counts", "LITERAL", op) for op in ("READ", "WRITE", "DESCRIBE")}
    every_op = {a.operation for s in every_team for a in kafka_access.acls_for(s, platform)}
    assert not every_op & {"CREATE", "ALTER", "ALTER_CONFIGS", "DELETE", "ALL"}, every_op


@pytest.mark.parametrize(
    "topics, expected",
    [
        ([("x--a", 1000)], "1000 partitions is above the standard tier's cap of 24 a topic"),
        (
            [(f"x--t{i}", 24) for i in range(42)],
            "1008 partitions under x-- in all is above the standard tier's cap of 120",
        ),
        ([("x-a", 1)], "'x-a' is not a topic of team x"),
        ([("x--", 1)], "'x--' is not a topic of team x"),
        ([("X--a", 1)], "'X--a' is not a topic of team x"),
        ([("x--a b", 1)], "'x--a b' is not a topic of team x"),
        ([("x-lab--a", 1)], "'x-lab--a' is not a topic of team x"),
        ([("x--a", 1), ("x--a", 1)], "'x--a' on 'mainstream' is listed already"),
    ],
)
def test_the_topic_quota_refuses(topics, expected):
    own = [topic_quota.OwnTopic("mainstream", name, partitions) for name, partitions in topics]
    assert any(expected in message for _, _, message in topic_quota.problems("x", "standard", own))


def test_retention_above_the_cap_is_refused_and_within_it_accepted():
    ok = topic_quota.OwnTopic("mainstream", "x--a", 24, 168, 20)
    assert topic_quota.problems("x", "standard", [ok]) == []
    long = topic_quota.OwnTopic("mainstream", "x--a", 24, 169, 21)
    assert [f for _, f, _ in topic_quota.problems("x", "standard", [long])] == ["retention_hours", "retention_gb"]


def kafka_topic(team: str, name: str, partitions, **config) -> rules.Resource:
    return rules.Resource(
        rules.KAFKA_TOPIC,
        f"urn:pulumi:{team}::daggers::{rules.KAFKA_TOPIC}::{name}",
        {"name": name, "partitions": partitions, "replicationFactor": 3, "config": config},
    )


def test_the_pack_refuses_1000_partitions_under_a_teams_prefix():
    teams = load_teams()
    big = [kafka_topic("growth", "growth--counts", 1000)]
    assert [v.rule for v in rules.check_stack(big, "growth", teams)] == [rules.KAFKA_TOPIC_QUOTA] * 2
    many = [kafka_topic("growth", f"growth--t{i}", 12) for i in range(84)]  # each within 12, 1008 in all
    (v,) = rules.check_stack(many, "growth", teams)
    assert "1008 partitions under growth-- in all is above the experimental tier's cap of 24 a team" in v.message
    fine = [kafka_topic("growth", "growth--counts", 6, **{"retention.ms": str(72 * 3600 * 1000)})]
    assert rules.check_stack(fine, "growth", teams) == []


@pytest.mark.parametrize(
    "topic, expected",
    [
        (("growth--x", 6, {"retention.ms": "-1"}), "hours is above"),  # forever
        (("growth--x", 6, {"retention.bytes": "-1"}), "GB a partition is above"),
        (("growth--x", 6, {"retention.ms": "1e12"}), "hours is above"),  # not a number Kafka reads
        (("growth--x", "6", {}), "partitions is above"),  # not an integer
        (("fraud--x", 6, {}), "'fraud--x' is not a topic of team growth"),  # another team's prefix
        (("growth-lab--x", 6, {}), "'growth-lab--x' is not a topic of team growth"),
    ],
)
def test_the_pack_refuses_a_topic_outside_the_teams_caps(topic, expected):
    name, partitions, config = topic
    violations = rules.check_stack([kafka_topic("growth", name, partitions, **config)], "growth", load_teams())
    assert any(expected in v.message for v in violations), violations


def test_a_team_the_registry_does_not_know_gets_the_smallest_caps():
    stack = [kafka_topic("ghost", "ghost--x", 13)]
    assert any(
        "above the experimental tier's cap of 12" in v.message for v in rules.check_stack(stack, "ghost", load_teams())
    )


def test_a_deep_grant_file_is_refused_before_parsing(tmp_path):
    path = tmp_path / "growth.yaml"
    path.write_text("team: growth\nquota: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(grants.GrantError) as e:
        grants.load(path)
    assert e.value.problems[0].startswith(f"{path}:2: (file): nested more than 8 levels deep")


def test_a_stray_restricted_grant_stops_validate_and_codeowners_cleanly(monkeypatch, capsys):
    stray = {"infra/topic-grants/esb-critical/name/driver-location-ping.yaml": ("growth",)}
    monkeypatch.setattr(topics, "load_restricted_readers", lambda *a: stray)
    assert validate.main([]) == 2
    assert (
        "infra/topic-grants/esb-critical/name/driver-location-ping.yaml: grants a topic that is not a restricted "
        "entry of esb-critical's catalogue" in capsys.readouterr().out
    )
    assert codeowners.main(["--check"]) == 1
    with pytest.raises(topics.CatalogueError):
        load_teams()
