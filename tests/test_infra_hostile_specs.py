"""Hostile and careless team specs (tests/fixtures/hostile_teams/<team>.yaml), each refused by
`infra.validate.validate` with a message naming the file, the line and the field, and no traceback.

Each fixture starts with comments saying what the refusal must contain, written by hand:
    # expect: <part of the message>
    # field: <the field named>            (optional)
    # line: <the line named>              (optional)
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from infra import validate

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
    _, problems = validate.validate([path])      # an exception escaping fails the test
    # refused: a problem names the file (a spec valid alone, such as an overlapping range, is
    # still in `specs`; the problem refuses it)
    label = re.escape(str(path.relative_to(REPO)))
    matching = [p for p in problems if re.match(rf"{label}:\d+: \S", p) and want["expect"] in p]
    assert matching, f"{path.name}: no '<file>:<line>: <field>: ...' problem contains {want['expect']!r}:\n" + \
        "\n".join(problems)
    line = want.get("line", r"\d+")
    field = re.escape(want["field"]) if "field" in want else r"\S+"
    assert any(re.match(rf"{label}:{line}: {field}: ", p) for p in matching), (line, want.get("field"), matching)
    assert not any("Traceback" in p for p in problems)
