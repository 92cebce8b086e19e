"""Flink 1.20's JSON functions and MAP_UNION give Flink's result on Spark, or are refused by name.

Every expected value is Flink 1.20's, as Flink itself gave it for the same call (run once by hand
on the conformance runner, jvm/flink), never computed by the runtime: each query runs through
tests/sqlrun.py, so through the translation and both sandbox checks, on Spark.
"""

from __future__ import annotations

import datetime as dt

import pytest

from dagger_runtime.errors import QueryError
from dagger_runtime.sql import translate
from tests.sqlrun import run

pytestmark = pytest.mark.spark

SCHEMA = "i int, s string, nothing string, f double, rowtime timestamp, k string, g string"
ROW = (1, "car_xl", None, 52203.86, dt.datetime(2026, 11, 22, 0, 0, 1, 373000), "b", "RB-1")


def values(spark, *expressions: str) -> list:
    select = ", ".join(f"{e} AS v{n}" for n, e in enumerate(expressions))
    (row,) = run(spark, f"SELECT {select} FROM t", [ROW], SCHEMA)
    return list(row)


CASES = [
    # JSON_OBJECT: keys sorted, no spaces, NULL ON NULL by default, the last of a repeated key
    ("JSON_OBJECT('d' VALUE s, 'c' VALUE i, 'f' VALUE f)", '{"c":1,"d":"car_xl","f":52203.86}'),
    ("JSON_OBJECT('a' VALUE nothing, 'b' VALUE 1)", '{"a":null,"b":1}'),
    ("JSON_OBJECT('a' VALUE nothing, 'b' VALUE 1 ABSENT ON NULL)", '{"b":1}'),
    ("JSON_OBJECT('a' VALUE 1, 'a' VALUE 2)", '{"a":2}'),
    ("JSON_OBJECT(KEY 'k' VALUE true)", '{"k":true}'),
    ("JSON_OBJECT()", "{}"),
    ("JSON_OBJECT('q\"k' VALUE 'a\"b\\c' || CHR(10))", '{"q\\"k":"a\\"b\\\\c\\n"}'),
    (
        "JSON_OBJECT('a' VALUE JSON_ARRAY(1, 'x', JSON_OBJECT('k' VALUE true)), 'b' VALUE JSON_OBJECT())",
        '{"a":[1,"x",{"k":true}],"b":{}}',
    ),
    (
        "JSON_OBJECT('big' VALUE CAST(12345678901 AS BIGINT), 'dec' VALUE CAST(1.50 AS DECIMAL(5, 2)), "
        "'e' VALUE CAST(1e20 AS DOUBLE), 'h' VALUE CAST(100.00 AS DECIMAL(5, 2)))",
        '{"big":12345678901,"dec":1.5,"e":1.0E20,"h":1E+2}',
    ),
    ("JSON_OBJECT('t' VALUE rowtime)", '{"t":"2026-11-22T00:00:01.373"}'),
    (
        "JSON_OBJECT('q' VALUE JSON_QUERY('{\"a\":[1]}', '$.a'), 's' VALUE JSON_STRING('x'))",
        '{"q":"[1]","s":"\\"x\\""}',
    ),
    ("JSON_OBJECT(KEY k VALUE 1, 'a' VALUE 2)", '{"a":2,"b":1}'),
    # JSON_ARRAY: ABSENT ON NULL by default
    ("JSON_ARRAY(i, s)", '[1,"car_xl"]'),
    ("JSON_ARRAY(1, nothing, 'a')", '[1,"a"]'),
    ("JSON_ARRAY(1, nothing NULL ON NULL)", "[1,null]"),
    ("JSON_ARRAY()", "[]"),
    ("JSON_ARRAY(JSON_ARRAY(1), JSON_OBJECT('a' VALUE 1), '[1]')", '[[1],{"a":1},"[1]"]'),
    # JSON_STRING
    ("JSON_STRING(i)", "1"),
    ("JSON_STRING('a\"b' || s)", '"a\\"bcar_xl"'),
    ("JSON_STRING(nothing)", None),
    ("JSON_STRING(true)", "true"),
    ("JSON_STRING(CAST(1.50 AS DOUBLE))", "1.5"),
    ("JSON_STRING(CAST(0.00 AS DECIMAL(5, 2)))", "0"),
    ("JSON_STRING(CAST(0.0000001 AS DECIMAL(9, 8)))", "1E-7"),
    ("JSON_STRING(CAST(-10.10 AS DECIMAL(5, 2)))", "-10.1"),
    ("JSON_STRING(ARRAY[1, 2])", "[1,2]"),
    ("JSON_STRING(TIMESTAMP '2026-11-22 00:00:00')", '"2026-11-22T00:00:00"'),
    # JSON_QUERY: a path without 'lax' is strict (a missing value is an error, not empty)
    ("JSON_QUERY('{\"a\": [1, 2]}', '$.a')", "[1,2]"),
    ('JSON_QUERY(\'{"a": {"z": 1.50, "y": 1e3, "x": "s"}}\', \'$.a\')', '{"z":1.5,"y":1000.0,"x":"s"}'),
    ("JSON_QUERY('{\"a\": 1}', '$.a')", None),
    ("JSON_QUERY('{\"a\": 1}', '$.a' WITH CONDITIONAL ARRAY WRAPPER)", "[1]"),
    ("JSON_QUERY('{\"a\": [1]}', '$.a' WITH CONDITIONAL ARRAY WRAPPER)", "[1]"),
    ("JSON_QUERY('{\"a\": [1]}', '$.a' WITH UNCONDITIONAL ARRAY WRAPPER)", "[[1]]"),
    ("JSON_QUERY('{\"a\": \"x\"}', '$.a' WITH ARRAY WRAPPER)", '["x"]'),
    ("JSON_QUERY('{\"a\": 1}', '$.b' EMPTY OBJECT ON EMPTY)", None),
    ("JSON_QUERY('{\"a\": 1}', 'lax $.b' EMPTY ARRAY ON EMPTY)", "[]"),
    ("JSON_QUERY('{\"a\": 1}', 'strict $.b' EMPTY ARRAY ON ERROR)", "[]"),
    ("JSON_QUERY('nope', '$.a' EMPTY ARRAY ON ERROR)", "[]"),
    ("JSON_QUERY('{\"a\": 1}', 'lax $.a' EMPTY OBJECT ON EMPTY)", "{}"),
    ("JSON_QUERY(nothing, '$.a' EMPTY ARRAY ON ERROR)", None),
    # JSON_EXISTS: FALSE ON ERROR by default
    ("JSON_EXISTS('{\"a\": true}', '$.a')", True),
    ("JSON_EXISTS('{\"a\": true}', '$.b')", False),
    ("JSON_EXISTS('{\"a\": null}', '$.a')", False),
    ("JSON_EXISTS('{\"a\": true}', 'strict $.b' TRUE ON ERROR)", True),
    ("JSON_EXISTS('{\"a\": true}', 'lax $.b' TRUE ON ERROR)", False),
    ("JSON_EXISTS('nope', '$.a' UNKNOWN ON ERROR)", None),
    ("JSON_EXISTS(nothing, '$.a')", None),
    # JSON_VALUE's clauses
    ("JSON_VALUE('{\"a\":1}', '$.b' DEFAULT 'e' ON EMPTY)", None),
    ("JSON_VALUE('{\"a\":1}', 'lax $.b' DEFAULT 'e' ON EMPTY)", "e"),
    ("JSON_VALUE('{\"a\":1}', '$.b' DEFAULT 'e' ON ERROR)", "e"),
    ("JSON_VALUE('{\"a\":[1]}', '$.a' DEFAULT 'e' ON ERROR)", "e"),
    ("JSON_VALUE('{\"a\":null}', 'lax $.a' DEFAULT 'e' ON EMPTY)", "e"),
    ("JSON_VALUE('nope', 'lax $.a' DEFAULT 'e' ON EMPTY)", "e"),
    ("JSON_VALUE(nothing, '$.a' DEFAULT 'e' ON ERROR)", None),
    ("JSON_VALUE('{\"a\":7}', '$.a' RETURNING INT)", 7),
    ("JSON_VALUE('{\"a\":-7}', '$.a' RETURNING INT DEFAULT 0 ON EMPTY)", -7),
    ("JSON_VALUE('{\"a\":7.25}', '$.a' RETURNING DOUBLE)", 7.25),
    ("JSON_VALUE('{\"a\":1e3}', '$.a' RETURNING DOUBLE)", 1000.0),
    ("JSON_VALUE('{\"a\":1}', 'lax $.b' RETURNING DOUBLE DEFAULT CAST(1.5 AS DOUBLE) ON EMPTY)", 1.5),
    ("JSON_VALUE('{\"a\":true}', '$.a' RETURNING BOOLEAN)", True),
    ("JSON_VALUE('{\"a\":7}', '$.a' RETURNING STRING DEFAULT 'x' ON ERROR)", "7"),
    ("JSON_VALUE('{\"a\":1}', '$.b' NULL ON EMPTY DEFAULT 'x' ON ERROR)", "x"),
    ("JSON_VALUE('{\"a\":' || CAST(i AS STRING) || '}', '$.a' RETURNING INT DEFAULT -1 ON ERROR)", 1),
    # where Flink 1.20 fails the job (a value of another type than RETURNING's), ON ERROR applies
    ("JSON_VALUE('{\"a\":\"x\"}', '$.a' RETURNING INT DEFAULT 0 ON ERROR)", 0),
    # MAP_UNION: the last map's value for a repeated key, NULL when a map is NULL
    ("MAP_UNION(MAP['a', 1, 'b', 2], MAP['a', 3])", {"a": 3, "b": 2}),
    ("MAP_UNION(MAP['a', 1], MAP['b', 2], MAP['a', 5, 'c', 6])", {"a": 5, "b": 2, "c": 6}),
    ("MAP_UNION(MAP['a', 1], CAST(NULL AS MAP<STRING, INT>))", None),
    ("MAP_UNION(MAP['a', 1])", {"a": 1}),
    ("MAP_UNION(MAP['a', 1], MAP['a', CAST(NULL AS INT)])", {"a": None}),
]


@pytest.mark.parametrize("expression, expected", CASES, ids=[c[0][:60] for c in CASES])
def test_a_json_function_gives_flinks_result(spark, expression, expected):
    (got,) = values(spark, expression)
    assert got == expected


def test_the_aggregates_give_flinks_text_per_group(spark):
    rows = [
        (1, "car", None, 1.0, dt.datetime(2026, 1, 1), "RB-2", "g"),
        (2, "car", None, 1.0, dt.datetime(2026, 1, 1), "RB-1", "g"),
        (3, None, None, 1.0, dt.datetime(2026, 1, 1), "RB-3", "g"),
    ]
    (row,) = run(
        spark,
        """
        SELECT JSON_ARRAYAGG(JSON_STRING(s)) AS a, JSON_ARRAYAGG(JSON_STRING(s) NULL ON NULL) AS n,
               JSON_OBJECTAGG(KEY k VALUE JSON_STRING(i)) AS o,
               JSON_OBJECTAGG(KEY k VALUE JSON_STRING(s) ABSENT ON NULL) AS oa,
               JSON_OBJECTAGG(KEY k VALUE JSON_STRING(s)) AS onull,
               JSON_ARRAYAGG(JSON_OBJECT('i' VALUE i)) AS ao
        FROM t GROUP BY g""",
        rows,
        SCHEMA,
    )
    assert row.a == '["car","car"]'
    assert sorted(row.n[1:-1].split(",")) == ['"car"', '"car"', "null"]
    assert row.o == '{"RB-1":2,"RB-2":1,"RB-3":3}'
    assert row.oa == '{"RB-1":"car","RB-2":"car"}'
    assert row.onull == '{"RB-1":"car","RB-2":"car","RB-3":null}'
    assert sorted(row.ao[1:-1].split(",")) == ['{"i":1}', '{"i":2}', '{"i":3}']


@pytest.mark.parametrize(
    "sql, names",
    [
        ("SELECT JSON_ARRAYAGG(i) AS v FROM t", "JSON_ARRAYAGG of a plain value is not supported: Flink 1.20 inserts"),
        ("SELECT JSON_OBJECTAGG(KEY s VALUE s) AS v FROM t", "JSON_OBJECTAGG(KEY k VALUE JSON_STRING(x))"),
        (
            "SELECT JSON_ARRAYAGG(JSON_STRING(i) ORDER BY i) AS v FROM t",
            "JSON_ARRAYAGG(... ORDER BY ...) is not supported",
        ),
        ("SELECT JSON_OBJECT('a' VALUE 1 WITH UNIQUE KEYS) AS v FROM t", "JSON_OBJECT(... WITH UNIQUE KEYS)"),
        ("SELECT JSON_QUERY(s, '$.a[*]') AS v FROM t", "JSON_QUERY path '$.a[*]': only member and index steps"),
        ("SELECT JSON_QUERY(s, k) AS v FROM t", "JSON_QUERY(json, path): the path must be a string literal"),
        ("SELECT JSON_QUERY(s, '$.a' ERROR ON ERROR) AS v FROM t", "JSON_QUERY(... ERROR ON ERROR) fails the job"),
        ("SELECT JSON_QUERY(s, '$.a' RETURNING ARRAY<STRING>) AS v FROM t", "JSON_QUERY(... RETURNING ARRAY<STRING>)"),
        ("SELECT JSON_EXISTS(s, '$..a') AS v FROM t", "JSON_EXISTS path '$..a'"),
        ("SELECT JSON_EXISTS(s, '$.a' ERROR ON ERROR) AS v FROM t", "JSON_EXISTS(... ERROR ON ERROR) fails the job"),
        (
            "SELECT JSON_VALUE(s, '$.a' RETURNING BIGINT) AS v FROM t",
            "JSON_VALUE(... RETURNING BIGINT) is not supported",
        ),
        ("SELECT JSON_VALUE(s, '$.a' ERROR ON EMPTY) AS v FROM t", "JSON_VALUE(... ERROR ON EMPTY) fails the job"),
        # what Calcite's grammar refuses is refused, not read leniently with the last clause winning
        ("SELECT JSON_VALUE(s '$.a' RETURNING INT) AS v FROM t", "a comma must separate the JSON value and the path"),
        ("SELECT JSON_QUERY(s '$.a') AS v FROM t", "a comma must separate the JSON value and the path"),
        (
            "SELECT JSON_VALUE(s, '$.a' RETURNING INT RETURNING STRING) AS v FROM t",
            "JSON_VALUE: RETURNING is given twice",
        ),
        (
            "SELECT JSON_VALUE(s, '$.a' NULL ON EMPTY DEFAULT 1 ON EMPTY) AS v FROM t",
            "JSON_VALUE: ON EMPTY is given twice",
        ),
        (
            "SELECT JSON_EXISTS(s, '$.a' TRUE ON ERROR FALSE ON ERROR) AS v FROM t",
            "JSON_EXISTS: ON ERROR is given twice",
        ),
        (
            "SELECT JSON_QUERY(s, '$.a' WITH WRAPPER WITHOUT WRAPPER) AS v FROM t",
            "JSON_QUERY: the WRAPPER clause is given twice",
        ),
        ("SELECT JSON_VALUE(s, '$.a' WITH WRAPPER) AS v FROM t", "JSON_VALUE: a WRAPPER clause belongs to JSON_QUERY"),
    ],
)
def test_a_json_form_without_flinks_meaning_is_refused_by_name(sql, names):
    with pytest.raises(QueryError) as info:
        translate(sql, ["t"])
    assert names in str(info.value)
    assert "Traceback" not in str(info.value)


def test_json_value_without_clauses_keeps_its_translation():
    out = translate("SELECT JSON_VALUE(s, '$.a') AS v FROM t", ["t"]).spark_sql
    assert "GET_JSON_OBJECT(s, '$.a')" in out and "TRY_PARSE_JSON" in out


@pytest.mark.parametrize(
    "path",
    [
        "$[2147483648]",
        "$[99999999999999999999]",
        "$[٣]",
        "$[01]",  # beyond Spark's int, not ASCII, not canonical
        "$[\"a''b\"]",  # a quote in a double-quoted key
        "$[''*'']",
        "$['' '']",
        "$['''']",  # keys get_json_object cannot find
    ],
)
def test_json_paths_that_validate_but_fail_or_differ_at_run_time_are_refused(path):
    for call in (f"JSON_VALUE(s, '{path}')", f"JSON_QUERY(s, '{path}')", f"JSON_EXISTS(s, '{path}')"):
        with pytest.raises(QueryError) as e:
            translate(f"SELECT {call} AS v FROM t", ["t"])
        assert "only member and index steps are supported" in str(e.value), call
