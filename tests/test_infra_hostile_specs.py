"""Hostile and careless team specs (tests/fixtures/hostile_teams/<team>.yaml), each refused by
`infra.validate.validate` with a message naming the file, the line and the field, and no traceback.

Each fixture starts with comments saying what the refusal must contain, written by hand:
    # expect: <part of the message>
    # field: <the field named>            (optional)
    # line: <the line named>              (optional)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infra import spec, topics, validate

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "hostile_teams"
CASES = sorted(FIXTURES.glob("*.yaml"))


def expectations(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"# (expect|field|line): (.*)$", line)
        if not m:
            break
        found[m[1]] = m[2]
    return found


def test_there_are_at_least_25_hostile_specs_each_with_an_expectation():
    assert len(CASES) >= 25
    for path in CASES:
        assert "expect" in expectations(path), f"{path.name}: starts with '# expect: ...'"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_hostile_spec_is_refused_naming_file_line_and_field(path):
    want = expectations(path)
    _, problems = validate.validate([path])  # an exception escaping fails the test
    # refused: a problem names the file (a spec valid alone, such as an overlapping range, is
    # still in `specs`; the problem refuses it)
    label = re.escape(str(path.relative_to(REPO)))
    matching = [p for p in problems if re.match(rf"{label}:\d+: \S", p) and want["expect"] in p]
    assert matching, (
        f"{path.name}: no '<file>:<line>: <field>: ...' problem contains {want['expect']!r}:\n" + "\n".join(problems)
    )
    line = want.get("line", r"\d+")
    field = re.escape(want["field"]) if "field" in want else r"\S+"
    assert any(re.match(rf"{label}:{line}: {field}: ", p) for p in matching), (line, want.get("field"), matching)
    assert not any("Traceback" in p for p in problems)


# -- attack review: text from a spec in the output, a budget for topic patterns, the catalogue --------

HOSTILE_GRANTS = REPO / "tests" / "fixtures" / "hostile_grants"


def cli(*args: str, **env: str) -> subprocess.CompletedProcess:
    """`python -m infra.<args>` as CI runs it, its output as bytes (what CI's log and the comment get)."""
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO, capture_output=True, timeout=300, env={**os.environ, **env}
    )


def assert_no_forged_line(output: bytes) -> None:
    assert b"\x1b" not in output  # no terminal sequence
    assert output.isascii(), output  # escapes only: no surrogate, no look-alike
    text = output.decode("ascii")
    assert not any(line.lstrip().startswith("OK") for line in text.splitlines()), text
    assert "Traceback" not in text, text


@pytest.mark.parametrize("name, encoding", [("surrogate-key", ""), ("forged-ok-key", ""), ("surrogate-key", "ascii")])
def test_the_cli_prints_a_hostile_field_name_quoted_on_its_problems_line(name, encoding):
    """Attack review 1 and 2: `python -m infra.validate` died on a lone surrogate in a field name
    (UnicodeEncodeError), and printed a newline, a forged OK line and ESC [2J as themselves."""
    path = FIXTURES / f"{name}.yaml"
    run = cli("infra.validate", str(path), **({"PYTHONIOENCODING": encoding} if encoding else {}))
    assert run.returncode == 2, run.stderr.decode(errors="replace")
    assert_no_forged_line(run.stdout)
    assert_no_forged_line(run.stderr)
    label = str(path.relative_to(REPO))
    lines = run.stdout.decode("ascii").splitlines()
    assert lines and all(line.startswith(f"{label}:") for line in lines), lines
    key = (
        "'\\ud800x'"
        if name == "surrogate-key"
        else "'\\nOK growth (infra/teams/growth.yaml): experimental, all checks passed\\x1b[2J'"
    )
    assert f"{label}:10: [{key}]: unknown field; the fields here are checkpoints, description, kafka" in "\n".join(
        lines
    ), lines


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_plan_prints_a_hostile_spec_quoted_too(json_flag):
    run = cli("infra.plan", str(FIXTURES / "forged-ok-key.yaml"), *json_flag)
    assert run.returncode == 2
    assert_no_forged_line(run.stdout)
    assert_no_forged_line(run.stderr)
    assert b"has a control or invisible character (U+000A at index 0)" in run.stderr


# Where a spec can put text: a field name at the top, nested, in a mapping the schema's propertyNames
# checks; a value; a YAML tag (a %-escape in a tag is decoded); an own topic; a topic pattern (not
# under the control-character check: infra/topics.py has its own). FORGED as YAML's double-quoted
# escapes write it: a newline, a forged OK line, ESC [2J.
FORGED_YAML = "\\nOK growth (infra/teams/growth.yaml): experimental, all checks passed\\e[2J"
HOSTILE_TEXT = {
    "top-level-key": f'"{FORGED_YAML}": 1',
    "nested-key": f'spark: {{"{FORGED_YAML}": 1}}',
    "label-key": f'labels: {{"{FORGED_YAML}": x}}',
    "label-value": f'labels: {{cost_center: "{FORGED_YAML}"}}',
    "description": f'description: "{FORGED_YAML}"',
    "region": 'region: "asia-southeast1\\n"',  # '$' in the schema's pattern takes a final newline
    "tag": "description: !<tag:x%0AOK%20growth%1B[2J> x",
    "own-topic": f'topics: [{{cluster: playground, name: "{FORGED_YAML}", partitions: 1}}]',
    "topic-pattern": f'kafka: [{{cluster: playground, topics: ["{FORGED_YAML}"]}}]',
}


@pytest.mark.parametrize("where", sorted(HOSTILE_TEXT))
def test_no_text_of_a_spec_prints_a_line_of_its_own(where, tmp_path, capsys):
    path = tmp_path / "hostile.yaml"
    path.write_text(
        'team: hostile\nowners: ["@gojek/x"]\ntier: experimental\nnetwork: {cidr: 10.70.136.0/24}\n'
        f"{HOSTILE_TEXT[where]}\n"
    )
    assert validate.main([str(path)]) == 2
    out, _ = capsys.readouterr()
    assert_no_forged_line(out.encode("utf-8", "surrogatepass"))
    lines = out.splitlines()
    assert lines and all(line.startswith(f"{path}:") for line in lines), lines
    # not vacuous: the text is in the output, escaped
    assert ("asia-southeast1\\n" if where == "region" else "\\nOK growth") in out, out


def test_a_file_name_prints_quoted_too(tmp_path, capsys):
    path = tmp_path / "gro\x1b[2Jwth\nOK x.yaml"
    path.write_text('team: growth\nowners: ["@gojek/x"]\ntier: experimental\nnetwork: {cidr: 10.70.137.0/24}\n')
    assert validate.main([str(path)]) == 2
    out, _ = capsys.readouterr()
    assert_no_forged_line(out.encode())
    assert "gro\\x1b[2Jwth\\nOK x.yaml" in out


def no_java(monkeypatch) -> list:
    """Java's checker replaced by one that records what it is asked and answers nothing."""
    asked = []

    def ask(requests):
        asked.extend(requests)
        raise AssertionError("the Java checker was asked")

    monkeypatch.setattr(topics._checker, "ask", ask)
    return asked


def test_a_spec_whose_patterns_cost_too_much_together_is_refused_before_java(monkeypatch):
    """Attack review 3: 99 patterns, each at the bound alone, refused together, and Java never runs."""
    asked = no_java(monkeypatch)
    path = FIXTURES / "pattern-budget.yaml"
    with pytest.raises(spec.SpecError) as e:
        spec.load(path)
    label = str(path.relative_to(REPO))
    assert e.value.problems == [
        f"{label}:16: kafka[0].topics: the spec's topic patterns together cost 6,187,500 (every kafka[i].topics: the "
        "sum of each pattern's cost, the ways a backtracking matcher may try it on one name, infra/topic_regex.py), "
        "more than the 250,000 a spec may use: the spec is refused before Java runs any of its patterns (MirrorMaker "
        "runs them on every topic of the cluster); list fewer patterns, or ones with fewer '*', '+' and '?' (a "
        "prefix such as campaign-.* costs one '*')"
    ]
    assert asked == []


def test_the_reviews_three_star_patterns_are_each_refused_before_java(monkeypatch, tmp_path):
    """The review's own spec: 99 patterns like .*.*.*[ab.cd.ef.gh], at the old bound (250**3)."""
    asked = no_java(monkeypatch)
    letters = "abcdefghijklmnopqrstuvwxyz"
    patterns = [f".*.*.*[ab.cd.ef.{a}{b}]" for a in letters for b in letters if a < b][:99]
    assert len(set(patterns)) == 99
    text = (
        'team: slowpoke\nowners: ["@gojek/x"]\ntier: standard\nnetwork: {cidr: 10.70.138.0/24}\n'
        "kafka:\n  - cluster: mainstream\n    topics: [" + ", ".join(f'"{p}"' for p in patterns) + "]\n"
    )
    with pytest.raises(spec.SpecError) as e:
        spec.parse(text, source="infra/teams/slowpoke.yaml")
    assert len(e.value.problems) == 99
    assert all(
        p.startswith(
            f"infra/teams/slowpoke.yaml:7: kafka[0].topics[{j}]: '{patterns[j]}' is refused: too "
            "many ways to match a name"
        )
        for j, p in enumerate(e.value.problems)
    ), e.value.problems[:3]
    assert not any("backtracks without end" in p for p in e.value.problems)
    assert asked == []


def test_more_patterns_than_a_spec_may_list_are_refused_before_java(monkeypatch):
    asked = no_java(monkeypatch)
    first = [f"campaign-{i}.*" for i in range(60)]
    second = [f"sandbox-{i}.*" for i in range(41)]
    text = (
        'team: many\nowners: ["@gojek/x"]\ntier: standard\nnetwork: {cidr: 10.70.139.0/24}\nkafka:\n'
        f"  - {{cluster: mainstream, topics: {first}}}\n  - {{cluster: playground, topics: {second}}}\n"
    )
    with pytest.raises(spec.SpecError) as e:
        spec.parse(text, source="infra/teams/many.yaml")
    assert e.value.problems == [
        "infra/teams/many.yaml:7: kafka[1].topics: 101 topic patterns in all (every kafka[i].topics of the spec "
        "together), more than the 100 a spec may list: the spec is refused before Java runs any of its patterns "
        "(MirrorMaker runs them on every topic of the cluster); list fewer patterns, or ones with fewer '*', '+' "
        "and '?' (a prefix such as campaign-.* costs one '*')"
    ]
    assert asked == []


def test_a_team_named_like_a_catalogue_prefix_is_refused_even_with_a_grant():
    """Attack review 4: with a grant file, team `payment` and its own topic payment--cards (inside
    payments' restricted payment-*) were accepted; the catalogue refuses both, and nothing else does."""
    path = FIXTURES / "payment.yaml"
    label = str(path.relative_to(REPO))
    specs, problems = validate.validate([path], grants_dir=HOSTILE_GRANTS)
    assert problems == [
        f"{label}:8: team: the catalogue's prefix payment-* on esb-critical (restricted, owned by team payments; "
        "infra/platform.yaml) covers every topic team payment would own (payment--<name>): a team's name keeps its "
        "own topics apart from the catalogue's; choose another name",
        f"{label}:13: topics[0].name: 'payment--cards' lies inside the catalogue's prefix payment-* on esb-critical "
        "(restricted, owned by team payments; infra/platform.yaml): a team's own topics are outside every catalogue "
        "entry, or the team would write into topics the catalogue gives to their owner and readers; choose another "
        "name",
    ]
    assert specs == []


def entry(value: str, owner: str, prefix: bool = True, cluster: str = "mainstream") -> topics.Topic:
    return topics.Topic(cluster, value, prefix, owner, "restricted", "critical", "@gojek/x")


@pytest.mark.parametrize(
    "team, catalogue, why",
    [
        ("payment", [entry("payment-", "payments")], "covers every topic team payment would own"),
        ("payment-ops", [entry("payment-", "payments")], "covers every topic team payment-ops would own"),
        ("ledger", [entry("led", "booking")], "covers every topic team ledger would own"),
        ("ledger", [entry("ledger--", "booking")], "covers every topic team ledger would own"),
        ("ledger", [entry("ledger--raw-", "booking")], "team ledger's own topics (ledger--<name>) would cover"),
        (
            "ledger",
            [entry("ledger--x", "booking", prefix=False)],
            "team ledger's own topics (ledger--<name>) would cover",
        ),
        ("ledger", [entry("ledger", "booking", prefix=False)], "'ledger' is named like the catalogue's topic ledger"),
        ("ledger", [entry("ledger-", "booking", cluster="logstream")], "on logstream"),
        ("ledger", [entry("ledger.", "booking")], "'ledger' is named like the catalogue's prefix ledger.*"),
    ],
)
def test_a_team_name_a_catalogue_entry_of_another_team_covers_or_that_covers_one_is_refused(team, catalogue, why):
    problems = topics.team_name_problems(team, catalogue)
    assert len(problems) == 1 and why in problems[0], problems
    assert problems[0].endswith("choose another name")


@pytest.mark.parametrize(
    "team, catalogue",
    [
        ("payments", [entry("payment-", "payments")]),  # its own entry
        ("ledger", [entry("ledger-", "ledger")]),  # its own
        ("ledger", [entry("ledgers-", "booking")]),  # ledger--x is not in ledgers-*
        ("ledger", [entry("ledger-events-", "booking")]),  # nor in ledger-events-*
        ("ledger", [entry("led", "booking", prefix=False)]),  # a literal covers only itself
        ("growth-lab", [entry("growth-", "growth", prefix=False)]),
    ],
)
def test_a_team_name_next_to_a_catalogue_entry_is_a_name_like_any_other(team, catalogue):
    assert topics.team_name_problems(team, catalogue) == []


@pytest.mark.parametrize(
    "name, catalogue, hit",
    [
        ("ledger--x", [entry("ledger--", "ledger")], "prefix ledger--*"),  # the team's own entry too
        ("ledger--x", [entry("ledger--x", "booking", prefix=False)], "topic ledger--x"),
        ("ledger--a.b", [entry("ledger--a_b", "booking", prefix=False)], "topic ledger--a_b"),  # Kafka: '.' is '_'
        ("ledger--a_b", [entry("ledger--a.", "booking")], "prefix ledger--a.*"),
    ],
)
def test_an_own_topic_inside_any_catalogue_entry_is_refused(name, catalogue, hit):
    problem = topics.own_topic_problem(name, catalogue)
    assert problem is not None and problem.startswith(f"'{name}' lies inside the catalogue's {hit} on mainstream")


@pytest.mark.parametrize("name", ["ledger--x", "ledger--X", "ledger--payment-x"])
def test_an_own_topic_outside_the_catalogue_is_not_refused(name):
    catalogue = [entry("ledger--x-", "booking"), entry("payment-", "payments"), entry("ledger--y", "ledger", False)]
    assert topics.own_topic_problem(name, catalogue) is None
