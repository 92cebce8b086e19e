"""Only read-only queries over the job's own streams are accepted; refusals say what and where."""

import pytest
import sqlglot
from sqlglot import exp

from dagger_runtime.errors import QueryError
from dagger_runtime.sandbox import guard
from dagger_runtime.sql import translate

TABLES = ["data_stream"]


def refused(sql: str, tables=TABLES) -> QueryError:
    with pytest.raises(QueryError) as info:
        translate(sql, tables)
    return info.value


@pytest.mark.parametrize(
    "sql, what",
    [
        ("DROP TABLE data_stream", "only a SELECT query is allowed"),
        ("CREATE TABLE x AS SELECT * FROM data_stream", "only a SELECT query is allowed"),
        ("INSERT INTO data_stream SELECT * FROM data_stream", "only a SELECT query is allowed"),
        ("DELETE FROM data_stream", "only a SELECT query is allowed"),
        ("CREATE FUNCTION f AS 'com.evil.F'", "only a SELECT query is allowed"),
        ("ADD JAR '/tmp/evil.jar'", "only a SELECT query is allowed"),
        ("SET spark.sql.runSQLOnFiles=true", "only a SELECT query is allowed"),
    ],
)
def test_statements_other_than_select_are_refused(sql, what):
    assert what in str(refused(sql))


def test_a_call_into_the_jvm_is_refused_with_its_position():
    err = refused("SELECT city_id,\n  reflect('java.lang.Runtime', 'getRuntime') AS r\nFROM data_stream")
    assert "reflect() is not allowed: it calls any Java method in the cluster's JVM" in str(err)
    assert (err.line, err.col) == (2, 3)


@pytest.mark.parametrize("fn", ["java_method", "try_reflect", "input_file_name"])
def test_other_escape_hatches_are_refused(fn):
    assert f"{fn}() is not allowed" in str(refused(f"SELECT {fn}('x', 'y') FROM data_stream"))


def test_a_function_spark_does_not_have_is_refused_as_unknown():
    assert "unknown function read_files()" in str(refused("SELECT read_files('x', 'y') FROM data_stream"))


def test_reading_a_file_by_path_is_refused():
    err = refused("SELECT * FROM parquet.`/etc/passwd`")
    assert "not other databases or files" in str(err)


def test_reading_another_table_is_refused_and_the_streams_are_listed():
    err = refused("SELECT * FROM payments_stream")
    assert "unknown table `payments_stream`" in str(err)
    assert "`data_stream`" in str(err)


def test_a_table_function_is_refused():
    assert "table function range() is not allowed" in str(refused("SELECT * FROM range(10)"))


def test_dml_hidden_in_a_subquery_or_cte_is_refused():
    err = refused("WITH x AS (SELECT * FROM data_stream) SELECT * FROM other.secret")
    assert "not other databases" in str(err)


def test_two_statements_are_refused():
    assert "exactly one SELECT query; found 2" in str(refused("SELECT 1 FROM data_stream; SELECT 2 FROM data_stream"))


def test_a_syntax_error_names_line_and_column_and_points_at_it():
    err = refused("SELECT city_id\nFROM data_stream\nWHERE (status = 'COMPLETED'")
    assert "syntax error" in str(err)
    assert err.line == 3
    assert "^" in str(err)


def test_ctes_and_subqueries_over_own_streams_are_accepted():
    t = translate("WITH c AS (SELECT city_id FROM data_stream) SELECT count(1) AS n FROM (SELECT * FROM c) s", TABLES)
    assert "data_stream" in t.spark_sql


def test_table_names_are_matched_case_insensitively_like_spark():
    assert translate("SELECT 1 AS one FROM `DATA_STREAM`", TABLES).tables


def test_string_literals_follow_calcite_doubled_quotes_and_literal_backslashes():
    out = translate("SELECT 'it''s' AS a, Split(order_url, '\\s+') AS b FROM data_stream", TABLES).spark_sql
    assert "'it\\'s' AS a" in out  # one string, as Flink reads it
    assert "'\\\\s+'" in out  # the backslash survives into Spark's escaping


def _balanced_or(lo: int, hi: int) -> str:
    if hi - lo == 1:
        return f"upper(b) = 'x{lo}'"
    middle = (lo + hi) // 2
    return f"({_balanced_or(lo, middle)} OR {_balanced_or(middle, hi)})"


def test_checking_a_large_query_copies_each_node_a_bounded_number_of_times(monkeypatch):
    """Naming a call once wrote (and so copied) its whole subtree, so a 190 KB tree of ORs took
    40 s to check: the work per node must not grow with the size of what is under it."""
    sql = "SELECT a FROM s WHERE " + _balanced_or(0, 1024)
    tree = sqlglot.parse_one(sql, dialect="spark")
    nodes = sum(1 for _ in tree.walk())
    copies = 0
    original = exp.Expression.copy

    def counting(self, *args, **kwargs):
        nonlocal copies
        copies += sum(1 for _ in self.walk())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(exp.Expression, "copy", counting)
    assert guard.check(sql, tree, {"s"}) == []
    # one copy per node and a few for each call's own head; the subtree copies made it ~10x nodes
    assert copies <= 2 * nodes, (copies, nodes)


def test_an_and_or_or_is_named_as_itself_not_as_its_first_operand():
    tree = sqlglot.parse_one("SELECT a FROM s WHERE regexp_extract(b, 'x', 0) = 'y' OR a = 1", dialect="spark")
    assert guard.function_name(tree.find(exp.Or)) == "or"
    assert guard.function_name(tree.find(exp.RegexpExtract)) == "regexp_extract"
