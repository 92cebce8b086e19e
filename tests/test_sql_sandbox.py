"""The sandbox around the analyst's SQL: an allow-list checked twice, refusals that say what.

Both checks are attacked with the same hostile queries (tests/hostile_queries.py): through the
commands analysts use, and each check on its own, so neither hides a hole in the other."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from dagger_runtime import sandbox
from dagger_runtime.cli import main
from dagger_runtime.errors import QueryError
from dagger_runtime.inputs import write_delimited
from dagger_runtime.plan import plan_job
from dagger_runtime.sandbox import allowlist
from dagger_runtime.sql import translate
from dagger_runtime.streams import decode
from loadtest import traffic
from protos import registry
from tests.hostile_queries import ANALYSIS_ONLY, HOSTILE, PLAN_CHECK_ONLY

pytestmark = pytest.mark.spark

JOB = """\
name: hostile
streams:
  - table: data_stream
    proto: gojek.esb.booking.BookingLogMessage
    topics: [GO_RIDE-booking-log]
    event_time: 5
    kafka: {bootstrap_servers: 127.0.0.1:9092, group_id: dagger-hostile}
sink: {type: log}
sql: |
"""


@dataclass(frozen=True)
class RawQuery:
    """A query handed to the plan check as Spark SQL, with the first check bypassed."""

    spark_sql: str
    source: str


@pytest.fixture(scope="module")
def bookings(tmp_path_factory):
    directory = tmp_path_factory.mktemp("hostile")
    dset = registry.load()
    path = directory / "bookings.bin"
    write_delimited(traffic.encode(traffic.bookings(200, minutes=2), dset.message_class(traffic.BOOKING)), path)
    return path


@pytest.fixture()
def stream(spark):
    """`data_stream` registered as the job's stream table, as validate registers it."""
    from dagger_runtime.config import loads_job

    plan = plan_job(loads_job(JOB + "  SELECT city_id FROM data_stream\n", fmt="yaml", source="hostile.yaml"))
    table, _, _ = decode(spark, spark.createDataFrame([], "value binary"), plan.streams[0], plan.descriptor_set)
    table.createOrReplaceTempView("data_stream")
    return ["data_stream"]


def _job(tmp_path, sql: str) -> Path:
    path = tmp_path / "hostile.yaml"
    path.write_text(JOB + "".join(f"  {line}\n" for line in sql.splitlines()))
    return path


def test_there_are_enough_hostile_queries_over_enough_spellings():
    assert len(HOSTILE) >= 60
    assert len({what for _, what in HOSTILE}) >= 35


@pytest.mark.parametrize("command", ["validate", "preview"])
@pytest.mark.parametrize("sql, what", HOSTILE, ids=[f"{i:02d}" for i in range(len(HOSTILE))])
def test_a_hostile_query_is_refused_cleanly_and_runs_nothing(sql, what, command, spark, tmp_path, bookings, capsys):
    marker = tmp_path / "ran"
    job = _job(tmp_path, sql.format(marker=marker))
    args = (
        ["validate", str(job)] if command == "validate" else ["preview", str(job), "--input", f"data_stream={bookings}"]
    )
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no result rows
    assert "Traceback" not in err
    assert err.startswith("error: ")
    assert what.lower() in err.lower(), err
    assert not marker.exists()  # the shell command never ran


def test_the_marker_check_would_see_a_command_that_ran(spark, tmp_path):
    """Without the sandbox, Spark runs the script: the tests above would see the marker."""
    marker = tmp_path / "ran"
    spark.createDataFrame([(1,)], "city_id int").createOrReplaceTempView("one_row")
    spark.sql(f"SELECT TRANSFORM(city_id) USING 'touch {marker}' AS (a) FROM one_row").collect()
    assert marker.exists()


@pytest.mark.parametrize("sql, what", PLAN_CHECK_ONLY, ids=[f"{i:02d}" for i in range(len(PLAN_CHECK_ONLY))])
def test_the_plan_check_alone_refuses_what_the_first_check_refuses(sql, what, spark, stream, tmp_path):
    marker = tmp_path / "ran"
    query = sql.format(marker=marker)
    with pytest.raises(QueryError) as info:
        sandbox.check_parsed(spark, RawQuery(query, query), stream)
    assert what.lower() in str(info.value).lower(), str(info.value)
    assert "cannot parse" not in str(info.value)
    assert not marker.exists()


@pytest.mark.parametrize("sql, what", ANALYSIS_ONLY)
def test_the_analysed_plan_is_checked_too(sql, what, spark, stream):
    query = RawQuery(sql, sql)
    sandbox.check_parsed(spark, query, stream)  # the parsed plan looks innocent
    with pytest.raises(QueryError) as info:
        sandbox.check_analyzed(spark, spark.sql(sql), query, stream)
    assert what in str(info.value)


def test_the_plan_check_refuses_a_session_without_the_sandbox_settings(spark, stream):
    query = RawQuery("SELECT city_id FROM data_stream", "SELECT city_id FROM data_stream")
    spark.conf.set("spark.sql.variable.substitute", "true")
    try:
        with pytest.raises(QueryError, match="not sandboxed: spark.sql.variable.substitute"):
            sandbox.check_parsed(spark, query, stream)
    finally:
        spark.conf.set("spark.sql.variable.substitute", "false")
    sandbox.check_parsed(spark, query, stream)


def test_a_secret_in_the_environment_does_not_reach_the_results(spark, stream, monkeypatch):
    monkeypatch.setenv("DAGGER_TEST_SECRET", "s3cr3t")
    text = "SELECT '${env:DAGGER_TEST_SECRET}' AS s FROM data_stream"
    with pytest.raises(QueryError, match=re.escape("${...}")):
        translate(text, stream)
    # and with the first check bypassed, Spark's substitution is off: the text stays text
    spark.createDataFrame([(1,)], "city_id int").createOrReplaceTempView("one_row")
    assert spark.sql(text.replace("data_stream", "one_row")).collect()[0].s == "${env:DAGGER_TEST_SECRET}"


def test_a_comment_cannot_smuggle_code_past_the_checks(spark, stream):
    sql = "SELECT city_id -- */, reflect('java.lang.System', 'getenv', 'HOME') AS home /*\nFROM data_stream"
    query = translate(sql, stream)
    assert "reflect" not in query.spark_sql.lower() and "--" not in query.spark_sql
    sandbox.check_parsed(spark, query, stream)
    assert spark.sql(query.spark_sql).columns == ["city_id"]


def test_a_stream_table_is_found_whatever_its_case_even_behind_a_cte():
    query = translate(
        "WITH recent AS (SELECT city_id FROM DATA_STREAM) SELECT count(1) AS n FROM recent", ["data_stream"]
    )
    assert query.tables == ("data_stream",)


def test_an_unknown_function_is_named_with_the_closest_known_one():
    with pytest.raises(QueryError, match=re.escape("unknown function GeoHsh(); did you mean GeoHash()?")):
        translate("SELECT GeoHsh(lat, long, 6) AS g FROM data_stream", ["data_stream"])


def test_preview_refuses_an_unknown_function_as_validate_does(spark, tmp_path, bookings, capsys):
    job = _job(tmp_path, "SELECT city_id, nosuchfn(city_id) AS x FROM data_stream")
    messages = []
    for args in (["validate", str(job)], ["preview", str(job), "--input", f"data_stream={bookings}"]):
        assert main(args) == 2
        out, err = capsys.readouterr()
        assert out == "" and "Traceback" not in err
        messages.append(err)
    assert messages[0] == messages[1]
    assert "unknown function nosuchfn()" in messages[0]


# --- the classification of Spark's functions ------------------------------------------------------


def _spark_functions(spark) -> set[str]:
    names = {r[0] for r in spark.sql("SHOW SYSTEM FUNCTIONS").collect()}
    table_functions = spark._jsparkSession.sessionState().tableFunctionRegistry().listFunction()
    return names | {table_functions.apply(i).funcName() for i in range(table_functions.size())}


def test_every_function_spark_lists_is_classified(spark):
    listed = _spark_functions(spark)
    assert len(listed) > 400
    unclassified = listed - allowlist.ALLOWED_SPARK_FUNCTIONS - set(allowlist.REFUSED_SPARK_FUNCTIONS)
    assert not unclassified, f"classify these in dagger_runtime/sandbox/allowlist.py: {sorted(unclassified)}"
    assert not allowlist.ALLOWED_SPARK_FUNCTIONS & set(allowlist.REFUSED_SPARK_FUNCTIONS)


def test_no_refused_function_is_built_from_a_class_an_allowed_one_lets_through(spark):
    guard = spark._jvm.dev.daggers.runtime.PlanGuard
    shared = list(
        guard.sharedClasses(
            sandbox.java_strings(spark, sorted(allowlist.ALLOWED_SPARK_FUNCTIONS)),
            sandbox.java_strings(spark, sorted(allowlist.REFUSED_SPARK_FUNCTIONS)),
        )
    )
    assert shared == []


def _examples(spark, name: str) -> list[str]:
    jvm = spark._jvm
    info = jvm.org.apache.spark.sql.catalyst.analysis.FunctionRegistry.builtin().lookupFunction(
        jvm.org.apache.spark.sql.catalyst.FunctionIdentifier.apply(name)
    )
    text = info.get().getExamples() if info.isDefined() else ""
    return [m.strip() for m in re.findall(r">\s*(SELECT[^;]*);", text or "")]


def _over_a_view(spark, example: str, n: int) -> tuple[str, str] | None:
    """Spark's own example of a function as a query over a stream-like view: no FROM reads a
    one-row view, FROM VALUES ... AS tab(col) becomes a view of those rows."""
    try:
        tree = sqlglot.parse_one(example, read="spark")
    except Exception:  # noqa: BLE001 - an example sqlglot cannot read is not the sandbox's business
        return None
    view = f"example_{n}"
    source = tree.args.get("from_") if isinstance(tree, exp.Select) else None
    if source is None:
        spark.sql("SELECT 1 AS one").createOrReplaceTempView(view)
        tree = tree.from_(view)
    elif isinstance(source.this, exp.Values) or (
        isinstance(source.this, exp.Table) and isinstance(source.this.this, exp.Values)
    ):
        alias = source.this.args.get("alias")
        spark.sql(f"SELECT * FROM {source.this.sql('spark')}").createOrReplaceTempView(view)
        source.set("this", exp.to_table(view).as_(alias.name if alias else view))
    else:
        return None
    return tree.sql("spark"), view


def _verdicts(spark, sql: str, view: str, analysed=None) -> tuple[bool, bool] | None:
    """(first check accepts, plan check accepts) for a query over `view`; None when Spark itself
    cannot analyse the example as sqlglot wrote it. `analysed`: Spark's DataFrame of `sql` when the
    caller already has it (analysis is most of this test's time)."""
    from pyspark.errors import AnalysisException

    try:
        translate(sql, [view])
        first = True
    except QueryError:
        first = False
    raw = RawQuery(sql, sql)
    try:
        sandbox.check_parsed(spark, raw, [view])
        sandbox.check_analyzed(spark, analysed if analysed is not None else spark.sql(sql), raw, [view])
        second = True
    except QueryError:
        second = False
    except AnalysisException:
        return None
    return first, second


def _analysed_in_plain_spark(spark, sql: str):
    try:
        return spark.sql(sql)  # analysed eagerly: an example Spark refuses raises here
    except Exception:  # noqa: BLE001 - Spark's own analysis errors: not an example we can use
        return None


def test_spark_documented_examples_of_refused_functions_are_refused_by_both_checks(spark):
    checked = 0
    for n, name in enumerate(sorted(allowlist.REFUSED_SPARK_FUNCTIONS)):
        for i, example in enumerate(_examples(spark, name)):
            prepared = _over_a_view(spark, example, n * 100 + i)
            if prepared is None:
                continue
            verdict = _verdicts(spark, *prepared)
            if verdict is None:
                continue
            assert verdict == (False, False), f"{name}: {prepared[0]} passed a check"
            checked += 1
    assert checked >= 40


# Allowed functions whose documented examples cannot pass for reasons outside the sandbox.
_EXAMPLE_GAPS = {
    # sqlglot drops parse_json() when it writes Spark SQL, so the variant is a string
    "schema_of_variant",
    "schema_of_variant_agg",
    "variant_get",
    "try_variant_get",
}


def test_spark_documented_examples_of_allowed_functions_pass_both_checks(spark):
    failures, passed = [], set()
    for n, name in enumerate(sorted(allowlist.ALLOWED_SPARK_FUNCTIONS - _EXAMPLE_GAPS)):
        for i, example in enumerate(_examples(spark, name)):
            if "=>" in example or "current_" in example.lower():
                continue  # named arguments and the clock are refused on purpose
            prepared = _over_a_view(spark, example, 50_000 + n * 100 + i)
            if prepared is None or "current_" in prepared[0].lower():
                continue
            analysed = _analysed_in_plain_spark(spark, prepared[0])
            if analysed is None:
                continue
            verdict = _verdicts(spark, *prepared, analysed=analysed)
            if verdict is None:
                continue
            if verdict == (True, True):
                passed.add(name)
            else:
                failures.append((name, verdict, prepared[0]))
    assert failures == [], "\n".join(map(str, failures))
    assert len(passed) >= 0.85 * len(allowlist.ALLOWED_SPARK_FUNCTIONS)
