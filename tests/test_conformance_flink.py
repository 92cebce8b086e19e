"""Differential conformance against Apache Flink 1.20 SQL (issue 21).

Each case of tests/conformance/corpus.py runs on Flink itself (jvm/flink's runner, one JVM for
all cases) and through `dagger preview`'s path on Spark, over the same generated messages; the
test passes when what is observed is what tests/conformance/expected.yaml records for it:

- identical: the same multiset of rows (floats to a relative 1e-9, timestamps ISO-8601 UTC);
- refused:   ours refuses (a DaggerError, exit 2 on the CLI) with the recorded words;
- differs:   anything else (other rows, a crash, Flink refusing), with a reason written down.

So a silent difference can never pass: it must be written into expected.yaml, with its reason, to pass. `make test`
runs the fast subset (cases marked fast); `make conformance` (DAGGER_CONFORMANCE=all) runs all.
After a change, `python -m tests.conformance.observe --record` rewrites what changed and
`make conformance-table` the docs' table.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.conformance import coverage, harness, table
from tests.conformance.corpus import CASES, NOT_COMPARABLE
from tests.conformance.observe import load_expected

# one worker runs them all under `make test`'s xdist: one Flink JVM, one Spark session
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("conformance")]
STATES = {"identical", "refused", "differs"}
SELECTED = CASES if os.environ.get("DAGGER_CONFORMANCE") == "all" else [c for c in CASES if c.fast]
EXPECTED = load_expected()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return harness.write_inputs(tmp_path_factory.mktemp("conformance"))


@pytest.fixture(scope="module")
def flink(inputs):
    if not harness.flink_available():
        pytest.fail("the Flink runner is not built: `make flink`")
    return harness.run_flink(SELECTED, inputs)


@pytest.fixture(scope="module")
def dset():
    from protos import registry

    return registry.load(None, harness.SCHEMA_VERSION)


@pytest.mark.parametrize("case", SELECTED, ids=[c.id for c in SELECTED])
def test_case_gives_what_is_recorded(case, inputs, flink, spark, dset):
    recorded = EXPECTED[case.id]
    state, detail = harness.observe(case, flink[case.id], harness.run_ours(case, inputs, spark, dset))
    assert state == recorded["state"], (
        f"{case.id} ({case.construct}) is {state}, recorded as {recorded['state']}: {detail}\n"
        f"query: {case.query}\n(python -m tests.conformance.observe --only {case.id} --record, then write its note)"
    )
    if state == "refused":
        assert recorded["refusal"] in detail, f"the refusal changed: {detail}"


def test_every_case_has_a_recorded_state_with_its_words_or_reason():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids repeat"
    assert sorted(EXPECTED) == sorted(ids), "expected.yaml and the corpus name different cases"
    for case_id, entry in EXPECTED.items():
        assert entry["state"] in STATES, case_id
        if entry["state"] == "refused":
            assert entry.get("refusal"), f"{case_id}: a refusal without the words it must say"
        if entry["state"] == "differs":
            assert entry.get("reason"), f"{case_id}: a difference without its reason"


def test_every_function_flink_lists_is_called_by_a_case_or_has_a_reason():
    listed = coverage.listed()
    assert len(listed) > 150 and "JSON_OBJECT" in listed and "upperCase" in listed, (
        "flink_functions.txt is not Flink's list"
    )
    assert coverage.uncovered() == [], "give these a case in corpus.py or a reason in coverage.NOT_CALLED"
    stale = [n for n in coverage.NOT_CALLED if n not in listed or coverage.called(n)]
    assert stale == [], f"NOT_CALLED explains names Flink does not list or a case calls: {stale}"
    ids = {c.id for c in CASES}
    assert NOT_COMPARABLE <= ids, NOT_COMPARABLE - ids


def test_the_docs_table_and_the_readmes_counts_are_those_of_the_recorded_states():
    assert table.main(["--check"]) == 0, "run `make conformance-table` and commit what it writes"


def test_the_runner_refuses_bad_input_with_one_json_line_and_exit_2(tmp_path):
    if not harness.flink_available():
        pytest.fail("the Flink runner is not built: `make flink`")
    cp = f"{harness.FLINK_DIR / 'conformance-runner.jar'}{os.pathsep}{harness.FLINK_DIR / 'deps' / '*'}"

    def runner(*args):
        return subprocess.run(
            ["java", "-Xmx256m", "-cp", cp, "dev.daggers.conformance.FlinkRunner", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    no_file = runner(str(tmp_path / "missing.json"))
    assert no_file.returncode == 2 and "cannot read the cases file" in json.loads(no_file.stdout)["error"]
    (tmp_path / "bad.json").write_text('{"cases": []}')
    bad = runner(str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "descriptor_set" in json.loads(bad.stdout)["error"]
    assert runner().returncode == 2
    unknown_table = runner("--descriptor-set", str(harness.DESCRIPTOR_SET), "--table", "t", "--query", "SELECT 1")
    assert unknown_table.returncode == 2 and "NAME=FILE,MESSAGE,EVENT_TIME_FIELD" in unknown_table.stdout


def test_the_runner_runs_one_query_from_its_command_line_and_refuses_a_bad_one_with_exit_2(inputs):
    if not harness.flink_available():
        pytest.fail("the Flink runner is not built: `make flink`")
    cp = f"{harness.FLINK_DIR / 'conformance-runner.jar'}{os.pathsep}{harness.FLINK_DIR / 'deps' / '*'}"
    table = f"pings={inputs['pings']},{harness.STREAMS['pings'][0]},event_timestamp"

    def query(sql):
        return subprocess.run(
            [
                "java",
                "-Xmx1g",
                "-cp",
                cp,
                "dev.daggers.conformance.FlinkRunner",
                "--descriptor-set",
                str(harness.DESCRIPTOR_SET),
                "--table",
                table,
                "--query",
                sql,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )

    ok = query("SELECT driver_status, COUNT(*) AS n FROM pings GROUP BY driver_status")
    assert ok.returncode == 0, ok.stdout + ok.stderr[-2000:]
    rows = [json.loads(line) for line in ok.stdout.splitlines()]
    assert sum(r["n"] for r in rows) == harness.STREAMS["pings"][2]  # retractions applied: final counts
    bad = query("SELECT no_such_column FROM pings")
    assert bad.returncode == 2 and "no_such_column" in json.loads(bad.stdout)["error"]
