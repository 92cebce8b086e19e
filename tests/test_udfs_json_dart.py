"""The JSON and DART Java UDFs against raystack/dagger's own test vectors.

Expected values are copied from docs/reference/udf-contracts.md §4 and §6, which cite dagger's
JsonQueryTest, JsonUpdateTest, JsonDeleteTest, DartGetTest, DartContainsTest and GcsDataStoreTest:
they are the independent reference. Where we deliberately differ from dagger (NULL instead of a
failed task for a bad row or a missing DartGet key) the test says so.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession

from dagger_runtime.jvm import REPO_ROOT
from dagger_runtime.session import build_session
from dagger_runtime.udfs.java_udfs import (
    DART_BASE_CONF,
    JAVA_UDFS,
    check_dart_regex,
    check_json_path,
    clear_dart_cache,
    register_java_udfs,
)

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def dart_dir(tmp_path_factory):
    """The reference data's base directory, laid out like dagger's bucket."""
    base = tmp_path_factory.mktemp("dart")
    (base / "dart-get").mkdir()
    (base / "dart-contains").mkdir()
    return base


@pytest.fixture(scope="module")
def spark(dart_dir):

    existing = SparkSession.getActiveSession()
    session = build_session("test-udfs-json-dart", parallelism=2)
    # set at run time (not in the SparkConf), so the tests show the session conf reaching the tasks
    session.conf.set(DART_BASE_CONF, dart_dir.as_uri())
    register_java_udfs(session)
    yield session
    if existing is None:
        session.stop()
    else:
        session.conf.unset(DART_BASE_CONF)


def sql_literal(text: str | None) -> str:
    """A Spark SQL string literal (the vectors have no backslashes, which Spark would unescape)."""
    if text is None:
        return "NULL"
    assert "\\" not in text
    return "'" + text.replace("'", "''") + "'"


def scalar(spark, expression: str):
    return spark.sql(f"SELECT {expression} AS v").collect()[0]["v"]


def call(spark, function: str, *args: str | None):
    return scalar(spark, f"{function}({', '.join(sql_literal(a) for a in args)})")


J_NULL_K1 = '{"k1":null,"k2":"v2"}'
J_NESTED = '{"k1":null,"k2":{"key1":"value1","key2":"value2"}}'
J_BAD = '{"k1":null,"k2""v2"}'


# ------------------------------------------------------------------------------ JSON, §4
def test_every_java_udf_is_registered_under_its_internal_name(spark):
    assert set(JAVA_UDFS) == {"S2Id", "JsonQuery", "JsonUpdate", "JsonDelete", "__DartGet4", "__DartContains4"}
    registered = {f.name.lower() for f in spark.catalog.listFunctions()}  # Spark lists them lower-cased
    assert {name.lower() for name in JAVA_UDFS} <= registered


@pytest.mark.parametrize(
    "json_text, path, expected",
    [
        (J_NULL_K1, "$.k2", '"v2"'),
        (J_NESTED, "$.k2", '{"key1":"value1","key2":"value2"}'),
        (J_NULL_K1, "$.k1", None),
    ],
)
def test_json_query_matches_daggers_vectors(spark, json_text, path, expected):
    assert call(spark, "JsonQuery", json_text, path) == expected


def test_json_query_returns_a_string_with_its_json_quotes(spark):
    assert call(spark, "JsonQuery", J_NESTED, "$.k2.key1") == '"value1"'


def test_json_query_gives_null_for_a_missing_leaf(spark):
    assert call(spark, "JsonQuery", J_NULL_K1, "$.k3") is None


def test_json_query_serialises_numbers_booleans_and_arrays_as_json(spark):
    doc = '{"i":1,"d":1.5,"t":true,"a":[1,"x",null]}'
    assert [call(spark, "JsonQuery", doc, p) for p in ("$.i", "$.d", "$.t", "$.a", "$.a[1]")] == [
        "1",
        "1.5",
        "true",
        '[1,"x",null]',
        '"x"',
    ]


@pytest.mark.parametrize(
    "json_text, path, value, expected",
    [
        ("{}", "$.k1", "v1", '{"k1":"v1"}'),
        (J_NULL_K1, "$.k3", "v3", '{"k1":null,"k2":"v2","k3":"v3"}'),
        (J_NULL_K1, "$.k2", "updatedValue", '{"k1":null,"k2":"updatedValue"}'),
        (J_NESTED, "$.k2.key3", "value3", '{"k1":null,"k2":{"key1":"value1","key2":"value2","key3":"value3"}}'),
        (J_NULL_K1, "$.k2", None, '{"k1":null,"k2":null}'),
    ],
)
def test_json_update_matches_daggers_vectors(spark, json_text, path, value, expected):
    assert call(spark, "JsonUpdate", json_text, path, value) == expected


@pytest.mark.parametrize(
    "json_text, path, expected",
    [
        (J_NULL_K1, "$.k2", '{"k1":null,"k2":{"key1":"value1","key2":"value2"}}'),
        (J_NULL_K1, "$.k3", '{"k1":null,"k2":"v2","k3":{"key1":"value1","key2":"value2"}}'),
        (
            '{"k1":null,"k2":"v2","k3":{"nk1":"nv1","nk2":"nv2"}}',
            "$.k3.nk1",
            '{"k1":null,"k2":"v2","k3":{"nk1":{"key1":"value1","key2":"value2"},"nk2":"nv2"}}',
        ),
    ],
)
def test_json_update_with_a_map_value_matches_daggers_vectors(spark, json_text, path, expected):
    value = "map('key1', 'value1', 'key2', 'value2')"
    assert scalar(spark, f"JsonUpdate({sql_literal(json_text)}, {sql_literal(path)}, {value})") == expected


def test_json_update_sets_numbers_booleans_and_arrays_as_json_values(spark):
    doc = sql_literal('{"a":"x"}')
    assert scalar(spark, f"JsonUpdate({doc}, '$.a', 5)") == '{"a":5}'
    assert scalar(spark, f"JsonUpdate({doc}, '$.a', true)") == '{"a":true}'
    assert scalar(spark, f"JsonUpdate({doc}, '$.a', array(1, 2))") == '{"a":[1,2]}'
    assert scalar(spark, f"JsonUpdate({doc}, '$.a', named_struct('b', 'c'))") == '{"a":{"b":"c"}}'


def test_json_update_leaves_the_document_unchanged_when_an_array_index_is_out_of_range(spark):
    # json-path 2.4.0 (dagger) behaviour; 2.7+ would throw PathNotFoundException
    doc = '{"k1":"v1","k2":["value1","value2","value3"]}'
    assert call(spark, "JsonUpdate", doc, "$.k2[7]", "X") == doc
    assert call(spark, "JsonDelete", doc, "$.k2[9]") == doc


DELETE_DOC = '{"k1":"v1","k2":{"key1":"value1","key2":"value2","key3":"value3"}}'
DELETE_ARRAY = '{"k1":"v1","k2":["value1","value2","value3"]}'


@pytest.mark.parametrize(
    "json_text, path, expected",
    [
        ('{"k1":"v1","k2":"v2"}', "$.k2", '{"k1":"v1"}'),
        (DELETE_DOC, "$.k2", '{"k1":"v1"}'),
        (DELETE_DOC, "$.k2.key1", '{"k1":"v1","k2":{"key2":"value2","key3":"value3"}}'),
        (DELETE_ARRAY, "$.k2[1]", '{"k1":"v1","k2":["value1","value3"]}'),
        (DELETE_ARRAY, "$..*", "{}"),
    ],
)
def test_json_delete_matches_daggers_vectors(spark, json_text, path, expected):
    assert call(spark, "JsonDelete", json_text, path) == expected


@pytest.mark.parametrize("function, extra", [("JsonQuery", ()), ("JsonUpdate", ("x",)), ("JsonDelete", ())])
def test_a_row_dagger_would_fail_on_gives_null_instead(spark, function, extra):
    # dagger: IllegalArgumentException (null json / null or empty path), InvalidPathException,
    # PathNotFoundException, InvalidJsonException -- all fail the task there
    assert call(spark, function, None, "$.k2", *extra) is None
    assert call(spark, function, J_NULL_K1, None, *extra) is None
    assert call(spark, function, J_NULL_K1, "", *extra) is None
    assert call(spark, function, J_NULL_K1, "$ .k1", *extra) is None
    assert call(spark, function, J_NULL_K1, "$.k2.k4", *extra) is None
    assert call(spark, function, J_BAD, "$.k2", *extra) is None


def test_bad_rows_in_a_column_become_null_without_failing_the_query(spark):
    rows = [(J_NULL_K1,), (J_BAD,), (None,), ('{"k2":"other"}',), ("not json at all",)] * 40
    df = spark.createDataFrame(rows, "j string").repartition(3)
    got = [r["v"] for r in df.selectExpr("JsonQuery(j, '$.k2') AS v").collect()]
    assert sorted(got, key=str) == sorted(['"v2"', None, None, '"other"', None] * 40, key=str)


def test_check_json_path_accepts_valid_paths(spark):
    for path in ("$.k2", "$.a[1]", "$..*", "$.a[?(@.x == 1)]", "$['k 1']"):
        assert check_json_path(spark, path) is None, path


def test_check_json_path_reports_a_malformed_literal_path_with_jayways_message(spark):
    assert check_json_path(spark, "$ .k1").startswith("Illegal character at position 1 expected '.' or '['")
    assert check_json_path(spark, "") == "json can not be null or empty"
    assert check_json_path(spark, "$.") == "Path must not end with a '.' or '..'"
    assert check_json_path(spark, "$.a[1").startswith("Could not parse token starting at position 3")


# ------------------------------------------------------------------------------ DART, §6
def write_map(dart_dir, name: str, mapping) -> None:
    text = mapping if isinstance(mapping, str) else json.dumps(mapping)
    (dart_dir / "dart-get" / name).write_text(text)


def write_list(dart_dir, name: str, items) -> None:
    text = items if isinstance(items, str) else json.dumps({"data": list(items)})
    (dart_dir / "dart-contains" / name).write_text(text)


def dart_get(spark, collection, key, refresh=1, default=None):
    return scalar(
        spark, f"__DartGet4({sql_literal(collection)}, {sql_literal(key)}, {refresh}, {sql_literal(default)})"
    )


def dart_contains(spark, name, field, regex=None, refresh=1):
    return scalar(spark, f"__DartContains4({sql_literal(name)}, {sql_literal(field)}, {sql_literal(regex)}, {refresh})")


def test_dart_get_returns_the_value_of_a_key(spark, dart_dir):
    write_map(dart_dir, "someMap", {"some-key": "expected-value"})
    assert dart_get(spark, "someMap", "some-key", 1) == "expected-value"


def test_dart_get_resolves_each_key_from_its_own_map(spark, dart_dir):
    write_map(dart_dir, "mapA", {"a-key": "a-value", "shared": "from-a"})
    write_map(dart_dir, "mapB", {"b-key": "b-value", "shared": "from-b"})
    assert dart_get(spark, "mapA", "a-key") == "a-value"
    assert dart_get(spark, "mapB", "b-key") == "b-value"
    assert dart_get(spark, "mapA", "shared") == "from-a"
    assert dart_get(spark, "mapB", "shared") == "from-b"


def test_dart_get_returns_the_default_for_a_missing_key(spark, dart_dir):
    write_map(dart_dir, "withDefault", {"some-key": "expected-value"})
    assert dart_get(spark, "withDefault", "other-key", 1, "some value") == "some value"


def test_dart_get_returns_null_for_a_missing_key_without_default_where_dagger_fails_the_job(spark, dart_dir):
    write_map(dart_dir, "noDefault", {"some-key": "expected-value"})
    assert dart_get(spark, "noDefault", "other-key", 1) is None
    assert dart_get(spark, "noDefault", None, 1, "d") == "d"


def test_dart_get_reads_daggers_gcs_data_store_map_vector(spark, dart_dir):
    write_map(dart_dir, "spaced", ' { "key" :  "value"  } ')
    assert dart_get(spark, "spaced", "key") == "value"


def test_dart_get_looks_numeric_keys_up_as_their_decimal_text(spark, dart_dir):
    write_map(dart_dir, "byId", {"42": "answer"})
    assert scalar(spark, "__DartGet4('byId', CAST(42 AS BIGINT), 1L, NULL)") == "answer"


def test_dart_get_keeps_its_cached_map_within_the_refresh_window(spark, dart_dir):
    write_map(dart_dir, "refreshing", {"k": "old"})
    assert dart_get(spark, "refreshing", "k", 1) == "old"
    write_map(dart_dir, "refreshing", {"k": "new"})
    assert dart_get(spark, "refreshing", "k", 1) == "old"


def test_dart_get_reloads_a_changed_file_on_every_call_when_refresh_is_zero_or_less(spark, dart_dir):
    write_map(dart_dir, "volatile", {"k": "v1"})
    assert dart_get(spark, "volatile", "k", 1) == "v1"
    write_map(dart_dir, "volatile", {"k": "v2"})
    assert dart_get(spark, "volatile", "k", 0) == "v2"
    write_map(dart_dir, "volatile", {"k": "v3"})
    assert dart_get(spark, "volatile", "k", -1) == "v3"
    # the reload refreshed the shared cache: a 1-hour caller now sees it too
    assert dart_get(spark, "volatile", "k", 1) == "v3"


def test_dart_lookups_run_inside_executor_tasks(spark, dart_dir):
    write_map(dart_dir, "perRow", {str(i): f"v{i}" for i in range(0, 50, 2)})
    rows = (
        spark.range(50)
        .repartition(4)
        .selectExpr("id", "__DartGet4('perRow', CAST(id AS STRING), 1, 'none') AS v")
        .collect()
    )
    assert {r["id"]: r["v"] for r in rows} == {i: (f"v{i}" if i % 2 == 0 else "none") for i in range(50)}


def test_dart_base_set_at_run_time_reaches_the_tasks(spark, dart_dir, tmp_path):
    (tmp_path / "dart-get").mkdir()
    write_map(tmp_path, "switch", {"k": "from-other-base"})
    write_map(dart_dir, "switch", {"k": "from-session-base"})
    query = (
        "SELECT __DartGet4('switch', CAST(id AS STRING), 1, NULL) AS v, __DartGet4('switch', 'k', 1, NULL) AS w "
        "FROM range(3)"
    )
    assert {r["w"] for r in spark.sql(query).repartition(2).collect()} == {"from-session-base"}
    spark.conf.set(DART_BASE_CONF, tmp_path.as_uri() + "/")
    try:
        assert {r["w"] for r in spark.sql(query).repartition(2).collect()} == {"from-other-base"}
    finally:
        spark.conf.set(DART_BASE_CONF, dart_dir.as_uri())


def test_a_missing_reference_file_fails_the_query_naming_its_url(spark, dart_dir):
    with pytest.raises(Exception, match=r"DART reference data not found: .*dart-get/doesNotExist"):
        dart_get(spark, "doesNotExist", "k")
    with pytest.raises(Exception, match=r"DART reference data not found: .*dart-contains/doesNotExist"):
        dart_contains(spark, "doesNotExist", "k")


def test_a_malformed_reference_file_fails_the_query_naming_its_url(spark, dart_dir):
    write_map(dart_dir, "broken", "{not json")
    write_map(dart_dir, "numbers", '{"k": 1}')
    write_list(dart_dir, "noData", '{"items": ["a"]}')
    with pytest.raises(Exception, match=r"dart-get/broken is not valid JSON"):
        dart_get(spark, "broken", "k")
    with pytest.raises(Exception, match=r'dart-get/numbers: the value of key "k" is not a string'):
        dart_get(spark, "numbers", "k")
    with pytest.raises(Exception, match=r'dart-contains/noData must be a JSON object with a "data" array'):
        dart_contains(spark, "noData", "a")


def test_collection_names_cannot_leave_the_reference_data(spark, dart_dir):
    with pytest.raises(Exception, match=r"'\.\.' path segment"):
        dart_get(spark, "../dart-get/someMap", "k")
    with pytest.raises(Exception, match=r"starts with '/'"):
        dart_contains(spark, "/etc/passwd", "root")


def test_an_unset_base_fails_with_the_conf_key_in_the_message(spark, dart_dir):
    write_map(dart_dir, "someMapForUnset", {"k": "v"})
    spark.conf.unset(DART_BASE_CONF)
    try:
        with pytest.raises(Exception, match=DART_BASE_CONF.replace(".", r"\.") + " is not set"):
            dart_get(spark, "someMapForUnset", "k")
    finally:
        spark.conf.set(DART_BASE_CONF, dart_dir.as_uri())
    assert dart_get(spark, "someMapForUnset", "k") == "v"


def test_dart_contains_checks_plain_membership_when_regex_is_null(spark, dart_dir):
    write_list(dart_dir, "someList", ["someField"])
    assert dart_contains(spark, "someList", "someField", None, 0) is True
    assert dart_contains(spark, "someList", "otherField", None, 0) is False
    assert dart_contains(spark, "someList", None, None, 0) is False


@pytest.mark.parametrize(
    "field, regex, expected",
    [
        ("a sentence with prefixsomeField and an end", ".*%s.*", True),
        ("a sentence that ends with prefixsomeField", ".*%s", True),
        ("prefixsomeField is the start of this sentence", "%s.*", True),
        ("prefixsomeField", "%s", True),
        ("preFixSomEfield", ".*%s.*", False),
    ],
)
def test_dart_contains_regex_forms_match_daggers_vectors(spark, dart_dir, field, regex, expected):
    write_list(dart_dir, "prefixList", ["prefixsomeField"])
    assert dart_contains(spark, "prefixList", field, regex, 1) is expected


def test_dart_contains_regex_needs_a_full_match_of_the_raw_element(spark, dart_dir):
    write_list(dart_dir, "trailingSpace", ["prefixsomeField "])
    assert dart_contains(spark, "trailingSpace", "a sentence with prefixsomeFieldsuffix and an end", ".*%s.*") is False
    write_list(dart_dir, "plain", ["someField"])
    assert dart_contains(spark, "plain", "other", ".*%s.*") is False
    assert dart_contains(spark, "plain", "xsomeField", "%s") is False


def test_dart_contains_reads_daggers_gcs_data_store_list_vector(spark, dart_dir):
    write_list(dart_dir, "spacedList", ' { "data" : [ "listContent" ] } ')
    assert dart_contains(spark, "spacedList", "listContent") is True


def test_dart_contains_picks_up_a_changed_list_only_after_its_refresh(spark, dart_dir):
    write_list(dart_dir, "changing", ["a"])
    assert dart_contains(spark, "changing", "b", None, 1) is False
    write_list(dart_dir, "changing", ["a", "b"])
    assert dart_contains(spark, "changing", "b", None, 1) is False
    assert dart_contains(spark, "changing", "b", None, 0) is True


def test_an_element_that_breaks_the_regex_just_never_matches(spark, dart_dir):
    write_list(dart_dir, "metachars", ["a(b", "c+d"])
    assert dart_contains(spark, "metachars", "ccd", "%s") is True
    assert dart_contains(spark, "metachars", "a(b", "%s") is False


def test_a_regex_unusable_for_any_element_fails_and_is_reported_by_check_dart_regex(spark, dart_dir):
    write_list(dart_dir, "forBadRegex", ["x"])
    assert check_dart_regex(spark, ".*%s.*") is None
    assert check_dart_regex(spark, "%d") is not None
    assert check_dart_regex(spark, "(%s") is not None
    with pytest.raises(Exception, match="bad regex"):
        dart_contains(spark, "forBadRegex", "x", "(%s")


def test_clear_dart_cache_forgets_loaded_collections(spark, dart_dir):
    write_map(dart_dir, "clearable", {"k": "before"})
    assert dart_get(spark, "clearable", "k", 1) == "before"
    write_map(dart_dir, "clearable", {"k": "after"})
    clear_dart_cache(spark)
    assert dart_get(spark, "clearable", "k", 1) == "after"


CLUSTER_SCRIPT = r"""
import os, sys, pyspark
os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
from dagger_runtime.session import build_session
from dagger_runtime.udfs.java_udfs import register_java_udfs
spark = build_session("udfs-local-cluster", master="local-cluster[1,1,1024]",
                      extra_conf={"spark.test.home": os.environ["SPARK_HOME"]})
try:
    register_java_udfs(spark)
    spark.conf.set("spark.dagger.dart.base", sys.argv[1])
    rows = spark.sql(
        "SELECT id, __DartGet4('m', IF(id % 2 = 0, 'k', 'x'), 1, 'dflt') AS v, "
        "__DartContains4('l', 'k', '%s', 1) AS c, JsonQuery('{\"a\":\"b\"}', '$.a') AS j, "
        "reflect('java.lang.ProcessHandle', 'current') AS pid FROM range(4)").repartition(2).collect()
    driver = str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    for r in sorted(rows):
        print("ROW", r.id, r.v, r.c, r.j, r.pid != driver)
finally:
    spark.stop()
"""


@pytest.mark.e2e
def test_the_udfs_and_a_run_time_dart_base_work_in_a_separate_executor_jvm(tmp_path):
    """local-cluster mode: the executor is another JVM, as in a real cluster."""

    (tmp_path / "dart-get").mkdir()
    (tmp_path / "dart-contains").mkdir()
    write_map(tmp_path, "m", {"k": "cluster-value"})
    write_list(tmp_path, "l", ["k"])
    script = tmp_path / "cluster.py"
    script.write_text(CLUSTER_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), tmp_path.as_uri()],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(REPO_ROOT),
    )
    rows = [line for line in done.stdout.splitlines() if line.startswith("ROW")]
    assert rows == [f'ROW {i} {"cluster-value" if i % 2 == 0 else "dflt"} True "b" True' for i in range(4)], (
        done.stderr[-3000:]
    )
